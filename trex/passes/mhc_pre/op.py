"""mHC pre-projection of DeepSeek-V4 (reference/deepseek_v4.md §1): ``trex::mhc_pre`` / ``trex::mhc_pre_bwd``.

For residual streams x [..., n, d] (n = 4 in V4), fn [(2+n)n, n*d], scale [3], base [(2+n)n]:

    xf   = x.flatten(-2) in fp32;  r = rsqrt(mean(xf^2) + rms_eps)          (weight-free RMS over n*d)
    z    = (xf @ fn^T) * r;  zp, zq, zc = z[:n], z[n:2n], z[2n:].view(n, n)
    pre  = sigmoid(scale0*zp + base[:n]) + hc_eps
    post = 2 * sigmoid(scale1*zq + base[n:2n])
    comb = softmax(scale2*zc + base[2n:].view(n, n), -1) + hc_eps, then a column pass, then
           (iters - 1) x (row pass, column pass); a pass divides by (sum + hc_eps)
    layer_input = sum_i pre_i * xf_i, cast to x.dtype

One op returns (layer_input, post, comb); post and comb are fp32. The backward (``mhc_pre_bwd``) is
analytic: it recomputes the Sinkhorn iterates and walks them backwards.
"""
from __future__ import annotations

import torch

from trex.compiler.checks import (check_float, check_min_dim, check_number, check_same_device, check_shape,
                                  compute_dtype)
from trex.compiler.registry import define_fused_op
from trex.compiler.strategies import FuzzDraw

OP = "mhc_pre"
N_STREAMS = 4
# A fuzzed row of mHC costs like this many elements against the profile's cap (its Sinkhorn
# iterations run row by row)
FUZZ_ROW_COST = 256


def _check(op, x, fn, scale, base, iters, hc_eps, rms_eps):
    check_float(op, "x", x)
    check_min_dim(op, "x", x, 2)
    for name, t in (("fn", fn), ("scale", scale), ("base", base)):
        check_float(op, name, t)
    n, d = x.shape[-2], x.shape[-1]
    m = (2 + n) * n
    check_shape(op, "fn", fn, (m, n * d), "[(2+n)*n, n*d] for x [..., n, d]")
    check_shape(op, "scale", scale, (3,), "one gain each for pre, post, comb")
    check_shape(op, "base", base, (m,), "[(2+n)*n]")
    check_same_device(op, x=x, fn=fn, scale=scale, base=base)
    check_number(op, "iters", iters, minimum=1, integer=True)     # Sinkhorn iterations
    check_number(op, "hc_eps", hc_eps, minimum=0)
    check_number(op, "rms_eps", rms_eps, minimum=0)


def _coefficients(x, fn, scale, base, iters, hc_eps, rms_eps, ct, keep_iterates=False):
    n = x.shape[-2]
    xf = x.flatten(-2).to(ct)
    r = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + rms_eps)
    y = xf @ fn.to(ct).t()
    z = y * r
    sc, b = scale.to(ct), base.to(ct)
    sig_p = torch.sigmoid(sc[0] * z[..., :n] + b[:n])
    sig_q = torch.sigmoid(sc[1] * z[..., n:2 * n] + b[n:2 * n])
    soft = torch.softmax(sc[2] * z[..., 2 * n:].unflatten(-1, (n, n)) + b[2 * n:].view(n, n), dim=-1)
    m = soft + hc_eps
    iterates = []  # (matrix before the pass, reduced dim)
    for dim in [-2] + [-1, -2] * (iters - 1):
        iterates.append((m, dim))
        m = m / (m.sum(dim, keepdim=True) + hc_eps)
    parts = dict(xf=xf, r=r, y=y, z=z, sig_p=sig_p, sig_q=sig_q, soft=soft, iterates=iterates)
    return sig_p + hc_eps, 2 * sig_q, m, parts


def mhc_pre_reference(x: torch.Tensor, fn: torch.Tensor, scale: torch.Tensor, base: torch.Tensor, iters: int,
                      hc_eps: float, rms_eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _check(OP, x, fn, scale, base, iters, hc_eps, rms_eps)
    ct = compute_dtype(x.dtype, fn.dtype, scale.dtype, base.dtype)
    pre, post, comb, parts = _coefficients(x, fn, scale, base, iters, hc_eps, rms_eps, ct)
    layer_input = (pre.unsqueeze(-1) * parts["xf"].unflatten(-1, (x.shape[-2], x.shape[-1]))).sum(-2)
    return layer_input.to(x.dtype).contiguous(), post.contiguous(), comb.contiguous()


def _fake(x, fn, scale, base, iters, hc_eps, rms_eps):
    _check(OP, x, fn, scale, base, iters, hc_eps, rms_eps)
    ct = compute_dtype(x.dtype, fn.dtype, scale.dtype, base.dtype)
    n = x.shape[-2]
    lead = tuple(x.shape[:-2])
    return (x.new_empty(lead + (x.shape[-1],)), x.new_empty(lead + (n,), dtype=ct),
            x.new_empty(lead + (n, n), dtype=ct))


def mhc_pre_bwd_reference(d_layer_input: torch.Tensor, d_post: torch.Tensor, d_comb: torch.Tensor,
                          x: torch.Tensor, fn: torch.Tensor, scale: torch.Tensor, base: torch.Tensor, iters: int,
                          hc_eps: float, rms_eps: float
                          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    _check("mhc_pre_bwd", x, fn, scale, base, iters, hc_eps, rms_eps)
    ct = compute_dtype(x.dtype, fn.dtype, scale.dtype, base.dtype, d_layer_input.dtype)
    n, d = x.shape[-2], x.shape[-1]
    pre, _post, _comb, p = _coefficients(x, fn, scale, base, iters, hc_eps, rms_eps, ct)
    xf, r, y, z = p["xf"], p["r"], p["y"], p["z"]
    xs = xf.unflatten(-1, (n, d))
    dli, dpost, dm = d_layer_input.to(ct), d_post.to(ct), d_comb.to(ct)
    # collapse: layer_input = sum_i pre_i * x_i
    dxs = pre.unsqueeze(-1) * dli.unsqueeze(-2)
    dpre = (xs * dli.unsqueeze(-2)).sum(-1)
    # Sinkhorn passes, newest first: m' = m / (s + eps), s = m.sum(dim)
    for m, dim in reversed(p["iterates"]):
        den = m.sum(dim, keepdim=True) + hc_eps
        dm = dm / den - (dm * m).sum(dim, keepdim=True) / den.pow(2)
    soft = p["soft"]
    da_c = soft * (dm - (dm * soft).sum(-1, keepdim=True))
    da_p = dpre * p["sig_p"] * (1 - p["sig_p"])
    da_q = dpost * 2 * p["sig_q"] * (1 - p["sig_q"])
    sc = scale.to(ct)
    zp, zq, zc = z[..., :n], z[..., n:2 * n], z[..., 2 * n:].unflatten(-1, (n, n))
    dscale = torch.stack([(da_p * zp).sum(), (da_q * zq).sum(), (da_c * zc).sum()])
    dbase = torch.cat([da_p.reshape(-1, n).sum(0), da_q.reshape(-1, n).sum(0), da_c.reshape(-1, n * n).sum(0)])
    dz = torch.cat([da_p * sc[0], da_q * sc[1], (da_c * sc[2]).flatten(-2)], dim=-1)
    dy = dz * r
    dr = (dz * y).sum(-1, keepdim=True)
    fnc = fn.to(ct)
    dxf = dy @ fnc + dxs.flatten(-2) - dr * r.pow(3) * xf / xf.shape[-1]
    dfn = dy.reshape(-1, dy.shape[-1]).t() @ xf.reshape(-1, xf.shape[-1])
    return (dxf.unflatten(-1, (n, d)).to(x.dtype).contiguous(), dfn.to(fn.dtype).contiguous(),
            dscale.to(scale.dtype).contiguous(), dbase.to(base.dtype).contiguous())


def _bwd_fake(d_layer_input, d_post, d_comb, x, fn, scale, base, iters, hc_eps, rms_eps):
    _check("mhc_pre_bwd", x, fn, scale, base, iters, hc_eps, rms_eps)
    return x.new_empty(x.shape), fn.new_empty(fn.shape), scale.new_empty(scale.shape), base.new_empty(base.shape)


def _samples(dtype):
    g = torch.Generator().manual_seed(3)
    p_dtype = torch.float32 if dtype != torch.float64 else dtype

    def params(n, d):
        m = (2 + n) * n
        return (torch.randn(m, n * d, generator=g).to(p_dtype) * 0.2, (torch.rand(3, generator=g) + 0.5).to(p_dtype),
                (torch.randn(m, generator=g) * 0.1).to(p_dtype))

    return [
        (torch.randn(2, 3, 4, 8, generator=g).to(dtype), *params(4, 8), 3, 1e-6, 1e-6),
        (torch.randn(5, 4, 7, generator=g).to(dtype), *params(4, 7), 1, 1e-6, 1e-5),
        (torch.randn(1, 2, 2 * 5, generator=g).to(dtype)[..., ::2], *params(2, 5), 4, 1e-4, 1e-6),
    ]


def _bwd_samples(dtype):
    g = torch.Generator().manual_seed(1)    # the same output gradients every call
    out = []
    for x, fn, scale, base, iters, hc_eps, rms_eps in _samples(dtype):
        li, post, comb = mhc_pre_reference(x, fn, scale, base, iters, hc_eps, rms_eps)
        out.append((torch.randn(li.shape, generator=g).to(li.dtype), torch.randn(post.shape, generator=g).to(post.dtype),
                    torch.randn(comb.shape, generator=g).to(comb.dtype), x, fn, scale, base, iters, hc_eps, rms_eps))
    return out


def _fuzz_forward_arguments(d: FuzzDraw):
    """(lead, n, width, forward args) for the fuzzer: 2 or 4 streams of odd and aligned widths."""
    n, width = d.pick((2, 4)), d.pick((1, 7, 16, 33, 130))
    lead = d.lead(d.rows(max(n * width, FUZZ_ROW_COST)))
    m = (2 + n) * n
    x = d.tensor((*lead, n, width))
    fn = torch.randn(m, n * width, generator=d.gen) * (n * width) ** -0.5
    scale, base = torch.rand(3, generator=d.gen) + 0.5, torch.randn(m, generator=d.gen) * 0.1
    return lead, n, width, (x, fn, scale, base, d.draw(d.st.integers(1, 20)), 1e-6, 1e-6)


def _fuzz_bwd_arguments(d: FuzzDraw) -> tuple:
    lead, n, width, fwd = _fuzz_forward_arguments(d)
    return (d.tensor((*lead, width)), d.randn((*lead, n), torch.float32), d.randn((*lead, n, n), torch.float32),
            *fwd)


mhc_pre = define_fused_op(
    OP, "(Tensor x, Tensor fn, Tensor scale, Tensor base, int iters, float hc_eps, float rms_eps) "
        "-> (Tensor layer_input, Tensor post, Tensor comb)",
    reference=mhc_pre_reference, fake=_fake, sample_inputs=_samples, differentiable_args=(0, 1, 2, 3),
    fuzz_arguments=lambda d: _fuzz_forward_arguments(d)[3])
mhc_pre_bwd = define_fused_op(
    "mhc_pre_bwd",
    "(Tensor d_layer_input, Tensor d_post, Tensor d_comb, Tensor x, Tensor fn, Tensor scale, Tensor base, "
    "int iters, float hc_eps, float rms_eps) -> (Tensor dx, Tensor dfn, Tensor dscale, Tensor dbase)",
    reference=mhc_pre_bwd_reference, fake=_bwd_fake, sample_inputs=_bwd_samples, backward_of=OP,
    differentiable_args=(0, 1, 2), fuzz_arguments=_fuzz_bwd_arguments)


def _setup_context(ctx, inputs, output):
    x, fn, scale, base, iters, hc_eps, rms_eps = inputs
    ctx.save_for_backward(x, fn, scale, base)
    ctx.consts = (iters, hc_eps, rms_eps)


def _backward(ctx, d_layer_input, d_post, d_comb):
    x, fn, scale, base = ctx.saved_tensors
    dx, dfn, dscale, dbase = torch.ops.trex.mhc_pre_bwd(d_layer_input, d_post, d_comb, x, fn, scale, base,
                                                        *ctx.consts)
    return dx, dfn, dscale, dbase, None, None, None


mhc_pre.register_autograd(_backward, setup_context=_setup_context)
