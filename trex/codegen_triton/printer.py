"""Kernel IR -> Triton source: one @triton.jit kernel per Kernel-IR program (forward or backward).

The printer reads the SAME `trex.compiler.kernel_ir.Program` the AscendC printer reads and prints a
kernel specialised to the bound column sizes (every size but ROWS is a literal in the source, so
Triton folds masks of unpadded axes away; ROWS is a run-time argument). Each Kernel-IR opcode has one
rule in `RULES` (elementwise opcodes share the format table `ELEMENTWISE`); a pass author who adds an
opcode to `kernel_ir.OPS` adds one rule here.

How the IR maps to Triton:
  * a row tile of the IR (`rows_per_tile` rows) is a Triton block [R, *column blocks]; column blocks
    are the next power of two of the extent (masked), or the tiling's chunk inside a `ChunkLoop`;
  * per-core locals (weights, weight-gradient accumulators) are [1, *cols] blocks that broadcast;
  * a program with PARTIAL outputs or an epilogue runs on a persistent grid of `programs` cores,
    each taking a contiguous span of rows (the interpreter's front/tail split); others launch one
    program per row tile;
  * `slice` of a loaded row is printed as a strided load of the slice (the same cache lines, so no
    extra DRAM bytes); `set_slice` chains ending in a store are printed as one store per piece with
    disjoint masks; other slices go through a one-hot gather (small tiles such as mHC's 24 coefficients);
  * `matvec`/`matvec_t` become `tl.dot` (TF32 tensor cores for fp32 operands) when every dimension
    is at least 16 after padding, else a broadcast-multiply-sum;
  * `Repeat` is a counted loop; `hist_write`/`hist_read` select a slot with a comparison mask
    (register tensors cannot be indexed by a run-time value).
"""
from __future__ import annotations

import dataclasses
import keyword
import math
import re
from typing import Callable

import sympy

from trex.compiler.kernel_ir import (OPS, ROWS, ChunkLoop, DType, GMTensor, IRError, Local, Op, Program,
                                     Repeat, TensorKind, walk)

TL_DTYPE = {DType.BF16: "tl.bfloat16", DType.FP16: "tl.float16", DType.FP32: "tl.float32",
            DType.INT32: "tl.int32", DType.UINT8: "tl.uint8"}

# elementwise opcodes: Triton expression templates over the printed operands
ELEMENTWISE: dict[str, str] = {
    "add": "{0} + {1}",
    "sub": "{0} - {1}",
    "mul": "{0} * {1}",
    "div": "{0} / {1}",
    # NaN propagates as in torch.clamp/maximum/relu (Triton's min/max default drops it on the GPU)
    "max": "tl.maximum({0}, {1}, propagate_nan=tl.PropagateNan.ALL)",
    "min": "tl.minimum({0}, {1}, propagate_nan=tl.PropagateNan.ALL)",
    "adds": "{0} + {1}",
    "muls": "{0} * {1}",
    "maxs": "tl.maximum({0}, {1}, propagate_nan=tl.PropagateNan.ALL)",
    "mins": "tl.minimum({0}, {1}, propagate_nan=tl.PropagateNan.ALL)",
    "exp": "tl.exp({0})",
    "ln": "tl.log({0})",
    "abs": "tl.abs({0})",
    "sqrt": "tl.sqrt_rn({0})",
    "rsqrt": "tl.rsqrt({0})",
    "reciprocal": "1.0 / {0}",
    "sigmoid": "tl.sigmoid({0})",
    "relu": "tl.maximum({0}, 0.0, propagate_nan=tl.PropagateNan.ALL)",
    "neg": "-{0}",
    "copy": "{0}",
}
CMP = {"LT": "<", "LE": "<=", "GT": ">", "GE": ">=", "EQ": "==", "NE": "!="}
REDUCE = {"reduce_sum": ("tl.sum", "0.0"), "reduce_max": ("tl.max", "float('-inf')")}
DOT_MIN = 16  # tl.dot needs every (padded) dimension >= 16 to use the tensor cores without waste


def next_pow2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


@dataclasses.dataclass(frozen=True)
class Tiling:
    """The knobs of one printed kernel (chosen by trex.codegen_triton.tiling from the cost model)."""
    rows_per_tile: int = 1
    col_chunk: int | None = None     # block of every ChunkLoop dim; None = whole extent (pow2)
    num_warps: int = 4
    num_stages: int = 2
    programs: int | None = None      # persistent grid size; None = one program per row tile
    reverse_second_pass: bool = True  # later ChunkLoops over a dim walk it backwards (L2 reuse)
    second_chunk: int | None = None  # block of later ChunkLoops over the same dim (None: col_chunk);
    #                                  an apply pass without a dot can stream wider chunks
    hist_scratch: bool = True        # history locals (Sinkhorn iterates) in a per-program global scratch
    #                                  buffer (L1/L2-resident) instead of registers, where they spill
    prefetch: bool = False           # ChunkLoops load chunk i+1's tiles (row and shared) while chunk i is computed
    #                                  (register double buffer: one DRAM latency per loop, not per chunk)
    dot_bf16_split: bool = False     # a matvec whose row operand is an up-cast bf16 tile runs as two bf16
    #                                  dots against w = w_hi + w_lo (both bf16): products exact, ~16-bit w,
    #                                  more precise than TF32, and no fp32 staging of the row tile

    def __post_init__(self):
        if self.rows_per_tile < 1 or self.rows_per_tile & (self.rows_per_tile - 1):
            raise IRError(f"Tiling.rows_per_tile must be a power of two >= 1, got {self.rows_per_tile}")
        for k in ("col_chunk", "second_chunk"):
            v = getattr(self, k)
            if v is not None and (v < 1 or v & (v - 1)):
                raise IRError(f"Tiling.{k} must be a power of two or None, got {v}")


@dataclasses.dataclass(frozen=True)
class KernelSource:
    name: str
    source: str
    args: tuple            # (kind, name): kind in ptr|row_stride|scalar|rows
    persistent: bool
    tiling: Tiling
    sizes: tuple           # ((symbol name, value), ...) the source is specialised to
    program: str           # the IR program's name
    scratch_per_program: int = 0   # fp32 elements of history scratch each program needs


# ------------------------------------------------------------------------------------------------
# context


@dataclasses.dataclass
class _Axis:
    """One column axis of a value as printed: its extent, block, offsets and mask variable names."""
    expr: sympy.Expr
    extent: int
    block: int
    offs: str
    mask: str | None       # None: every lane valid (block == extent, not chunked)


@dataclasses.dataclass
class _Val:
    """A printed local: its Triton variable, per-row or per-core, its axes, and what it is made of."""
    var: str
    per_row: bool
    axes: list
    dtype: DType
    load_of: tuple | None = None     # (gm name, dtype to cast to or None): this value is a loaded row
    pieces: tuple | None = None      # (base _Val, ((start, stop, step, _Val), ...)): a set_slice chain
    name_ir: str = ""                # the IR local (history locals in scratch memory)
    raw: tuple | None = None         # (var, DType): the 16-bit tile this fp32 value is an exact up-cast of


class _Printer:
    def __init__(self, p: Program, sizes: dict, tiling: Tiling):
        self.p, self.tiling = p, tiling
        self.sizes = {k: int(v) for k, v in sizes.items() if k != ROWS}
        self.lines: list[str] = []
        self.ind = 1
        self.vals: dict[str, _Val] = {}
        self.chunk: dict = {}          # dim expr -> (offs var, mask var or None, block)
        self.loop_vars: dict = {}      # IR Repeat var -> printed loop variable
        self.n_tmp = 0
        self.axis_vars: dict = {}      # (expr, chunked) -> _Axis prototype printed at kernel top
        self.top: list[str] = []
        self.chunk_seen: dict = {}     # dim -> number of ChunkLoops over it so far
        self.prefetched: dict = {}     # id(load op) -> variable already holding its tile (prefetch)
        self.persistent = tiling.programs is not None
        if not self.persistent and (p.epilogue or any(t.kind == TensorKind.PARTIAL for t in p.tensors)):
            raise IRError(f"program {p.name} has per-core partial outputs or an epilogue: its Tiling needs "
                          f"programs=<persistent grid size>")
        self.R = tiling.rows_per_tile
        # history locals kept in global scratch: name -> (elements per program, per row, slots)
        self.scratch: dict = {}
        if tiling.hist_scratch:
            offset = 0
            for op, _ in walk(p.prologue + p.body + p.epilogue):
                if op.opcode in ("hist_write", "hist_read") and op.args[0] not in self.scratch:
                    loc = p.locals_by_name[op.args[0]]
                    per_row = math.prod(self.ev(c) for c in loc.cols)
                    self.scratch[op.args[0]] = (None, per_row, offset)
                    offset += per_row
            self.scratch_per_row = offset
            for k, (_, _, off) in list(self.scratch.items()):
                self.scratch[k] = (self.R * offset, offset, off)

    # -- helpers
    def emit(self, line: str):
        self.lines.append("    " * self.ind + line)

    def tmp(self, stem="t") -> str:
        self.n_tmp += 1
        return f"_{stem}{self.n_tmp}"

    def ev(self, e) -> int:
        e = sympy.sympify(e).subs(self.sizes)
        if e.free_symbols:
            raise IRError(f"program {self.p.name}: size expression {e} is not bound (sizes {self.sizes})")
        return int(e)

    def num(self, e) -> str:
        """A numeric literal for a size-dependent constant such as 1/D."""
        v = sympy.sympify(e).subs(self.sizes)
        if v.free_symbols:
            raise IRError(f"program {self.p.name}: constant {e} depends on unbound sizes {v.free_symbols}")
        f = float(v)
        return repr(f) if math.isfinite(f) else f"float('{f}')"

    @staticmethod
    def ident(name: str) -> str:
        s = re.sub(r"\W", "_", name)
        return f"v_{s}" if not keyword.iskeyword(s) else f"v_{s}_"

    def axis(self, expr) -> _Axis:
        expr = sympy.sympify(expr)
        if expr in self.chunk:
            offs, mask, block = self.chunk[expr]
            return _Axis(expr, self.ev(expr), block, offs, mask)
        key = expr
        if key not in self.axis_vars:
            extent = self.ev(expr)
            block = next_pow2(extent)
            tag = re.sub(r"\W", "_", str(expr))
            offs = f"offs_{tag}" if not tag.isdigit() else f"offs_n{tag}"
            self.top.append(f"{offs} = tl.arange(0, {block})")
            mask = None
            if block != extent:
                mask = offs.replace("offs_", "mask_")
                self.top.append(f"{mask} = {offs} < {extent}")
            self.axis_vars[key] = _Axis(expr, extent, block, offs, mask)
        return self.axis_vars[key]

    def shape_of(self, local: Local) -> list:
        return [self.axis(c) for c in local.cols]

    @staticmethod
    def bcast(var: str, pos: int, rank: int) -> str:
        idx = ["None"] * rank
        idx[pos] = ":"
        return f"{var}[{', '.join(idx)}]"

    def block_shape(self, per_row: bool, axes: list) -> str:
        return "[" + ", ".join([str(self.R if per_row else 1)] + [str(a.block) for a in axes]) + "]"

    def full_mask(self, per_row: bool, axes: list, rows: str | None = "row_mask") -> str | None:
        rank = 1 + len(axes)
        parts = []
        if per_row and rows:
            parts.append(self.bcast(rows, 0, rank))
        for i, a in enumerate(axes):
            if a.mask:
                parts.append(self.bcast(a.mask, i + 1, rank))
        return " & ".join(parts) if parts else None

    def gm_offsets(self, t: GMTensor, axes: list, per_row: bool, col_override=None) -> str:
        """Element offsets of a tile of GM tensor t (contiguous columns, run-time row stride)."""
        rank = 1 + len(axes)
        extents = [self.ev(c) for c in t.cols]
        strides = [math.prod(extents[i + 1:]) for i in range(len(extents))]
        terms = []
        if t.kind == TensorKind.ROW:
            terms.append(f"{self.bcast(self.gm_rows(t), 0, rank)} * {t.name}_row_stride")
        elif t.kind == TensorKind.PARTIAL:
            terms.append(f"core * {t.name}_row_stride")
        for i, a in enumerate(axes):
            offs = a.offs if col_override is None or i != len(axes) - 1 else col_override
            term = self.bcast(offs, i + 1, rank)
            terms.append(term if strides[i] == 1 else f"{term} * {strides[i]}")
        return " + ".join(terms) if terms else "0"

    def gm_rows(self, t: GMTensor) -> str:
        rm = t.row_map
        if rm.is_identity:
            return "rows"
        var = f"rows_{t.name}"
        if var not in self.row_vars:
            expr = f"rows // {self.ev(rm.div)}" if rm.div != 1 else "rows"
            if rm.mod is not None:
                expr = f"({expr}) % {self.ev(rm.mod)}"
            self.row_vars[var] = expr
        return var

    def arg(self, a) -> str:
        """A printed operand: a local's variable, a scalar parameter, or a numeric constant."""
        if isinstance(a, str):
            neg = a.startswith("-$")
            if a.startswith("$") or neg:
                name = a[2:] if neg else a[1:]
                return f"(-{name})" if neg else name
            return self.value(a).var
        if isinstance(a, bool):
            raise IRError(f"program {self.p.name}: boolean operand {a!r}")
        if isinstance(a, (int, float)):
            return repr(float(a))
        return self.num(a)

    def value(self, name: str) -> _Val:
        if name not in self.vals:
            raise IRError(f"program {self.p.name}: local {name!r} used before it is assigned")
        v = self.vals[name]
        if v.pieces is not None:
            v = self.materialize(name, v)
        return v

    def set_val(self, name: str, v: _Val):
        self.vals[name] = v

    # -- structure
    def run(self, stmts):
        for s in stmts:
            if isinstance(s, Op) and id(s) in self.prefetched:    # loaded one iteration ahead
                _rule_load(self, s, var=self.prefetched[id(s)], emit=False)
                continue
            if isinstance(s, Op):
                rule = RULES.get(s.opcode)
                if rule is None:
                    raise IRError(f"Triton printer has no rule for opcode {s.opcode!r} (program {self.p.name}); "
                                  f"add one to trex.codegen_triton.printer.RULES")
                rule(self, s)
            elif isinstance(s, ChunkLoop):
                self.chunk_loop(s)
            elif isinstance(s, Repeat):
                self.repeat(s)
            else:
                raise IRError(f"program {self.p.name}: unknown statement {s!r}")

    def chunk_loop(self, s: ChunkLoop):
        dim = s.dim
        extent = self.ev(dim)
        seen = self.chunk_seen.get(dim, 0)
        chunk = (self.tiling.second_chunk if seen else None) or self.tiling.col_chunk or next_pow2(extent)
        chunk = min(chunk, next_pow2(extent))
        n_chunks = -(-extent // chunk)
        self.chunk_seen[dim] = seen + 1
        tag = re.sub(r"\W", "_", str(dim))
        it = self.tmp(f"c_{tag}_")
        backwards = bool(seen and self.tiling.reverse_second_pass)
        # a later pass over the same columns walks them backwards: the chunks read last by the
        # previous pass are read first again, while they are still in L2
        def start_of(i: str) -> str:
            return f"({n_chunks - 1} - {i}) * {chunk}" if backwards else f"{i} * {chunk}"

        def set_chunk(tag_: str, start: str):
            offs_ = f"{tag_}_offs"
            self.emit(f"{offs_} = {start} + tl.arange(0, {chunk})")
            mask_ = None
            if extent % chunk:
                mask_ = f"{tag_}_mask"
                self.emit(f"{mask_} = {offs_} < {extent}")
            self.chunk[dim] = (offs_, mask_, chunk)

        saved = self.chunk.get(dim)
        # prefetch: the loop body's row loads of chunk i+1 are issued before chunk i is computed
        # (the last iteration re-reads chunk 0 instead of masking: same addresses, no branch)
        pf = [op for op in s.body if isinstance(op, Op) and op.opcode == "load" and op.attr("col") is None
              and sympy.sympify(dim) in [sympy.sympify(c) for c in self.p.tensor(op.args[0]).cols]] \
            if self.tiling.prefetch and n_chunks > 1 else []
        # one buffer variable per load op (one IR local may be loaded from several tensors)
        pf_var = {id(op): f"{self.ident(op.out)}_pf{k}" for k, op in enumerate(pf)}
        if pf:
            set_chunk(f"{it}_pf0", start_of("0"))
            for op in pf:
                _rule_load(self, op, var=pf_var[id(op)])
        self.emit(f"for {it} in range({n_chunks}):")
        self.ind += 1
        self.emit(f"{it}_start = {start_of(it)}")
        set_chunk(it, f"{it}_start")
        if pf:
            cur = {}
            for k, op in enumerate(pf):
                var = f"{self.ident(op.out)}_cur{k}"
                self.emit(f"{var} = {pf_var[id(op)]}")
                cur[id(op)] = var
            here = self.chunk[dim]
            set_chunk(f"{it}_pfn", start_of(f"(({it} + 1) % {n_chunks})"))
            for op in pf:
                _rule_load(self, op, var=pf_var[id(op)])
            self.chunk[dim] = here
            for op in pf:      # the body reads the current chunk's tiles
                self.prefetched[id(op)] = cur[id(op)]
        self.run(s.body)
        for op in pf:
            self.prefetched.pop(id(op), None)
        if saved is None:
            del self.chunk[dim]
        else:
            self.chunk[dim] = saved
        self.ind -= 1

    def repeat(self, s: Repeat):
        n = self.ev(s.count)
        var = self.ident(s.var)
        it = self.tmp("it")
        self.emit(f"for {it} in range({n}):")
        self.ind += 1
        self.emit(f"{var} = {n - 1} - {it}" if s.reverse else f"{var} = {it}")
        self.loop_vars[s.var] = var
        self.run(s.body)
        del self.loop_vars[s.var]
        self.ind -= 1

    def slot(self, e) -> str:
        expr = sympy.sympify(e)
        subs = {}
        for sym in expr.free_symbols:
            if str(sym) in self.loop_vars:
                subs[sym] = sympy.Symbol(self.loop_vars[str(sym)])
            else:
                subs[sym] = self.ev(sym)
        return str(expr.subs(subs))

    # -- materialisation of lazily printed values
    def materialize(self, name: str, v: _Val) -> _Val:
        """A set_slice chain used by something other than a store: scatter its pieces now."""
        base, pieces = v.pieces
        cur = base
        for (start, stop, step, src) in pieces:
            cur = self.scatter(cur, src, len(base.axes), start, stop, step)
        out = dataclasses.replace(cur, dtype=v.dtype)
        self.vals[name] = out
        return out

    def scatter(self, dst: _Val, src: _Val, ax: int, start: int, stop: int, step: int) -> _Val:
        """dst[..., start:stop:step, ...] = src along block axis `ax` (1-based past the row axis), as a
        one-hot contraction: cost (dst block) x (src block) per element of the other axes, so it is
        meant for small tiles (mHC's 6 x 4 coefficient blocks)."""
        rank = 1 + len(dst.axes)
        a_dst, a_src = dst.axes[ax - 1], src.axes[ax - 1]
        count = (stop - start + step - 1) // step
        sel = self.tmp("sel")
        self.emit(f"{sel} = ({self.bcast(a_dst.offs, 0, 2)} == {start} + {step} * {self.bcast(a_src.offs, 1, 2)}) "
                  f"& ({self.bcast(a_src.offs, 1, 2)} < {count})")
        idx = ["None"] * (rank + 1)
        idx[ax] = ":"
        idx[ax + 1] = ":"
        gathered = f"tl.sum(tl.where({sel}[{', '.join(idx)}], tl.expand_dims({src.var}, {ax}), 0.0), axis={ax + 1})"
        hit = self.tmp("hit")
        self.emit(f"{hit} = tl.sum({sel}.to(tl.int32), axis=1) > 0")
        var = self.tmp("scat")
        self.emit(f"{var} = tl.where({self.bcast(hit, ax, rank)}, {gathered}, {dst.var})")
        return _Val(var, dst.per_row or src.per_row, dst.axes, dst.dtype)

    def gather(self, src: _Val, ax: int, out_axes: list, start: int, step: int) -> str:
        """src[..., start::step, ...] along block axis `ax` as a one-hot contraction (small tiles)."""
        rank = 1 + len(src.axes)
        a_in, a_out = src.axes[ax - 1], out_axes[ax - 1]
        sel = self.tmp("sel")
        self.emit(f"{sel} = ({self.bcast(a_in.offs, 0, 2)} == {start} + {step} * {self.bcast(a_out.offs, 1, 2)}) "
                  f"& ({self.bcast(a_out.offs, 1, 2)} < {a_out.extent})")
        idx = ["None"] * (rank + 1)
        idx[ax] = ":"
        idx[ax + 1] = ":"
        var = self.tmp("gath")
        self.emit(f"{var} = tl.sum(tl.where({sel}[{', '.join(idx)}], tl.expand_dims({src.var}, {ax + 1}), 0.0), "
                  f"axis={ax})")
        return var


# ------------------------------------------------------------------------------------------------
# rules (one per opcode)


def _out_local(pr: _Printer, op: Op) -> Local:
    return pr.p.locals_by_name[op.out]


def _rule_elementwise(pr: _Printer, op: Op):
    out = _out_local(pr, op)
    if op.opcode == "copy" and pr.vals.get(op.args[0]) is not None and pr.vals[op.args[0]].pieces is not None:
        pr.set_val(op.out, pr.vals[op.args[0]])     # copying a set_slice chain keeps it lazy
        return
    args = [pr.arg(a) for a in op.args]
    var = pr.ident(op.out)
    pr.emit(f"{var} = {ELEMENTWISE[op.opcode].format(*args)}")
    load_of = None
    if op.opcode == "copy" and isinstance(op.args[0], str) and op.args[0] in pr.vals:
        load_of = pr.vals[op.args[0]].load_of
    pr.set_val(op.out, _Val(var, _any_per_row(pr, op.args), pr.shape_of(out), out.dtype, load_of=load_of))


def _any_per_row(pr: _Printer, args) -> bool:
    """Whether a result is [R, ...] (some operand is per-row) or [1, ...] (all per-core or scalars)."""
    return any(pr.vals[a].per_row for a in args if isinstance(a, str) and a in pr.vals)


def _rule_load(pr: _Printer, op: Op, var: str | None = None, emit: bool = True):
    """`var`: the variable to load into (default: the local's); emit=False: the tile is already in
    `var` (a prefetched load): only bind the local to it."""
    t = pr.p.tensor(op.args[0])
    out = _out_local(pr, op)
    axes = pr.shape_of(out)
    col = op.attr("col")
    per_row = t.kind == TensorKind.ROW
    var = var or pr.ident(op.out)
    if not emit:
        pr.set_val(op.out, _Val(var, per_row, axes, out.dtype, load_of=(t.name, None) if col is None else None))
        return
    override = None
    lane_mask = None
    if col is not None:
        # lanes j of the local read GM columns start + j - pad_left; pad lanes are undefined (zero here)
        start, stop = pr.ev(col[0]), pr.ev(col[1])
        pad = op.attr("pad") or (0, 0)
        left = pr.ev(pad[0])
        k = pr.tmp("col")
        pr.emit(f"{k} = {start - left} + {axes[-1].offs}")
        override = k
        if left or pr.ev(pad[1]):
            rank = 1 + len(axes)
            j = pr.bcast(axes[-1].offs, rank - 1, rank)
            lane_mask = f"({j} >= {left}) & ({j} < {left + stop - start})"
    offs = pr.gm_offsets(t, axes, per_row, override)
    mask = pr.full_mask(per_row, axes)
    if lane_mask:
        mask = f"{mask} & {lane_mask}" if mask else lane_mask
    if mask:
        pr.emit(f"{var} = tl.load({t.name}_ptr + {offs}, mask={mask}, other=0.0)")
    else:
        pr.emit(f"{var} = tl.load({t.name}_ptr + {offs})")
    pr.set_val(op.out, _Val(var, per_row, axes, out.dtype, load_of=(t.name, None) if col is None else None))


def _rule_store(pr: _Printer, op: Op):
    t = pr.p.tensor(op.args[0])
    v = pr.vals.get(op.args[1])
    if v is None:
        raise IRError(f"program {pr.p.name}: store of unassigned local {op.args[1]!r}")
    col = op.attr("col")
    if v.pieces is not None and col is None:
        _store_pieces(pr, t, v)
        return
    v = pr.value(op.args[1])
    _store_block(pr, t, v, col)


def _store_block(pr: _Printer, t: GMTensor, v: _Val, col=None, extra_mask: str | None = None,
                 cast: DType | None = None):
    axes = v.axes
    per_row = t.kind == TensorKind.ROW
    override = None
    if col is not None:
        k = pr.tmp("col")
        pr.emit(f"{k} = {pr.ev(col[0])} + {axes[-1].offs}")
        override = k
    offs = pr.gm_offsets(t, axes, per_row, override)
    mask = pr.full_mask(per_row, axes)
    if extra_mask:
        mask = f"({mask}) & ({extra_mask})" if mask else extra_mask
    src = v.var
    if cast is not None:
        src = f"{src}.to({TL_DTYPE[cast]})"
    shape = pr.block_shape(per_row, axes)
    if not v.per_row and per_row:
        src = f"tl.broadcast_to({src}, {shape})"
    pr.emit(f"tl.store({t.name}_ptr + {offs}, {src}" + (f", mask={mask})" if mask else ")"))


def _store_pieces(pr: _Printer, t: GMTensor, v: _Val):
    """store(gm, set_slice(...(copy(base)), piece_i)): each column written once, by the base where no
    piece covers it, else by its piece (a strided store)."""
    base, pieces = v.pieces
    last = base.axes[-1]
    covered = set()
    for (start, stop, step, _) in pieces:
        covered |= set(range(start, stop, step))
    rank = 1 + len(base.axes)
    uncovered = [c for c in range(last.extent) if c not in covered]
    if (len(pieces) == 2 and pieces[0][2] == pieces[1][2] == 2 and pieces[0][1] == pieces[1][1] == last.extent
            and pieces[1][0] == pieces[0][0] + 1 and pieces[0][3].axes[-1].block * 2 == last.extent - pieces[0][0]
            and pieces[0][3].axes[-1].mask is None and pieces[1][3].axes[-1].mask is None):
        # even and odd lanes of one range: interleave them in registers and store contiguously
        lo, a, b = pieces[0][0], pieces[0][3], pieces[1][3]
        blk = 2 * a.axes[-1].block
        j = pr.tmp("join")
        pr.emit(f"{j} = tl.reshape(tl.join({a.var}, {b.var}), {pr.block_shape(a.per_row, a.axes[:-1] + [_Axis(None, blk, blk, '', None)])})")
        joined = _Val(j, a.per_row, a.axes[:-1] + [_Axis(None, blk, blk, pr.tmp("offs"), None)], a.dtype)
        pr.emit(f"{joined.axes[-1].offs} = {lo} + tl.arange(0, {blk})")
        pieces = ()
        covered = set(range(lo, last.extent))
        uncovered = [c for c in range(last.extent) if c not in covered]
        offs = pr.gm_offsets(t, joined.axes, t.kind == TensorKind.ROW)
        mask = pr.full_mask(t.kind == TensorKind.ROW, joined.axes)
        val = j if a.dtype == t.dtype else f"{j}.to({TL_DTYPE[t.dtype]})"
        if not a.per_row and t.kind == TensorKind.ROW:
            val = f"tl.broadcast_to({val}, {pr.block_shape(True, joined.axes)})"
        pr.emit(f"tl.store({t.name}_ptr + {offs}, {val}" + (f", mask={mask})" if mask else ")"))
    cast = t.dtype if base.dtype != t.dtype else None
    if uncovered:
        if len(covered) and max(covered) == last.extent - 1 and covered == set(range(min(covered), last.extent)):
            keep = f"{pr.bcast(last.offs, rank - 1, rank)} < {min(covered)}"
        else:
            keep = " & ".join(f"({pr.bcast(last.offs, rank - 1, rank)} != {c})" for c in sorted(covered)) or None
        _store_block(pr, t, base, extra_mask=keep, cast=cast)
    for (start, stop, step, src) in pieces:
        sl = src.axes[-1]
        k = pr.tmp("col")
        pr.emit(f"{k} = {start} + {step} * {sl.offs}")
        offs = pr.gm_offsets(t, src.axes, t.kind == TensorKind.ROW, k)
        mask = pr.full_mask(t.kind == TensorKind.ROW, src.axes)
        lim = f"{pr.bcast(k, rank - 1, rank)} < {stop}"
        mask = f"{mask} & ({lim})" if mask else lim
        val = src.var if src.dtype == t.dtype else f"{src.var}.to({TL_DTYPE[t.dtype]})"
        pr.emit(f"tl.store({t.name}_ptr + {offs}, {val}, mask={mask})")


def _rule_cast(pr: _Printer, op: Op):
    out = _out_local(pr, op)
    src = pr.vals.get(op.args[0])
    if src is None:
        raise IRError(f"program {pr.p.name}: cast of unassigned local {op.args[0]!r}")
    if src.pieces is not None:   # cast commutes with a set_slice chain: each piece is cast at its store
        pr.set_val(op.out, _Val(src.var, src.per_row, src.axes, out.dtype, pieces=src.pieces))
        return
    var = pr.ident(op.out)
    pr.emit(f"{var} = {src.var}.to({TL_DTYPE[out.dtype]})")
    load_of = (src.load_of[0], out.dtype) if src.load_of else None
    raw = None
    if out.dtype == DType.FP32 and src.dtype in (DType.BF16, DType.FP16):
        # a fresh name for the 16-bit tile (free in Triton's SSA): the IR may reassign the source
        # local before a matvec reads `raw` (review finding: the dot then read the newer tile)
        raw = (pr.tmp("raw"), src.dtype)
        pr.emit(f"{raw[0]} = {src.var}")
    pr.set_val(op.out, _Val(var, src.per_row, src.axes, out.dtype, load_of=load_of, raw=raw))


def _rule_fill(pr: _Printer, op: Op):
    out = _out_local(pr, op)
    axes = pr.shape_of(out)
    var = pr.ident(op.out)
    if op.out in pr.scratch:     # a history in scratch memory: only written slots are ever read
        pr.set_val(op.out, _Val(var, out.per_row, axes, out.dtype))
        return
    pr.emit(f"{var} = tl.full({pr.block_shape(out.per_row, axes)}, {pr.arg(op.args[0])}, {TL_DTYPE[out.dtype]})")
    pr.set_val(op.out, _Val(var, out.per_row, axes, out.dtype))


def _axis_index(op: Op, rank: int) -> int:
    axis = int(op.attr("axis", -1))
    return axis + rank if axis < 0 else axis + 1


def _rule_reduce(pr: _Printer, op: Op):
    src = pr.value(op.args[0])
    out = _out_local(pr, op)
    rank = 1 + len(src.axes)
    ax = _axis_index(op, rank)
    fn, neutral = REDUCE[op.opcode]
    a = src.axes[ax - 1]
    x = src.var
    if a.mask:
        x = f"tl.where({pr.bcast(a.mask, ax, rank)}, {x}, {neutral})"
    var = pr.ident(op.out)
    pr.emit(f"{var} = {fn}({x}, axis={ax}, keep_dims=True)")
    axes = list(src.axes)
    axes[ax - 1] = pr.axis(1)
    pr.set_val(op.out, _Val(var, src.per_row, axes, out.dtype))


def _rule_acc_rows(pr: _Printer, op: Op):
    """acc += sum over the tile's rows of src (rows past ROWS masked out). tl.sum reduces the tile's rows
    as a tree (in registers, warp shuffles, then shared memory across warps), the IR's tile-level tree
    (kernel_ir.ops.row_tree) in the order of Triton's layout: rounding grows with log2(rows per tile) +
    tiles per program, not with every row summed."""
    acc, src = pr.value(op.args[0]), pr.value(op.args[1])
    rank = 1 + len(src.axes)
    x = f"tl.where({pr.bcast('row_mask', 0, rank)}, {src.var}, 0.0)" if src.per_row else src.var
    var = pr.ident(op.out)
    pr.emit(f"{var} = {acc.var} + tl.sum({x}, axis=0, keep_dims=True)")
    pr.set_val(op.out, _Val(var, False, acc.axes, acc.dtype))


def _rule_parity_select(pr: _Printer, op: Op):
    """out[..., j] = a[..., j] for even j, b[..., j] for odd j (pair swaps: RoPE's swap(x))."""
    out = _out_local(pr, op)
    a, b = pr.value(op.args[0]), pr.value(op.args[1])
    axes = pr.shape_of(out)
    rank = 1 + len(axes)
    var = pr.ident(op.out)
    pr.emit(f"{var} = tl.where(({pr.bcast(axes[-1].offs, rank - 1, rank)} % 2) == 0, {a.var}, {b.var})")
    pr.set_val(op.out, _Val(var, a.per_row or b.per_row, axes, out.dtype))


def _rule_pair_swap(pr: _Printer, op: Op):
    """Swap the interleaved pairs of the last axis in registers: split the block into its (even, odd)
    lanes and join them the other way round. Padding lanes pair among themselves (even blocks)."""
    src = pr.value(op.args[0])
    out = _out_local(pr, op)
    last = src.axes[-1]
    if last.block % 2 or last.extent % 2:
        # an odd extent in an even block would pair the last real lane with a padding lane
        raise IRError(f"program {pr.p.name}: `{op}` needs an even last axis, got extent {last.extent} "
                      f"in a block of {last.block}")
    pairs = pr.block_shape(src.per_row, src.axes[:-1]).rstrip("]") + f", {last.block // 2}, 2]"
    ev, od = pr.tmp("even"), pr.tmp("odd")
    var = pr.ident(op.out)
    pr.emit(f"{ev}, {od} = tl.split(tl.reshape({src.var}, {pairs}))")
    pr.emit(f"{var} = tl.reshape(tl.join({od}, {ev}), {pr.block_shape(src.per_row, src.axes)})")
    pr.set_val(op.out, _Val(var, src.per_row, pr.shape_of(out), out.dtype))


def _rule_pair_expand(pr: _Printer, op: Op):
    """Each lane of the last axis twice, in place (RoPE's half-width cos/sin tables to the pair layout):
    join the block with itself and flatten the pairs. A block of twice the source's block: padding
    lanes land on padding lanes."""
    src = pr.value(op.args[0])
    out = _out_local(pr, op)
    axes = pr.shape_of(out)
    if axes[-1].extent != 2 * src.axes[-1].extent or axes[-1].block != 2 * src.axes[-1].block:
        raise IRError(f"program {pr.p.name}: `{op}` needs an out last axis twice src's, got {axes[-1].extent} "
                      f"(block {axes[-1].block}) for {src.axes[-1].extent} (block {src.axes[-1].block})")
    var = pr.ident(op.out)
    pr.emit(f"{var} = tl.reshape(tl.join({src.var}, {src.var}), {pr.block_shape(src.per_row, axes)})")
    pr.set_val(op.out, _Val(var, src.per_row, axes, out.dtype))


def _rule_select(pr: _Printer, op: Op):
    out = _out_local(pr, op)
    a, b, x, y = (pr.arg(v) for v in op.args)
    var = pr.ident(op.out)
    pr.emit(f"{var} = tl.where({a} {CMP[op.attr('cmp')]} {b}, {x}, {y})")
    pr.set_val(op.out, _Val(var, _any_per_row(pr, op.args), pr.shape_of(out), out.dtype))


def _rule_slice(pr: _Printer, op: Op):
    src = pr.vals.get(op.args[0])
    if src is None:
        raise IRError(f"program {pr.p.name}: slice of unassigned local {op.args[0]!r}")
    out = _out_local(pr, op)
    start, stop, step = pr.ev(op.attr("start")), pr.ev(op.attr("stop")), pr.ev(op.attr("step", 1))
    rank = 1 + len(src.axes)
    ax = _axis_index(op, rank)
    axes = pr.shape_of(out)
    var = pr.ident(op.out)
    a_in = src.axes[ax - 1]
    if (step == 2 and ax == rank - 1 and src.pieces is None and start in (0, 1) and stop == a_in.extent
            and a_in.block == a_in.extent and a_in.mask is None and a_in.block >= 2):
        # even/odd lanes of a whole row: split the row held in registers into its pairs
        cached = pr.split_cache.get(src.var)
        pair = cached[1] if cached is not None and cached[0] is src else None
        if pair is None:
            ev, od = pr.tmp("even"), pr.tmp("odd")
            shape = pr.block_shape(src.per_row, src.axes[:-1]).rstrip("]")
            shape = (shape + ", " if src.axes[:-1] else shape + ", ") + f"{a_in.block // 2}, 2]"
            pr.emit(f"{ev}, {od} = tl.split(tl.reshape({src.var}, {shape}))")
            pair = (ev, od)
            pr.split_cache[src.var] = (src, pair)
        pr.emit(f"{var} = {pair[start]}")
        pr.set_val(op.out, _Val(var, src.per_row, axes, out.dtype))
        return
    if src.load_of is not None and ax == rank - 1 and not any(d in pr.chunk for d in pr.p.tensor(src.load_of[0]).cols):
        # a slice of a loaded row: load the slice itself (strided; the lines are already cached)
        t = pr.p.tensor(src.load_of[0])
        k = pr.tmp("col")
        pr.emit(f"{k} = {start} + {step} * {axes[-1].offs}")
        offs = pr.gm_offsets(t, axes, t.kind == TensorKind.ROW, k)
        mask = pr.full_mask(t.kind == TensorKind.ROW, axes)
        pr.emit(f"{var} = tl.load({t.name}_ptr + {offs}" + (f", mask={mask}, other=0.0)" if mask else ")"))
        if src.load_of[1] is not None:
            pr.emit(f"{var} = {var}.to({TL_DTYPE[src.load_of[1]]})")
        pr.set_val(op.out, _Val(var, src.per_row, axes, out.dtype))
        return
    src = pr.value(op.args[0])
    g = pr.gather(src, ax, axes, start, step)
    pr.emit(f"{var} = {g}")
    pr.set_val(op.out, _Val(var, src.per_row, axes, out.dtype))


def _rule_set_slice(pr: _Printer, op: Op):
    dst = pr.vals.get(op.args[0])
    src = pr.value(op.args[1])
    if dst is None:
        raise IRError(f"program {pr.p.name}: set_slice into unassigned local {op.args[0]!r}")
    rank = 1 + len(dst.axes)
    start, stop, step = pr.ev(op.attr("start")), pr.ev(op.attr("stop")), pr.ev(op.attr("step", 1))
    ax = _axis_index(op, rank)
    if ax != rank - 1:
        dst = pr.value(op.args[0])
        pr.set_val(op.out, pr.scatter(dst, src, ax, start, stop, step))
        return
    base, pieces = (dst.pieces if dst.pieces is not None else (dst, ()))
    pr.set_val(op.out, _Val(dst.var, dst.per_row, dst.axes, dst.dtype,
                            pieces=(base, pieces + ((start, stop, step, src),))))


def _rule_transpose(pr: _Printer, op: Op):
    src = pr.value(op.args[0])
    out = _out_local(pr, op)
    rank = 1 + len(src.axes)
    perm = list(range(rank))
    perm[-1], perm[-2] = perm[-2], perm[-1]
    var = pr.ident(op.out)
    pr.emit(f"{var} = tl.permute({src.var}, {tuple(perm)})")
    axes = list(src.axes)
    axes[-1], axes[-2] = axes[-2], axes[-1]
    pr.set_val(op.out, _Val(var, src.per_row, axes, out.dtype))


def _rule_view(pr: _Printer, op: Op):
    src = pr.value(op.args[0])
    out = _out_local(pr, op)
    axes = pr.shape_of(out)
    var = pr.ident(op.out)
    pr.emit(f"{var} = tl.reshape({src.var}, {pr.block_shape(src.per_row, axes)})")
    pr.set_val(op.out, _Val(var, src.per_row, axes, out.dtype))


def _flat(pr: _Printer, v: _Val, lead: int, keep: int) -> tuple[str, int]:
    """Reshape v's block to 2-d [lead-block, prod(last `keep` axis blocks)]; zero padded K lanes."""
    x = v.var
    rank = 1 + len(v.axes)
    for i, a in enumerate(v.axes[len(v.axes) - keep:]):
        if a.mask:
            pos = rank - keep + i
            x = f"tl.where({pr.bcast(a.mask, pos, rank)}, {x}, 0.0)"
    k = math.prod(a.block for a in v.axes[len(v.axes) - keep:])
    if len(v.axes) == keep == 1 and (pr.R if v.per_row else 1) == lead:
        return x, k          # already a [lead, k] tile: a reshape here would only cost a layout conversion
    return f"tl.reshape({x}, [{lead}, {k}])", k


def _rule_matvec(pr: _Printer, op: Op):
    """out[r, *M] = sum_K a[r, *K] * w[*M, *K] (w per-core)."""
    a, w = pr.value(op.args[0]), pr.value(op.args[1])
    out = _out_local(pr, op)
    nk = len(a.axes)
    nm = len(w.axes) - nk
    m_axes = w.axes[:nm]
    mblock = math.prod(x.block for x in m_axes)
    R = pr.R if a.per_row else 1
    a2, kblock = _flat(pr, a, R, nk)
    wx = w.var
    # w: [1, *M, *K] -> [M, K]
    wflat, _ = _flat(pr, dataclasses.replace(w, var=wx), mblock, nk)
    var = pr.ident(op.out)
    dot_ok = R >= DOT_MIN and mblock >= DOT_MIN and kblock >= DOT_MIN
    if dot_ok and pr.tiling.dot_bf16_split and a.raw is not None and a.raw[1] == DType.BF16:
        # x (bf16) . w = x . w_hi + x . w_lo with w_hi = bf16(w), w_lo = bf16(w - w_hi): every product
        # is exact in the fp32 accumulator, w keeps ~16 mantissa bits (TF32 keeps 10 of x and w)
        a16, _ = _flat(pr, dataclasses.replace(a, var=a.raw[0]), R, nk)
        wf, whi, wlo = pr.tmp("wf"), pr.tmp("whi"), pr.tmp("wlo")
        pr.emit(f"{wf} = {wflat}")
        pr.emit(f"{whi} = {wf}.to(tl.bfloat16)")
        pr.emit(f"{wlo} = ({wf} - {whi}.to(tl.float32)).to(tl.bfloat16)")
        pr.emit(f"{var} = tl.dot({a16}, tl.trans({whi}), tl.dot({a16}, tl.trans({wlo})))")
    elif dot_ok:
        pr.emit(f"{var} = tl.dot({a2}, tl.trans({wflat}))")
    else:
        pr.emit(f"{var} = tl.sum({a2}[:, None, :] * {wflat}[None, :, :], axis=2)")
    axes = pr.shape_of(out)
    if len(axes) != 1:
        pr.emit(f"{var} = tl.reshape({var}, {pr.block_shape(a.per_row, axes)})")
    pr.set_val(op.out, _Val(var, a.per_row, axes, out.dtype))


def _rule_matvec_t(pr: _Printer, op: Op):
    """out[r, *K] = sum_M g[r, *M] * w[*M, *K] (w per-core)."""
    g, w = pr.value(op.args[0]), pr.value(op.args[1])
    out = _out_local(pr, op)
    nm = len(g.axes)
    R = pr.R if g.per_row else 1
    g2, mblock = _flat(pr, g, R, nm)
    kblock = math.prod(x.block for x in w.axes[nm:])
    # w: [1, *M, *K] -> [M, K]; padded M lanes of w are multiplied by g's zeroed lanes
    wflat = f"tl.reshape({w.var}, [{mblock}, {kblock}])"
    var = pr.ident(op.out)
    if R >= DOT_MIN and mblock >= DOT_MIN and kblock >= DOT_MIN:
        pr.emit(f"{var} = tl.dot({g2}, {wflat})")
    else:
        pr.emit(f"{var} = tl.sum({g2}[:, :, None] * {wflat}[None, :, :], axis=1)")
    axes = pr.shape_of(out)
    if len(axes) != 1:
        pr.emit(f"{var} = tl.reshape({var}, {pr.block_shape(g.per_row, axes)})")
    pr.set_val(op.out, _Val(var, g.per_row, axes, out.dtype))


def _scratch_offsets(pr: _Printer, h: _Val, slot: str) -> tuple[str, str | None]:
    """Offsets of slot `slot` of history h in this program's scratch: [R, slots, *inner] fp32."""
    per_program, per_row, local_offset = pr.scratch[h.name_ir]
    inner = h.axes[1:]
    rank = 1 + len(inner)
    inner_elems = math.prod(a.extent for a in inner)
    terms = [f"core * {per_program}", f"{pr.bcast('tile_rows', 0, rank)} * {per_row}",
             f"{local_offset} + ({slot}) * {inner_elems}"]
    for i, a in enumerate(inner):
        stride = math.prod(x.extent for x in inner[i + 1:])
        terms.append(f"{pr.bcast(a.offs, i + 1, rank)}" + (f" * {stride}" if stride != 1 else ""))
    mask = pr.full_mask(False, inner)
    return " + ".join(terms), mask


def _rule_hist_write(pr: _Printer, op: Op):
    h = pr.value(op.args[0])
    src = pr.value(op.args[1])
    slot = pr.slot(op.attr("slot"))
    if op.args[0] in pr.scratch:
        offs, mask = _scratch_offsets(pr, _with_name(h, op.args[0]), slot)
        pr.emit("tl.debug_barrier()")   # every read of the slot's previous contents has completed
        val = src.var if src.per_row else f"tl.broadcast_to({src.var}, {pr.block_shape(True, src.axes)})"
        pr.emit(f"tl.store(hist_scratch_ptr + {offs}, {val}" + (f", mask={mask})" if mask else ")"))
        pr.set_val(op.out, h)
        return
    rank = 1 + len(h.axes)
    a = h.axes[0]
    var = pr.ident(op.out)
    src_e = f"tl.expand_dims({src.var}, 1)"
    pr.emit(f"{var} = tl.where({pr.bcast(a.offs, 1, rank)} == ({slot}), {src_e}, {h.var})")
    pr.set_val(op.out, _Val(var, h.per_row, h.axes, h.dtype))


def _with_name(h: _Val, name: str) -> _Val:
    return dataclasses.replace(h, name_ir=name)


def _rule_hist_read(pr: _Printer, op: Op):
    h = pr.value(op.args[0])
    out = _out_local(pr, op)
    slot = pr.slot(op.attr("slot"))
    if op.args[0] in pr.scratch:
        offs, mask = _scratch_offsets(pr, _with_name(h, op.args[0]), slot)
        var = pr.ident(op.out)
        pr.emit("tl.debug_barrier()")   # the slot's writes by other threads are visible
        pr.emit(f"{var} = tl.load(hist_scratch_ptr + {offs}" + (f", mask={mask}, other=0.0)" if mask else ")"))
        pr.set_val(op.out, _Val(var, True, pr.shape_of(out), out.dtype))
        return
    rank = 1 + len(h.axes)
    a = h.axes[0]
    var = pr.ident(op.out)
    pr.emit(f"{var} = tl.sum(tl.where({pr.bcast(a.offs, 1, rank)} == ({slot}), {h.var}, 0.0), axis=1)")
    pr.set_val(op.out, _Val(var, h.per_row, pr.shape_of(out), out.dtype))


RULES: dict[str, Callable[[_Printer, Op], None]] = {
    **{k: _rule_elementwise for k in ELEMENTWISE},
    "load": _rule_load,
    "store": _rule_store,
    "cast": _rule_cast,
    "fill": _rule_fill,
    "reduce_sum": _rule_reduce,
    "reduce_max": _rule_reduce,
    "acc_rows": _rule_acc_rows,
    "select": _rule_select,
    "parity_select": _rule_parity_select,
    "pair_swap": _rule_pair_swap,
    "pair_expand": _rule_pair_expand,
    "slice": _rule_slice,
    "set_slice": _rule_set_slice,
    "transpose": _rule_transpose,
    "view": _rule_view,
    "matvec": _rule_matvec,
    "matvec_t": _rule_matvec_t,
    "hist_write": _rule_hist_write,
    "hist_read": _rule_hist_read,
}



def missing_rules() -> list:
    """Kernel-IR opcodes this printer has no rule for (a test keeps this empty; printing a program that
    uses one raises IRError naming it)."""
    return sorted(set(OPS) - set(RULES))


# ------------------------------------------------------------------------------------------------
# the kernel


def kernel_name(p: Program, sizes: dict, tiling: Tiling) -> str:
    import hashlib
    key = f"{p.fingerprint()}|{sorted((str(k), int(v)) for k, v in sizes.items() if k != ROWS)}|{tiling}"
    return re.sub(r"\W", "_", p.name) + "_" + hashlib.sha256(key.encode()).hexdigest()[:10]


def print_program(p: Program, sizes: dict, tiling: Tiling) -> KernelSource:
    """Print `p` as one Triton kernel specialised to `sizes` (symbol -> int, ROWS excluded)."""
    sizes = {(k if isinstance(k, sympy.Symbol) else sympy.Symbol(str(k), positive=True, integer=True)): int(v)
             for k, v in sizes.items()}
    pr = _Printer(p, sizes, tiling)
    pr.row_vars = {}
    pr.split_cache = {}
    name = kernel_name(p, sizes, tiling)
    args = []
    params = []
    for t in p.tensors:
        params.append(f"{t.name}_ptr")
        args.append(("ptr", t.name))
        if t.kind in (TensorKind.ROW, TensorKind.PARTIAL):
            params.append(f"{t.name}_row_stride")
            args.append(("row_stride", t.name))
    for s in p.scalars:
        params.append(s.name)
        args.append(("scalar", s.name))
    if pr.scratch:
        params.append("hist_scratch_ptr")
        args.append(("scratch", "hist_scratch"))
    params.append("ROWS")
    args.append(("rows", "ROWS"))

    # prologue
    pr.ind = 1
    pr.lines = []
    pr.run(p.prologue)
    prologue = pr.lines
    pr.lines = []
    R = tiling.rows_per_tile
    if pr.persistent:
        pr.ind = 2
    else:
        pr.ind = 1
    pr.run(p.body)
    body = pr.lines
    pr.lines = []
    pr.ind = 1
    pr.run(p.epilogue)
    epilogue = pr.lines

    out = ["@triton.jit", f"def {name}({', '.join(params)}):"]
    out.append(f'    """{p.name}: printed by codegen_triton from the Kernel IR (fingerprint {p.fingerprint()})."""')
    out.append("    core = tl.program_id(0)")
    # a float scalar arrives as fp64 when Inductor launches the kernel (it types Python floats fp64;
    # Triton's own launcher, fp32): without the cast the math it touches ran in fp64 (SwiGLU's clamp
    # and sigmoid: 4x slower on the H200, run 8)
    out += [f"    {s.name} = tl.cast({s.name}, tl.float32)" for s in p.scalars if s.dtype.is_float]
    out += ["    " + line for line in pr.top]
    out += [f"    tile_rows = tl.arange(0, {R})"]
    out += prologue
    row_lines = ["rows = r0 + tile_rows", "row_mask = rows < row_hi"]
    row_lines += [f"{k} = {v}" for k, v in pr.row_vars.items()]
    if pr.persistent:
        # contiguous spans per core (the interpreter's front/tail split); rows past ROWS are masked
        out.append(f"    span = (ROWS + {tiling.programs - 1}) // {tiling.programs}")
        out.append("    row_lo = core * span")
        out.append("    row_hi = tl.minimum(row_lo + span, ROWS)")
        out.append("    r0 = row_lo")
        out.append("    while r0 < row_hi:")
        out += ["        " + line for line in row_lines]
        out += body
        out.append(f"        r0 += {R}")
    else:
        out.append(f"    r0 = core * {R}")
        out.append("    row_hi = ROWS")
        out += ["    " + line for line in row_lines]
        out += body
    out += epilogue
    header = ["import triton", "import triton.language as tl", "", ""]
    source = "\n".join(header + out) + "\n"
    scratch = next(iter(pr.scratch.values()))[0] if pr.scratch else 0
    return KernelSource(name, source, tuple(args), pr.persistent, tiling,
                        tuple(sorted((str(k), int(v)) for k, v in sizes.items())), p.name, scratch)
