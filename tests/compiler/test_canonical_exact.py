"""Every canonical rewrite keeps what eager computes where nothing fuses: values AND gradients,
bit for bit, at ties, signed zeros, tiny, huge, inf and nan inputs (trex.compiler.canonical).

Each case is compiled with ``backend="trex"`` and no patterns, so only canonicalisation (and its
``restore_unfused``) touches the graph; forward values and gradients must equal eager's exactly."""
from __future__ import annotations

import operator

import pytest
import torch

from trex.compiler import logs
from trex.compiler.canonical import EXACT_RULES, MATCHING_RULES

inf, nan = float("inf"), float("nan")
# 14 values: the tie points of the clamps below (7, 10, -1), signed zeros, denormal-ish, inf, nan
SPECIAL = torch.tensor([-inf, -100., -10., -1., -0., 0., 1e-30, 0.5, 1., 7., 10., 100., inf, nan])

# (name, function, the rule tables' ops it exercises)
CASES = [
    ("minimum_const_tie", lambda x: torch.minimum(x, torch.tensor(10.)) * 3, "not a rule"),
    ("maximum_const_tie", lambda x: torch.maximum(x, torch.tensor(7.)) * 3, "not a rule"),
    ("maximum_minimum_nested", lambda x: torch.maximum(torch.minimum(x, torch.tensor(7.)), torch.tensor(-1.)),
     "not a rule"),
    ("self_product", lambda x: x * x, "mul -> pow"),
    ("reciprocal_sqrt", lambda x: 1 / torch.sqrt(x), "reciprocal(sqrt) -> rsqrt"),
    ("reciprocal_op_sqrt", lambda x: torch.reciprocal(torch.sqrt(x)), "reciprocal(sqrt) -> rsqrt"),
    ("pow_minus_half", lambda x: x ** -0.5, "pow -> rsqrt"),
    ("sqrt_pow_minus_one", lambda x: torch.sqrt(x) ** -1, "pow(sqrt, -1) -> rsqrt"),
    ("div_by_sqrt", lambda x: x / torch.sqrt(x.abs()), "div(x, sqrt) -> x * rsqrt"),
    ("sum_over_n", lambda x: x.view(2, 7).sum(-1, keepdim=True) / 7, "div(sum, n) -> mean"),
    ("sum_times_inverse_n", lambda x: x.view(2, 7).sum(-1) * (1 / 7), "mul(sum, 1/n) -> mean"),
    ("sum_over_n_finite", lambda x: torch.nan_to_num(x, 0., 3., -3.).view(2, 7).sum(-1) / 7, "div(sum, n) -> mean"),
    ("g_sigmoid_g", lambda x: x * torch.sigmoid(x), "mul -> silu"),
    ("g_over_one_plus_exp", lambda x: x / (1 + torch.exp(-x)), "div -> silu"),
    ("clamp_max", lambda x: x.clamp_max(7.), "clamp_max -> clamp"),
    ("clamp_min_then_max", lambda x: x.clamp_min(-1.).clamp_max(7.), "nested clamps merged"),
    ("clamp_crossed", lambda x: x.clamp(max=-1.).clamp(min=7.), "crossed clamps kept"),
    ("clamp_keywords", lambda x: torch.clamp(x, min=-1.0, max=7.), "clamp kwargs -> args"),
    ("times_one", lambda x: x * 1 + 0, "mul(x, 1) removed"),
    ("clone", lambda x: x.clone() * 2, "clone removed"),
    ("full_slice", lambda x: x[..., -14:] * 2, "full slice removed"),
    ("same_dtype_cast", lambda x: x.to(x.dtype) * 2, "no-op cast removed"),
    ("sum_with_own_dtype", lambda x: x.float().sum(-1, dtype=torch.float32), "reduction dtype dropped"),
    ("split_pieces", lambda x: torch.cat(x.split([3, 11])[::-1]) * 2, "split(x)[i] -> slice"),
    ("chunk_piece", lambda x: x.chunk(2)[1] * 3, "chunk(x)[i] -> slice"),
    ("unbind_piece", lambda x: x.view(2, 7).unbind(0)[1] * 2, "unbind(x)[i] -> select"),
    ("slice_to_size", lambda x: x[3:14] * 2, "slice end -> open end"),
    ("inplace_add_on_temporary", lambda x: torch.nn.functional.rms_norm(x.view(2, 7), (7,), None, 1e-6),
     "add_(t, c) -> add"),
    ("mean_then_unsqueeze", lambda x: x.view(2, 7).mean(-1)[..., None] * 2, "mean(d).unsqueeze(d) -> keepdim"),
    ("weight_first_norm", lambda x: (x.view(2, 7).flip(-1) * x.view(2, 7)) * torch.rsqrt(
        x.view(2, 7).pow(2).mean(-1, keepdim=True) + 1e-6), "(w * x) * rsqrt -> w * (x * rsqrt)"),
    ("pair_select", lambda x: x.view(7, 2)[..., 1] * 2 + x.view(7, 2).unbind(-1)[0], "unflatten(.., 2)[k] -> x[k::2]"),
    ("matrix_transpose", lambda x: (x.view(2, 7).T * 2) @ x.view(2, 7).permute(1, 0).transpose(0, 1),
     "w.T / permute / transpose -> w.t()"),
    ("einsum_collapse", lambda x: torch.einsum("bn,bnd->bd", x.view(2, 7), x.view(2, 7, 1).expand(2, 7, 3) * 2),
     "einsum('...n,...nd->...d') -> (a[..., None] * b).sum(-2)"),
    ("complex_product", lambda x: torch.view_as_real(torch.view_as_complex(x.float().view(7, 2)) * torch.view_as_complex(
        x.float().flip(0).view(7, 2)).conj()).flatten().to(x.dtype) * 2,
     "view_as_real(view_as_complex(p) * f) -> real pairs"),
    ("repeated_subexpression", lambda x: x.float().exp() * x.float().exp(), "CSE"),
]


def _bits(t: torch.Tensor) -> torch.Tensor:
    """Values compared exactly, nan equal to nan (and -0.0 told from 0.0)."""
    t = t.detach().double()
    return torch.stack([t.isnan().double(), torch.nan_to_num(t, 0.0), torch.signbit(t).double()])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("name,fn,rule", CASES, ids=[c[0] for c in CASES])
def test_unfused_rewrite_keeps_eager_values_and_gradients(name, fn, rule, dtype):
    x_eager = SPECIAL.to(dtype).detach().clone().requires_grad_(True)
    x_trex = SPECIAL.to(dtype).detach().clone().requires_grad_(True)
    eager = fn(x_eager)
    eager.float().sum().backward()
    torch._dynamo.reset()
    with logs.capture() as reports:
        out = torch.compile(fn, backend="trex", options={"patterns": []})(x_trex)
    out.float().sum().backward()
    assert all(not r.fallbacks for r in reports), [r.fallbacks for r in reports]
    assert torch.equal(_bits(out), _bits(eager)), f"{name} ({rule}): {out.tolist()} != eager {eager.tolist()}"
    assert torch.equal(_bits(x_trex.grad), _bits(x_eager.grad)), \
        f"{name} ({rule}): gradient {x_trex.grad.tolist()} != eager {x_eager.grad.tolist()}"


def test_issue_example_minimum_gradient_at_tie():
    # torch.minimum(g, tensor(10.)) * 3 at g = [9, 10, 11]: eager (and aot_eager) give [3, 1.5, 0]
    g = torch.tensor([9., 10., 11.], requires_grad=True)
    torch._dynamo.reset()
    (torch.compile(lambda t: torch.minimum(t, torch.tensor(10.)) * 3, backend="trex")(g)).sum().backward()
    assert g.grad.tolist() == [3.0, 1.5, 0.0]


def test_rules_are_all_exercised():
    """A rule added to a table needs a case above (the ops each table keys on are named here)."""
    covered = {"aten._to_copy.default", "aten.clone.default", "aten.slice.Tensor", "aten.mul.Tensor",
               "aten.clamp.default", "aten.clamp_max.default", "aten.clamp_min.default", "aten.sum.dim_IntList",
               "aten.sum.default", "aten.mean.dim", "aten.mean.default", "aten.reciprocal.default",
               "aten.pow.Tensor_Scalar", "aten.div.Tensor", str(operator.getitem),
               "aten.unsqueeze.default", "aten.select.int", "aten.permute.default", "aten.transpose.int",
               "aten.view.default", "aten._unsafe_view.default", "aten.view_as_real.default"} | {f"aten.{op}_.{kind}" for op in ("add", "mul", "sub", "div")
                                            for kind in ("Scalar", "Tensor")}
    keyed = {str(t) for t in EXACT_RULES} | {str(t) for t in MATCHING_RULES}
    assert keyed <= covered, f"rules without an exactness case: {sorted(keyed - covered)}"
