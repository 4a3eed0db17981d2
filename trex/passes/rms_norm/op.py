"""RMSNorm over the last dimension, weighted and weight-free: ``trex::rms_norm`` / ``trex::rms_norm_bwd``.

y = x * rsqrt(mean(x^2, -1) + eps) [* weight], computed in fp32, returned in ``out_dtype``
(default x.dtype); ``rstd`` (fp32, shape x.shape[:-1]) is saved for the backward.
Backward (analytic): with xhat = x*rstd and g = dy*weight,
dx = rstd * (g - xhat * mean(g*xhat, -1)),  dw = sum over rows of dy*xhat.
"""
from __future__ import annotations

import torch

from trex.compiler.checks import (check_float, check_min_dim, check_number, check_out_dtype, check_same_device,
                                  check_shape, compute_dtype)
from trex.compiler.registry import define_fused_op
from trex.compiler.strategies import HIDDEN_SIZES, FuzzDraw

OP = "rms_norm"


def _check(x: torch.Tensor, weight: torch.Tensor | None) -> None:
    check_float(OP, "x", x)
    check_min_dim(OP, "x", x, 1)
    check_float(OP, "weight", weight, optional=True)
    if weight is not None:
        check_shape(OP, "weight", weight, (x.shape[-1],), "the size of x's last dimension")
    check_same_device(OP, x=x, weight=weight)


def check_scalars(op: str, eps: float, out_dtype: torch.dtype | None) -> None:
    check_number(op, "eps", eps, minimum=0)
    check_out_dtype(op, "out_dtype", out_dtype)


# ------------------------------------------------------------------------------------------ forward
def rms_norm_reference(x: torch.Tensor, weight: torch.Tensor | None, eps: float,
                       out_dtype: torch.dtype | None) -> tuple[torch.Tensor, torch.Tensor]:
    _check(x, weight)
    check_scalars(OP, eps, out_dtype)
    ct = compute_dtype(x.dtype)
    xf = x.to(ct)
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    y = xf * rstd
    if weight is not None:
        y = y * weight.to(ct)
    return y.to(out_dtype or x.dtype).contiguous(), rstd.squeeze(-1).contiguous()


def _rms_norm_fake(x, weight, eps, out_dtype):
    _check(x, weight)
    check_scalars(OP, eps, out_dtype)
    ct = compute_dtype(x.dtype)
    return x.new_empty(x.shape, dtype=out_dtype or x.dtype), x.new_empty(x.shape[:-1], dtype=ct)


# ------------------------------------------------------------------------------------------ backward
def _check_bwd(dy, x, weight, rstd):
    _check(x, weight)
    check_float("rms_norm_bwd", "dy", dy)
    check_shape("rms_norm_bwd", "dy", dy, tuple(x.shape), "the shape of x")
    check_shape("rms_norm_bwd", "rstd", rstd, tuple(x.shape[:-1]), "x.shape[:-1]")
    check_same_device("rms_norm_bwd", dy=dy, x=x, rstd=rstd)


def rms_norm_bwd_reference(dy: torch.Tensor, x: torch.Tensor, weight: torch.Tensor | None,
                           rstd: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    _check_bwd(dy, x, weight, rstd)
    ct = compute_dtype(x.dtype, dy.dtype)
    xf, dyf, r = x.to(ct), dy.to(ct), rstd.to(ct).unsqueeze(-1)
    xhat = xf * r
    g = dyf * weight.to(ct) if weight is not None else dyf
    dx = r * (g - xhat * (g * xhat).mean(-1, keepdim=True))
    if weight is None:
        dw = x.new_empty((0,))
    else:
        # sum over the rows; flatten, not reshape(-1, d), which is ambiguous for a hidden size of 0
        per_row = dyf * xhat
        dw = (per_row.flatten(0, -2).sum(0) if per_row.dim() > 1 else per_row).to(weight.dtype)
    return dx.to(x.dtype).contiguous(), dw.contiguous()


def _rms_norm_bwd_fake(dy, x, weight, rstd):
    _check_bwd(dy, x, weight, rstd)
    dw = x.new_empty((0,)) if weight is None else weight.new_empty(weight.shape)
    return x.new_empty(x.shape), dw


# ------------------------------------------------------------------------------------------ samples
def _samples(dtype: torch.dtype) -> list[tuple]:
    g = torch.Generator().manual_seed(0)

    def rnd(*shape, dt=dtype):
        return torch.randn(*shape, generator=g, dtype=torch.float32).to(dt)

    wide = rnd(3, 2 * 130)[:, ::2]                      # non-contiguous rows
    return [
        (rnd(2, 3, 16), rnd(16), 1e-6, None),
        (rnd(5, 7), None, 1e-5, None),
        (wide, rnd(130, dt=torch.float32 if dtype != torch.float64 else dtype), 1e-6, torch.float32),
        (rnd(1, 1), rnd(1), 1e-6, None),
    ]


def _bwd_samples(dtype: torch.dtype) -> list[tuple]:
    g = torch.Generator().manual_seed(1)    # the same dy every call: a failing sample reproduces
    out = []
    for x, w, eps, out_dtype in _samples(dtype):
        y, rstd = rms_norm_reference(x, w, eps, out_dtype)
        out.append((torch.randn(y.shape, generator=g, dtype=torch.float32).to(y.dtype), x, w, rstd))
    return out


def fuzz_rms_norm_arguments(d: FuzzDraw) -> tuple:
    """Fuzz arguments (trex.compiler.strategies.fuzz_arguments): any hidden size and leading shape,
    no weight or one in the input dtype or fp32."""
    hidden = d.pick(HIDDEN_SIZES)
    lead = d.lead(d.rows(hidden))
    x = d.tensor((*lead, hidden))
    w_dtype = d.pick((None, d.dtype, torch.float32))
    w = None if w_dtype is None else d.randn((hidden,), w_dtype)
    return (x, w, d.pick((1e-6, 1e-5)), None)


def _fuzz_bwd_arguments(d: FuzzDraw) -> tuple:
    # rstd is the forward's (the backward only ever receives the forward's saved rstd)
    x, w, eps, _ = fuzz_rms_norm_arguments(d)
    _, rstd = rms_norm_reference(x, w, eps, None)
    return (d.tensor(x.shape), x, w, rstd)


rms_norm = define_fused_op(
    OP, "(Tensor x, Tensor? weight, float eps, ScalarType? out_dtype) -> (Tensor y, Tensor rstd)",
    reference=rms_norm_reference, fake=_rms_norm_fake, sample_inputs=_samples, differentiable_args=(0, 1),
    fuzz_arguments=fuzz_rms_norm_arguments)
rms_norm_bwd = define_fused_op(
    "rms_norm_bwd", "(Tensor dy, Tensor x, Tensor? weight, Tensor rstd) -> (Tensor dx, Tensor dw)",
    reference=rms_norm_bwd_reference, fake=_rms_norm_bwd_fake, sample_inputs=_bwd_samples,
    backward_of=OP, differentiable_args=(0, 1, 2), fuzz_arguments=_fuzz_bwd_arguments)


def _setup_context(ctx, inputs, output):
    x, weight, _eps, _out_dtype = inputs
    _y, rstd = output
    ctx.save_for_backward(x, weight, rstd)
    ctx.mark_non_differentiable(rstd)


def _backward(ctx, dy, _drstd):
    x, weight, rstd = ctx.saved_tensors
    dx, dw = torch.ops.trex.rms_norm_bwd(dy, x, weight, rstd)
    return dx, (dw if weight is not None else None), None, None


rms_norm.register_autograd(_backward, setup_context=_setup_context)
