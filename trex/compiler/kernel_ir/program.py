"""Kernel IR programs: the printer-agnostic description of one fused kernel (DESIGN.md, "Describe").

A `Program` is a row-wise kernel. The kernel's rows (the flattened leading dims of the op's
tensors, symbol `ROWS`) are split over cores and, on each core, into tiles of `rows_per_tile`
rows. For every tile the `body` runs once; every UB value ("local") in the body has the shape
`(tile_rows, *cols)` (per-row locals) or `(1, *cols)` (per-core locals such as a loaded weight or
a weight-gradient accumulator, which broadcast over the rows). Columns are symbolic (sympy).

Structure of a program:
  * `tensors`: GM tensors. ROW tensors have one `cols`-shaped slice per kernel row (optionally
    through a `RowMap` for row-broadcast inputs such as RoPE's cos/sin); SHARED tensors are the
    same for all rows (weights); PARTIAL tensors are per-core partial results `[cores, *cols]`
    that the host combines in `finalize` (deterministic cross-core reduction of weight gradients).
  * `scalars`: kernel arguments passed by value (eps, limit, ...), referenced as ``"$name"``.
  * `prologue` (once per core), `body` (once per row tile), `epilogue` (once per core).
  * `ChunkLoop(dim, body)`: streams a column dimension in chunks of the schedule's `col_chunk`
    (rows that do not fit UB, e.g. mHC's 4 x 7168 fp32). Inside, every GM tensor axis whose
    extent is `dim` is sliced to the chunk; a reduction over that axis yields the chunk's partial
    and the program accumulates it explicitly into a local defined before the loop. Several
    loops over the same dim = a multi-pass kernel (reduce pass, then apply pass).
  * `Repeat(var, count, body, reverse)`: a counted loop (Sinkhorn iterations); `var` may appear
    in `hist_read`/`hist_write` slot indices (the Sinkhorn backward recomputes the iterates in UB
    and keeps them in a small history local).
  * `finalize`: host-side combination of partial outputs (sum over cores; a rows-contraction that
    belongs on the cube unit or in a GEMM, e.g. mHC's dfn = dh^T @ x).

All vector math is fp32 (the bf16 policy of reference/ascendc.md §2.3): 16-bit inputs are loaded,
`cast` up, computed, and `cast` down before `store`; `trex.compiler.kernel_ir.validate` enforces it.

This module holds the data structures (dtypes, GM tensors, scalars, locals, statements, the
schedule, the program) and the front/tail row split `row_split` every target shares. Programs are
frozen dataclasses: hashable (kernel cache key) and printable (`str(program)`). The opcodes a
statement may use are the table `trex.compiler.kernel_ir.ops.OPS`.
"""
from __future__ import annotations

import enum
import hashlib
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Union

import sympy
import torch

from trex.compiler.kernel_ir.ops import OPS


class IRError(ValueError):
    """A malformed program or a call whose tensors do not match the program."""


# --------------------------------------------------------------------------------------------
# dtypes, sizes


class DType(str, enum.Enum):
    BF16 = "bf16"
    FP16 = "fp16"
    FP32 = "fp32"
    INT32 = "int32"
    UINT8 = "uint8"

    @property
    def nbytes(self) -> int:
        return _DTYPE_BYTES[self]

    @property
    def torch(self) -> torch.dtype:
        return _DTYPE_TORCH[self]

    @property
    def is_float(self) -> bool:
        return self in (DType.BF16, DType.FP16, DType.FP32)

    @classmethod
    def from_torch(cls, dt: torch.dtype) -> "DType":
        for k, v in _DTYPE_TORCH.items():
            if v == dt:
                return k
        raise IRError(f"dtype {dt} has no Kernel IR equivalent; use one of {[d.value for d in cls]}")


_DTYPE_BYTES = {DType.BF16: 2, DType.FP16: 2, DType.FP32: 4, DType.INT32: 4, DType.UINT8: 1}
_DTYPE_TORCH = {DType.BF16: torch.bfloat16, DType.FP16: torch.float16, DType.FP32: torch.float32,
                DType.INT32: torch.int32, DType.UINT8: torch.uint8}


def size(name: str) -> sympy.Symbol:
    """A symbolic size (positive integer)."""
    return sympy.Symbol(name, positive=True, integer=True)


ROWS = size("ROWS")

Expr = Union[sympy.Expr, int]


def _expr(e: Expr) -> sympy.Expr:
    return sympy.sympify(e)


# --------------------------------------------------------------------------------------------
# GM tensors, scalars, locals


class TensorKind(str, enum.Enum):
    ROW = "row"          # one cols-shaped slice per kernel row
    SHARED = "shared"    # same for every row (weights, tables)
    PARTIAL = "partial"  # per-core partial [cores, *cols]; the host combines them in finalize


@dataclass(frozen=True)
class RowMap:
    """GM row of a ROW tensor for kernel row r: (r // div) % mod (mod None: no wrap).

    Describes inputs broadcast over some leading dims, e.g. RoPE cos [S, rd/2] against x
    [B, S, H, hd]: div = H, mod = S."""
    div: sympy.Expr = sympy.Integer(1)
    mod: sympy.Expr | None = None

    def __post_init__(self):
        object.__setattr__(self, "div", _expr(self.div))
        if self.mod is not None:
            object.__setattr__(self, "mod", _expr(self.mod))

    @property
    def is_identity(self) -> bool:
        return self.div == 1 and self.mod is None

    def __str__(self) -> str:
        s = "r" if self.div == 1 else f"r // {self.div}"
        return s if self.mod is None else f"({s}) % {self.mod}"


@dataclass(frozen=True)
class GMTensor:
    name: str
    dtype: DType
    cols: tuple
    kind: TensorKind = TensorKind.ROW
    role: str = "in"              # "in" | "out"
    row_map: RowMap = RowMap()

    def __post_init__(self):
        object.__setattr__(self, "cols", tuple(_expr(c) for c in self.cols))
        if self.role not in ("in", "out"):
            raise IRError(f"GM tensor {self.name!r}: role must be 'in' or 'out', got {self.role!r}")

    def __str__(self) -> str:
        lead = {TensorKind.ROW: "ROWS", TensorKind.SHARED: "", TensorKind.PARTIAL: "CORES"}[self.kind]
        shape = ", ".join([lead] * bool(lead) + [str(c) for c in self.cols])
        rm = "" if self.row_map.is_identity else f" rows={self.row_map}"
        return f"{self.role:>3} {self.kind.value:<7} {self.name}: {self.dtype.value}[{shape}]{rm}"


@dataclass(frozen=True)
class ScalarParam:
    name: str
    dtype: DType = DType.FP32

    def __str__(self) -> str:
        return f"scalar ${self.name}: {self.dtype.value}"


@dataclass(frozen=True)
class Local:
    """A UB value. per_row: shape (tile_rows, *cols); otherwise (1, *cols), one per core."""
    name: str
    dtype: DType
    cols: tuple
    per_row: bool = True

    def __post_init__(self):
        object.__setattr__(self, "cols", tuple(_expr(c) for c in self.cols))

    def __str__(self) -> str:
        lead = "T, " if self.per_row else "1, "
        return f"local {self.name}: {self.dtype.value}[{lead}{', '.join(str(c) for c in self.cols)}]"


# --------------------------------------------------------------------------------------------
# statements


def _freeze_attrs(attrs: Mapping[str, Any] | Iterable | None) -> tuple:
    if attrs is None:
        return ()
    items = attrs.items() if isinstance(attrs, Mapping) else attrs
    return tuple(sorted((k, _freeze(v)) for k, v in items))


def _freeze(v):
    if isinstance(v, (list, tuple)):
        return tuple(_freeze(x) for x in v)
    if isinstance(v, int) and not isinstance(v, bool):
        return sympy.Integer(v)
    return v


@dataclass(frozen=True)
class Op:
    opcode: str
    out: str | None
    args: tuple
    attrs: tuple = ()

    def __post_init__(self):
        object.__setattr__(self, "args", tuple(self.args))
        object.__setattr__(self, "attrs", _freeze_attrs(self.attrs))
        if self.opcode not in OPS:
            raise IRError(f"unknown opcode {self.opcode!r}; known: {sorted(OPS)}")

    def attr(self, key: str, default=None):
        for k, v in self.attrs:
            if k == key:
                return v
        return default

    def __str__(self) -> str:
        args = ", ".join(_fmt_arg(a) for a in self.args)
        attrs = "".join(f", {k}={v}" for k, v in self.attrs)
        lhs = f"{self.out} = " if self.out else ""
        return f"{lhs}{self.opcode}({args}{attrs})"


def _fmt_arg(a) -> str:
    return repr(a) if isinstance(a, float) else str(a)


def is_scalar_arg(a) -> bool:
    """A scalar operand: a Python number, a size expression (e.g. 1/D) or a "$param"."""
    return (isinstance(a, (float, int, sympy.Expr)) and not isinstance(a, bool)) or (
        isinstance(a, str) and a.lstrip("-").startswith("$"))


@dataclass(frozen=True)
class ChunkLoop:
    dim: sympy.Expr
    body: tuple

    def __post_init__(self):
        object.__setattr__(self, "dim", _expr(self.dim))
        object.__setattr__(self, "body", tuple(self.body))


@dataclass(frozen=True)
class Repeat:
    var: str
    count: sympy.Expr
    body: tuple
    reverse: bool = False

    def __post_init__(self):
        object.__setattr__(self, "count", _expr(self.count))
        object.__setattr__(self, "body", tuple(self.body))


Stmt = Union[Op, ChunkLoop, Repeat]


@dataclass(frozen=True)
class HostOp:
    """Host-side combination after the kernel.

    kind "sum_cores": out = partial.sum(0).   kind "rows_matmul": out = a^T @ b (over kernel rows,
    b upcast to fp32), flattened to out's shape — a GEMM, so it belongs on the cube unit."""
    kind: str
    out: str
    args: tuple

    def __str__(self) -> str:
        return f"host {self.out} = {self.kind}({', '.join(self.args)})"


def is_chunk_slice(op: "Op") -> bool:
    """A `slice` with attr chunk=dim: the current column chunk of a resident local."""
    return op.opcode == "slice" and op.attr("chunk") is not None


def resident_locals(p: "Program") -> tuple:
    """The resident locals of `p`, in program order: the sources of its chunk slices (`is_chunk_slice`),
    per-row locals loaded whole (the chunked dim at full extent) in the body outside every ChunkLoop and
    read chunk by chunk inside the loops. A target may keep them in UB across the passes over the dim
    (the AscendC lowering does where the UB holds them) or read each chunk from GM again."""
    out = []
    for op, _ in walk(p.prologue + p.body + p.epilogue):
        if is_chunk_slice(op) and op.args[0] not in out:
            out.append(op.args[0])
    return tuple(out)


def walk(stmts: Iterable[Stmt], depth: int = 0):
    """Yield (op, enclosing loops) for every Op, depth-first in program order."""
    def rec(ss, loops):
        for s in ss:
            if isinstance(s, Op):
                yield s, loops
            else:
                yield from rec(s.body, loops + (s,))
    yield from rec(stmts, ())



# --------------------------------------------------------------------------------------------
# schedule, program


@dataclass(frozen=True)
class Schedule:
    """Schedule knobs a printer honours and the cost model chooses."""
    rows_per_tile: int = 1
    col_chunk: int | None = None   # None: the whole chunked dim in one chunk
    buffer_depth: int = 2
    cores: int = 1

    def __post_init__(self):
        for k in ("rows_per_tile", "buffer_depth", "cores"):
            if int(getattr(self, k)) < 1:
                raise IRError(f"Schedule.{k} must be >= 1, got {getattr(self, k)}")
        if self.col_chunk is not None and self.col_chunk < 1:
            raise IRError(f"Schedule.col_chunk must be >= 1 or None, got {self.col_chunk}")


def row_split(rows: int, cores: int, group: int = 1) -> list:
    """Front/tail split (ops-nn style): block = ceil(rows/cores) rounded up to a multiple of `group`;
    core i gets [i*block, ...). One (lo, hi) span per core, empty for idle cores. The split every
    target follows: the interpreter, the cost model and the tuner call it; the printers print the
    same arithmetic into the kernel (ROWS is a run-time value there)."""
    block = max(1, -(-rows // cores))
    block = -(-block // group) * group
    spans = []
    for c in range(cores):
        lo = c * block
        spans.append((min(lo, rows), min(lo + block, rows)))
    return spans


@dataclass(frozen=True)
class Program:
    name: str
    tensors: tuple
    scalars: tuple
    locals: tuple
    prologue: tuple
    body: tuple
    epilogue: tuple = ()
    finalize: tuple = ()
    size_params: tuple = ()    # (size symbol, scalar name): sizes bound from a scalar argument
    doc: str = ""
    row_group: sympy.Expr | None = None   # tiles never straddle groups of this many rows (see tile_row loads)

    def __post_init__(self):
        for f in ("tensors", "scalars", "locals", "prologue", "body", "epilogue", "finalize", "size_params"):
            object.__setattr__(self, f, tuple(getattr(self, f)))

    # -- lookups
    def tensor(self, name: str) -> GMTensor:
        for t in self.tensors:
            if t.name == name:
                return t
        raise IRError(f"program {self.name}: no GM tensor {name!r}")

    def local(self, name: str) -> Local:
        for l in self.locals:
            if l.name == name:
                return l
        raise IRError(f"program {self.name}: no local {name!r}")

    def scalar(self, name: str) -> ScalarParam:
        for s in self.scalars:
            if s.name == name:
                return s
        raise IRError(f"program {self.name}: no scalar ${name}")

    @property
    def locals_by_name(self) -> dict:
        return {l.name: l for l in self.locals}

    @property
    def inputs(self) -> tuple:
        return tuple(t for t in self.tensors if t.role == "in")

    @property
    def outputs(self) -> tuple:
        return tuple(t for t in self.tensors if t.role == "out")

    @property
    def sizes(self) -> tuple:
        syms = {ROWS}
        for t in self.tensors:
            for c in t.cols:
                syms |= c.free_symbols
        for l in self.locals:
            for c in l.cols:
                syms |= c.free_symbols
        for t in self.tensors:
            syms |= t.row_map.div.free_symbols | (t.row_map.mod.free_symbols if t.row_map.mod is not None else set())
        syms |= {sym for sym, _ in self.size_params}
        if self.row_group is not None:
            syms |= _expr(self.row_group).free_symbols
        loopvars = set()
        for s in self.prologue + self.body + self.epilogue:
            for loop in _loops(s):
                if isinstance(loop, Repeat):
                    syms |= loop.count.free_symbols
                    loopvars.add(loop.var)
        return tuple(sorted((x for x in syms if x.name not in loopvars), key=lambda s: s.name))

    @property
    def chunk_dims(self) -> tuple:
        dims = []
        for s in self.prologue + self.body + self.epilogue:
            for loop in _loops(s):
                if isinstance(loop, ChunkLoop) and loop.dim not in dims:
                    dims.append(loop.dim)
        return tuple(dims)

    def fingerprint(self) -> str:
        """Stable hash of the printed program (the kernel cache key's IR part)."""
        return hashlib.sha256(str(self).encode()).hexdigest()[:16]

    # -- printing
    def __str__(self) -> str:
        lines = [f"program {self.name}"]
        if self.doc:
            lines += [f"  # {l}" for l in self.doc.strip().splitlines()]
        lines += [f"  {t}" for t in self.tensors]
        lines += [f"  {s}" for s in self.scalars]
        lines += [f"  size {s} = ${p}" for s, p in self.size_params]
        if self.row_group is not None:
            lines.append(f"  row groups of {self.row_group} (core blocks and tiles aligned to them)")
        lines += [f"  {l}" for l in self.locals]
        for title, stmts in (("prologue", self.prologue), ("body (per row tile)", self.body),
                             ("epilogue", self.epilogue)):
            if stmts:
                lines.append(f"  {title}:")
                lines += _fmt_stmts(stmts, 2)
        lines += [f"  {h}" for h in self.finalize]
        return "\n".join(lines)


def _loops(s):
    if isinstance(s, (ChunkLoop, Repeat)):
        yield s
        for b in s.body:
            yield from _loops(b)


def _fmt_stmts(stmts, ind) -> list:
    out = []
    pad = "  " * ind
    for s in stmts:
        if isinstance(s, Op):
            out.append(pad + str(s))
        elif isinstance(s, ChunkLoop):
            out.append(f"{pad}for chunk of {s.dim}:")
            out += _fmt_stmts(s.body, ind + 1)
        else:
            rev = "reversed " if s.reverse else ""
            out.append(f"{pad}for {s.var} in {rev}range({s.count}):")
            out += _fmt_stmts(s.body, ind + 1)
    return out
