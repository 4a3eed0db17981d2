"""Kernel IR program of `trex::rope` (forward and inverse; the backward is rope(dy, ..., not inverse)).

Rotates the LAST rope_dim = RD channels of x[..., head_dim] in interleaved pairs (2i, 2i+1)
(reference/deepseek_v4.md §3): y[2i] = x[2i] c_i - x[2i+1] s_i, y[2i+1] = x[2i] s_i + x[2i+1] c_i.

Vector form used by the kernel: y = x * C + swap(x) * S with the pair-expanded tables
C = [c0, c0, c1, c1, ...] and S = [-s0, s0, -s1, s1, ...] (S negated for the inverse rotation), and
swap(x) = [x1, x0, x3, x2, ...]. Two forms of swap and of the tables:

* "shifted_loads" (AscendC's): swap(x) = parity_select(x shifted left by one, x shifted right by one),
  the shifted copies DataCopyPad loads of the rope slice at GM offsets +1 / -1 (left/right padding
  lanes), so no element moves on the scalar unit; the runner expands the tables on the host
  (O(S * RD), against O(S * heads * head_dim) for x) and the inverse negates S there.
* "pairs" (the GPU's): x is loaded once and its pairs are swapped in registers (`pair_swap`); the
  kernel reads the half-width cos/sin tables and expands them in registers (`pair_expand`), the
  direction a scalar sign. One kernel a call, no host-side table kernels: session 17 measured the
  expansion's 2 extra kernels and allocations as RoPE's host tax under Inductor (bench/NOTES_gpu.md).

cos/sin rows broadcast over x's leading dims through a RowMap: table row = (r // CDIV) % CROWS.
Runners (the kernel spec's, kernel.py): `run_rope` (shifted loads) and `run_rope_pairs` (pairs).
"""
from __future__ import annotations

import math

import torch

from trex.compiler.kernel_ir import DType, IRError, Program, ProgramBuilder, RowMap, size
from trex.compiler.kernels import Executor, cached_program, ir_dtype

HD = size("HD")        # head_dim
RD = size("RD")        # rope_dim
CDIV = size("CDIV")    # kernel rows per table row
CROWS = size("CROWS")  # table rows
F32 = DType.FP32


SWAPS = ("shifted_loads", "pairs")


def build_rope(dtype: DType | str = DType.BF16, cs_dtype: DType | str | None = None,
               passthrough: bool = True, swap: str = "shifted_loads") -> Program:
    """passthrough=False: rope_dim == head_dim (no untouched channels to copy).

    swap: how swap(x) is formed. "shifted_loads" (AscendC's form): two more loads of the rope slice
    at GM offsets +1 / -1 and a parity select, since a UB copy at a one-element offset breaks the
    32-byte rule; it reads the host-expanded tables cos2/sin2 (`expand_tables`). "pairs" (the GPU's
    form): the slice is loaded once and its pairs are swapped in registers (`pair_swap`), and the
    half-width tables cos/sin are expanded in registers (`pair_expand`) with the rotation's direction
    the scalar $sgn (1 forward, -1 inverse); the AscendC lowering has no rule for those two ops."""
    if swap not in SWAPS:
        raise IRError(f"build_rope(swap={swap!r}): choose one of {SWAPS}")
    dtype = DType(dtype)
    cdt = DType(cs_dtype or dtype)
    suffix = ("" if passthrough else "_full") + ("_pairs" if swap == "pairs" else "")
    b = ProgramBuilder(f"rope_{dtype.value}_cs{cdt.value}{suffix}",
                       doc="y[-RD:] = x*C + swap(x)*S over interleaved pairs (pair-expanded tables C, S)")
    pairs = swap == "pairs"
    b.gm("x", dtype, (HD,))
    rm = RowMap(CDIV, CROWS)
    tables = ("cos", "sin") if pairs else ("cos2", "sin2")
    for t in tables:
        b.gm(t, cdt, (RD / 2,) if pairs else (RD,), row_map=rm)
    b.gm("y", dtype, (HD,), role="out")
    b.scalar("cdiv", DType.INT32)
    if pairs:
        b.scalar("sgn", F32)
    b.size_params.append((CDIV, "cdiv"))
    b.row_group = CDIV          # the CDIV rows (heads) of one token share a table row: one load per tile
    nope = HD - RD
    if passthrough:     # untouched channels: GM -> UB -> GM
        b.op("load", "xn", "x", col=(0, nope), dtype=dtype, cols=(nope,))
        b.op("store", None, "y", "xn", col=(0, nope))
    xa = _load_f32_cols(b, dtype, "xa", (nope, HD), (0, 0))
    if swap == "pairs":
        b.op("pair_swap", "sw", xa, dtype=F32, cols=(RD,))
    else:
        xl = _load_f32_cols(b, dtype, "xl", (nope + 1, HD), (0, 1))    # xl[j] = x[nope + j + 1]
        xr = _load_f32_cols(b, dtype, "xr", (nope, HD - 1), (1, 0))    # xr[j] = x[nope + j - 1]
        b.op("parity_select", "sw", xl, xr, dtype=F32, cols=(RD,))     # pair swap
    if pairs:
        c = b.op("pair_expand", "c", _load_table(b, "cos", cdt, "ch", RD / 2), dtype=F32, cols=(RD,),
                 per_row=False)
        half = {"dtype": F32, "cols": (RD / 2,), "per_row": False}
        full = {"dtype": F32, "cols": (RD,), "per_row": False}
        sh = b.op("muls", "sh", _load_table(b, "sin", cdt, "st", RD / 2), "$sgn", **half)
        b.op("neg", "shn", sh, **half)
        b.op("pair_expand", "sp", sh, **full)
        b.op("pair_expand", "sn", "shn", **full)
        s = b.op("parity_select", "s", "sn", "sp", **full)     # [-s0, s0, -s1, s1, ...] times $sgn
    else:
        c = _load_table(b, "cos2", cdt, "c")
        s = _load_table(b, "sin2", cdt, "s")
    b.op("mul", "yr", xa, c, dtype=F32, cols=(RD,))
    b.op("mul", "sw", "sw", s)
    b.op("add", "yr", "yr", "sw")
    if dtype == F32:
        b.op("store", None, "y", "yr", col=(nope, HD))
    else:
        b.op("cast", "yr_out", "yr", dtype=dtype, cols=(RD,))
        b.op("store", None, "y", "yr_out", col=(nope, HD))
    return b.build()


def _load_table(b: ProgramBuilder, gm: str, cdt: DType, name: str, width=RD) -> str:
    """The tile's table row (all rows of a tile share it), as a (1, width) fp32 local."""
    if cdt == F32:
        return b.op("load", name, gm, tile_row=True, dtype=F32, cols=(width,), per_row=False)
    b.op("load", name + "_in", gm, tile_row=True, dtype=cdt, cols=(width,), per_row=False)
    return b.op("cast", name, name + "_in", dtype=F32, cols=(width,), per_row=False)


def _load_f32_cols(b: ProgramBuilder, dtype: DType, name: str, col, pad) -> str:
    if dtype == F32:
        return b.op("load", name, "x", col=col, pad=pad, dtype=F32, cols=(RD,))
    b.op("load", name + "_in", "x", col=col, pad=pad, dtype=dtype, cols=(RD,))
    return b.op("cast", name, name + "_in", dtype=F32, cols=(RD,))


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


def expand_tables(cos: torch.Tensor, sin: torch.Tensor, inverse: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Pair-expanded tables: C = [c0, c0, c1, c1, ...], S = [-s0, s0, -s1, s1, ...] (negated if inverse)."""
    c2 = cos.repeat_interleave(2, dim=-1)
    s = -sin if inverse else sin
    s2 = torch.stack([-s, s], dim=-1).flatten(-2)
    return c2.contiguous(), s2.contiguous()


def _run(execute: Executor, x, cos, sin, rope_dim: int, inverse: bool, swap: str, passthrough: bool):
    hd = x.shape[-1]
    if rope_dim % 2 or not 2 <= rope_dim <= hd or cos.shape[-1] != rope_dim // 2:
        raise IRError(f"rope: rope_dim={rope_dim} must be even, in [2, head_dim={hd}], and cos last dim "
                      f"({cos.shape[-1]}) must be rope_dim // 2")
    lead = tuple(x.shape[:-1])
    rows = math.prod(lead)
    h2 = rope_dim // 2
    m = cos_row_map(lead, tuple(cos.shape[:-1]))
    if m is None:    # broadcast pattern not expressible as (r // cdiv) % crows: materialise it
        cos_v, sin_v, cdiv = cos.expand(*lead, h2).reshape(rows, h2), sin.expand(*lead, h2).reshape(rows, h2), 1
    else:
        cos_v, sin_v, cdiv = _compact(cos, lead, h2), _compact(sin, lead, h2), m[0]
    p = cached_program(build_rope, ir_dtype(x.dtype), ir_dtype(cos.dtype), passthrough, swap)
    sin_v = sin_v.to(cos.dtype)
    if swap == "pairs":      # the kernel expands the tables and applies the direction
        ins, scalars = {"cos": cos_v, "sin": sin_v}, {"cdiv": cdiv, "sgn": -1.0 if inverse else 1.0}
    else:
        c2, s2 = expand_tables(cos_v, sin_v, bool(inverse))
        ins, scalars = {"cos2": c2, "sin2": s2}, {"cdiv": cdiv}
    out = execute(p, {"x": x.reshape(rows, hd), **ins}, scalars)
    return out["y"].reshape(x.shape)


def run_rope(execute: Executor, x, cos, sin, rope_dim: int, inverse: bool):
    """swap(x) by two shifted loads (AscendC's form); no passthrough copy when rope_dim == head_dim."""
    return _run(execute, x, cos, sin, rope_dim, inverse, "shifted_loads", rope_dim < x.shape[-1])


def run_rope_pairs(execute: Executor, x, cos, sin, rope_dim: int, inverse: bool):
    """swap(x) in registers (the GPU's form: one load of x). Always the passthrough program (a zero-width
    copy when rope_dim == head_dim): one program per dtype pair, which the tuned and measured cuda
    configurations are keyed on."""
    return _run(execute, x, cos, sin, rope_dim, inverse, "pairs", True)


def _compact(cs, lead, h2):
    """cos/sin with its size-1 (broadcast) leading dims dropped, as [crows, h2]."""
    n = len(lead)
    shape = (1,) * (n - (cs.dim() - 1)) + tuple(cs.shape[:-1])
    t = cs.reshape(*shape, h2)
    keep = [i for i in range(n) if shape[i] != 1 and lead[i] != 1]
    idx = tuple(slice(None) if i in keep else 0 for i in range(n))
    return t[idx].reshape(-1, h2).contiguous()
