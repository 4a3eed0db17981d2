"""Partial interleaved rotary embedding, forward and inverse: ``trex::rope``.

rope(x, cos, sin, rope_dim, inverse) rotates the LAST ``rope_dim`` channels of x[..., head_dim] as
interleaved pairs (2i, 2i+1): (a, b) -> (a*cos - b*sin, a*sin + b*cos); ``inverse`` uses -sin (the
conjugate rotation, DeepSeek-V4's de-rotation of the attention output). The other channels pass
through. cos/sin have last dim rope_dim // 2 and broadcast against x[..., :rope_dim // 2]. Computed
in fp32, returned in x.dtype. cos/sin are constants for autograd (position tables).

Backward: the opposite rotation, rope(dy, cos, sin, rope_dim, not inverse) -- no separate op.
"""
from __future__ import annotations

import torch

from trex.compiler.checks import check_float, check_number, check_same_device, compute_dtype
from trex.compiler.registry import define_fused_op
from trex.compiler.strategies import FuzzDraw

OP = "rope"


def _check(x, cos, sin, rope_dim):
    check_float(OP, "x", x)
    check_float(OP, "cos", cos)
    check_float(OP, "sin", sin)
    check_same_device(OP, x=x, cos=cos, sin=sin)
    check_number(OP, "rope_dim", rope_dim, integer=True)
    if x.dim() < 1:
        raise ValueError(f"trex.{OP}: argument 'x' must have a last (head) dimension, got a scalar")
    if rope_dim <= 0 or rope_dim % 2 or rope_dim > x.shape[-1]:
        raise ValueError(f"trex.{OP}: argument 'rope_dim' must be even and in (0, {x.shape[-1]}] (x's last "
                         f"dim), got {rope_dim}")
    half = rope_dim // 2
    for name, t in (("cos", cos), ("sin", sin)):
        if t.shape[-1] != half:
            raise ValueError(f"trex.{OP}: argument {name!r} has last dim {t.shape[-1]}, expected "
                             f"rope_dim // 2 = {half}")
        try:
            shape = torch.broadcast_shapes(tuple(t.shape), tuple(x.shape[:-1]) + (half,))
        except RuntimeError:
            shape = None
        if shape is None or tuple(shape) != tuple(x.shape[:-1]) + (half,):
            raise ValueError(f"trex.{OP}: argument {name!r} of shape {tuple(t.shape)} does not broadcast "
                             f"against x[..., :rope_dim // 2] of shape {tuple(x.shape[:-1]) + (half,)}")
    if cos.shape != sin.shape:
        raise ValueError(f"trex.{OP}: arguments 'cos' {tuple(cos.shape)} and 'sin' {tuple(sin.shape)} "
                         f"must have the same shape")


def rope_reference(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, rope_dim: int,
                   inverse: bool) -> torch.Tensor:
    _check(x, cos, sin, rope_dim)
    ct = compute_dtype(x.dtype, cos.dtype, sin.dtype)
    nope = x.shape[-1] - rope_dim
    pairs = x[..., nope:].to(ct).unflatten(-1, (-1, 2))
    a, b = pairs[..., 0], pairs[..., 1]
    c, s = cos.to(ct), sin.to(ct)
    if inverse:
        s = -s
    rotated = torch.stack([a * c - b * s, a * s + b * c], dim=-1).flatten(-2)
    out = torch.cat([x[..., :nope].to(ct), rotated], dim=-1)
    return out.to(x.dtype).contiguous()


def _fake(x, cos, sin, rope_dim, inverse):
    _check(x, cos, sin, rope_dim)
    return x.new_empty(x.shape)


def _samples(dtype):
    g = torch.Generator().manual_seed(2)
    ang = torch.randn(5, 1, 4, generator=g, dtype=torch.float64)
    table_dtype = torch.float32 if dtype != torch.float64 else dtype
    cos, sin = ang.cos().to(table_dtype), ang.sin().to(table_dtype)
    ang3 = torch.randn(3, generator=g, dtype=torch.float64)
    return [
        (torch.randn(2, 5, 3, 8, generator=g).to(dtype), cos, sin, 8, False),
        (torch.randn(2, 5, 3, 14, generator=g).to(dtype), cos, sin, 8, True),          # partial
        (torch.randn(2, 5, 3, 2 * 14, generator=g).to(dtype)[..., ::2], cos, sin, 8, False),  # strided
        (torch.randn(1, 7, generator=g).to(dtype), ang3.cos().to(table_dtype), ang3.sin().to(table_dtype),
         6, True),
    ]


def _fuzz_arguments(d: FuzzDraw) -> tuple:
    """Fuzz arguments (trex.compiler.strategies.fuzz_arguments): rope_dim 2..64 of a head_dim up to
    rope_dim + 448, 1 or 3 heads (or no head axis), forward or inverse (the backward)."""
    rope_dim = d.pick((2, 8, 64))
    head_dim = rope_dim + d.pick((0, 1, 7, 448))
    heads = d.pick((1, 3))
    tokens = d.rows(head_dim * heads)
    ang = torch.randn(tokens, 1, rope_dim // 2, generator=d.gen, dtype=torch.float64) * 3
    if heads == 1 and d.draw(d.st.booleans()):       # x and table without the head axis
        x, ang = d.tensor((tokens, head_dim)), ang[:, 0]
    else:
        x = d.tensor((tokens, heads, head_dim))
    return (x, ang.cos().float(), ang.sin().float(), rope_dim, d.draw(d.st.booleans()))


rope = define_fused_op(OP, "(Tensor x, Tensor cos, Tensor sin, int rope_dim, bool inverse) -> Tensor",
                       reference=rope_reference, fake=_fake, sample_inputs=_samples, differentiable_args=(0,),
                       fuzz_arguments=_fuzz_arguments)


def _setup_context(ctx, inputs, output):
    _x, cos, sin, rope_dim, inverse = inputs
    ctx.save_for_backward(cos, sin)
    ctx.rope_dim, ctx.inverse = rope_dim, inverse


def _backward(ctx, dy):
    cos, sin = ctx.saved_tensors
    return torch.ops.trex.rope(dy, cos, sin, ctx.rope_dim, not ctx.inverse), None, None, None, None


rope.register_autograd(_backward, setup_context=_setup_context)
