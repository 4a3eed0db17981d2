"""Spellings that need their own setting beyond the respelling suite (tests/compiler/test_respellings.py,
which holds the table of spellings per pattern): the in-place RMSNorm in inference, the Sinkhorn count
recovered from an unrolled loop, rank-3 streams, CUDA autocast's reduction dtypes, and full-extent slices
that must leave no copy in the backward."""
from __future__ import annotations

import pytest
import torch

from trex.passes.mhc_pre.op import N_STREAMS
from trex.compiler import logs, registry
from trex.compiler.testing import assert_close_to_reference, make_input, trex_op_counts

EPS = 1e-6
ref_rms = registry.fused_ops()["rms_norm"].reference


def rms_inplace_weight_free(x, w):
    # DeepSeek's per-head query norm; in-place, so only valid without autograd (inference)
    y = x.float()
    y *= torch.rsqrt(y.square().mean(-1, keepdim=True) + EPS)
    return y.to(x.dtype)


def test_rms_norm_inplace_spelling_in_inference():
    x = make_input((3, 5, 40), torch.bfloat16, seed=3)
    with torch.no_grad(), logs.capture() as reports:
        out = torch.compile(rms_inplace_weight_free, backend="trex")(x, None)
    (report,) = reports
    assert trex_op_counts(report.compiled_graphs["inference"]) == {"rms_norm": 1}
    ref = ref_rms(x.double(), None, EPS, None)[0]
    assert_close_to_reference(out, rms_inplace_weight_free(x, None), ref)


def test_mhc_pre_is_one_op_per_site_with_iteration_count():
    """The iteration count is recovered from the unrolled Sinkhorn loop."""
    import trex.passes.mhc_pre as mhc

    n, d = N_STREAMS, 8
    fn = torch.randn((2 + n) * n, n * d) * 0.2
    scale, base = torch.rand(3) + 0.5, torch.randn((2 + n) * n) * 0.1
    x = make_input((2, 3, n, d), torch.float32, seed=5)

    def model(x, iters):
        li, post, comb = mhc.pattern.mhc_pre_chain(x, fn, scale, base, hc_eps=1e-6, rms_eps=1e-6)
        for _ in range(iters - 1):
            comb = comb / (comb.sum(-1, keepdim=True) + 1e-6)
            comb = comb / (comb.sum(-2, keepdim=True) + 1e-6)
        return li, post, comb

    for iters in (1, 7):
        torch._dynamo.reset()
        with torch.no_grad(), logs.capture() as reports:
            outs = torch.compile(model, backend="trex")(x, iters)
        (report,) = reports
        (node,) = [nd for nd in report.compiled_graphs["inference"].graph.nodes if "mhc_pre" in str(nd.target)]
        assert node.args[4] == iters
        expected = mhc.op.mhc_pre_reference(x, fn, scale, base, iters, 1e-6, 1e-6)
        for got, want in zip(outs, expected):
            torch.testing.assert_close(got, want)


@pytest.mark.parametrize("chain", ["mhc_pre_chain", "mhc_pre_chain_flat_logits"])
def test_mhc_pre_matches_rank3_streams_without_matmul_views(chain):
    """x [T, n, d] (rank 3): `xf @ fn.t()` is a plain mm with none of the view/_unsafe_view folds the
    chain has when traced at rank 4, so the matcher must skip those leading-dim folds; both spellings of
    the comb logits (biased before or after the n x n view) fuse. Regression: bench/gpu_patterns.py's
    trex_compile variant ran the eager chain (H200 run 3)."""
    import trex.passes.mhc_pre as mhc

    n, d, t = N_STREAMS, 16, 6
    fn = torch.randn((2 + n) * n, n * d) * 0.2
    scale, base = torch.rand(3) + 0.5, torch.randn((2 + n) * n) * 0.1
    x = make_input((t, n, d), torch.bfloat16, seed=9)
    f = getattr(mhc.pattern, chain)

    def model(x):
        li, post, comb = f(x, fn, scale, base, hc_eps=1e-6, rms_eps=1e-6)
        for _ in range(4):
            comb = comb / (comb.sum(-1, keepdim=True) + 1e-6)
            comb = comb / (comb.sum(-2, keepdim=True) + 1e-6)
        return li, post, comb

    torch._dynamo.reset()
    with torch.no_grad(), logs.capture() as reports:
        outs = torch.compile(model, backend="trex")(x)
    (report,) = reports
    assert [m.pattern for m in report.matches] == ["mhc_pre"], report.near_misses
    expected = mhc.op.mhc_pre_reference(x, fn, scale, base, 5, 1e-6, 1e-6)
    for got, want in zip(outs, expected):
        torch.testing.assert_close(got.float(), want.float(), rtol=1e-2, atol=1e-2)


def test_mhc_pre_matches_cuda_autocast_sums_with_an_explicit_fp32_dtype():
    """CUDA autocast runs `sum` with dtype=float32 even on fp32 inputs (its fp32_set_opt_dtype policy;
    CPU autocast does not), so on the H200 the model's Sinkhorn column sums carried a dtype kwarg the
    chain lacks and mHC never fused in training (run 4: no mhc_pre among 44 fusions; 4 of 4 sites fuse
    on the CPU). Canonicalisation drops a reduction's dtype equal to its input's: this spelling fuses."""
    import trex.passes.mhc_pre as mhc
    from trex.training.model.mhc import mhc_pre as model_mhc_pre

    n, d = N_STREAMS, 8
    f32 = torch.float32
    fn = (torch.randn((2 + n) * n, n * d) * 0.2).requires_grad_()
    scale, base = torch.rand(3) + 0.5, torch.randn((2 + n) * n) * 0.1
    x = make_input((2, 3, n, d), torch.bfloat16, seed=4).requires_grad_()

    def sinkhorn_cuda_autocast(logits, iters, eps):   # trex.training.model.mhc.sinkhorn as CUDA autocast traces it
        m = torch.softmax(logits, dim=-1, dtype=f32) + eps
        m = m / (m.sum(-2, keepdim=True, dtype=f32) + eps)
        for _ in range(iters - 1):
            m = m / (m.sum(-1, keepdim=True, dtype=f32) + eps)
            m = m / (m.sum(-2, keepdim=True, dtype=f32) + eps)
        return m

    def model(x, fn):
        xf = x.flatten(-2).float()
        r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + 1e-6)
        z = (xf @ fn.t()) * r
        zp, zq, zc = z[..., :n], z[..., n:2 * n], z[..., 2 * n:].unflatten(-1, (n, n))
        pre = torch.sigmoid(scale[0] * zp + base[:n]) + 1e-6
        post = 2.0 * torch.sigmoid(scale[1] * zq + base[n:2 * n])
        comb = sinkhorn_cuda_autocast(scale[2] * zc + base[2 * n:].view(n, n), 6, 1e-6)
        layer_input = (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2, dtype=f32).to(x.dtype)
        return layer_input, post, comb

    torch._dynamo.reset()
    with logs.capture() as reports:
        outs = torch.compile(model, backend="trex")(x, fn)
        sum(o.float().sum() for o in outs).backward()
    (report,) = reports
    assert [m.pattern for m in report.matches] == ["mhc_pre"], report.near_misses
    expected = model_mhc_pre(x.detach(), fn.detach(), scale, base, 6, 1e-6, 1e-6)
    for got, want in zip(outs, expected):
        torch.testing.assert_close(got.float(), want.float(), rtol=1e-2, atol=1e-2)
    assert fn.grad is not None and torch.isfinite(fn.grad).all() and x.grad is not None



@pytest.mark.parametrize("width", [16, 24])
def test_full_extent_slice_leaves_no_copy_in_the_backward(tmp_path, width):
    """`x[..., -R:]` over all of x's R channels is x itself: without the canonical rule it stayed in
    the graph and reached the backward as slice_backward, a zero fill and a copy of the whole gradient
    (H200: RoPE fwd+bwd through backend="trex" 0.258 ms against the fused op's 0.139 ms). Partial RoPE
    (width 24, the model's case) fuses with its pass-through channels: no slice there either."""
    rd = 16

    def rotate_last(x, cos, sin):
        nope, rot = x[..., :-rd], x[..., -rd:]
        xf = rot.float().unflatten(-1, (-1, 2))
        x0, x1 = xf[..., 0], xf[..., 1]
        c, s = cos[:, None, :], sin[:, None, :]
        out = torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).flatten(-2).to(x.dtype)
        return torch.cat((nope, out), dim=-1) if nope.shape[-1] else out

    x = make_input((5, 3, width), torch.bfloat16, seed=width).requires_grad_()
    ang = torch.rand(5, rd // 2, generator=torch.Generator().manual_seed(width)) * 6.28
    torch._dynamo.reset()
    compiled = torch.compile(rotate_last, backend="trex", options={"dump_dir": str(tmp_path)})
    compiled(x, ang.cos(), ang.sin()).float().square().sum().backward()
    grad = x.grad.clone()
    x.grad = None
    rotate_last(x, ang.cos(), ang.sin()).float().square().sum().backward()
    torch.testing.assert_close(grad, x.grad, rtol=2e-2, atol=2e-2)
    forward = "".join(p.read_text() for p in tmp_path.glob("*/forward.py"))
    backward = "".join(p.read_text() for p in tmp_path.glob("*/backward.py"))
    assert "torch.ops.trex.rope" in forward and "torch.ops.trex.rope" in backward
    assert "slice_backward" not in backward and "slice" not in forward.split("torch.ops.trex.rope")[0]
