"""The eager RMSNorm chains the backend replaces by ``trex::rms_norm`` (the op is in op.py).

Spellings covered by the two chains below (through cast transparency and canonicalisation):
``.float()`` / ``.to(torch.float32)`` / ``.type_as``, ``pow(2)`` / ``square()`` / ``x * x``,
``mean`` / ``sum / n``, ``rsqrt(v + eps)`` / ``1 / sqrt(v + eps)`` / ``x / sqrt(v + eps)``, weight before
or after the down-cast, either operand order, and in-place ``x *= rsqrt(...)``.
"""
from __future__ import annotations

import torch

from trex.compiler.graph import same_size
from trex.compiler.pattern import Pattern
from trex.compiler.registry import register_pattern


def rms_norm_weighted_chain(x, weight, *, eps):
    xf = x.float()
    return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def rms_norm_chain(x, *, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def _replace(x, weight, *, eps, out_dtype):
    return torch.ops.trex.rms_norm(x, weight, eps, out_dtype)[0]


def _extra_check(match) -> str | None:
    x, w = match.input_val("x"), match.input_val("weight")
    if x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return f"x has dtype {x.dtype}; the fused op computes in fp32 and takes bf16/fp16/fp32"
    if w is not None and (w.dim() != 1 or not same_size(w.shape[0], x.shape[-1])):
        return f"the multiplier has shape {tuple(w.shape)}, not a weight of shape ({x.shape[-1]},)"
    if w is not None and not w.dtype.is_floating_point:
        return f"weight dtype {w.dtype} is not floating point"
    return None


def _examples(dtype: torch.dtype) -> dict:
    return {"x": torch.randn(2, 3, 16, dtype=dtype), "weight": torch.randn(16, dtype=dtype)}


register_pattern(Pattern(
    name="rms_norm",
    chains=[rms_norm_weighted_chain, rms_norm_chain],
    replacement=_replace,
    example_inputs=_examples,
    extra_check=_extra_check,
    fused_ops=("rms_norm", "rms_norm_bwd"),
    description="RMSNorm over the last dim, weighted or weight-free, fp32 compute",
))
