"""The broadcast-bmm layout rule (trex.compiler.canonical._broadcast_bmm, LAYOUT_RULES): ``torch.matmul``
with a right operand broadcast over trailing batch dims (transformers' DeepSeek-V4 Lightning-indexer scorer,
``matmul(q.float(), kv.transpose(-1, -2).float().unsqueeze(1))``) is one bmm over the unbroadcast batch,
without the broadcast copy in the forward or its gradient in the backward; where it fires and where it does
not; outputs and gradients within the project's rule against fp64 (fp32, bf16, odd sizes, lead = 1)."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from trex.compiler import canonical, logs
from trex.compiler.canonical import LAYOUT_RULES, canonicalize
from trex.compiler.graph import aten, trace_to_aten, val
from trex.compiler.testing import assert_close_to_reference


class Scorer(nn.Module):
    """transformers' ``DeepseekV4IndexerScorer`` (5.x), line for line."""

    def __init__(self, hidden: int, heads: int, head_dim: int):
        super().__init__()
        self.softmax_scale = head_dim ** -0.5
        self.weights_scaling = heads ** -0.5
        self.weights_proj = nn.Linear(hidden, heads, bias=False)

    def forward(self, q, compressed_kv, hidden_states):
        scores = torch.matmul(q.float(), compressed_kv.transpose(-1, -2).float().unsqueeze(1))  # [B, S, H, T]
        scores = F.relu(scores) * self.softmax_scale
        weights = self.weights_proj(hidden_states).float() * self.weights_scaling  # [B, S, H]
        return (scores * weights.unsqueeze(-1)).sum(dim=2)  # [B, S, T]


def _reference(module, q, kv, hidden):
    """The scorer in fp64 throughout (``.float()`` would round the reference to fp32)."""
    scores = torch.matmul(q, kv.transpose(-1, -2).unsqueeze(1))
    scores = F.relu(scores) * module.softmax_scale
    weights = F.linear(hidden, module.w64) * module.weights_scaling
    return (scores * weights.unsqueeze(-1)).sum(dim=2)


def _inputs(b, s, h, d, t, hidden, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, s, d, generator=g).to(dtype).transpose(1, 2)   # [B, S, H, D], V4's strides
    kv = torch.randn(b, t, d, generator=g).to(dtype)
    x = torch.randn(b, s, hidden, generator=g).to(dtype)
    return q, kv, x


def _bmms(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target == aten.bmm.default]


def _traced(fn, *args):
    gm = trace_to_aten(fn, list(args))
    before = gm.print_readable(print_output=False)
    fired0 = logs.counters["layout_rules"]["broadcast_bmm"]
    canonicalize(gm.graph)
    gm.recompile()
    return gm, before, logs.counters["layout_rules"]["broadcast_bmm"] - fired0


def _scorer_matmul(q, kv):
    return torch.matmul(q.float(), kv.transpose(-1, -2).float().unsqueeze(1))


# ------------------------------------------------------------------------------- (1) where it fires
@pytest.mark.parametrize("b", [3, 1])
@pytest.mark.parametrize("q_layout", ["v4", "contiguous"])
def test_fires_on_scorer_spelling(b, q_layout):
    s, h, d, t = 7, 5, 9, 11
    q, kv, _ = _inputs(b, s, h, d, t, 4, torch.bfloat16)
    if q_layout == "contiguous":
        q = q.contiguous()
    gm, before, fired = _traced(_scorer_matmul, q, kv)
    assert "aten.expand.default(unsqueeze" in before, before          # the traced broadcast, as described
    assert fired == 1
    mms = _bmms(gm)
    assert len(mms) == 1 and list(val(mms[0]).shape) == [b, s * h, t], gm.code
    # no expand of the right operand (nor any [B, S, D, T] tensor) is left
    for n in gm.graph.nodes:
        v = val(n)
        if isinstance(v, torch.Tensor):
            assert list(v.shape) not in ([b, s, d, t], [b * s, d, t]), (n.format_node(), gm.code)
        if n.op == "call_function" and n.target == aten.expand.default:
            assert list(val(n).shape)[-2:] != [d, t], gm.code
    out = gm(q, kv)
    torch.testing.assert_close(out, _scorer_matmul(q, kv), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shapes", [
    ((2, 3, 4, 5, 6), (2, 1, 1, 6, 7)),       # two trailing broadcast dims folded: lead 2, fold 12
    ((3, 4, 5, 6), (1, 6, 7)),                # right operand of lower rank, all batch broadcast: lead 1
], ids=["two_fold_dims", "lead_1_rank3"])
def test_fires_on_other_trailing_broadcasts(shapes):
    a_shape, b_shape = shapes
    a, b = torch.randn(a_shape), torch.randn(b_shape)
    gm, _, fired = _traced(torch.matmul, a, b)
    assert fired == 1, gm.code
    assert len(_bmms(gm)) == 1
    torch.testing.assert_close(gm(a, b), torch.matmul(a, b), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name,fn,shapes", [
    ("plain_bmm", torch.bmm, ((6, 5, 9), (6, 9, 11))),
    ("matmul_no_broadcast", torch.matmul, ((3, 7, 5, 9), (3, 7, 9, 11))),
    ("left_broadcast", torch.matmul, ((3, 1, 5, 9), (3, 7, 9, 11))),
    ("both_broadcast", torch.matmul, ((1, 7, 5, 9), (3, 1, 9, 11))),
    ("middle_broadcast", torch.matmul, ((3, 4, 2, 5, 9), (3, 1, 2, 9, 11))),
    ("leading_broadcast", torch.matmul, ((3, 4, 5, 9), (1, 4, 9, 11))),
    ("size_one_batch", torch.matmul, ((3, 1, 5, 9), (3, 1, 9, 11))),
])
def test_does_not_fire(name, fn, shapes):
    a, b = (torch.randn(s) for s in shapes)
    gm, before, fired = _traced(fn, a, b)
    assert fired == 0, f"{name}:\n{gm.code}"
    assert len(_bmms(gm)) == len([ln for ln in before.splitlines() if "aten.bmm.default(" in ln])
    torch.testing.assert_close(gm(a, b), fn(a, b), rtol=1e-5, atol=1e-5)


def test_does_not_fire_when_the_broadcast_copy_has_another_user():
    def fn(a, b0):
        e = torch.ops.aten.expand.default(b0, [3, 7, 9, 11])
        c = torch.ops.aten.clone.default(e, memory_format=torch.contiguous_format)
        r = torch.ops.aten._unsafe_view.default(c, [21, 9, 11])
        return torch.ops.aten.bmm.default(a.reshape(21, 5, 9), r), c.sum()
    gm, _, fired = _traced(fn, torch.randn(3, 7, 5, 9), torch.randn(3, 1, 9, 11))
    assert fired == 0, gm.code


def test_does_not_fire_on_symbolic_sizes():
    q, kv, _ = _inputs(3, 7, 5, 9, 11, 4, torch.float32)
    fired0 = logs.counters["layout_rules"]["broadcast_bmm"]
    with logs.capture() as reports:
        out = torch.compile(_scorer_matmul, backend="trex", dynamic=True)(q, kv)
    assert all(not r.fallbacks for r in reports), [r.fallbacks for r in reports]
    assert logs.counters["layout_rules"]["broadcast_bmm"] == fired0
    torch.testing.assert_close(out, _scorer_matmul(q, kv))


@pytest.mark.parametrize("s,cap,chunks", [(6, 10, 3), (8, 20, 2), (7, 10, None)])
def test_chunks_past_the_cap(monkeypatch, s, cap, chunks):
    """fold * M above MAX_FOLDED_TERMS: the fold splits into the fewest chunks within the cap (values and
    gradients as eager's); a prime fold has none (no rewrite)."""
    monkeypatch.setattr(canonical, "MAX_FOLDED_TERMS", cap)
    b, h, d, t = 2, 5, 9, 11
    q, kv, _ = _inputs(b, s, h, d, t, 4, torch.float32)
    gm, _, fired = _traced(_scorer_matmul, q, kv)
    if chunks is None:
        assert fired == 0, gm.code
        return
    assert fired == 1
    (mm,) = _bmms(gm)
    assert list(val(mm.args[0]).shape) == [b * chunks, s // chunks * h, d]
    assert list(val(mm.args[1]).shape) == [b * chunks, d, t]
    q1, kv1, q2, kv2 = (x.detach().clone().requires_grad_(True) for x in (q, kv, q, kv))
    go = torch.randn(b, s, h, t)
    out = gm(q1, kv1)
    out.backward(go)
    want = _scorer_matmul(q2, kv2)
    want.backward(go)
    for got, ref in ((out, want), (q1.grad, q2.grad), (kv1.grad, kv2.grad)):
        torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)


def test_fp32_gradient_within_rule_at_indexer_sizes():
    """The indexer's head sizes (H 64, D 128, T 512) at S 1024 in fp32: dkv sums over S * H = 65536 terms,
    past the cap, so it is chunked (8 GEMMs of 8192 terms); within the rule against fp64."""
    b, s, h, d, t = 1, 1024, 64, 128, 512
    g = torch.Generator().manual_seed(0)
    q = torch.randn(b, h, s, d, generator=g).transpose(1, 2)
    kv = torch.randn(b, t, d, generator=g)
    go = torch.randn(b, s, h, t, generator=g)
    fired0 = logs.counters["layout_rules"]["broadcast_bmm"]
    results = []
    for run in ("trex", "eager", "fp64"):
        q1 = (q.double() if run == "fp64" else q.clone()).requires_grad_(True)
        kv1 = (kv.double() if run == "fp64" else kv.clone()).requires_grad_(True)
        if run == "trex":
            with logs.capture() as reports:
                out = torch.compile(_scorer_matmul, backend="trex")(q1, kv1)
        elif run == "eager":
            out = _scorer_matmul(q1, kv1)
        else:
            out = torch.matmul(q1, kv1.transpose(-1, -2).unsqueeze(1))
        out.backward(go.to(out.dtype))
        results.append((out.detach(), q1.grad, kv1.grad))
        del out
    assert logs.counters["layout_rules"]["broadcast_bmm"] == fired0 + 1
    (mm,) = [n for n in reports[0].compiled_graphs["forward"].graph.nodes if n.target == aten.bmm.default]
    assert list(mm.meta["val"].shape) == [8, 8192, 512]
    for i, name in enumerate(("scores", "dq", "dkv")):
        assert_close_to_reference(results[0][i], results[1][i], results[2][i], name=name)


def test_layout_rules_table():
    assert [r.__name__ for r in LAYOUT_RULES[aten.bmm.default]] == ["_broadcast_bmm"]


# --------------------------------------------------------------------- (2) compiled values and gradients
def _run(module, q, kv, x, compiled):
    q, kv, x = (t.detach().clone().requires_grad_(True) for t in (q, kv, x))
    module.zero_grad(set_to_none=True)
    fn = torch.compile(module, backend="trex") if compiled else module
    out = fn(q, kv, x)
    g = torch.Generator().manual_seed(1)
    out.backward(torch.randn(out.shape, generator=g).to(out.dtype))
    return out, q.grad, kv.grad, x.grad, module.weights_proj.weight.grad.clone()


def _check(module, q, kv, x, dtype):
    module = module.to(dtype)
    fired0 = logs.counters["layout_rules"]["broadcast_bmm"]
    with logs.capture() as reports:
        got = _run(module, q, kv, x, compiled=True)
    assert all(not r.fallbacks for r in reports), [r.fallbacks for r in reports]
    assert logs.counters["layout_rules"]["broadcast_bmm"] == fired0 + 1, "the rule did not fire"
    b, s, h, d = q.shape
    t = kv.shape[1]
    for r in reports:                           # neither graph holds the broadcast [B, S, D, T] (or its grad)
        for stage, gm in r.compiled_graphs.items():
            for n in gm.graph.nodes:
                v = n.meta.get("val")
                if isinstance(v, torch.Tensor):
                    assert list(v.shape) not in ([b, s, d, t], [b * s, d, t]), (stage, n.format_node())
    eager = _run(module, q, kv, x, compiled=False)
    # fp64 reference
    q64, kv64, x64 = (t.detach().double().requires_grad_(True) for t in (q, kv, x))
    w64 = module.weights_proj.weight.detach().double().requires_grad_(True)
    module.w64 = w64
    ref_out = _reference(module, q64, kv64, x64)
    g = torch.Generator().manual_seed(1)
    ref_out.backward(torch.randn(ref_out.shape, generator=g).to(got[0].dtype).double())
    ref = (ref_out, q64.grad, kv64.grad, x64.grad, w64.grad)
    for name, a, e, r_ in zip(("scores", "dq", "dkv", "dhidden", "dweight"), got, eager, ref):
        assert_close_to_reference(a, e, r_, compute_dtype=dtype, name=name)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("b", [3, 1], ids=["lead3", "lead1"])
def test_scorer_values_and_gradients(dtype, b):
    torch.manual_seed(0)
    s, h, d, t, hidden = 7, 5, 9, 11, 13
    module = Scorer(hidden, h, d)
    q, kv, x = _inputs(b, s, h, d, t, hidden, dtype)
    _check(module, q, kv, x, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_transformers_scorer_values_and_gradients(dtype):
    modeling = pytest.importorskip("transformers.models.deepseek_v4.modeling_deepseek_v4")
    from transformers import DeepseekV4Config

    torch.manual_seed(0)
    s, h, d, t, hidden = 7, 5, 9, 11, 13
    module = modeling.DeepseekV4IndexerScorer(DeepseekV4Config(hidden_size=hidden, index_n_heads=h,
                                                               index_head_dim=d))
    q, kv, x = _inputs(2, s, h, d, t, hidden, dtype, seed=3)
    _check(module, q, kv, x, dtype)
