"""The eager limited-SwiGLU chains the backend replaces by ``trex::swiglu_limited`` (the op is in op.py).

Spellings covered: ``clamp(max=L)`` / ``clamp_max`` on the gate; ``clamp(-L, L)`` /
``clamp(min=..).clamp(max=..)`` on the up projection (not ``torch.minimum/maximum`` against a constant:
they split the gradient at a tie, which the op's clamp backward does not); ``F.silu(g)`` / ``g * sigmoid(g)`` / ``g / (1 + exp(-g))``; fp32 casts anywhere; the routing
weight multiplied before or after the down-cast. The plain SwiGLU ``F.silu(gate) * up`` (Llama's MLP,
vLLM's SiluAndMul, Megatron's swiglu) is the same op with ``limit = inf``; a plain chain whose gate or up
is clamped is refused (the limited chains take those clamps or the chain is a near-miss of them).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from trex.compiler.graph import aten, same_size, source_line
from trex.compiler.pattern import Pattern
from trex.compiler.registry import register_pattern


def swiglu_limited_routed_chain(gate, up, route_weight, *, limit):
    g = gate.float().clamp(max=limit)
    u = up.float().clamp(-limit, limit)
    return (route_weight * (F.silu(g) * u)).to(gate.dtype)


def swiglu_limited_chain(gate, up, *, limit):
    g = gate.float().clamp(max=limit)
    u = up.float().clamp(-limit, limit)
    return (F.silu(g) * u).to(gate.dtype)


def swiglu_routed_chain(gate, up, route_weight):
    return (route_weight * (F.silu(gate.float()) * up.float())).to(gate.dtype)


def swiglu_chain(gate, up):
    return (F.silu(gate.float()) * up.float()).to(gate.dtype)


_CLAMPS = (aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default, aten.clamp.Tensor)


def _replace(gate, up, route_weight, *, limit=math.inf, out_dtype):
    return torch.ops.trex.swiglu_limited(gate, up, limit, route_weight, out_dtype)


def _extra_check(match) -> str | None:
    gate, up, rw = match.input_val("gate"), match.input_val("up"), match.input_val("route_weight")
    if gate.dtype != up.dtype:
        return f"gate ({gate.dtype}) and up ({up.dtype}) have different dtypes"
    if gate.dim() != up.dim() or not all(same_size(a, b) for a, b in zip(gate.shape, up.shape)):
        return f"gate {tuple(gate.shape)} and up {tuple(up.shape)} differ in shape (broadcasting is not fused)"
    if match.scalars.get("limit", math.inf) <= 0:
        return f"limit {match.scalars.get('limit')} is not positive"
    if "limit" not in match.scalars:
        for name in ("gate", "up"):
            node = match.inputs[name]
            if isinstance(node, torch.fx.Node) and node.op == "call_function" and node.target in _CLAMPS:
                return (f"{name} is clamped at {source_line(node)}, but not as the limited SwiGLU clamps "
                        f"(gate.clamp(max=L), up.clamp(-L, L))")
    if rw is not None and rw.dtype not in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
        return f"route weight has dtype {rw.dtype}; the fused op takes a floating-point route weight"
    if rw is not None:
        want = tuple(gate.shape[:-1]) + (1,)
        if rw.dim() != len(want) or not all(same_size(a, b) for a, b in zip(rw.shape, want)):
            return f"route weight has shape {tuple(rw.shape)}, the fused op takes gate.shape[:-1] + (1,)"
    return None


def _examples(dtype):
    return {"gate": torch.randn(2, 3, 16, dtype=dtype), "up": torch.randn(2, 3, 16, dtype=dtype),
            "route_weight": torch.rand(2, 3, 1, dtype=torch.float32)}


register_pattern(Pattern(
    name="swiglu_limited",
    chains=[swiglu_limited_routed_chain, swiglu_limited_chain, swiglu_routed_chain, swiglu_chain],
    replacement=_replace,
    example_inputs=_examples,
    extra_check=_extra_check,
    fused_ops=("swiglu_limited", "swiglu_limited_bwd"),
    description="clamped or plain SwiGLU (+ routing weight), fp32 compute",
))
