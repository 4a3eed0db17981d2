"""A pattern whose structural match is wrong (a refinement that miscounts the Sinkhorn passes) is caught
by the semantic confirmation (pattern.confirm_semantics: the region against the fused op's fp64
reference). The near-miss table (chains that compute other mathematics, none fused) is in
tests/compiler/test_respellings.py."""
from __future__ import annotations

import torch

from trex.compiler import logs, registry
from trex.compiler.testing import make_input

EPS, N = 1e-6, 4


def _mhc(x, fn, scale, base):
    xf = x.flatten(-2).float()
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)
    z = (xf @ fn.t()) * r
    pre = torch.sigmoid(scale[0] * z[..., :N] + base[:N]) + EPS
    post = 2.0 * torch.sigmoid(scale[1] * z[..., N:2 * N] + base[N:2 * N])
    comb = torch.softmax((scale[2] * z[..., 2 * N:] + base[2 * N:]).unflatten(-1, (N, N)), dim=-1) + EPS
    comb = comb / (comb.sum(-2, keepdim=True) + EPS)
    for _ in range(2):
        comb = comb / (comb.sum(-1, keepdim=True) + EPS)
        comb = comb / (comb.sum(-2, keepdim=True) + EPS)
    return (pre[..., None] * xf.unflatten(-1, (N, -1))).sum(-2).to(x.dtype), post, comb


def _mhc_inputs():
    return (make_input((2, 3, N, 8), torch.float32, seed=5, requires_grad=True),
            (torch.randn((2 + N) * N, N * 8) * 0.1).requires_grad_(), (torch.rand(3) + 0.5).requires_grad_(),
            (torch.randn((2 + N) * N) * 0.1).requires_grad_())


def _run(fn, inputs):
    outs = torch.compile(fn, backend="trex")(*inputs)
    sum(o.float().pow(2).sum() for o in outs).backward()


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
        _run(_mhc, inputs)
    (report,) = reports
    assert report.match_counts()["mhc_pre"] == 0, report.format()
    assert "computes other values than mhc_pre's op" in report.format()
    monkeypatch.setattr(pattern, "refine", honest)
    torch._dynamo.reset()
    with logs.capture() as reports:
        _run(_mhc, inputs)
    assert reports[0].match_counts()["mhc_pre"] == 1, reports[0].format()
