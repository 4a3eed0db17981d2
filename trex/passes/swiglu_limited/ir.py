"""Kernel IR programs of `trex::swiglu_limited` and `trex::swiglu_limited_bwd` (docs/contracts.md).

Math (reference/deepseek_v4.md §2): g = min(gate, L), u = clamp(up, -L, L),
  h = silu(g) * u [* route_weight]            (route_weight broadcast over the last dim)
Backward with s = sigmoid(g), a = dh [* rw]:
  dgate = a * u * s * (1 + g * (1 - s)) * [gate <= L]
  dup   = a * silu(g) * [-L <= up <= L]
  droute_weight = sum_last(dh * silu(g) * u)
The masks are inclusive, like torch.clamp's gradient.
"""
from __future__ import annotations

import math

from trex.compiler.kernel_ir import DType, Program, ProgramBuilder, size
from trex.compiler.kernels import Executor, cached_program, ir_dtype

from ..rms_norm.ir import load_f32, store_from_f32

F = size("F")
F32 = DType.FP32


def build_swiglu_limited_fwd(dtype: DType | str = DType.BF16, has_route: bool = False,
                             route_dtype: DType | str | None = None, out_dtype: DType | str | None = None,
                             limited: bool = True) -> Program:
    """``limited=False``: the plain SwiGLU (the op's limit = inf), no clamps."""
    dtype = DType(dtype)
    rdt = DType(route_dtype or F32)
    odt = DType(out_dtype or dtype)
    b = ProgramBuilder(f"swiglu{'_limited' if limited else ''}_fwd_{dtype.value}{'_r' + rdt.value if has_route else ''}"
                       f"_o{odt.value}",
                       doc="h = silu(min(gate, L)) * clamp(up, -L, L) [* route_weight]" if limited
                       else "h = silu(gate) * up [* route_weight]")
    b.gm("gate", dtype, (F,))
    b.gm("up", dtype, (F,))
    if has_route:
        b.gm("route_weight", rdt, (1,))
    b.gm("h", odt, (F,), role="out")
    gf = load_f32(b, "gate", dtype, "gf", (F,))
    uf = load_f32(b, "up", dtype, "uf", (F,))
    _clamp_inputs(b, gf, uf, limited)
    b.op("sigmoid", "s", "g", dtype=F32, cols=(F,))
    b.op("mul", "hf", "g", "s", dtype=F32, cols=(F,))
    b.op("mul", "hf", "hf", "u")
    if has_route:
        rw = load_f32(b, "route_weight", rdt, "rwf", (1,))
        b.op("mul", "hf", "hf", rw)
    store_from_f32(b, "h", odt, "hf", (F,))
    return b.build()


def _clamp_inputs(b: ProgramBuilder, gf: str, uf: str, limited: bool) -> str | None:
    """g = min(gate, L), u = clamp(up, -L, L) where limited (returns the limit's scalar name); plain
    copies otherwise."""
    if not limited:
        b.op("copy", "g", gf, dtype=F32, cols=(F,))
        b.op("copy", "u", uf, dtype=F32, cols=(F,))
        return None
    lim = b.scalar("limit")
    b.op("mins", "g", gf, lim, dtype=F32, cols=(F,))
    b.op("mins", "u", uf, lim, dtype=F32, cols=(F,))
    b.op("maxs", "u", "u", "-" + lim)
    return lim


def build_swiglu_limited_bwd(dtype: DType | str = DType.BF16, has_route: bool = False,
                             route_dtype: DType | str | None = None, limited: bool = True) -> Program:
    """``limited=False``: the plain SwiGLU's backward (no clamp masks: a nan input passes its gradient)."""
    dtype = DType(dtype)
    rdt = DType(route_dtype or F32)
    b = ProgramBuilder(f"swiglu{'_limited' if limited else ''}_bwd_{dtype.value}{'_r' + rdt.value if has_route else ''}",
                       doc="dgate, dup (zero outside the clamp limits) and droute_weight of limited SwiGLU"
                       if limited else "dgate, dup and droute_weight of plain SwiGLU")
    b.gm("dh", dtype, (F,))
    b.gm("gate", dtype, (F,))
    b.gm("up", dtype, (F,))
    if has_route:
        b.gm("route_weight", rdt, (1,))
    b.gm("dgate", dtype, (F,), role="out")
    b.gm("dup", dtype, (F,), role="out")
    if has_route:
        b.gm("droute_weight", rdt, (1,), role="out")
    dhf = load_f32(b, "dh", dtype, "dhf", (F,))
    gf = load_f32(b, "gate", dtype, "gf", (F,))
    uf = load_f32(b, "up", dtype, "uf", (F,))
    lim = _clamp_inputs(b, gf, uf, limited)
    b.op("sigmoid", "s", "g", dtype=F32, cols=(F,))
    b.op("mul", "silu", "g", "s", dtype=F32, cols=(F,))
    if has_route:
        rw = load_f32(b, "route_weight", rdt, "rwf", (1,))
        # droute_weight = sum(dh * silu * u) (before dh is scaled by the route weight)
        b.op("mul", "t", dhf, "silu", dtype=F32, cols=(F,))
        b.op("mul", "t", "t", "u")
        b.op("reduce_sum", "drw", "t", axis=-1, dtype=F32, cols=(1,))
        store_from_f32(b, "droute_weight", rdt, "drw", (1,))
        b.op("mul", "a", dhf, rw, dtype=F32, cols=(F,))
    else:
        b.op("copy", "a", dhf, dtype=F32, cols=(F,))
    # dsilu/dg = s * (1 + g * (1 - s))
    b.op("muls", "t", "s", -1.0, dtype=F32, cols=(F,))
    b.op("adds", "t", "t", 1.0)
    b.op("mul", "t", "t", "g")
    b.op("adds", "t", "t", 1.0)
    b.op("mul", "t", "t", "s")
    b.op("mul", "dg", "a", "u", dtype=F32, cols=(F,))
    b.op("mul", "dg", "dg", "t")
    # dg is stored before du is computed (the limited program's order: du reuses dg's UB buffer)
    if limited:
        b.op("select", "dg", gf, lim, "dg", 0.0, cmp="LE")
    store_from_f32(b, "dgate", dtype, "dg", (F,))
    b.op("mul", "du", "a", "silu", dtype=F32, cols=(F,))
    if limited:
        b.op("select", "du", uf, lim, "du", 0.0, cmp="LE")
        b.op("select", "du", uf, "-" + lim, "du", 0.0, cmp="GE")
    store_from_f32(b, "dup", dtype, "du", (F,))
    return b.build()


def _rw_view(route_weight, rows):
    return route_weight.reshape(rows, 1) if route_weight.numel() == rows else route_weight.expand(
        *route_weight.shape[:-1], 1).reshape(rows, 1)


# ------------------------------------------------------------------------------------------------
# runners: op-level tensors <-> program views


def run_swiglu_limited(execute: Executor, gate, up, limit: float, route_weight, out_dtype):
    f = gate.shape[-1]
    rows = gate.numel() // max(f, 1)
    limited = math.isfinite(limit)
    p = cached_program(build_swiglu_limited_fwd, ir_dtype(gate.dtype), route_weight is not None,
                       ir_dtype(route_weight.dtype if route_weight is not None else None), ir_dtype(out_dtype), limited)
    ins = {"gate": gate.reshape(rows, f), "up": up.reshape(rows, f).to(gate.dtype)}
    if route_weight is not None:
        ins["route_weight"] = _rw_view(route_weight, rows)
    return execute(p, ins, {"limit": limit} if limited else {})["h"].reshape(gate.shape)


def run_swiglu_limited_bwd(execute: Executor, dh, gate, up, limit: float, route_weight):
    """A broadcast route weight (one per several rows) gets no gradient here (an empty tensor): its
    gradient needs a cross-row reduction the program does not do, and the kernel spec's guard sends
    such calls to the reference."""
    f = gate.shape[-1]
    rows = gate.numel() // max(f, 1)
    limited = math.isfinite(limit)
    p = cached_program(build_swiglu_limited_bwd, ir_dtype(gate.dtype), route_weight is not None,
                       ir_dtype(route_weight.dtype if route_weight is not None else None), limited)
    ins = {"dh": dh.reshape(rows, f).to(gate.dtype), "gate": gate.reshape(rows, f), "up": up.reshape(rows, f).to(gate.dtype)}
    if route_weight is not None:
        ins["route_weight"] = _rw_view(route_weight, rows)
    out = execute(p, ins, {"limit": limit} if limited else {})
    drw = (out["droute_weight"].reshape(route_weight.shape) if route_weight is not None
           and route_weight.numel() == rows else gate.new_empty(0))
    return out["dgate"].reshape(gate.shape), out["dup"].reshape(gate.shape), drw
