"""The "cuda" target: trex's fused ops on CUDA tensors run the Triton kernels printed from their Kernel IR.

`register()` (called by `trex.codegen_triton.register_cuda_target()`, and through the `trex.targets`
entry point when the backend asks for target "cuda"):
  * registers the runner with `trex.compiler.targets.register_target("cuda", ...)`, so
    `torch.compile(..., backend="trex", options={"target": "cuda"})` selects it explicitly;
  * registers a CUDA kernel for every fused op (`CustomOpDef.register_kernel("cuda", ...)`), so a
    `torch.ops.trex.*` call on CUDA tensors runs Triton whatever the ambient target is, unless a
    non-reference target (e.g. "emulate") was selected explicitly, which then decides.

Each op has one adapter in `ADAPTERS`: it builds the op's Kernel-IR program (trex/passes/ir_*.py, the SAME
programs the AscendC printer prints), makes the [ROWS, *cols] views, and runs the printed kernel via
`launcher.run_program`. An adapter returns NotImplemented for inputs the IR has no program for (fp64,
zero-width rows); any failure while printing/compiling warns once and falls back to the composite
reference: a compiler failure never produces a wrong result.
"""
from __future__ import annotations

import collections
import functools
import importlib
import os
import warnings
import weakref

import torch

from trex.compiler.kernel_ir import DType, IRError

from .launcher import rows_matmul, run_program

_FAILED: dict[tuple, str] = {}


_DTYPES = {d.torch: d for d in DType}


def _dt(t: torch.Tensor) -> DType:
    dt = _DTYPES.get(t.dtype)
    return dt if dt is not None else DType.from_torch(t.dtype)   # from_torch raises the named error


@functools.lru_cache(maxsize=None)
def _build(module: str, builder: str, *args):
    """Kernel-IR programs are immutable: build each variant once (launch plans key on the object)."""
    return getattr(importlib.import_module(module), builder)(*args)


def _rms_norm(x, weight, eps, out_dtype):
    d = x.shape[-1]
    p = _build("trex.passes.ir_rmsnorm", "build_rms_norm_fwd", _dt(x), weight is not None,
               _dt(weight) if weight is not None else None,
               DType.from_torch(out_dtype) if out_dtype is not None else None)
    ins = {"x": x.reshape(-1, d)}
    if weight is not None:
        ins["w"] = weight.reshape(-1)
    out = run_program(p, ins, {"eps": eps})
    return out["y"].reshape(x.shape), out["rstd"].reshape(x.shape[:-1])


def _rms_norm_bwd(dy, x, weight, rstd):
    if dy.dtype != x.dtype:
        return NotImplemented    # the IR program reads dy in x's dtype; a wider dy keeps its precision
    d = x.shape[-1]
    p = _build("trex.passes.ir_rmsnorm", "build_rms_norm_bwd", _dt(x), weight is not None,
               _dt(weight) if weight is not None else None)
    ins = {"dy": dy.reshape(-1, d).to(x.dtype), "x": x.reshape(-1, d), "rstd": rstd.reshape(-1, 1).float()}
    if weight is not None:
        ins["w"] = weight.reshape(-1)
    out = run_program(p, ins, {})
    dw = out["dw"].to(weight.dtype) if weight is not None else x.new_empty((0,))
    return out["dx"].reshape(x.shape), dw


def _rw_view(route_weight, rows):
    from trex.passes.ir_swiglu_limited import _rw_view
    return _rw_view(route_weight, rows)


def _swiglu_limited(gate, up, limit, route_weight, out_dtype):
    if up.dtype != gate.dtype:
        return NotImplemented
    f = gate.shape[-1]
    rows = gate.numel() // f
    p = _build("trex.passes.ir_swiglu_limited", "build_swiglu_limited_fwd", _dt(gate), route_weight is not None,
               _dt(route_weight) if route_weight is not None else None,
               DType.from_torch(out_dtype) if out_dtype is not None else None)
    ins = {"gate": gate.reshape(rows, f), "up": up.reshape(rows, f).to(gate.dtype)}
    if route_weight is not None:
        ins["route_weight"] = _rw_view(route_weight, rows)
    return run_program(p, ins, {"limit": limit})["h"].reshape(gate.shape)


def _swiglu_limited_bwd(dh, gate, up, limit, route_weight):
    if dh.dtype != gate.dtype or up.dtype != gate.dtype:
        return NotImplemented    # the IR program reads dh/up in gate's dtype
    f = gate.shape[-1]
    rows = gate.numel() // f
    p = _build("trex.passes.ir_swiglu_limited", "build_swiglu_limited_bwd", _dt(gate), route_weight is not None,
               _dt(route_weight) if route_weight is not None else None)
    ins = {"dh": dh.reshape(rows, f).to(gate.dtype), "gate": gate.reshape(rows, f),
           "up": up.reshape(rows, f).to(gate.dtype)}
    if route_weight is not None:
        if route_weight.numel() != rows:   # a broadcast route weight: its gradient needs a reduction
            return NotImplemented
        ins["route_weight"] = _rw_view(route_weight, rows)
    out = run_program(p, ins, {"limit": limit})
    drw = (out["droute_weight"].reshape(route_weight.shape) if route_weight is not None else gate.new_empty((0,)))
    return out["dgate"].reshape(gate.shape), out["dup"].reshape(gate.shape), drw


_TABLES: collections.OrderedDict = collections.OrderedDict()
_TABLES_MAX = 16


def _expanded_tables(ir_rope, cos, sin, cos_v, sin_v, inverse: bool, layout):
    """The pair-expanded RoPE tables, cached per (cos, sin) tensor, version and row layout: a model
    applies one cos/sin table in every layer, forward (and inverse) and backward, so the 3-4 small
    expansion kernels run once per table instead of once per call. `layout` is whatever besides cos/sin
    decides the tables' content (x's leading shape when cos is broadcast to every row).

    Entries hold cos/sin (their bases, for views) by weak reference and die with them (no memory pinned, no data pointer reused
    while an entry lives); an in-place write through autograd-visible ops bumps the version and misses.
    Writes that bypass the version counter (`cos.data.mul_()`, raw kernels, DLPack/numpy aliases) are
    not seen: set TREX_ROPE_TABLE_CACHE=0 for such tables. Inference tensors have no version counter
    and are not cached, nor is anything during CUDA-graph capture."""
    if os.environ.get("TREX_ROPE_TABLE_CACHE") == "0" or cos.is_inference() or sin.is_inference() \
            or (cos.is_cuda and torch.cuda.is_current_stream_capturing()):
        return ir_rope.expand_tables(cos_v, sin_v, inverse)
    # a view (a model's `freqs[pos]`, the bench's `c[:, None, :]`) is a new tensor object per call:
    # the entry is anchored on its base, which lives as long as the table does; views share the
    # base's version counter, and the view's own pointer/shape/strides are in the key
    cos_anchor = cos._base if cos._base is not None else cos
    sin_anchor = sin._base if sin._base is not None else sin
    key = (id(cos_anchor), cos.data_ptr(), cos._version, tuple(cos.shape), cos.stride(), cos.dtype,
           id(sin_anchor), sin.data_ptr(), sin._version, tuple(sin.shape), sin.stride(), layout, inverse,
           str(cos.device))
    hit = _TABLES.get(key)
    if hit is not None and hit[0]() is cos_anchor and hit[1]() is sin_anchor:
        _TABLES.move_to_end(key)
        return hit[2], hit[3]

    def drop(_ref, key=key):
        _TABLES.pop(key, None)
    c2, s2 = ir_rope.expand_tables(cos_v, sin_v, inverse)
    _TABLES[key] = (weakref.ref(cos_anchor, drop), weakref.ref(sin_anchor, drop), c2, s2)
    if len(_TABLES) > _TABLES_MAX:
        _TABLES.popitem(last=False)
    return c2, s2


def _rope(x, cos, sin, rope_dim, inverse):
    import math

    from trex.passes.ir_rope import _compact, cos_row_map
    hd = x.shape[-1]
    if rope_dim % 2 or rope_dim > hd or cos.shape[-1] != rope_dim // 2:
        return NotImplemented     # the reference raises the argument error
    lead = tuple(x.shape[:-1])
    rows = math.prod(lead)
    h2 = rope_dim // 2
    m = cos_row_map(lead, tuple(cos.shape[:-1]))
    if m is None:
        cos_v, sin_v, cdiv = cos.expand(*lead, h2).reshape(rows, h2), sin.expand(*lead, h2).reshape(rows, h2), 1
    else:
        cos_v, sin_v, cdiv = _compact(cos, lead, h2), _compact(sin, lead, h2), m[0]
    if sin.dtype != cos.dtype:
        return NotImplemented
    import trex.passes.ir_rope as ir_rope
    # y = x*C + swap(x)*S with pair-expanded tables; the pairs swapped in registers (one load of x)
    c2, s2 = _expanded_tables(ir_rope, cos, sin, cos_v, sin_v, bool(inverse), lead if m is None else m)
    p = _build("trex.passes.ir_rope", "build_rope", _dt(x), _dt(cos), True, "pairs")
    ins = {"x": x.reshape(rows, hd), "cos2": c2, "sin2": s2}
    return run_program(p, ins, {"cdiv": cdiv})["y"].reshape(x.shape)


def _mhc_pre(x, fn, scale, base, iters, hc_eps, rms_eps):
    # the per-stream variant of the IR programs: every tile 2-d, every contraction one dot
    # (trex/passes/ir_mhc_pre.py, "the per-stream layout")
    from trex.passes.ir_mhc_pre import stream_views
    ins, rows, n, d = stream_views(x, fn, scale, base)
    p = _build("trex.passes.ir_mhc_pre", "build_mhc_pre_fwd_streams", _dt(x), n)
    out = run_program(p, ins, {"iters": iters, "hc_eps": hc_eps, "rms_eps": rms_eps})
    lead = x.shape[:-2]
    return out["layer_input"].reshape(*lead, d), out["post"].reshape(*lead, n), out["comb"].reshape(*lead, n, n)


def _mhc_pre_bwd(d_layer_input, d_post, d_comb, x, fn, scale, base, iters, hc_eps, rms_eps):
    if d_layer_input.dtype != x.dtype:
        return NotImplemented    # the IR program reads the layer-input gradient in x's dtype
    from trex.passes.ir_mhc_pre import stream_views
    ins, rows, n, d = stream_views(x, fn, scale, base)
    ins.update(dli=d_layer_input.reshape(rows, d), dpost=d_post.reshape(rows, n).float(),
               dcomb=d_comb.reshape(rows, n, n).float())
    dx = torch.empty(rows, n, d, dtype=x.dtype, device=x.device)
    p = _build("trex.passes.ir_mhc_pre", "build_mhc_pre_bwd_streams", _dt(x), n)
    out = run_program(p, ins, {"iters": iters, "hc_eps": hc_eps, "rms_eps": rms_eps},
                      out={f"dx{s}": dx[:, s, :] for s in range(n)})
    # dfn = dh^T @ x over the rows: one GEMM reading x once in its own dtype
    dfn = rows_matmul(out["dh"].reshape(rows, -1), x.reshape(rows, n * d))
    return (dx.reshape(x.shape), dfn.reshape(fn.shape).to(fn.dtype),
            out["dscale"].reshape(scale.shape).to(scale.dtype), out["dbase"].reshape(base.shape).to(base.dtype))


ADAPTERS = {
    "rms_norm": _rms_norm,
    "rms_norm_bwd": _rms_norm_bwd,
    "swiglu_limited": _swiglu_limited,
    "swiglu_limited_bwd": _swiglu_limited_bwd,
    "rope": _rope,
    "mhc_pre": _mhc_pre,
    "mhc_pre_bwd": _mhc_pre_bwd,
}


def _key(op_name: str, args: tuple) -> tuple:
    return (op_name,) + tuple((tuple(a.shape[-1:]), a.dtype) if isinstance(a, torch.Tensor) else type(a).__name__
                              for a in args)


def run(op_name: str, args: tuple):
    """Runner of the "cuda" target: the Triton kernel for `op_name`, or NotImplemented."""
    adapter = ADAPTERS.get(op_name)
    if adapter is None or os.environ.get("TREX_TRITON_DISABLE") == "1":
        return NotImplemented
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if any(t.dtype == torch.float64 for t in tensors) or any(t.dim() and t.shape[-1] == 0 for t in tensors):
        return NotImplemented   # no fp64 program; nothing to launch for zero-width rows
    if _FAILED and _key(op_name, args) in _FAILED:
        return NotImplemented
    try:
        return adapter(*args)
    except (IRError, RuntimeError, ValueError, TypeError, AssertionError, ImportError) as err:
        if isinstance(err, RuntimeError) and "out of memory" in str(err):
            raise
        key = _key(op_name, args)
        reason = f"{type(err).__name__}: {err}"
        _FAILED[key] = reason
        warnings.warn(f"trex cuda target: {op_name} could not run through Triton ({reason[:300]}); "
                      f"running the composite reference for these inputs", RuntimeWarning, stacklevel=2)
        return NotImplemented


def available() -> tuple[bool, str]:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False, "triton is not installed"
    if not torch.cuda.is_available():
        return False, "no CUDA device (torch.cuda.is_available() is False)"
    return True, ""


_REGISTERED = False


def register() -> None:
    """Register the "cuda" target and the CUDA kernels of every fused op (idempotent)."""
    global _REGISTERED
    from trex.compiler import registry, targets

    if _REGISTERED:
        return
    targets.register_target("cuda", run, available=available, replace=True,
                            description="Triton kernels printed from the Kernel IR (codegen_triton)")
    for name, fop in registry.fused_ops().items():
        if name not in ADAPTERS:
            continue
        opdef = torch._library.custom_ops.OPDEFS.get(fop.qualname)
        if opdef is None:
            continue

        def cuda_kernel(*args, _name=name, _fop=fop):
            # through run_fused, so the kernel's outputs are checked against the op's fake
            # implementation at the boundary (count, shapes, dtypes) like every other target's
            active = targets.active_target()
            return targets.run_fused(_name, _fop.reference, args, fake=_fop.fake,
                                     target="cuda" if active == targets.REFERENCE_TARGET else active)

        opdef.register_kernel("cuda", cuda_kernel)
    _REGISTERED = True
