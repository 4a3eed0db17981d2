"""Fused residual add + RMSNorm: ``trex::add_rms_norm`` -- the worked example of docs/authoring-a-pattern.md.

h = x + residual (the new residual stream, in x.dtype); y = rms_norm(h) [* weight] in ``out_dtype``.
Its backward reuses ``trex::rms_norm_bwd`` (a fused op) plus one add for the residual branch.
"""
from __future__ import annotations

import torch

from trex.compiler.checks import check_same_device, check_same_dtype, check_same_shape
from trex.compiler.registry import define_fused_op

from ..rms_norm.op import _check as _check_rms_norm
from ..rms_norm.op import check_scalars
from ..rms_norm.op import fuzz_rms_norm_arguments, rms_norm_reference

OP = "add_rms_norm"


# 1. the composite reference: any leading shape, strides and dtype (fp64 included)
def add_rms_norm_reference(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor | None, eps: float,
                           out_dtype: torch.dtype | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _check(x, residual, weight)
    check_scalars(OP, eps, out_dtype)
    h = (x + residual).contiguous()
    y, rstd = rms_norm_reference(h, weight, eps, out_dtype)
    return y, h, rstd


# 2. the fake implementation: shapes and dtypes only, same checks
def _fake(x, residual, weight, eps, out_dtype):
    _check(x, residual, weight)
    check_scalars(OP, eps, out_dtype)
    return (x.new_empty(x.shape, dtype=out_dtype or x.dtype), x.new_empty(x.shape),
            x.new_empty(x.shape[:-1], dtype=torch.promote_types(x.dtype, torch.float32)))


def _check(x, residual, weight):
    check_same_dtype(OP, x=x, residual=residual)
    check_same_shape(OP, x=x, residual=residual)
    check_same_device(OP, x=x, residual=residual, weight=weight)
    _check_rms_norm(x, weight)


def _samples(dtype):
    g = torch.Generator().manual_seed(4)
    w_dtype = torch.float32 if dtype != torch.float64 else dtype
    return [
        (torch.randn(2, 3, 16, generator=g).to(dtype), torch.randn(2, 3, 16, generator=g).to(dtype),
         torch.randn(16, generator=g).to(w_dtype), 1e-6, None),
        (torch.randn(5, 7, generator=g).to(dtype), torch.randn(5, 7, generator=g).to(dtype), None, 1e-5, None),
    ]


def _fuzz_arguments(d) -> tuple:
    """Fuzz arguments (trex.compiler.strategies.fuzz_arguments): rms_norm's, plus a residual of x's shape."""
    x, w, eps, out_dtype = fuzz_rms_norm_arguments(d)
    return (x, d.tensor(x.shape), w, eps, out_dtype)


add_rms_norm = define_fused_op(
    OP, "(Tensor x, Tensor residual, Tensor? weight, float eps, ScalarType? out_dtype) "
        "-> (Tensor y, Tensor h, Tensor rstd)",
    reference=add_rms_norm_reference, fake=_fake, sample_inputs=_samples, differentiable_args=(0, 1, 2),
    fuzz_arguments=_fuzz_arguments)


# 3. autograd: the backward is made of fused ops (rms_norm_bwd) -- never the eager chain
def _setup_context(ctx, inputs, output):
    _x, _residual, weight, _eps, _out_dtype = inputs
    _y, h, rstd = output
    ctx.save_for_backward(h, weight, rstd)
    ctx.mark_non_differentiable(rstd)


def _backward(ctx, dy, dh, _drstd):
    h, weight, rstd = ctx.saved_tensors
    dh_norm, dw = torch.ops.trex.rms_norm_bwd(dy, h, weight, rstd)
    d = dh_norm + dh           # h feeds the norm and, as the new residual, the rest of the network
    return d, d, (dw if weight is not None else None), None, None


add_rms_norm.register_autograd(_backward, setup_context=_setup_context)
