"""Kernel IR: the printer-agnostic description of one fused kernel (DESIGN.md, "Describe").

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
`cast` up, computed, and `cast` down before `store`. `validate()` enforces it.

The op table `OPS` is shared by every printer: an entry says what an op means (its torch
semantics, used by the reference interpreter `interpret`) and its arity; each printer keeps its
own rule table keyed by the same opcodes. Programs are frozen dataclasses: hashable (kernel cache
key) and printable (`str(program)`).
"""
from __future__ import annotations

import enum
import hashlib
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Union

import sympy
import torch

__all__ = [
    "DType", "TensorKind", "RowMap", "GMTensor", "ScalarParam", "Local", "Op", "ChunkLoop",
    "Repeat", "HostOp", "Program", "Schedule", "OpSpec", "OPS", "ROWS", "size", "IRError",
    "interpret", "interpreter", "bind_sizes", "walk", "ProgramBuilder", "row_split",
]


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
# the op table (printer-agnostic meaning of every opcode)


@dataclass(frozen=True)
class OpSpec:
    category: str          # io | cast | binary | scalar | unary | reduce | select | layout | contract | fill | hist
    arity: int             # number of args (-1: variable)
    doc: str
    ref: Callable | None = None   # torch semantics for elementwise kinds


def _sigmoid(x):
    return torch.sigmoid(x)


OPS: dict[str, OpSpec] = {
    "load": OpSpec("io", 1, "load(gm) -> tile of gm (chunked inside a ChunkLoop); attr col=(start, stop) on the last "
                            "axis, pad=(left, right) undefined lanes around it (shifted copies)"),
    "store": OpSpec("io", 2, "store(gm, src): write src to gm (same row/chunk addressing as load)"),
    "cast": OpSpec("cast", 1, "cast(src) to the out local's dtype; down-casts to bf16/fp16 round to nearest even"),
    "copy": OpSpec("unary", 1, "copy(src)", lambda x: x.clone()),
    "fill": OpSpec("fill", 1, "fill(value) with the out local's shape (value: number, size expr, $param or -$param)", None),
    "add": OpSpec("binary", 2, "a + b (broadcast)", torch.add),
    "sub": OpSpec("binary", 2, "a - b (broadcast)", torch.sub),
    "mul": OpSpec("binary", 2, "a * b (broadcast)", torch.mul),
    "div": OpSpec("binary", 2, "a / b (broadcast)", torch.div),
    "max": OpSpec("binary", 2, "max(a, b) (broadcast)", torch.maximum),
    "min": OpSpec("binary", 2, "min(a, b) (broadcast)", torch.minimum),
    "adds": OpSpec("scalar", 2, "x + s (s: constant or $param)", lambda x, s: x + s),
    "muls": OpSpec("scalar", 2, "x * s", lambda x, s: x * s),
    "maxs": OpSpec("scalar", 2, "max(x, s)", lambda x, s: torch.clamp(x, min=s)),
    "mins": OpSpec("scalar", 2, "min(x, s)", lambda x, s: torch.clamp(x, max=s)),
    "exp": OpSpec("unary", 1, "exp(x)", torch.exp),
    "ln": OpSpec("unary", 1, "log(x)", torch.log),
    "abs": OpSpec("unary", 1, "|x|", torch.abs),
    "sqrt": OpSpec("unary", 1, "sqrt(x)", torch.sqrt),
    "rsqrt": OpSpec("unary", 1, "1/sqrt(x)", torch.rsqrt),
    "reciprocal": OpSpec("unary", 1, "1/x", torch.reciprocal),
    "sigmoid": OpSpec("unary", 1, "1/(1+exp(-x))", _sigmoid),
    "relu": OpSpec("unary", 1, "max(x, 0)", torch.relu),
    "neg": OpSpec("unary", 1, "-x", torch.neg),
    "reduce_sum": OpSpec("reduce", 1, "sum over column axis `axis`, keepdim"),
    "reduce_max": OpSpec("reduce", 1, "max over column axis `axis`, keepdim"),
    "acc_rows": OpSpec("reduce", 2, "acc += sum over the tile's rows of src (in place; out == acc, a per-core local)"),
    "parity_select": OpSpec("select", 2, "out[..., j] = a[..., j] if j is even else b[..., j] (pair swaps)"),
    "pair_swap": OpSpec("layout", 1, "out[..., 2i] = src[..., 2i+1], out[..., 2i+1] = src[..., 2i] (even last axis)"),
    "select": OpSpec("select", 4, "where(a CMP b, x, y); b and y may be scalars; attr cmp in LT LE GT GE EQ NE"),
    "slice": OpSpec("layout", 1, "src[..., start:stop:step] along column axis `axis`"),
    "set_slice": OpSpec("layout", 2, "dst[..., start:stop:step] = src (in place; out == dst)"),
    "transpose": OpSpec("layout", 1, "swap the last two column axes"),
    "view": OpSpec("layout", 1, "add/remove unit column axes (attr cols); layout unchanged"),
    "matvec": OpSpec("contract", 2, "out[r, *M] = sum_K a[r, *K] * w[*M, *K]; w per-core"),
    "matvec_t": OpSpec("contract", 2, "out[r, *K] = sum_M g[r, *M] * w[*M, *K]; w per-core"),
    "hist_write": OpSpec("hist", 2, "hist[slot] = src (in place; out == hist); attr slot: expr in loop vars"),
    "hist_read": OpSpec("hist", 1, "hist[slot]"),
}

_CMP = {"LT": torch.lt, "LE": torch.le, "GT": torch.gt, "GE": torch.ge, "EQ": torch.eq, "NE": torch.ne}


# --------------------------------------------------------------------------------------------
# program


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

    # -- checks
    def validate(self) -> "Program":
        _validate(self)
        return self


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


# --------------------------------------------------------------------------------------------
# builder (keeps program modules short and readable)


class ProgramBuilder:
    """Collects tensors/locals/statements; `op` returns the out name so programs read like code.

    Locals are declared on first assignment with the dtype and cols given, or inferred."""

    def __init__(self, name: str, doc: str = ""):
        self.name, self.doc = name, doc
        self.tensors: list[GMTensor] = []
        self.scalars: list[ScalarParam] = []
        self.locals: dict[str, Local] = {}
        self.size_params: list = []
        self.row_group = None
        self.finalize: list[HostOp] = []
        self._blocks: list[list] = []
        self.prologue: list = []
        self.body: list = []
        self.epilogue: list = []
        self._cur = self.body

    # declarations
    def gm(self, name, dtype, cols, kind=TensorKind.ROW, role="in", row_map=RowMap()):
        self.tensors.append(GMTensor(name, DType(dtype), tuple(cols), kind, role, row_map))
        return name

    def scalar(self, name, dtype=DType.FP32):
        self.scalars.append(ScalarParam(name, DType(dtype)))
        return "$" + name

    def local(self, name, dtype, cols, per_row=True):
        new = Local(name, DType(dtype), tuple(cols), per_row)
        old = self.locals.get(name)
        if old is not None and old != new:
            raise IRError(f"program {self.name}: local {name!r} redeclared as {new} (was {old})")
        self.locals[name] = new
        return name

    # statement sections
    def section(self, which: str):
        self._cur = {"prologue": self.prologue, "body": self.body, "epilogue": self.epilogue}[which]
        return self

    def op(self, opcode, out, *args, dtype=None, cols=None, per_row=None, **attrs):
        if out is not None and out not in self.locals:
            if cols is None or dtype is None:
                raise IRError(f"program {self.name}: first assignment of {out!r} by {opcode} needs dtype= and cols=")
            self.local(out, dtype, cols, True if per_row is None else per_row)
        self._cur.append(Op(opcode, out, tuple(args), attrs))
        return out

    class _Block:
        def __init__(self, b, make):
            self.b, self.make = b, make

        def __enter__(self):
            self.saved = self.b._cur
            self.b._cur = []
            return self.b

        def __exit__(self, *exc):
            body = self.b._cur
            self.b._cur = self.saved
            if exc[0] is None:
                self.b._cur.append(self.make(tuple(body)))
            return False

    def chunk_loop(self, dim):
        return self._Block(self, lambda body: ChunkLoop(dim, body))

    def repeat(self, var, count, reverse=False):
        return self._Block(self, lambda body: Repeat(var, count, body, reverse))

    def build(self) -> Program:
        return Program(self.name, tuple(self.tensors), tuple(self.scalars), tuple(self.locals.values()),
                       tuple(self.prologue), tuple(self.body), tuple(self.epilogue), tuple(self.finalize),
                       tuple(self.size_params), self.doc, self.row_group).validate()


# --------------------------------------------------------------------------------------------
# validation (static): names defined, dtypes, fp32 compute, shapes broadcast


def is_scalar_arg(a) -> bool:
    """A scalar operand: a Python number, a size expression (e.g. 1/D) or a "$param"."""
    return (isinstance(a, (float, int, sympy.Expr)) and not isinstance(a, bool)) or (
        isinstance(a, str) and a.lstrip("-").startswith("$"))


def _validate(p: Program) -> None:
    names = [t.name for t in p.tensors] + [l.name for l in p.locals] + [s.name for s in p.scalars]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise IRError(f"program {p.name}: names used twice: {sorted(dup)}")
    tnames = {t.name for t in p.tensors}
    snames = {s.name for s in p.scalars}
    for sym, sname in p.size_params:
        if sname not in snames:
            raise IRError(f"program {p.name}: size {sym} bound from unknown scalar ${sname}")
    for t in p.tensors:
        if t.kind == TensorKind.PARTIAL and t.role != "out":
            raise IRError(f"program {p.name}: PARTIAL tensor {t.name} must be an output")
    for section, stmts in (("prologue", p.prologue), ("body", p.body), ("epilogue", p.epilogue)):
        for op, loops in walk(stmts):
            ctx = f"program {p.name} {section}: `{op}`"
            spec = OPS[op.opcode]
            if spec.arity >= 0 and len(op.args) != spec.arity:
                raise IRError(f"{ctx}: {op.opcode} takes {spec.arity} args, got {len(op.args)}")
            for i, a in enumerate(op.args):
                if isinstance(a, str) and a.lstrip("-").startswith("$") and a.lstrip("-")[1:] not in snames:
                    raise IRError(f"{ctx}: unknown scalar {a}")
                if isinstance(a, str) and not a.lstrip("-").startswith("$"):
                    is_gm = op.opcode in ("load", "store") and i == 0
                    if is_gm and a not in tnames:
                        raise IRError(f"{ctx}: {a!r} is not a GM tensor")
                    if not is_gm and a not in p.locals_by_name:
                        raise IRError(f"{ctx}: {a!r} is not a declared local")
            if op.out is not None and op.out not in p.locals_by_name:
                raise IRError(f"{ctx}: out {op.out!r} is not a declared local")
            _check_types(p, op, ctx, section)


def _check_types(p: Program, op: Op, ctx: str, section: str) -> None:
    L = p.locals_by_name
    spec = OPS[op.opcode]
    out = L.get(op.out) if op.out else None
    if spec.category in ("binary", "scalar", "unary", "reduce", "select", "contract") and op.opcode != "copy":
        for a in op.args:
            if isinstance(a, str) and a in L and L[a].dtype != DType.FP32:
                raise IRError(f"{ctx}: vector math on {a} ({L[a].dtype.value}); compute in fp32 (cast first)")
        if out is not None and out.dtype != DType.FP32:
            raise IRError(f"{ctx}: math result {out.name} must be fp32")
    if op.opcode == "load":
        t = p.tensor(op.args[0])
        if t.role != "in":
            raise IRError(f"{ctx}: load from output tensor {t.name}")
        if out.dtype != t.dtype:
            raise IRError(f"{ctx}: load of {t.dtype.value} tensor into {out.dtype.value} local; load then cast")
        tile_row = bool(op.attr("tile_row", False))
        if tile_row and (t.kind != TensorKind.ROW or p.row_group is None or out.per_row):
            raise IRError(f"{ctx}: tile_row loads read one row of a ROW tensor for a whole tile into a (1, cols) "
                          f"local and need the program's row_group")
        if not tile_row and (t.kind == TensorKind.SHARED) == out.per_row:
            raise IRError(f"{ctx}: shared tensors load into per-core locals, row tensors into per-row locals")
    if op.opcode == "store":
        t = p.tensor(op.args[0])
        src = L[op.args[1]]
        if t.role != "out":
            raise IRError(f"{ctx}: store into input tensor {t.name}")
        if src.dtype != t.dtype:
            raise IRError(f"{ctx}: store of {src.dtype.value} {src.name} into {t.dtype.value} {t.name}; cast first")
    if op.opcode == "cast":
        src = L[op.args[0]]
        if not (src.dtype.is_float and out.dtype.is_float):
            raise IRError(f"{ctx}: cast supports float dtypes only")
        if DType.FP32 not in (src.dtype, out.dtype):
            raise IRError(f"{ctx}: cast between {src.dtype.value} and {out.dtype.value} has no direct A2 "
                          f"instruction (reference/ascendc.md §2.3); go through fp32")


# --------------------------------------------------------------------------------------------
# size binding


def bind_sizes(p: Program, inputs: Mapping[str, torch.Tensor], scalars: Mapping[str, float]) -> dict:
    """Bind every size symbol from the input views ([ROWS, *cols] / [*cols]) and scalar args."""
    env: dict = {}
    pending = []
    for t in p.inputs:
        if t.name not in inputs or inputs[t.name] is None:
            raise IRError(f"program {p.name}: missing input tensor {t.name!r}")
        x = inputs[t.name]
        want = (1 if t.kind == TensorKind.ROW else 0) + len(t.cols)
        if x.dim() != want:
            raise IRError(f"program {p.name}: input {t.name} must be a {want}-d view "
                          f"[{'ROWS, ' if t.kind == TensorKind.ROW else ''}{', '.join(map(str, t.cols))}], got shape {tuple(x.shape)}")
        dims = list(x.shape)
        if t.kind == TensorKind.ROW:
            r = dims.pop(0)
            if t.row_map.is_identity:
                _bind(env, ROWS, r, p, t.name)
            elif isinstance(t.row_map.mod, sympy.Symbol):
                _bind(env, t.row_map.mod, r, p, t.name)
        for c, n in zip(t.cols, dims):
            if isinstance(c, sympy.Symbol):
                _bind(env, c, n, p, t.name)
            else:
                pending.append((c, n, t.name))
    for sym, sname in p.size_params:
        if sname not in scalars:
            raise IRError(f"program {p.name}: scalar ${sname} (binds size {sym}) missing")
        _bind(env, sym, int(scalars[sname]), p, "$" + sname)
    for c, n, tname in pending:
        free = c.free_symbols - set(env)
        if len(free) == 1:
            (s,) = free
            sol = sympy.solve(sympy.Eq(c.subs(env), n), s)
            sol = [v for v in sol if v.is_integer and v > 0]
            if not sol:
                raise IRError(f"program {p.name}: {tname} extent {n} does not match {c}")
            _bind(env, s, int(sol[0]), p, tname)
        elif int(c.subs(env)) != n:
            raise IRError(f"program {p.name}: {tname} extent {n} does not match {c} = {c.subs(env)}")
    missing = set(p.sizes) - set(env)
    if missing:
        raise IRError(f"program {p.name}: sizes {sorted(map(str, missing))} not bound by the inputs")
    return env


def _bind(env, sym, n, p, where):
    n = int(n)
    if sym in env and env[sym] != n:
        raise IRError(f"program {p.name}: size {sym} is {env[sym]} elsewhere but {n} in {where}")
    env[sym] = n


# --------------------------------------------------------------------------------------------
# reference interpreter (plain torch; executes tiles, chunks and cores like the kernel does)


def row_split(rows: int, cores: int, group: int = 1) -> list:
    """Front/tail split (ops-nn style): block = ceil(rows/cores) rounded up to a multiple of `group`;
    core i gets [i*block, ...). Returns one (lo, hi) span per core (empty spans for idle cores);
    the one split the interpreter, the printers, the cost model and the tuner share."""
    block = max(1, -(-rows // cores))
    block = -(-block // group) * group
    spans = []
    for c in range(cores):
        lo = c * block
        spans.append((min(lo, rows), min(lo + block, rows)))
    return spans


class _Interp:
    def __init__(self, p: Program, sizes: dict, inputs, scalars, outputs, sched: Schedule):
        self.p, self.sizes, self.inputs, self.scalars, self.outputs, self.sched = p, sizes, inputs, scalars, outputs, sched
        self.env: dict[str, torch.Tensor] = {}
        self.chunk: dict = {}      # dim -> (start, stop)
        self.loopvars: dict = {}
        self.core = 0

    def ev(self, e) -> int:
        e = _expr(e).subs(self.sizes)
        if self.loopvars:
            e = e.subs({sympy.Symbol(k, integer=True): v for k, v in self.loopvars.items()})
            e = e.subs({size(k): v for k, v in self.loopvars.items()})
        return int(e)

    def cols(self, cols) -> list:
        out = []
        for c in cols:
            if c in self.chunk:
                lo, hi = self.chunk[c]
                out.append(hi - lo)
            else:
                out.append(self.ev(c))
        return out

    def arg(self, a):
        if isinstance(a, str) and a.startswith("-$"):
            return -float(self.scalars[a[2:]])
        if isinstance(a, str) and a.startswith("$"):
            return float(self.scalars[a[1:]])
        if isinstance(a, (int, float)):
            return float(a)
        if isinstance(a, sympy.Expr):      # size-dependent constant, e.g. 1/D
            return float(_expr(a).subs(self.sizes))
        return self.env[a]

    def gm_index(self, t: GMTensor, r0: int, r1: int):
        """Index tuple selecting rows r0:r1 (kernel rows) and the current chunk of t."""
        idx = []
        for c in t.cols:
            idx.append(slice(*self.chunk[c]) if c in self.chunk else slice(None))
        return idx

    def rows_of(self, t: GMTensor, r0, r1):
        rm = t.row_map
        r = torch.arange(r0, r1)
        r = torch.div(r, self.ev(rm.div), rounding_mode="floor")
        if rm.mod is not None:
            r = r % self.ev(rm.mod)
        return r

    def run(self, stmts, r0, r1):
        for s in stmts:
            if isinstance(s, Op):
                self.op(s, r0, r1)
            elif isinstance(s, ChunkLoop):
                n = self.ev(s.dim)
                step = self.sched.col_chunk or n
                for lo in range(0, n, step):
                    self.chunk[s.dim] = (lo, min(n, lo + step))
                    self.run(s.body, r0, r1)
                del self.chunk[s.dim]
            else:
                cnt = self.ev(s.count)
                order = range(cnt - 1, -1, -1) if s.reverse else range(cnt)
                for i in order:
                    self.loopvars[s.var] = i
                    self.run(s.body, r0, r1)
                self.loopvars.pop(s.var, None)

    def op(self, op: Op, r0, r1):
        p = self.p
        L = p.locals_by_name
        oc = op.opcode
        spec = OPS[oc]
        out = L.get(op.out) if op.out else None
        if oc == "load":
            t = p.tensor(op.args[0])
            x = self.inputs[t.name]
            idx = self.gm_index(t, r0, r1)
            if t.kind == TensorKind.ROW and op.attr("tile_row", False):
                gr = self.rows_of(t, r0, r1)
                if not bool((gr == gr[0]).all()):
                    raise IRError(f"`{op}`: tile rows {r0}..{r1} map to several rows of {t.name}")
                v = x[gr[:1]][(slice(None), *idx)]
            elif t.kind == TensorKind.ROW:
                v = x[self.rows_of(t, r0, r1)][(slice(None), *idx)]
            else:
                v = x[tuple(idx)].unsqueeze(0)
            col = op.attr("col")
            if col is not None:
                v = v[..., self.ev(col[0]):self.ev(col[1])]
            pad = op.attr("pad")
            if pad is not None:     # lanes a kernel leaves undefined; zeros here, never selected by programs
                v = torch.nn.functional.pad(v, (self.ev(pad[0]), self.ev(pad[1])))
            self.env[op.out] = v.clone()
            return
        if oc == "store":
            t = p.tensor(op.args[0])
            src = self.env[op.args[1]]
            dst = self.outputs[t.name]
            idx = self.gm_index(t, r0, r1)
            col = op.attr("col")
            if col is not None:
                idx[-1] = slice(self.ev(col[0]), self.ev(col[1]))
            if t.kind == TensorKind.ROW:
                dst[(slice(r0, r1), *idx)] = src.to(dst.dtype).reshape(dst[(slice(r0, r1), *idx)].shape)
            elif t.kind == TensorKind.PARTIAL:
                dst[(self.core, *idx)] = src.to(dst.dtype).reshape(dst[(self.core, *idx)].shape)
            else:
                raise IRError(f"store into SHARED output {t.name} is not supported (use PARTIAL + finalize)")
            return
        if oc == "cast":
            self.env[op.out] = self.env[op.args[0]].to(out.dtype.torch)
            return
        if oc == "fill":
            lead = (r1 - r0) if out.per_row else 1
            self.env[op.out] = torch.full((lead, *self.cols(out.cols)), self.arg(op.args[0]), dtype=out.dtype.torch)
            return
        if spec.category in ("binary", "unary", "scalar"):
            args = [self.arg(a) for a in op.args]
            v = spec.ref(*args)
            if out.per_row and v.shape[0] == 1 and (r1 - r0) != 1:
                v = v.expand(r1 - r0, *v.shape[1:])
            elif not out.per_row and v.shape[0] != 1:
                raise IRError(f"`{op}`: per-core local {out.name} assigned a per-row value; reduce over rows first")
            self.env[op.out] = v.contiguous()
            return
        if oc in ("reduce_sum", "reduce_max"):
            x = self.env[op.args[0]]
            axis = int(op.attr("axis", -1))
            ax = axis if axis < 0 else axis + 1
            self.env[op.out] = x.sum(ax, keepdim=True) if oc == "reduce_sum" else x.amax(ax, keepdim=True)
            return
        if oc == "acc_rows":
            self.env[op.out] = self.env[op.args[0]] + self.env[op.args[1]].sum(0, keepdim=True)
            return
        if oc == "parity_select":
            a, b = self.env[op.args[0]], self.env[op.args[1]]
            even = (torch.arange(a.shape[-1]) % 2) == 0
            self.env[op.out] = torch.where(even, a, b)
            return
        if oc == "select":
            a, b, x, y = (self.arg(v) for v in op.args)
            cond = _CMP[op.attr("cmp")](a, b)
            x = x if torch.is_tensor(x) else torch.tensor(x)
            y = y if torch.is_tensor(y) else torch.tensor(y)
            self.env[op.out] = torch.where(cond, x, y).to(torch.float32)
            return
        if oc == "slice":
            x = self.env[op.args[0]]
            axis = int(op.attr("axis", -1))
            ax = axis if axis < 0 else axis + 1
            sl = [slice(None)] * x.dim()
            sl[ax] = slice(self.ev(op.attr("start")), self.ev(op.attr("stop")), self.ev(op.attr("step", 1)))
            self.env[op.out] = x[tuple(sl)].contiguous()
            return
        if oc == "set_slice":
            dst = self.env[op.args[0]].clone()
            src = self.env[op.args[1]]
            axis = int(op.attr("axis", -1))
            ax = axis if axis < 0 else axis + 1
            sl = [slice(None)] * dst.dim()
            sl[ax] = slice(self.ev(op.attr("start")), self.ev(op.attr("stop")), self.ev(op.attr("step", 1)))
            dst[tuple(sl)] = src
            self.env[op.out] = dst
            return
        if oc == "transpose":
            self.env[op.out] = self.env[op.args[0]].transpose(-1, -2).contiguous()
            return
        if oc == "pair_swap":
            x = self.env[op.args[0]]
            if x.shape[-1] % 2:
                raise IRError(f"`{op}`: pair_swap needs an even last axis, got {x.shape[-1]}")
            self.env[op.out] = x.reshape(*x.shape[:-1], -1, 2).flip(-1).reshape(x.shape)
            return
        if oc == "view":
            x = self.env[op.args[0]]
            self.env[op.out] = x.reshape(x.shape[0], *self.cols(out.cols))
            return
        if oc == "matvec":
            a, w = self.env[op.args[0]], self.env[op.args[1]][0]
            k = a.dim() - 1
            m = w.dim() - k
            a2 = a.reshape(a.shape[0], -1)
            w2 = w.reshape(*w.shape[:m], -1).reshape(-1, a2.shape[1])
            self.env[op.out] = (a2 @ w2.T).reshape(a.shape[0], *w.shape[:m])
            return
        if oc == "matvec_t":
            g, w = self.env[op.args[0]], self.env[op.args[1]][0]
            m = g.dim() - 1
            g2 = g.reshape(g.shape[0], -1)
            kshape = w.shape[m:]
            self.env[op.out] = (g2 @ w.reshape(g2.shape[1], -1)).reshape(g.shape[0], *kshape)
            return
        if oc == "hist_write":
            h = self.env[op.args[0]].clone()
            h[:, self.ev(op.attr("slot"))] = self.env[op.args[1]]
            self.env[op.out] = h
            return
        if oc == "hist_read":
            h = self.env[op.args[0]]
            self.env[op.out] = h[:, self.ev(op.attr("slot"))].clone()
            return
        raise IRError(f"interpreter has no rule for {oc}")


def output_shapes(p: Program, sizes: dict, cores: int) -> dict:
    shapes = {}
    for t in p.outputs:
        cols = [int(_expr(c).subs(sizes)) for c in t.cols]
        lead = {TensorKind.ROW: [sizes[ROWS]], TensorKind.PARTIAL: [cores], TensorKind.SHARED: []}[t.kind]
        shapes[t.name] = tuple(lead + cols)
    return shapes


def interpret(p: Program, inputs: Mapping[str, torch.Tensor], scalars: Mapping[str, float] | None = None,
              schedule: Schedule | None = None) -> dict:
    """Run `p` on torch tensors the way a kernel would: rows split over `schedule.cores` cores
    (front/tail), tiles of `rows_per_tile`, ChunkLoops in `col_chunk` pieces. Inputs are the
    program's views ([ROWS, *cols] for ROW tensors, [*cols] for SHARED ones). Returns the outputs
    (PARTIAL ones already combined by `finalize`) keyed by name."""
    scalars = dict(scalars or {})
    sched = schedule or Schedule(rows_per_tile=1 << 30)
    sizes = bind_sizes(p, inputs, scalars)
    for s in p.scalars:
        if s.name not in scalars:
            raise IRError(f"program {p.name}: scalar ${s.name} missing")
    ins = {}
    for t in p.inputs:
        x = inputs[t.name]
        if x.dtype != t.dtype.torch:
            raise IRError(f"program {p.name}: input {t.name} is {x.dtype}, the program expects {t.dtype.value}; "
                          f"build the program for this dtype")
        ins[t.name] = x
    outs = {n: torch.zeros(s, dtype=p.tensor(n).dtype.torch) for n, s in output_shapes(p, sizes, sched.cores).items()}
    rows = sizes[ROWS]
    group = int(_expr(p.row_group).subs(sizes)) if p.row_group is not None else 1
    if p.row_group is not None:      # tiles never straddle a row group: clip them to a divisor of it
        sched = Schedule(math.gcd(sched.rows_per_tile, group), sched.col_chunk, sched.buffer_depth, sched.cores)
    for core, (lo, hi) in enumerate(row_split(rows, sched.cores, group)):
        it = _Interp(p, sizes, ins, scalars, outs, sched)
        it.core = core
        # per-core prologue/epilogue run on every core (an idle core still stores zero partials)
        it.run(p.prologue, lo, lo)
        for r0 in range(lo, hi, sched.rows_per_tile):
            it.run(p.body, r0, min(hi, r0 + sched.rows_per_tile))
        it.run(p.epilogue, lo, lo)
    result = dict(outs)
    for h in p.finalize:
        result[h.out] = _host_op(p, h, result, ins, sizes)
    for t in p.outputs:
        if t.kind == TensorKind.PARTIAL:
            result.pop(t.name, None)
    return result


def interpreter(schedule: Schedule | None = None):
    """An executor (program, inputs, scalars) -> outputs running the reference interpreter; the op
    adapters in trex/passes/ir_*.py take any executor with this signature (e.g. the AscendC emulator's,
    trex.codegen_ascendc.launch.emulator_executor)."""
    return lambda p, inputs, scalars: interpret(p, inputs, scalars, schedule)


def _host_op(p: Program, h: HostOp, result: dict, ins: dict, sizes: dict) -> torch.Tensor:
    if h.kind == "sum_cores":
        return result[h.args[0]].sum(0)
    if h.kind == "rows_matmul":
        a = (result.get(h.args[0]) if h.args[0] in result else ins[h.args[0]]).float()
        b = (result.get(h.args[1]) if h.args[1] in result else ins[h.args[1]]).float()
        return a.reshape(a.shape[0], -1).T @ b.reshape(b.shape[0], -1)
    raise IRError(f"unknown host op kind {h.kind!r} (known: sum_cores, rows_matmul)")
