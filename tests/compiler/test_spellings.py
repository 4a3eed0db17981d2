"""Each pattern in the spellings real model code uses: one compiled function per family holds every
spelling (one compile), and each spelling must become exactly one fused op in the forward graph and
its fused backward in the backward graph, with outputs and gradients within the numerics rule."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from trex.passes.mhc_pre.op import N_STREAMS
from trex.compiler import logs, registry
from trex.compiler.testing import assert_close_to_reference, make_input, trex_op_counts

EPS, L = 1e-6, 7.0
ref_rms = registry.fused_ops()["rms_norm"].reference
ref_swiglu = registry.fused_ops()["swiglu_limited"].reference
ref_rope = registry.fused_ops()["rope"].reference


# ---------------------------------------------------------------------------------------- RMSNorm
def rms_reference_style(x, w):
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype)


def rms_hf_style(x, w):
    xf = x.to(torch.float32)
    return w * (xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + EPS)).type_as(x)


def rms_sum_over_n(x, w):
    xf = x.float()
    var = (xf * xf).sum(-1, keepdim=True) / x.shape[-1]
    return (xf * (1 / torch.sqrt(var + EPS)) * w.float()).to(x.dtype)     # weight before the down-cast


def rms_divide_by_sqrt(x, w):
    xf = x.float()
    return (w * (xf / torch.sqrt(torch.mean(torch.pow(xf, 2), dim=2, keepdim=True) + EPS))).to(x.dtype)


def rms_inplace_weight_free(x, w):
    # DeepSeek's per-head query norm; in-place, so only valid without autograd (inference)
    y = x.float()
    y *= torch.rsqrt(y.square().mean(-1, keepdim=True) + EPS)
    return y.to(x.dtype)


def rms_rsqrt_first_weight_free(x, w):
    xf = x.float()
    return (torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * xf).to(x.dtype)


def rms_weight_free(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).type_as(x)


def rms_torch_functional(x, w):
    return F.rms_norm(x, (x.shape[-1],), w, EPS)          # PyTorch's own op, decomposed (in-place + eps)


_TORCH_RMS_NORM = torch.nn.RMSNorm(40, eps=EPS, elementwise_affine=False)


def rms_torch_module_weight_free(x, w):
    return _TORCH_RMS_NORM(x)


def rms_weight_first(x, w):
    xf = x.float()
    return (w * xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype)


def rms_mean_without_keepdim(x, w):
    xf = x.float()
    return (w * (xf * torch.rsqrt(xf.pow(2).mean(-1)[..., None] + EPS))).to(x.dtype)


RMS_SPELLINGS = [(rms_torch_functional, True), (rms_torch_module_weight_free, False), (rms_weight_first, True),
                 (rms_mean_without_keepdim, True), (rms_reference_style, True), (rms_hf_style, True), (rms_sum_over_n, True),
                 (rms_divide_by_sqrt, True), (rms_rsqrt_first_weight_free, False), (rms_weight_free, False)]


# ---------------------------------------------------------------------------------------- SwiGLU
def swiglu_reference_style(g, u, r):
    return (r * (F.silu(g.float().clamp(max=L)) * u.float().clamp(-L, L))).to(g.dtype)


def swiglu_sigmoid_clamp_max(g, u, r):
    gf = g.float().clamp_max(L)
    return ((gf * torch.sigmoid(gf)) * u.float().clamp(min=-L, max=L) * r).to(g.dtype)


def swiglu_clamp_min_max_late_route(g, u, r):
    gf = g.to(torch.float32).clamp_max(L)
    uf = u.to(torch.float32).clamp_min(-L).clamp_max(L)
    return (F.silu(gf) * uf).to(g.dtype) * r.to(g.dtype)        # routing weight after the down-cast


def swiglu_exp_form_unrouted(g, u, r):
    gf = g.float().clamp(max=L)
    return (gf / (1 + torch.exp(-gf)) * u.float().clamp(-L, L)).to(g.dtype)


def swiglu_transformers_v4_mlp(g, u, r):
    # transformers' DeepseekV4MLP: no explicit fp32 casts, clamp(min=, max=) keywords
    return F.silu(g.clamp(max=L)) * u.clamp(min=-L, max=L)


def swiglu_transformers_v4_experts_chunk(g, u, r):
    # transformers' DeepseekV4Experts._apply_gate on the packed gate_up projection
    gate, up = torch.cat([g, u], dim=-1).chunk(2, dim=-1)
    return (F.silu(gate.float().clamp(max=L)) * up.float().clamp(min=-L, max=L)).to(g.dtype)


SWIGLU_SPELLINGS = [(swiglu_transformers_v4_mlp, False), (swiglu_transformers_v4_experts_chunk, False), (swiglu_reference_style, True), (swiglu_sigmoid_clamp_max, True),
                    (swiglu_clamp_min_max_late_route, True), (swiglu_exp_form_unrouted, False)]


# ---------------------------------------------------------------------------------------- RoPE
RD = 8


def _complex(x, freqs):
    return torch.view_as_real(torch.view_as_complex(x.float().unflatten(-1, (-1, 2))) * freqs).flatten(-2).to(x.dtype)


def rope_complex_full(x, freqs, cos, sin):
    return _complex(x[..., :RD], freqs)


def rope_complex_partial_inverse_cat(x, freqs, cos, sin):
    return torch.cat([x[..., :-RD], _complex(x[..., -RD:], freqs.conj())], dim=-1)


def rope_real_partial_inplace(x, freqs, cos, sin):
    y = x.clone()
    a, b = y[..., -RD:][..., 0::2].float(), y[..., -RD:][..., 1::2].float()
    y[..., -RD:] = torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2).to(x.dtype)
    return y


def rope_real_negated_sin(x, freqs, cos, sin):
    pairs = x[..., -RD:].float().unflatten(-1, (-1, 2))
    a, b = pairs[..., 0], pairs[..., 1]
    s = -sin
    rot = torch.stack([a * cos - b * s, b * cos + a * s], -1).flatten(-2).type_as(x)
    return torch.cat([x[..., :-RD], rot], -1)


def rope_transformers_v4_rotate_half(x, freqs, cos, sin):
    # transformers' DeepSeek-V4 apply_rotary_pos_emb: repeat_interleave'd tables, interleaved rotate_half
    c, s = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
    nope, rope = x[..., :-RD], x[..., -RD:]
    x1, x2 = rope[..., 0::2], rope[..., 1::2]
    rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)
    return torch.cat([nope, ((rope.float() * c) + (rotated.float() * s)).to(x.dtype)], dim=-1)


def rope_transformers_v4_rotate_half_inverse(x, freqs, cos, sin):
    return rope_transformers_v4_rotate_half(x, freqs, cos, -sin)


def rope_official_inplace_conj_view(x, freqs, cos, sin):
    # the official apply_rotary_emb: complex, the inverse through freqs.conj().view(...), written back in place
    y = x.clone()
    part = y[..., -RD:]
    xc = torch.view_as_complex(part.float().unflatten(-1, (-1, 2)))
    f = freqs.conj().view(1, xc.size(1), 1, xc.size(-1))
    part.copy_(torch.view_as_real(xc * f).flatten(-2))
    return y


# (fn, inverse, partial)
ROPE_SPELLINGS = [(rope_transformers_v4_rotate_half, False, True), (rope_transformers_v4_rotate_half_inverse, True, True),
                  (rope_official_inplace_conj_view, True, True), (rope_complex_full, False, False), (rope_complex_partial_inverse_cat, True, True),
                  (rope_real_partial_inplace, False, True), (rope_real_negated_sin, True, True)]


def _fp64(t):
    return t.detach().to(torch.float64).requires_grad_(t.requires_grad)


def _compile_and_run(fn, inputs, dtype):
    with logs.capture() as reports:
        outs = torch.compile(fn, backend="trex")(*inputs)
        sum(o.float().pow(2).sum() for o in outs).backward()
    (report,) = reports
    return outs, report


def _check_graphs(report, fwd_op, bwd_op, n):
    fw, bw = report.compiled_graphs["forward"], report.compiled_graphs["backward"]
    assert trex_op_counts(fw)[fwd_op] == n, report.format()
    assert trex_op_counts(bw)[bwd_op] == n, report.format()
    assert report.fallbacks == []


@pytest.mark.parametrize("dtype", [torch.bfloat16])
def test_rms_norm_spellings(dtype):
    xs = [make_input((3, 5, 40), dtype, seed=i, requires_grad=True) for i in range(len(RMS_SPELLINGS))]
    w = make_input((40,), dtype, seed=99, requires_grad=True)

    def all_spellings(w, *xs):
        return tuple(fn(x, w) for (fn, _), x in zip(RMS_SPELLINGS, xs))

    outs, report = _compile_and_run(all_spellings, [w, *xs], dtype)
    assert report.match_counts()["rms_norm"] == len(RMS_SPELLINGS)
    _check_graphs(report, "rms_norm", "rms_norm_bwd", len(RMS_SPELLINGS))
    for (fn, weighted), x, out in zip(RMS_SPELLINGS, xs, outs):
        x_e = x.detach().clone().requires_grad_()
        eager = fn(x_e, w.detach())
        eager.float().pow(2).sum().backward()
        x_r = _fp64(x)
        ref = ref_rms(x_r, _fp64(w) if weighted else None, EPS, None)[0]
        ref.pow(2).sum().backward()
        assert_close_to_reference(out, eager, ref, name=fn.__name__)
        assert_close_to_reference(x.grad, x_e.grad, x_r.grad, name=f"{fn.__name__} dx")


def test_rms_norm_inplace_spelling_in_inference():
    x = make_input((3, 5, 40), torch.bfloat16, seed=3)
    with torch.no_grad(), logs.capture() as reports:
        out = torch.compile(rms_inplace_weight_free, backend="trex")(x, None)
    (report,) = reports
    assert trex_op_counts(report.compiled_graphs["inference"]) == {"rms_norm": 1}
    ref = ref_rms(x.double(), None, EPS, None)[0]
    assert_close_to_reference(out, rms_inplace_weight_free(x, None), ref)


def test_swiglu_limited_spellings():
    dtype = torch.bfloat16
    n = len(SWIGLU_SPELLINGS)
    gs = [make_input((4, 6, 24), dtype, scale=5, seed=i, requires_grad=True) for i in range(n)]
    us = [make_input((4, 6, 24), dtype, scale=5, seed=10 + i, requires_grad=True) for i in range(n)]
    r = torch.rand(4, 6, 1, requires_grad=True)

    def all_spellings(r, *gu):
        return tuple(fn(g, u, r) for (fn, _), g, u in zip(SWIGLU_SPELLINGS, gu[:n], gu[n:]))

    outs, report = _compile_and_run(all_spellings, [r, *gs, *us], dtype)
    assert report.match_counts()["swiglu_limited"] == n
    _check_graphs(report, "swiglu_limited", "swiglu_limited_bwd", n)
    for (fn, routed), g, u, out in zip(SWIGLU_SPELLINGS, gs, us, outs):
        g_e, u_e = g.detach().clone().requires_grad_(), u.detach().clone().requires_grad_()
        eager = fn(g_e, u_e, r.detach())
        eager.float().pow(2).sum().backward()
        g_r, u_r = _fp64(g), _fp64(u)
        ref = ref_swiglu(g_r, u_r, L, _fp64(r) if routed else None, None)
        ref.pow(2).sum().backward()
        assert_close_to_reference(out, eager, ref, name=fn.__name__)
        assert_close_to_reference(g.grad, g_e.grad, g_r.grad, name=f"{fn.__name__} dgate")
        assert_close_to_reference(u.grad, u_e.grad, u_r.grad, name=f"{fn.__name__} dup")


def test_rope_spellings():
    dtype = torch.bfloat16
    n = len(ROPE_SPELLINGS)
    xs = [make_input((2, 5, 3, 24), dtype, seed=i, requires_grad=True) for i in range(n)]
    ang = torch.randn(5, 1, RD // 2)
    freqs = torch.polar(torch.ones_like(ang), ang)
    cos, sin = ang.cos(), ang.sin()

    def all_spellings(freqs, cos, sin, *xs):
        return tuple(fn(x, freqs, cos, sin) for (fn, _, _), x in zip(ROPE_SPELLINGS, xs))

    outs, report = _compile_and_run(all_spellings, [freqs, cos, sin, *xs], dtype)
    assert report.match_counts()["rope"] == n
    _check_graphs(report, "rope", "rope", n)
    aten_cat = sum(1 for node in report.compiled_graphs["forward"].graph.nodes if "cat" in str(node.target))
    assert aten_cat == 0, "partial rotation not absorbed into one op"
    for (fn, inverse, partial), x, out in zip(ROPE_SPELLINGS, xs, outs):
        x_e = x.detach().clone().requires_grad_()
        eager = fn(x_e, freqs, cos, sin)
        eager.float().pow(2).sum().backward()
        x_r = _fp64(x)
        xin = x_r if partial else x_r[..., :RD]
        ref = ref_rope(xin, cos.double(), sin.double(), RD, inverse)
        ref.pow(2).sum().backward()
        assert_close_to_reference(out, eager, ref, name=fn.__name__)
        assert_close_to_reference(x.grad, x_e.grad, x_r.grad, name=f"{fn.__name__} dx")


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
