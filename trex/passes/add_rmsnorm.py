"""Fused residual add + RMSNorm: ``trex::add_rms_norm`` -- the worked example of docs/authoring-a-pattern.md.

h = x + residual (the new residual stream, in x.dtype); y = rms_norm(h) [* weight] in ``out_dtype``.
Its backward reuses ``trex::rms_norm_bwd`` (a fused op) plus one add for the residual branch.

Opt-in (``options={"patterns": [..., "add_rms_norm"]}``): it overlaps the plain RMSNorm pattern, and
DeepSeek-V4 blocks have no residual add in front of their norms (mHC replaces it).
"""
from __future__ import annotations

import torch

from trex.compiler.checks import check_same_dtype, check_same_shape
from trex.compiler.pattern import Pattern
from trex.compiler.registry import define_fused_op, register_pattern

from .rmsnorm import _check as _check_rms_norm
from .rmsnorm import fuzz_rms_norm_arguments, rms_norm_reference

OP = "add_rms_norm"


# 1. the composite reference: any leading shape, strides and dtype (fp64 included)
def add_rms_norm_reference(x: torch.Tensor, residual: torch.Tensor, weight: torch.Tensor | None, eps: float,
                           out_dtype: torch.dtype | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _check(x, residual, weight)
    h = (x + residual).contiguous()
    y, rstd = rms_norm_reference(h, weight, eps, out_dtype)
    return y, h, rstd


# 2. the fake implementation: shapes and dtypes only, same checks
def _fake(x, residual, weight, eps, out_dtype):
    _check(x, residual, weight)
    return (x.new_empty(x.shape, dtype=out_dtype or x.dtype), x.new_empty(x.shape),
            x.new_empty(x.shape[:-1], dtype=torch.promote_types(x.dtype, torch.float32)))


def _check(x, residual, weight):
    check_same_dtype(OP, x=x, residual=residual)
    check_same_shape(OP, x=x, residual=residual)
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


# 4. the eager chain, as model code writes it; the two outputs are the normed value and the residual
def add_rms_norm_chain(x, residual, weight, *, eps):
    h = x + residual
    hf = h.float()
    return weight * (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + eps)).to(h.dtype), h


# 5. the replacement: what the chain becomes (returns one value per chain output)
def _replace(x, residual, weight, *, eps, out_dtypes):
    y, h, _rstd = torch.ops.trex.add_rms_norm(x, residual, weight, eps, out_dtypes[0])
    return y, h


# 6. extra checks: what the structure alone does not guarantee
def _extra_check(match) -> str | None:
    x, residual, w = match.input_val("x"), match.input_val("residual"), match.input_val("weight")
    if x.dtype != residual.dtype or tuple(x.shape) != tuple(residual.shape):
        return f"x {tuple(x.shape)}/{x.dtype} and residual {tuple(residual.shape)}/{residual.dtype} differ"
    h_dtype = match.outputs[1].meta["val"].dtype
    if h_dtype != x.dtype:   # e.g. h = x.float() + residual.float(): the fused op returns h in x's dtype
        return f"the sum h is {h_dtype} but x is {x.dtype} (inputs up-cast before the add)"
    if w.dim() != 1 or w.shape[0] != x.shape[-1]:
        return f"the multiplier has shape {tuple(w.shape)}, not a weight of shape ({x.shape[-1]},)"
    return None


def _examples(dtype):
    return {"x": torch.randn(2, 3, 16, dtype=dtype), "residual": torch.randn(2, 3, 16, dtype=dtype),
            "weight": torch.randn(16, dtype=dtype)}


register_pattern(Pattern(
    name="add_rms_norm",
    chains=[add_rms_norm_chain],
    replacement=_replace,
    example_inputs=_examples,
    extra_check=_extra_check,
    fused_ops=("add_rms_norm", "rms_norm_bwd"),
    enabled_by_default=False,
    priority=5,                # before rms_norm, which would otherwise take the norm alone
    description="residual add + RMSNorm (guide example, opt-in)",
))
