"""Chains that look like a pattern but compute other mathematics are never rewritten: each near-miss
compiles with no fused op of its family, and its outputs and gradients equal eager's. A pattern whose
structural match is wrong (a refinement that miscounts the Sinkhorn passes) is caught by the semantic
confirmation (pattern.confirm_semantics: the region against the fused op's fp64 reference)."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from trex.compiler import logs, registry
from trex.compiler.testing import make_input, trex_op_counts

EPS, L, N = 1e-6, 7.0, 4


def rms_eps_outside_root(x):
    xf = x.float()
    return (xf / (torch.sqrt(xf.pow(2).mean(-1, keepdim=True)) + EPS)).to(x.dtype)


def rms_mean_over_wrong_dim(x):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-2, keepdim=True) + EPS)).to(x.dtype)


def rms_missing_eps(x):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True))).to(x.dtype)


def rms_sum_not_mean(x):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).sum(-1, keepdim=True) + EPS)).to(x.dtype)


def swiglu_clamp_on_wrong_operand(g, u):
    return (F.silu(g.float().clamp(-L, L)) * u.float().clamp(max=L)).to(g.dtype)


def swiglu_minimum_against_constant(g, u):
    # other gradients at a tie than clamp (see trex.compiler.canonical): not the fused op's function
    return (F.silu(torch.minimum(g.float(), torch.tensor(L))) * u.float().clamp(-L, L)).to(g.dtype)


def rope_half_split_claimed_interleaved(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2].float(), x[..., x.shape[-1] // 2:].float()
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).to(x.dtype)


def rope_pairs_swapped(x, cos, sin):
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack([a * sin + b * cos, a * cos - b * sin], dim=-1).flatten(-2).to(x.dtype)


def _mhc(x, fn, scale, base, *, softmax_over_all=False, pre_eps=EPS):
    xf = x.flatten(-2).float()
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)
    z = (xf @ fn.t()) * r
    pre = torch.sigmoid(scale[0] * z[..., :N] + base[:N]) + pre_eps
    post = 2.0 * torch.sigmoid(scale[1] * z[..., N:2 * N] + base[N:2 * N])
    logits = scale[2] * z[..., 2 * N:] + base[2 * N:]
    if softmax_over_all:     # one softmax over all n*n entries instead of per row
        comb = torch.softmax(logits, dim=-1).unflatten(-1, (N, N)) + EPS
    else:
        comb = torch.softmax(logits.unflatten(-1, (N, N)), dim=-1) + EPS
    comb = comb / (comb.sum(-2, keepdim=True) + EPS)
    for _ in range(2):
        comb = comb / (comb.sum(-1, keepdim=True) + EPS)
        comb = comb / (comb.sum(-2, keepdim=True) + EPS)
    return (pre[..., None] * xf.unflatten(-1, (N, -1))).sum(-2).to(x.dtype), post, comb


def mhc_softmax_over_all_entries(x, fn, scale, base):
    return _mhc(x, fn, scale, base, softmax_over_all=True)


def mhc_pre_without_eps(x, fn, scale, base):
    return _mhc(x, fn, scale, base, pre_eps=0.0)


def _rms_inputs():
    return (make_input((3, 5, 16), torch.float32, seed=1, requires_grad=True),)


def _swiglu_inputs():
    g = make_input((3, 16), torch.float32, scale=L, seed=2, requires_grad=True)
    with torch.no_grad():
        g[0, :4] = L                                        # exact ties at the limit
    return g, make_input((3, 16), torch.float32, scale=L, seed=3, requires_grad=True)


def _rope_inputs():
    ang = torch.randn(5, 4)
    return make_input((2, 5, 8), torch.float32, seed=4, requires_grad=True), ang.cos(), ang.sin()


def _mhc_inputs():
    return (make_input((2, 3, N, 8), torch.float32, seed=5, requires_grad=True),
            (torch.randn((2 + N) * N, N * 8) * 0.1).requires_grad_(), (torch.rand(3) + 0.5).requires_grad_(),
            (torch.randn((2 + N) * N) * 0.1).requires_grad_())


# (chain, inputs, family)
NEAR_MISSES = [
    (rms_eps_outside_root, _rms_inputs, "rms_norm"),
    (rms_mean_over_wrong_dim, _rms_inputs, "rms_norm"),
    (rms_missing_eps, _rms_inputs, "rms_norm"),
    (rms_sum_not_mean, _rms_inputs, "rms_norm"),
    (swiglu_clamp_on_wrong_operand, _swiglu_inputs, "swiglu_limited"),
    (swiglu_minimum_against_constant, _swiglu_inputs, "swiglu_limited"),
    (rope_half_split_claimed_interleaved, _rope_inputs, "rope"),
    (rope_pairs_swapped, _rope_inputs, "rope"),
    (mhc_softmax_over_all_entries, _mhc_inputs, "mhc_pre"),
    (mhc_pre_without_eps, _mhc_inputs, "mhc_pre"),
]


def _run(fn, inputs, compiled):
    leaves = [t for t in inputs if t.requires_grad]
    for t in leaves:
        t.grad = None
    out = (torch.compile(fn, backend="trex") if compiled else fn)(*inputs)
    outs = out if isinstance(out, tuple) else (out,)
    sum(o.float().pow(2).sum() for o in outs).backward()
    return [o.detach() for o in outs], [t.grad.clone() for t in leaves]


@pytest.mark.parametrize("fn,make,family", NEAR_MISSES, ids=[c[0].__name__ for c in NEAR_MISSES])
def test_near_miss_is_not_fused_and_matches_eager(fn, make, family):
    inputs = make()
    eager_out, eager_grads = _run(fn, inputs, compiled=False)
    torch._dynamo.reset()
    with logs.capture() as reports:
        out, grads = _run(fn, inputs, compiled=True)
    fused = {op for r in reports for stage in r.compiled_graphs.values() for op in trex_op_counts(stage)}
    assert not fused, [r.format() for r in reports]
    for a, e in zip(out + grads, eager_out + eager_grads):
        torch.testing.assert_close(a, e, rtol=1e-5, atol=1e-6)


def test_semantic_confirmation_refuses_a_wrong_structural_match(monkeypatch):
    """mhc_pre's refinement counting one Sinkhorn pass too many: the structure matches, the mathematics
    does not, so nothing is rewritten and the near-miss says why."""
    pattern = registry.patterns()["mhc_pre"]
    honest = pattern.refine

    def miscount(match):
        reason = honest(match)
        match.consts["iters"] += 1
        return reason

    monkeypatch.setattr(pattern, "refine", miscount)
    inputs = _mhc_inputs()
    torch._dynamo.reset()
    with logs.capture() as reports:
        _run(_mhc, inputs, compiled=True)
    (report,) = reports
    assert report.match_counts()["mhc_pre"] == 0, report.format()
    assert "computes other values than mhc_pre's op" in report.format()
    monkeypatch.setattr(pattern, "refine", honest)
    torch._dynamo.reset()
    with logs.capture() as reports:
        _run(_mhc, inputs, compiled=True)
    assert reports[0].match_counts()["mhc_pre"] == 1, reports[0].format()
