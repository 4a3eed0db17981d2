"""Kernel IR programs of `trex::rope` (forward; the backward is rope(dy, ..., not inverse)).

Rotates the LAST rope_dim channels of x[..., head_dim] in interleaved pairs (2i, 2i+1)
(reference/deepseek_v4.md §3): y0 = x0*c - x1*s, y1 = x0*s + x1*c; inverse rotation uses -s.
cos/sin rows broadcast over x's leading dims through a RowMap: cos row = (r // CDIV) % CROWS, with
CDIV a kernel argument; leading-dim patterns that are not of that form are materialised by the
adapter (documented in `cos_row_map`).
"""
from __future__ import annotations

import math

import torch

from passes.ir_rmsnorm import _load_f32, _store_from_f32
from trex_compiler.kernel_ir import DType, IRError, Program, ProgramBuilder, RowMap, Schedule, interpret, size

HD = size("HD")        # head_dim
H2 = size("H2")        # rope_dim // 2
CDIV = size("CDIV")    # kernel rows per cos/sin row
CROWS = size("CROWS")  # cos/sin rows
F32 = DType.FP32


def build_rope(dtype: DType | str = DType.BF16, inverse: bool = False, cs_dtype: DType | str | None = None) -> Program:
    dtype = DType(dtype)
    cdt = DType(cs_dtype or dtype)
    b = ProgramBuilder(f"rope_{'inv_' if inverse else ''}{dtype.value}_cs{cdt.value}",
                       doc=f"interleaved rotation of the last 2*H2 channels{' (inverse: conjugate)' if inverse else ''}")
    b.gm("x", dtype, (HD,))
    rm = RowMap(CDIV, CROWS)
    b.gm("cos", cdt, (H2,), row_map=rm)
    b.gm("sin", cdt, (H2,), row_map=rm)
    b.gm("y", dtype, (HD,), role="out")
    b.scalar("cdiv", DType.INT32)
    b.size_params.append((CDIV, "cdiv"))
    xf = _load_f32(b, "x", dtype, "xf", (HD,))
    c = _load_f32(b, "cos", cdt, "c", (H2,))
    s = _load_f32(b, "sin", cdt, "s", (H2,))
    start = HD - 2 * H2
    b.op("slice", "x0", xf, axis=-1, start=start, stop=HD, step=2, dtype=F32, cols=(H2,))
    b.op("slice", "x1", xf, axis=-1, start=start + 1, stop=HD, step=2, dtype=F32, cols=(H2,))
    sign_s = "neg_s" if inverse else s
    if inverse:
        b.op("neg", "neg_s", s, dtype=F32, cols=(H2,))
    b.op("mul", "y0", "x0", c, dtype=F32, cols=(H2,))
    b.op("mul", "t", "x1", sign_s, dtype=F32, cols=(H2,))
    b.op("sub", "y0", "y0", "t")
    b.op("mul", "y1", "x0", sign_s, dtype=F32, cols=(H2,))
    b.op("mul", "t", "x1", c)
    b.op("add", "y1", "y1", "t")
    b.op("copy", "yf", xf, dtype=F32, cols=(HD,))
    b.op("set_slice", "yf", "yf", "y0", axis=-1, start=start, stop=HD, step=2)
    b.op("set_slice", "yf", "yf", "y1", axis=-1, start=start + 1, stop=HD, step=2)
    _store_from_f32(b, "y", dtype, "yf", (HD,))
    return b.build()


def cos_row_map(x_lead: tuple, cs_lead: tuple) -> tuple[int, int] | None:
    """(cdiv, crows) such that cos row = (r // cdiv) % crows for x row r, or None when cos's
    broadcast pattern is not a contiguous block of x's leading dims."""
    n = len(x_lead)
    cs = (1,) * (n - len(cs_lead)) + tuple(cs_lead)
    if len(cs) != n:
        raise IRError(f"rope: cos/sin leading shape {cs_lead} has more dims than x's {x_lead}")
    for a, b in zip(x_lead, cs):
        if b not in (1, a):
            raise IRError(f"rope: cos/sin leading shape {cs_lead} does not broadcast against x's {x_lead}")
    kept = [i for i in range(n) if cs[i] != 1 and x_lead[i] != 1]
    if not kept:
        return math.prod(x_lead) or 1, 1
    lo, hi = kept[0], kept[-1] + 1
    if any(cs[i] == 1 and x_lead[i] != 1 for i in range(lo, hi)):
        return None
    return math.prod(x_lead[hi:]), math.prod(x_lead[lo:hi])


def run_rope_ir(x, cos, sin, rope_dim: int, inverse: bool, schedule: Schedule | None = None):
    hd = x.shape[-1]
    if rope_dim % 2 or rope_dim > hd or cos.shape[-1] != rope_dim // 2:
        raise IRError(f"rope: rope_dim={rope_dim} must be even, <= head_dim={hd}, and cos last dim "
                      f"({cos.shape[-1]}) must be rope_dim // 2")
    lead = tuple(x.shape[:-1])
    rows = math.prod(lead)
    h2 = rope_dim // 2
    m = cos_row_map(lead, tuple(cos.shape[:-1]))
    if m is None:    # broadcast pattern not expressible as (r // cdiv) % crows: materialise it
        cos_v, sin_v, cdiv = cos.expand(*lead, h2).reshape(rows, h2), sin.expand(*lead, h2).reshape(rows, h2), 1
    else:
        cos_v, sin_v, cdiv = _compact(cos, lead, h2), _compact(sin, lead, h2), m[0]
    p = build_rope(DType.from_torch(x.dtype), inverse, DType.from_torch(cos.dtype))
    out = interpret(p, {"x": x.reshape(rows, hd), "cos": cos_v, "sin": sin_v.to(cos.dtype)}, {"cdiv": cdiv}, schedule)
    return out["y"].reshape(x.shape)


def _compact(cs, lead, h2):
    """cos/sin with its size-1 (broadcast) leading dims dropped, as [crows, h2]."""
    n = len(lead)
    shape = (1,) * (n - (cs.dim() - 1)) + tuple(cs.shape[:-1])
    t = cs.reshape(*shape, h2)
    keep = [i for i in range(n) if shape[i] != 1 and lead[i] != 1]
    idx = tuple(slice(None) if i in keep else 0 for i in range(n))
    return t[idx].reshape(-1, h2).contiguous()
