"""Partial interleaved rotary embedding, forward and inverse: ``trex::rope``.

rope(x, cos, sin, rope_dim, inverse) rotates the LAST ``rope_dim`` channels of x[..., head_dim] as
interleaved pairs (2i, 2i+1): (a, b) -> (a*cos - b*sin, a*sin + b*cos); ``inverse`` uses -sin (the
conjugate rotation, DeepSeek-V4's de-rotation of the attention output). The other channels pass
through. cos/sin have last dim rope_dim // 2 and broadcast against x[..., :rope_dim // 2]. Computed
in fp32, returned in x.dtype. cos/sin are constants for autograd (position tables).

Backward: the opposite rotation, rope(dy, cos, sin, rope_dim, not inverse) -- no separate op.

Spellings covered: complex (``view_as_complex(x.float().unflatten(-1, (-1, 2))) * freqs_cis``, and
``* freqs_cis.conj()`` for the inverse), real pairwise (``x[..., 0::2]`` / ``x[..., 1::2]`` or
``unflatten`` + ``[..., 0]``/``[..., 1]``, then ``stack(...).flatten(-2)``; the inverse either with
its own signs or by passing ``-sin``), and the partial form: rotating ``x[..., -r:]`` and
concatenating or writing it back in place is absorbed into one op on the whole head.
"""
from __future__ import annotations

import torch

from trex.compiler.checks import check_float, compute_dtype
from trex.compiler.graph import aten, val
from trex.compiler.pattern import Chain, Pattern
from trex.compiler.registry import define_fused_op, register_pattern
from trex.compiler.strategies import FuzzDraw

OP = "rope"


def _check(x, cos, sin, rope_dim):
    check_float(OP, "x", x)
    check_float(OP, "cos", cos)
    check_float(OP, "sin", sin)
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


# ------------------------------------------------------------------------------------------ pattern
def rope_complex_chain(x, freqs_cis):
    xc = torch.view_as_complex(x.float().unflatten(-1, (-1, 2)))
    return torch.view_as_real(xc * freqs_cis).flatten(-2).to(x.dtype)


def rope_complex_inverse_chain(x, freqs_cis):
    xc = torch.view_as_complex(x.float().unflatten(-1, (-1, 2)))
    return torch.view_as_real(xc * freqs_cis.conj()).flatten(-2).to(x.dtype)


def rope_real_chain(x, cos, sin):
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2).to(x.dtype)


def rope_real_inverse_chain(x, cos, sin):
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack([a * cos + b * sin, b * cos - a * sin], dim=-1).flatten(-2).to(x.dtype)


def rope_real_unflatten_chain(x, cos, sin):
    pairs = x.float().unflatten(-1, (-1, 2))
    a, b = pairs[..., 0], pairs[..., 1]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2).to(x.dtype)


def rope_real_unflatten_inverse_chain(x, cos, sin):
    pairs = x.float().unflatten(-1, (-1, 2))
    a, b = pairs[..., 0], pairs[..., 1]
    return torch.stack([a * cos + b * sin, b * cos - a * sin], dim=-1).flatten(-2).to(x.dtype)


def _replace(x, cos, sin, freqs_cis, *, inverse, rope_dim=None):
    if freqs_cis is not None:
        table = torch.view_as_real(freqs_cis)
        cos, sin = table[..., 0], table[..., 1]
    # int(): the head size is a compile-time constant of the kernel (specialises a symbolic head dim).
    return torch.ops.trex.rope(x, cos, sin, int(rope_dim if rope_dim is not None else x.shape[-1]), inverse)


def _is_call(n, target) -> bool:
    return isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target == target


def _refine(match) -> str | None:
    """Fold ``x = X[..., -r:]`` + (``cat([X[..., :-r], rope(x)], -1)`` or the in-place write-back)
    into one op on the whole head; negate-sin spellings of the inverse become ``inverse=True``."""
    for name, negation in (("sin", aten.neg.default), ("freqs_cis", aten._conj.default)):
        table = match.inputs.get(name)
        while _is_call(table, negation):     # each -sin / conj() flips the direction (conj().conj(): none)
            table = table.args[0]
            match.inputs[name] = table
            match.consts["inverse"] = not match.consts.get("inverse", False)
    x = match.inputs["x"]
    if not _is_call(x, aten.slice.Tensor) or len(match.outputs[0].users) != 1:
        return None
    base, dim = x.args[0], x.args[1]
    start = x.args[2] if len(x.args) > 2 else 0
    end = x.args[3] if len(x.args) > 3 else None
    step = x.args[4] if len(x.args) > 4 else 1
    head = val(base).shape[-1]
    if isinstance(head, torch.SymInt):
        head = int(head)  # head size is a kernel constant; specialises (guards) a symbolic head dim
    if not isinstance(start, int) or step != 1:
        return None
    if dim not in (-1, val(base).dim() - 1) or (end is not None and isinstance(end, int) and end < head):
        return None
    start = start + head if start < 0 else start
    rope_dim = head - start
    user = next(iter(match.outputs[0].users))
    absorbed = None
    if _is_call(user, aten.cat.default):
        parts = user.args[0]
        cat_dim = user.args[1] if len(user.args) > 1 else 0
        if (cat_dim in (-1, val(user).dim() - 1) and len(parts) == 2 and parts[1] is match.outputs[0]
                and _is_call(parts[0], aten.slice.Tensor) and parts[0].args[0] is base
                and parts[0].args[1] == dim and (parts[0].args[2] if len(parts[0].args) > 2 else 0) == 0
                and parts[0].args[3] in (start, start - head) and (len(parts[0].args) < 5 or parts[0].args[4] == 1)):
            absorbed = user
    elif _is_call(user, aten.slice_scatter.default):
        args = list(user.args) + [None] * (6 - len(user.args))
        s_dim, s_start, s_end, s_step = args[2], args[3], args[4], args[5] or 1
        s_start = s_start + head if isinstance(s_start, int) and s_start < 0 else s_start
        if (args[0] is base and args[1] is match.outputs[0] and s_dim in (-1, val(base).dim() - 1)
                and s_start == start and s_step == 1 and (s_end is None or s_end >= head)):
            absorbed = user
    if absorbed is None or val(absorbed).dtype != val(base).dtype:
        return None
    match.inputs["x"] = base
    match.nodes.add(match.outputs[0])
    match.outputs = [absorbed]
    match.consts["rope_dim"] = rope_dim
    return None


def _extra_check(match) -> str | None:
    x = match.input_val("x")
    if x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return f"x has dtype {x.dtype}; the fused op takes bf16/fp16/fp32"
    out_dtype = val(match.outputs[0]).dtype
    if out_dtype != x.dtype:   # e.g. fp64 tables promote the rotation; the fused op returns x's dtype
        return f"the rotation is computed in {out_dtype} (tables of another dtype), the fused op returns {x.dtype}"
    freqs = match.input_val("freqs_cis")
    tables = [t for t in (match.input_val("cos"), match.input_val("sin"), freqs) if t is not None]
    if any(match.input_requires_grad(name) for name in ("cos", "sin", "freqs_cis")):
        return "cos/sin (or freqs_cis) require grad; the fused op treats the rotation table as a constant"
    if freqs is not None and freqs.dtype not in (torch.complex64, torch.complex128):
        return f"freqs_cis has dtype {freqs.dtype}, expected complex64"
    half = x.shape[-1] // 2
    for t in tables:
        if t.shape[-1] != half:
            return f"rotation table last dim {t.shape[-1]} != x.shape[-1] // 2 = {half}"
    cos, sin = match.input_val("cos"), match.input_val("sin")
    if cos is not None and tuple(cos.shape) != tuple(sin.shape):
        return f"cos {tuple(cos.shape)} and sin {tuple(sin.shape)} differ in shape"
    return None


def _examples(dtype):
    ang = torch.randn(3, 1, 4)
    return {"x": torch.randn(2, 3, 5, 8, dtype=dtype), "cos": ang.cos(), "sin": ang.sin(),
            "freqs_cis": torch.polar(torch.ones_like(ang), ang)}


register_pattern(Pattern(
    name="rope",
    chains=[Chain(rope_complex_chain, {"inverse": False}), Chain(rope_complex_inverse_chain, {"inverse": True}),
            Chain(rope_real_chain, {"inverse": False}), Chain(rope_real_inverse_chain, {"inverse": True}),
            Chain(rope_real_unflatten_chain, {"inverse": False}),
            Chain(rope_real_unflatten_inverse_chain, {"inverse": True})],
    replacement=_replace,
    example_inputs=_examples,
    extra_check=_extra_check,
    refine=_refine,
    fused_ops=("rope",),
    description="interleaved (partial) rotary embedding, forward and inverse",
))
