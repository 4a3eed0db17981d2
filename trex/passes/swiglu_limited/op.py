"""Limited (clamped) SwiGLU of DeepSeek-V4 experts: ``trex::swiglu_limited`` / ``trex::swiglu_limited_bwd``.

h = silu(min(gate, L)) * clamp(up, -L, L) [* route_weight], computed in fp32, returned in
``out_dtype`` (default gate.dtype). ``route_weight`` has shape gate.shape[:-1] + (1,) (one routing
weight per token, broadcast over the last dim).

Backward (analytic), with gc = min(g, L), s = sigmoid(gc), uc = clamp(u, -L, L), r = route_weight:
dgate = dh*r * uc * s*(1 + gc*(1-s)) * [g <= L];  dup = dh*r * silu(gc) * [-L <= u <= L];
droute_weight = sum over the last dim of dh * silu(gc) * uc. (Clamp gradients follow torch.clamp: the
bound itself passes the gradient.)

``limit = inf`` is the plain (unclamped) SwiGLU ``silu(gate) * up [* route_weight]``: no clamp and no
clamp mask, so a nan gate or up passes its gradient as eager's ``F.silu(g) * u`` does (a clamp's mask
would zero it).
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from trex.compiler.checks import (check_float, check_number, check_out_dtype, check_same_device, check_same_dtype,
                                  check_same_shape, check_shape, compute_dtype)
from trex.compiler.registry import define_fused_op
from trex.compiler.strategies import HIDDEN_SIZES, FuzzDraw

OP = "swiglu_limited"


def _check(op, gate, up, limit, route_weight):
    check_float(op, "gate", gate)
    check_float(op, "up", up)
    check_same_dtype(op, gate=gate, up=up)
    check_same_shape(op, gate=gate, up=up)
    check_number(op, "limit", limit, above=0, infinite_ok=True)
    check_float(op, "route_weight", route_weight, optional=True)
    check_same_device(op, gate=gate, up=up, route_weight=route_weight)
    if route_weight is not None:
        check_shape(op, "route_weight", route_weight, tuple(gate.shape[:-1]) + (1,),
                    "one routing weight per row: gate.shape[:-1] + (1,)")


def swiglu_limited_reference(gate: torch.Tensor, up: torch.Tensor, limit: float,
                             route_weight: torch.Tensor | None, out_dtype: torch.dtype | None) -> torch.Tensor:
    _check(OP, gate, up, limit, route_weight)
    check_out_dtype(OP, "out_dtype", out_dtype)
    ct = compute_dtype(gate.dtype, *(() if route_weight is None else (route_weight.dtype,)))
    g, u = gate.to(ct), up.to(ct)
    if math.isfinite(limit):
        g, u = g.clamp(max=limit), u.clamp(-limit, limit)
    h = F.silu(g) * u
    if route_weight is not None:
        h = h * route_weight.to(ct)
    return h.to(out_dtype or gate.dtype).contiguous()


def _fake(gate, up, limit, route_weight, out_dtype):
    _check(OP, gate, up, limit, route_weight)
    check_out_dtype(OP, "out_dtype", out_dtype)
    return gate.new_empty(gate.shape, dtype=out_dtype or gate.dtype)


def swiglu_limited_bwd_reference(dh: torch.Tensor, gate: torch.Tensor, up: torch.Tensor, limit: float,
                                 route_weight: torch.Tensor | None
                                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    _check_bwd(dh, gate, up, limit, route_weight)
    ct = compute_dtype(gate.dtype, dh.dtype, *(() if route_weight is None else (route_weight.dtype,)))
    g, u, d = gate.to(ct), up.to(ct), dh.to(ct)
    limited = math.isfinite(limit)
    gc = g.clamp(max=limit) if limited else g
    s = torch.sigmoid(gc)
    silu = gc * s
    uc = u.clamp(-limit, limit) if limited else u
    dr = d if route_weight is None else d * route_weight.to(ct)
    dgate, dup = dr * uc * s * (1 + gc * (1 - s)), dr * silu
    if limited:
        # torch.where, not a 0/1 multiply: outside the limits the gradient is exactly 0 even for a NaN/Inf
        # dh, as eager autograd of clamp gives it (and the generated kernel's Select)
        dgate = torch.where(g <= limit, dgate, 0.0)
        dup = torch.where((u >= -limit) & (u <= limit), dup, 0.0)
    if route_weight is None:
        droute = gate.new_empty((0,))
    else:
        droute = (d * silu * uc).sum(-1, keepdim=True).to(route_weight.dtype).contiguous()
    return dgate.to(gate.dtype).contiguous(), dup.to(up.dtype).contiguous(), droute


def _check_bwd(dh, gate, up, limit, route_weight):
    _check("swiglu_limited_bwd", gate, up, limit, route_weight)
    check_float("swiglu_limited_bwd", "dh", dh)
    check_shape("swiglu_limited_bwd", "dh", dh, tuple(gate.shape), "the shape of gate")


def _bwd_fake(dh, gate, up, limit, route_weight):
    _check_bwd(dh, gate, up, limit, route_weight)
    droute = gate.new_empty((0,)) if route_weight is None else route_weight.new_empty(route_weight.shape)
    return gate.new_empty(gate.shape), up.new_empty(up.shape), droute


def _samples(dtype):
    g = torch.Generator().manual_seed(1)

    def rnd(*shape, scale=4.0, dt=dtype):
        return (torch.randn(*shape, generator=g) * scale).to(dt)

    rw_dtype = torch.float32 if dtype != torch.float64 else dtype
    return [
        (rnd(4, 16), rnd(4, 16), 7.0, None, None),
        (rnd(3, 5, 7), rnd(3, 5, 7), 2.5, rnd(3, 5, 1, scale=1.0, dt=rw_dtype), None),
        (rnd(5, 2 * 130)[:, ::2], rnd(5, 130), 10.0, rnd(5, 1, scale=1.0, dt=rw_dtype), torch.float32),
        (rnd(1, 1), rnd(1, 1), 1.0, None, None),
    ]


def _bwd_samples(dtype):
    g = torch.Generator().manual_seed(1)    # the same output gradient every call
    out = []
    for gate, up, limit, rw, out_dtype in _samples(dtype):
        h = swiglu_limited_reference(gate, up, limit, rw, out_dtype)
        out.append((torch.randn(h.shape, generator=g).to(h.dtype), gate, up, limit, rw))
    return out


def _fuzz_arguments(d: FuzzDraw, backward: bool) -> tuple:
    """Fuzz arguments (trex.compiler.strategies.fuzz_arguments): gate and up scaled to the limit, with
    values at and one ulp either side of +-limit when the example draws clamp-limit specials."""
    hidden = d.pick(HIDDEN_SIZES)
    lead = d.lead(d.rows(hidden))
    limit = d.pick((1.0, 7.0, 10.0))
    gate = d.tensor((*lead, hidden), scale=limit, limit=limit)
    up = d.tensor((*lead, hidden), scale=limit, limit=limit)
    route = torch.rand(*lead, 1, generator=d.gen) if d.draw(d.st.booleans()) else None
    if backward:
        return (d.tensor((*lead, hidden)), gate, up, limit, route)
    return (gate, up, limit, route, None)


swiglu_limited = define_fused_op(
    OP, "(Tensor gate, Tensor up, float limit, Tensor? route_weight, ScalarType? out_dtype) -> Tensor",
    reference=swiglu_limited_reference, fake=_fake, sample_inputs=_samples, differentiable_args=(0, 1, 3),
    fuzz_arguments=lambda d: _fuzz_arguments(d, backward=False))
swiglu_limited_bwd = define_fused_op(
    "swiglu_limited_bwd",
    "(Tensor dh, Tensor gate, Tensor up, float limit, Tensor? route_weight) "
    "-> (Tensor dgate, Tensor dup, Tensor droute_weight)",
    reference=swiglu_limited_bwd_reference, fake=_bwd_fake, sample_inputs=_bwd_samples, backward_of=OP,
    differentiable_args=(0,), fuzz_arguments=lambda d: _fuzz_arguments(d, backward=True))


def _setup_context(ctx, inputs, output):
    gate, up, limit, route_weight, _out_dtype = inputs
    ctx.save_for_backward(gate, up, route_weight)
    ctx.limit = limit


def _backward(ctx, dh):
    gate, up, route_weight = ctx.saved_tensors
    dgate, dup, droute = torch.ops.trex.swiglu_limited_bwd(dh, gate, up, ctx.limit, route_weight)
    return dgate, dup, None, (droute if route_weight is not None else None), None


swiglu_limited.register_autograd(_backward, setup_context=_setup_context)
