"""Lowering of a Kernel IR program to AscendC instructions (the "what the kernel issues" model).

The AscendC printer (trex/codegen_ascendc/printer.py) renders exactly these instructions, and the cost
model (trex/cost_models/ascend_model.py) counts them, so the predicted MTE2/MTE3 bytes and vector
repeats are those of the printed kernel by construction. `LOWERING_RULES` is the rule table per IR
opcode (a new vector op needs one rule here plus one render template in the printer).

UB layout: every local is (lead, *cols) with lead = the tile's rows (per-row) or 1 (per-core); the
innermost axis is padded to a multiple of 16 elements (32 B of a 16-bit type, 64 B of fp32), so a
16-bit tile and its fp32 cast have the same element layout and one count-form Cast covers the tile.
Buffers are rounded up to 256 B so count-form Compare/Select can round counts up to 256 B
(reference/ascendc.md §8 item 4). Loaded values live in VECIN queues of the schedule's depth,
stored values in VECOUT queues, everything else in TBuf slots shared by locals whose live ranges
do not overlap.

Runtime symbols: TR (rows of the current tile), CL (length of the current column chunk),
ROWS_PER_TILE, COL_CHUNK, ROW0 (first row of the tile), C0 (first column of the chunk),
BLOCK_IDX, plus the program's sizes and loop variables.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import sympy

from trex.compiler.kernel_ir import (DType, GMTensor, IRError, Local, Op, Program, ChunkLoop, Repeat,
                                     TensorKind, is_scalar_arg, size, walk)

# runtime symbols
TR = size("TR")
CL = size("CL")
ROWS_PER_TILE = size("ROWS_PER_TILE")
COL_CHUNK = size("COL_CHUNK")
ROW0 = sympy.Symbol("ROW0", integer=True, nonnegative=True)
C0 = sympy.Symbol("C0", integer=True, nonnegative=True)
BLOCK_IDX = sympy.Symbol("BLOCK_IDX", integer=True, nonnegative=True)
PAD = 16          # innermost-axis padding in elements (see module doc)
BUF_ALIGN = 256   # buffer size rounding in bytes


class AlignUp(sympy.Function):
    """AlignUp(x, a) = ceil(x / a) * a for positive integers."""
    is_integer = True

    @classmethod
    def eval(cls, x, a):
        if x.is_Integer and a.is_Integer:
            return sympy.Integer(-(-int(x) // int(a)) * int(a))


class CeilDiv(sympy.Function):
    is_integer = True

    @classmethod
    def eval(cls, x, a):
        if x.is_Integer and a.is_Integer:
            return sympy.Integer(-(-int(x) // int(a)))


NUMPY_FUNCS = {"AlignUp": lambda x, a: (-(-x // a)) * a, "CeilDiv": lambda x, a: -(-x // a)}


# --------------------------------------------------------------------------------------------
# AscendC-level instruction nodes


@dataclass(frozen=True)
class Ref:
    buf: str                  # buffer variable (a local's storage)
    off: sympy.Expr = sympy.Integer(0)   # element offset
    dtype: DType = DType.FP32


@dataclass(frozen=True)
class Scal:
    """A scalar operand: a $param, a constant, a size expression or a scalar register variable."""
    kind: str                 # "param" | "const" | "expr" | "var"
    value: object
    negate: bool = False


@dataclass
class Vec:
    api: str
    dst: Ref | None
    srcs: tuple
    count: sympy.Expr
    width: int                # bytes of the wider element type (repeat counting)
    extra: dict = field(default_factory=dict)


@dataclass
class GetV:
    var: str
    src: Ref


@dataclass
class SetV:
    dst: Ref
    var: str


@dataclass
class Sync:
    kind: str                 # "V_S" | "S_V"


@dataclass
class Loop:
    var: str
    extent: sympy.Expr
    body: list
    reverse: bool = False


@dataclass
class Chunk:
    dim: sympy.Expr
    body: list


@dataclass
class Transfer:
    direction: str            # "in" (GM->UB, MTE2) | "out" (UB->GM, MTE3)
    gm: str
    dtype: DType
    gm_off: sympy.Expr        # elements
    ub: Ref
    block_count: sympy.Expr
    block_len: sympy.Expr     # elements
    gm_gap: sympy.Expr        # elements skipped in GM between blocks
    ub_stride: sympy.Expr     # elements between block starts in UB
    pad_left: int = 0         # DataCopyPad left/right padding in UB (elements), GM->UB only
    pad_right: int = 0

    @property
    def nbytes(self) -> sympy.Expr:
        return self.block_count * self.block_len * self.dtype.nbytes


@dataclass
class Queue:
    action: str               # alloc | enque | deque | free
    queue: str
    var: str
    dtype: DType


@dataclass
class Buffer:
    name: str
    kind: str                 # "vecin" | "vecout" | "tbuf"
    depth: int
    nbytes: sympy.Expr        # per copy, rounded to BUF_ALIGN
    holds: tuple = ()         # locals stored here


@dataclass
class KernelPlan:
    program: Program
    buffer_depth: int
    buffers: list
    storage: dict             # local name -> buffer variable
    prologue: list
    body: list
    epilogue: list
    chunk_dim: sympy.Expr | None

    @property
    def ub_bytes(self) -> sympy.Expr:
        return sympy.Add(*[b.depth * b.nbytes for b in self.buffers])

    def transfers(self):
        """(transfer, section, multiplicity inside one tile/prologue run, enclosing chunk?)"""
        out = []
        for sec, nodes in (("prologue", self.prologue), ("body", self.body), ("epilogue", self.epilogue)):
            for node, mult, in_chunk in iter_nodes(nodes):
                if isinstance(node, Transfer):
                    out.append((node, sec, mult, in_chunk))
        return out


def iter_nodes(nodes, mult=sympy.Integer(1), in_chunk=False):
    """Yield (node, multiplicity, inside-a-chunk-loop) for leaf nodes; chunk loops count 1 per
    chunk (the caller sums over chunks with the actual CL)."""
    for n in nodes:
        if isinstance(n, Loop):
            yield from iter_nodes(n.body, mult * n.extent, in_chunk)
        elif isinstance(n, Chunk):
            yield from iter_nodes(n.body, mult, True)
        else:
            yield n, mult, in_chunk


# --------------------------------------------------------------------------------------------
# shapes in the plan


class _Ctx:
    def __init__(self, p: Program, depth: int):
        self.p = p
        self.depth = depth
        dims = p.chunk_dims
        if len(dims) > 1:
            raise IRError(f"program {p.name}: one chunked dim supported, got {dims}")
        self.chunk = dims[0] if dims else None
        self.L = p.locals_by_name
        self.loopvars: list = []
        self.tmp = 0
        self.scratch_elems: list = []
        self.work_elems: list = []
        self.red_elems: list = []
        self.mask_bytes: list = []
        self.storage: dict = {}
        self.uses_sync = False

    def fresh(self, stem="i") -> str:
        self.tmp += 1
        return f"{stem}{self.tmp}"

    # runtime/capacity extents of a local's axes
    def cols_rt(self, cols):
        return [CL if (self.chunk is not None and c == self.chunk) else c for c in cols]

    def cols_cap(self, cols):
        return [COL_CHUNK if (self.chunk is not None and c == self.chunk) else c for c in cols]

    def shape(self, name: str):
        """(lead_rt, cols_rt, stride S) of a local: axes [lead, *cols], innermost padded to S."""
        l = self.L[name]
        lead = TR if l.per_row else sympy.Integer(1)
        cols = self.cols_rt(l.cols)
        S = AlignUp(self.cols_cap(l.cols)[-1], PAD)
        return lead, cols, S

    def cap_elems(self, l: Local):
        lead = ROWS_PER_TILE if l.per_row else sympy.Integer(1)
        cols = self.cols_cap(l.cols)
        return lead * sympy.Mul(*cols[:-1]) * AlignUp(cols[-1], PAD)

    def total(self, name: str):
        lead, cols, S = self.shape(name)
        return lead * sympy.Mul(*cols[:-1]) * S

    def buf(self, name: str) -> str:
        return self.storage[name]


def _strides(lead, cols, S):
    """Element strides of axes [lead, *cols] (innermost stride 1, padded row S)."""
    ext = [lead] + list(cols)
    st = [sympy.Integer(1)] * len(ext)
    if len(ext) >= 2:
        st[-2] = S
        for a in range(len(ext) - 3, -1, -1):
            st[a] = st[a + 1] * ext[a + 1]
    return st


def _width(dt: DType, *others: DType) -> int:
    return max([dt.nbytes] + [o.nbytes for o in others])


# --------------------------------------------------------------------------------------------
# scalar operands


def _scal(a) -> Scal:
    if isinstance(a, str) and a.startswith("-$"):
        return Scal("param", a[2:], negate=True)
    if isinstance(a, str) and a.startswith("$"):
        return Scal("param", a[1:])
    if isinstance(a, (int, float)) and not isinstance(a, bool):
        return Scal("const", float(a))
    if isinstance(a, sympy.Expr):
        if a.is_Number:
            return Scal("const", float(a))
        return Scal("expr", a)
    raise IRError(f"not a scalar operand: {a!r}")


# --------------------------------------------------------------------------------------------
# elementwise with broadcasting


def _operand_info(ctx: _Ctx, name: str, out_ext):
    lead, cols, S = ctx.shape(name)
    ext = [lead] + cols
    if len(ext) != len(out_ext):
        raise IRError(f"{ctx.p.name}: operand {name} rank {len(cols)} differs from the result's {len(out_ext) - 1}")
    bc = [e == 1 and o != 1 for e, o in zip(ext, out_ext)]
    return ext, _strides(lead, cols, S), bc, S


def _loop_nest(ctx: _Ctx, extents, make_body):
    """Nested Loop nodes over `extents`; make_body(index symbols) -> list of nodes."""
    vars_ = [ctx.fresh("i") for _ in extents]
    syms = [sympy.Symbol(v, integer=True, nonnegative=True) for v in vars_]
    nodes = make_body(syms)
    for v, e in reversed(list(zip(vars_, extents))):
        nodes = [Loop(v, e, nodes)]
    return nodes


_SCALAR_FORM = {"add": "Adds", "mul": "Muls", "max": "Maxs", "min": "Mins"}
_TENSOR_API = {"add": "Add", "sub": "Sub", "mul": "Mul", "div": "Div", "max": "Max", "min": "Min"}


def _binary(ctx: _Ctx, op: Op) -> list:
    out = op.out
    a, b = op.args
    olead, ocols, oS = ctx.shape(out)
    out_ext = [olead] + ocols
    oinfo = (out_ext, _strides(olead, ocols, oS), [False] * len(out_ext), oS)
    ai = _operand_info(ctx, a, out_ext)
    bi = _operand_info(ctx, b, out_ext)
    k = len(out_ext)
    last_bc = ai[2][-1] or bi[2][-1]
    # longest suffix of axes (excluding the padded innermost) without broadcasting
    j = k - 1
    while j > 0 and not (ai[2][j - 1] or bi[2][j - 1]):
        j -= 1
    api = _TENSOR_API[op.opcode]
    if not last_bc:
        count = sympy.Mul(*out_ext[j:-1]) * oS if j < k - 1 else oS
        if j == 0:
            count = ctx.total(out)

        def body(idx):
            def off(info):
                return sympy.Add(*[i * (0 if info[2][ax] else info[1][ax]) for ax, i in enumerate(idx)])
            return [Vec(api, Ref(ctx.buf(out), off(oinfo)), (Ref(ctx.buf(a), off(ai)), Ref(ctx.buf(b), off(bi))), count, 4)]
        return body([]) if j == 0 else _loop_nest(ctx, out_ext[:j], body)
    # the innermost axis broadcasts in one operand: a scalar per row read on the scalar unit
    vec_name, vec_info, sc_name, sc_info, sc_first = (a, ai, b, bi, False) if bi[2][-1] else (b, bi, a, ai, True)

    def body(idx):
        def off(info):
            return sympy.Add(*[i * (0 if info[2][ax] else info[1][ax]) for ax, i in enumerate(idx)])
        v = ctx.fresh("s")
        dst = Ref(ctx.buf(out), off(oinfo))
        src = Ref(ctx.buf(vec_name), off(vec_info))
        nodes = [GetV(v, Ref(ctx.buf(sc_name), off(sc_info)))]
        if op.opcode in _SCALAR_FORM:
            nodes.append(Vec(_SCALAR_FORM[op.opcode], dst, (src, Scal("var", v)), oS, 4))
        elif op.opcode == "sub" and not sc_first:
            nodes.append(Vec("Adds", dst, (src, Scal("var", v, negate=True)), oS, 4))
        else:   # s - x, x / s, s / x: broadcast the scalar into scratch, then the tensor op (exact division)
            ctx.scratch_elems.append(oS)
            scr = Ref("scratch", sympy.Integer(0))
            nodes.append(Vec("Duplicate", scr, (Scal("var", v),), oS, 4))
            srcs = (scr, src) if sc_first else (src, scr)
            nodes.append(Vec(api, dst, srcs, oS, 4))
        return nodes
    ctx.uses_sync = True
    return [Sync("V_S")] + _loop_nest(ctx, out_ext[:-1], body)


def _same_shape(ctx: _Ctx, op: Op, names):
    o = ctx.shape(op.out)
    for n in names:
        s = ctx.shape(n)
        if s[0] != o[0] or list(s[1]) != list(o[1]):
            raise IRError(f"{ctx.p.name}: `{op}` needs operands shaped like the result "
                          f"({o[0]}, {o[1]}), {n} is ({s[0]}, {s[1]}); broadcast with a binary op first")


_UNARY_API = {"exp": "Exp", "ln": "Ln", "abs": "Abs", "sqrt": "Sqrt", "relu": "Relu"}


def _unary(ctx: _Ctx, op: Op) -> list:
    (src,) = op.args
    _same_shape(ctx, op, [src])
    n = ctx.total(op.out)
    d, s = Ref(ctx.buf(op.out)), Ref(ctx.buf(src))
    oc = op.opcode
    if oc in _UNARY_API:
        return [Vec(_UNARY_API[oc], d, (s,), n, 4)]
    if oc in ("copy",):
        return [Vec("Muls", d, (s, Scal("const", 1.0)), n, 4)]
    if oc == "neg":
        return [Vec("Muls", d, (s, Scal("const", -1.0)), n, 4)]
    ctx.scratch_elems.append(n)
    scr = Ref("scratch")
    one = (Vec("Duplicate", scr, (Scal("const", 1.0),), n, 4),)
    if oc == "rsqrt":       # Sqrt + Div: the Rsqrt instruction misses fp32 accuracy (ref §2.2)
        return [Vec("Sqrt", d, (s,), n, 4), *one, Vec("Div", d, (scr, d), n, 4)]
    if oc == "reciprocal":
        return [*one, Vec("Div", d, (scr, s), n, 4)]
    if oc == "sigmoid":     # 1 / (1 + exp(-x)) as production kernels do (ref §2.2)
        return [Vec("Muls", d, (s, Scal("const", -1.0)), n, 4), Vec("Exp", d, (d,), n, 4),
                Vec("Adds", d, (d, Scal("const", 1.0)), n, 4), *one, Vec("Div", d, (scr, d), n, 4)]
    raise IRError(f"no unary rule for {oc}")


_SCALAR_API = {"adds": "Adds", "muls": "Muls", "maxs": "Maxs", "mins": "Mins"}


def _scalar_op(ctx: _Ctx, op: Op) -> list:
    src, sc = op.args
    _same_shape(ctx, op, [src])
    return [Vec(_SCALAR_API[op.opcode], Ref(ctx.buf(op.out)), (Ref(ctx.buf(src)), _scal(sc)), ctx.total(op.out), 4)]


def _fill(ctx: _Ctx, op: Op) -> list:
    l = ctx.L[op.out]
    return [Vec("Duplicate", Ref(ctx.buf(op.out), dtype=l.dtype), (_scal(op.args[0]),), ctx.total(op.out), l.dtype.nbytes)]


def _cast(ctx: _Ctx, op: Op) -> list:
    (src,) = op.args
    _same_shape(ctx, op, [src])
    sdt, ddt = ctx.L[src].dtype, ctx.L[op.out].dtype
    # up-casts are exact (CAST_NONE); fp32 -> bf16 needs a real rounding mode on A2 (CAST_RINT);
    # fp32 -> fp16 uses CAST_NONE (= rint when lossy) as ops-nn does (ref §2.3, §8 item 2)
    mode = "CAST_RINT" if ddt == DType.BF16 else "CAST_NONE"
    return [Vec("Cast", Ref(ctx.buf(op.out), dtype=ddt), (Ref(ctx.buf(src), dtype=sdt),), ctx.total(op.out), _width(sdt, ddt),
                {"round": mode, "src_dtype": sdt, "dst_dtype": ddt})]


def _axis(op: Op, ncols: int) -> int:
    ax = int(op.attr("axis", -1))
    return ax if ax < 0 else ax - ncols


def _reduce(ctx: _Ctx, op: Op) -> list:
    (src,) = op.args
    slead, scols, sS = ctx.shape(src)
    olead, ocols, oS = ctx.shape(op.out)
    k = len(scols)
    ax = _axis(op, k) + k           # column axis index
    s_ext = [slead] + scols
    s_st = _strides(slead, scols, sS)
    o_st = _strides(olead, ocols, oS)
    is_sum = op.opcode == "reduce_sum"
    if ax == k - 1:                 # innermost axis: count-form ReduceSum/ReduceMax per padded row
        L = scols[-1]
        # workLocal: one partial per 256-B repeat of the source (count-form reduce, ReduceSum.md)
        ctx.work_elems.append(AlignUp(CeilDiv(L, 64), 8))
        api = "ReduceSum" if is_sum else "ReduceMax"

        def body(idx):
            so = sympy.Add(*[i * s_st[a] for a, i in enumerate(idx)])
            oo = sympy.Add(*[i * o_st[a] for a, i in enumerate(idx)])
            return [Vec(api, Ref(ctx.buf(op.out), oo), (Ref(ctx.buf(src), so), Ref("work")), L, 4)]
        return _loop_nest(ctx, s_ext[:-1], body)
    # a middle axis: first slice copied, the others accumulated with Add/Max over the contiguous suffix
    a_full = ax + 1                 # index in [lead, *cols]
    count = sympy.Mul(*s_ext[a_full + 1:-1]) * sS
    K = s_ext[a_full]
    api = "Add" if is_sum else "Max"

    def body(idx):
        so = sympy.Add(*[i * s_st[a] for a, i in enumerate(idx)])
        oo = sympy.Add(*[i * o_st[a] for a, i in enumerate(idx)])
        kv = ctx.fresh("k")
        ks = sympy.Symbol(kv, integer=True, nonnegative=True)
        dst = Ref(ctx.buf(op.out), oo)
        return [Vec("Muls", dst, (Ref(ctx.buf(src), so), Scal("const", 1.0)), count, 4),
                Loop(kv, K - 1, [Vec(api, dst, (dst, Ref(ctx.buf(src), so + (ks + 1) * s_st[a_full])), count, 4)])]
    return _loop_nest(ctx, s_ext[:a_full], body)


def _acc_rows(ctx: _Ctx, op: Op) -> list:
    acc, src = op.args
    if op.out != acc:
        raise IRError(f"{ctx.p.name}: `{op}` accumulates in place; its out must be its first argument")
    slead, scols, sS = ctx.shape(src)
    per = sympy.Mul(*scols[:-1]) * sS
    dst = Ref(ctx.buf(acc))
    t = ctx.fresh("t")
    ts = sympy.Symbol(t, integer=True, nonnegative=True)
    return [Loop(t, slead, [Vec("Add", dst, (dst, Ref(ctx.buf(src), ts * per)), per, 4)])]


_CMP_INV = {"LT": "GT", "LE": "GE", "GT": "LT", "GE": "LE", "EQ": "EQ", "NE": "NE"}


def _select(ctx: _Ctx, op: Op) -> list:
    a, b, x, y = op.args
    tens = [v for v in (a, b, x, y) if not is_scalar_arg(v)]
    _same_shape(ctx, op, tens)
    n = AlignUp(ctx.total(op.out), 64)          # Compare/Select count: a multiple of 256 B (ref §8 item 4)
    ctx.mask_bytes.append(AlignUp(CeilDiv(n, 8), 32))
    cmp = op.attr("cmp")
    mask = Ref("selmask")
    nodes = []
    if is_scalar_arg(b):
        nodes.append(Vec("CompareScalar", mask, (Ref(ctx.buf(a)), _scal(b)), n, 4, {"cmp": cmp}))
    else:
        nodes.append(Vec("Compare", mask, (Ref(ctx.buf(a)), Ref(ctx.buf(b))), n, 4, {"cmp": cmp}))
    d = Ref(ctx.buf(op.out))
    if not is_scalar_arg(x) and is_scalar_arg(y):
        nodes.append(Vec("Select", d, (mask, Ref(ctx.buf(x)), _scal(y)), n, 4, {"mode": "VSEL_TENSOR_SCALAR_MODE"}))
    elif is_scalar_arg(x) and not is_scalar_arg(y):
        # mask selects y where the condition is false: recompute the mask with the inverse comparison
        nodes[-1].extra["cmp"] = {"LT": "GE", "LE": "GT", "GT": "LE", "GE": "LT", "EQ": "NE", "NE": "EQ"}[cmp]
        nodes.append(Vec("Select", d, (mask, Ref(ctx.buf(y)), _scal(x)), n, 4, {"mode": "VSEL_TENSOR_SCALAR_MODE"}))
    elif not is_scalar_arg(x):
        nodes.append(Vec("Select", d, (mask, Ref(ctx.buf(x)), Ref(ctx.buf(y))), n, 4, {"mode": "VSEL_TENSOR_TENSOR_MODE"}))
    else:
        raise IRError(f"{ctx.p.name}: `{op}` selects between two scalars; fill a local first")
    return nodes


def _parity_select(ctx: _Ctx, op: Op) -> list:
    """Even lanes from a, odd lanes from b: a constant 0x55555555 bit mask (Duplicate on int32) and
    one tensor-tensor Select. Rows are padded to an even stride, so the parity holds per row."""
    a, b = op.args
    _same_shape(ctx, op, [a, b])
    n = AlignUp(ctx.total(op.out), 64)
    words = CeilDiv(n, 32)
    ctx.mask_bytes.append(AlignUp(words * 4, 32))
    return [Vec("Duplicate", Ref("selmask", dtype=DType.INT32), (Scal("const_int", 0x55555555),), words, 4),
            Vec("Select", Ref(ctx.buf(op.out)), (Ref("selmask"), Ref(ctx.buf(a)), Ref(ctx.buf(b))), n, 4,
                {"mode": "VSEL_TENSOR_TENSOR_MODE"})]


def _slice_like(ctx: _Ctx, op: Op) -> list:
    """slice / set_slice / hist_read / hist_write."""
    oc = op.opcode
    if oc in ("slice", "hist_read"):
        big, small, reading = op.args[0], op.out, True
    else:
        big, small, reading = op.args[0], op.args[1], False
        if op.out != op.args[0]:
            raise IRError(f"{ctx.p.name}: `{op}` is in place; its out must be its first argument")
    blead, bcols, bS = ctx.shape(big)
    slead, scols, sS = ctx.shape(small)
    k = len(bcols)
    if oc.startswith("hist"):
        ax, start, step = 0, sympy.sympify(op.attr("slot")), 1
        stop = start + 1
    else:
        ax = _axis(op, k) + k
        start, stop, step = (sympy.sympify(op.attr(x)) for x in ("start", "stop", "step"))
    b_st = _strides(blead, bcols, bS)
    s_st = _strides(slead, scols, sS)
    a_full = ax + 1
    if ax != k - 1 and step == 1:           # rows of the padded layout: contiguous block copies
        count = sympy.Mul(*[slead, *scols][a_full:-1]) * sS

        def body(idx):
            bo = sympy.Add(*[i * b_st[a] for a, i in enumerate(idx)]) + start * b_st[a_full]
            so = sympy.Add(*[i * s_st[a] for a, i in enumerate(idx)])
            src, dst = (Ref(ctx.buf(big), bo), Ref(ctx.buf(small), so)) if reading else \
                (Ref(ctx.buf(small), so), Ref(ctx.buf(big), bo))
            return [Vec("Muls", dst, (src, Scal("const", 1.0)), count, 4)]
        ext = [slead, *scols][:a_full]
        return body([]) if not ext else _loop_nest(ctx, ext, body)
    if ax != k - 1:
        raise IRError(f"{ctx.p.name}: `{op}`: strided slices are supported on the innermost axis only")
    # innermost axis (strided or unaligned offsets): element moves on the scalar unit
    ctx.uses_sync = True
    n = scols[-1]
    ext = [slead, *scols][:-1]

    def body(idx):
        bo = sympy.Add(*[i * b_st[a] for a, i in enumerate(idx)])
        so = sympy.Add(*[i * s_st[a] for a, i in enumerate(idx)])
        j = ctx.fresh("j")
        js = sympy.Symbol(j, integer=True, nonnegative=True)
        v = ctx.fresh("s")
        bref = Ref(ctx.buf(big), bo + start + js * step)
        sref = Ref(ctx.buf(small), so + js)
        return [Loop(j, n, [GetV(v, bref), SetV(sref, v)] if reading else [GetV(v, sref), SetV(bref, v)])]
    return [Sync("V_S")] + _loop_nest(ctx, ext, body) + [Sync("S_V")]


def _transpose(ctx: _Ctx, op: Op) -> list:
    (src,) = op.args
    slead, scols, sS = ctx.shape(src)
    olead, ocols, oS = ctx.shape(op.out)
    s_st = _strides(slead, scols, sS)
    o_st = _strides(olead, ocols, oS)
    ctx.uses_sync = True
    ext = [slead, *scols]

    def body(idx):
        so = sympy.Add(*[i * s_st[a] for a, i in enumerate(idx)])
        oidx = list(idx)
        oidx[-1], oidx[-2] = idx[-2], idx[-1]
        oo = sympy.Add(*[i * o_st[a] for a, i in enumerate(oidx)])
        v = ctx.fresh("s")
        return [GetV(v, Ref(ctx.buf(src), so)), SetV(Ref(ctx.buf(op.out), oo), v)]
    return [Sync("V_S")] + _loop_nest(ctx, ext, body) + [Sync("S_V")]


def _matvec(ctx: _Ctx, op: Op) -> list:
    """out[t, m] = sum_K a[t, K] w[m, K]: per (t, m) one Mul over K, Adds across K's padded rows,
    one ReduceSum over the valid row length into a 32-B slot, then scalar moves into place."""
    a, w = op.args
    alead, acols, aS = ctx.shape(a)
    wlead, wcols, wS = ctx.shape(w)
    olead, ocols, oS = ctx.shape(op.out)
    kr = sympy.Mul(*acols[:-1])                 # padded rows of K
    L = acols[-1]
    M = sympy.Mul(*ocols)
    per_a = kr * aS
    o_st = _strides(olead, ocols, oS)
    ctx.scratch_elems.append(per_a)
    ctx.work_elems.append(AlignUp(CeilDiv(L, 64), 8))
    ctx.red_elems.append(M * 8)
    t, m, i, v = ctx.fresh("t"), ctx.fresh("m"), ctx.fresh("k"), ctx.fresh("s")
    ts, ms, is_ = (sympy.Symbol(x, integer=True, nonnegative=True) for x in (t, m, i))
    scr = Ref("scratch")
    inner = [Vec("Mul", scr, (Ref(ctx.buf(a), ts * per_a), Ref(ctx.buf(w), ms * per_a)), per_a, 4),
             Loop(i, kr - 1, [Vec("Add", scr, (scr, Ref("scratch", (is_ + 1) * aS)), aS, 4)]),
             Vec("ReduceSum", Ref("red", ms * 8), (scr, Ref("work")), L, 4)]
    # scatter red[m*8] into out[t, m] (m over the flattened *M, innermost padded)
    n_last = ocols[-1]
    oo = ts * o_st[0] + sympy.floor(ms / n_last) * oS + sympy.Mod(ms, n_last)
    move = [Sync("V_S"), Loop(m, M, [GetV(v, Ref("red", ms * 8)), SetV(Ref(ctx.buf(op.out), oo), v)]), Sync("S_V")]
    ctx.uses_sync = True
    return [Loop(t, alead, [Loop(m, M, inner)] + move)]


def _matvec_t(ctx: _Ctx, op: Op) -> list:
    """out[t, K] = sum_m g[t, m] w[m, K]: Muls by the scalar g[t, m], accumulated with Add."""
    g, w = op.args
    glead, gcols, gS = ctx.shape(g)
    olead, ocols, oS = ctx.shape(op.out)
    per = sympy.Mul(*ocols[:-1]) * oS
    M = sympy.Mul(*gcols)
    g_st = _strides(glead, gcols, gS)
    ctx.scratch_elems.append(per)
    t, m, v = ctx.fresh("t"), ctx.fresh("m"), ctx.fresh("s")
    ts, ms = (sympy.Symbol(x, integer=True, nonnegative=True) for x in (t, m))
    n_last = gcols[-1]
    go = ts * g_st[0] + sympy.floor(ms / n_last) * gS + sympy.Mod(ms, n_last)
    dst = Ref(ctx.buf(op.out), ts * per)
    scr = Ref("scratch")
    ctx.uses_sync = True
    body = [GetV(v, Ref(ctx.buf(g), go)),
            Vec("Muls", scr, (Ref(ctx.buf(w), ms * per), Scal("var", v)), per, 4),
            Vec("Add", dst, (dst, scr), per, 4)]
    return [Sync("V_S"), Loop(t, glead, [Vec("Duplicate", dst, (Scal("const", 0.0),), per, 4), Loop(m, M, body)])]


def _pair_swap(ctx: _Ctx, op: Op) -> list:
    # a UB -> UB copy at a one-element offset breaks the 32-byte alignment rule (reference/ascendc.md),
    # and the vector unit has no lane shuffle: Ascend programs form swap(x) from shifted GM loads
    raise IRError(f"`{op}`: pair_swap has no AscendC lowering (a one-element UB shift breaks the 32-byte "
                  f"rule); build the Ascend program with swap='shifted_loads' (trex/passes/ir_rope.build_rope)")


def _view(ctx: _Ctx, op: Op) -> list:
    return []      # storage is aliased (see _allocate)


LOWERING_RULES: dict[str, Callable] = {
    **{k: _binary for k in _TENSOR_API},
    **{k: _unary for k in ("exp", "ln", "abs", "sqrt", "relu", "copy", "neg", "rsqrt", "reciprocal", "sigmoid")},
    **{k: _scalar_op for k in _SCALAR_API},
    "fill": _fill, "cast": _cast, "reduce_sum": _reduce, "reduce_max": _reduce, "acc_rows": _acc_rows,
    "select": _select, "parity_select": _parity_select, "pair_swap": _pair_swap, "slice": _slice_like, "set_slice": _slice_like, "hist_read": _slice_like,
    "hist_write": _slice_like, "transpose": _transpose, "view": _view, "matvec": _matvec, "matvec_t": _matvec_t,
    # load/store are lowered by the plan (queues + transfers), see _load/_store
}


# --------------------------------------------------------------------------------------------
# loads and stores


def _gm_block(ctx: _Ctx, t: GMTensor, rows_lead):
    """(block_count, block_len, gm_gap, col offset) of a tile of GM tensor t."""
    cols = list(t.cols)
    inner = sympy.Mul(*cols[:-1])
    if ctx.chunk is not None and cols[-1] == ctx.chunk:
        return rows_lead * inner, CL, cols[-1] - CL, C0
    if ctx.chunk is not None and ctx.chunk in cols[:-1]:
        raise IRError(f"{ctx.p.name}: chunked dim {ctx.chunk} must be the innermost axis of {t.name}")
    return rows_lead * inner, cols[-1], sympy.Integer(0), sympy.Integer(0)


def _row_size(t: GMTensor):
    return sympy.Mul(*t.cols)


def _load(ctx: _Ctx, op: Op, qname: str) -> list:
    t = ctx.p.tensor(op.args[0])
    l = ctx.L[op.out]
    lead, cols, S = ctx.shape(op.out)
    var = op.out
    nodes = [Queue("alloc", qname, var, l.dtype)]
    col, pad = op.attr("col"), op.attr("pad")
    if col is not None or pad is not None:
        return nodes + _load_cols(ctx, op, t, var, S, col, pad) + [Queue("enque", qname, var, l.dtype),
                                                                   Queue("deque", qname, var, l.dtype)]
    if t.kind == TensorKind.SHARED:
        bc, bl, gap, coff = _gm_block(ctx, t, sympy.Integer(1))
        nodes.append(Transfer("in", t.name, t.dtype, coff, Ref(var, dtype=t.dtype), bc, bl, gap, S))
    elif op.attr("tile_row", False):      # one GM row serves the whole tile (row groups)
        bc, bl, gap, coff = _gm_block(ctx, t, sympy.Integer(1))
        g = sympy.floor(ROW0 / t.row_map.div)
        if t.row_map.mod is not None:
            g = sympy.Mod(g, t.row_map.mod)
        nodes.append(Transfer("in", t.name, t.dtype, g * _row_size(t) + coff, Ref(var, dtype=t.dtype), bc, bl, gap, S))
    elif t.row_map.is_identity:
        bc, bl, gap, coff = _gm_block(ctx, t, TR)
        nodes.append(Transfer("in", t.name, t.dtype, ROW0 * _row_size(t) + coff, Ref(var, dtype=t.dtype), bc, bl, gap, S))
    else:
        bc, bl, gap, coff = _gm_block(ctx, t, sympy.Integer(1))
        i = ctx.fresh("r")
        isym = sympy.Symbol(i, integer=True, nonnegative=True)
        g = sympy.floor((ROW0 + isym) / t.row_map.div)
        if t.row_map.mod is not None:
            g = sympy.Mod(g, t.row_map.mod)
        per_row = sympy.Mul(*cols[:-1]) * S
        nodes.append(Loop(i, TR, [Transfer("in", t.name, t.dtype, g * _row_size(t) + coff, Ref(var, isym * per_row, t.dtype),
                                           bc, bl, gap, S)]))
    nodes += [Queue("enque", qname, var, l.dtype), Queue("deque", qname, var, l.dtype)]
    return nodes


def _load_cols(ctx: _Ctx, op: Op, t: GMTensor, var: str, S, col, pad) -> list:
    """A column range [start, stop) of an identity-mapped ROW tensor, with optional left/right
    padding lanes in UB (DataCopyPad leftPadding/rightPadding): shifted copies of a row."""
    if t.kind != TensorKind.ROW or not t.row_map.is_identity or len(t.cols) != 1 or ctx.chunk is not None:
        raise IRError(f"{ctx.p.name}: `{op}`: column ranges are lowered for identity-mapped 1-d ROW tensors only")
    start, stop = (sympy.sympify(c) for c in (col if col is not None else (0, t.cols[0])))
    pl, pr = (int(v) for v in (pad if pad is not None else (0, 0)))
    if pl * t.dtype.nbytes > 32 or pr * t.dtype.nbytes > 32:
        raise IRError(f"{ctx.p.name}: `{op}`: DataCopyPad pads at most 32 bytes per side (ref §1.3)")
    return [Transfer("in", t.name, t.dtype, ROW0 * t.cols[0] + start, Ref(var, dtype=t.dtype), TR, stop - start,
                     t.cols[0] - (stop - start), S, pl, pr)]


def _store_transfer(ctx: _Ctx, t: GMTensor, src_var: str, src_local: str, col=None) -> Transfer:
    lead, cols, S = ctx.shape(src_local)
    if col is not None:
        if t.kind != TensorKind.ROW or len(t.cols) != 1:
            raise IRError(f"{ctx.p.name}: column-range stores are lowered for 1-d ROW tensors only ({t.name})")
        start, stop = (sympy.sympify(c) for c in col)
        return Transfer("out", t.name, t.dtype, ROW0 * t.cols[0] + start, Ref(src_var, dtype=t.dtype), TR,
                        stop - start, t.cols[0] - (stop - start), S)
    if t.kind == TensorKind.PARTIAL:
        bc, bl, gap, coff = _gm_block(ctx, t, sympy.Integer(1))
        return Transfer("out", t.name, t.dtype, BLOCK_IDX * _row_size(t) + coff, Ref(src_var, dtype=t.dtype), bc, bl, gap, S)
    if t.kind != TensorKind.ROW or not t.row_map.is_identity:
        raise IRError(f"{ctx.p.name}: stores go to identity-mapped ROW or PARTIAL tensors ({t.name})")
    bc, bl, gap, coff = _gm_block(ctx, t, TR)
    return Transfer("out", t.name, t.dtype, ROW0 * _row_size(t) + coff, Ref(src_var, dtype=t.dtype), bc, bl, gap, S)


# --------------------------------------------------------------------------------------------
# storage planning


def _view_root(p: Program, stmts_all) -> dict:
    root = {}
    for op, _ in walk(stmts_all):
        if op.opcode == "view":
            src = op.args[0]
            root[op.out] = root.get(src, src)
    return root


def _linear_positions(stmts, start=0, loops=()):
    """[(pos, op, loops)] in program order."""
    out = []
    pos = start
    for s in stmts:
        if isinstance(s, Op):
            out.append((pos, s, loops))
            pos += 1
        else:
            inner = _linear_positions(s.body, pos, loops + ((s, pos),))
            out += inner
            pos = inner[-1][0] + 1 if inner else pos
    return out


def _op_locals(op: Op, p: Program):
    names = []
    for i, a in enumerate(op.args):
        if isinstance(a, str) and not a.lstrip("-").startswith("$") and not (op.opcode in ("load", "store") and i == 0):
            names.append(a)
    if op.out:
        names.append(op.out)
    return names


def _intervals(p: Program, stmts, root: dict) -> dict:
    """Live interval per storage group over the linearised body; values that cross a loop
    boundary live for the whole loop (they are read again by the next iteration)."""
    lin = _linear_positions(stmts)
    iv: dict = {}
    loop_span: dict = {}
    for pos, op, loops in lin:
        for lp, lstart in loops:
            lo, hi = loop_span.get(id(lp), (pos, pos))
            loop_span[id(lp)] = (min(lo, pos), max(hi, pos))
    for pos, op, loops in lin:
        for n in _op_locals(op, p):
            g = root.get(n, n)
            lo, hi = iv.get(g, (pos, pos))
            iv[g] = (min(lo, pos), max(hi, pos))
    # extend across loops
    changed = True
    while changed:
        changed = False
        for pos, op, loops in lin:
            for n in _op_locals(op, p):
                g = root.get(n, n)
                lo, hi = iv[g]
                for lp, _ in loops:
                    llo, lhi = loop_span[id(lp)]
                    if lo < llo or hi > lhi:   # used inside and outside the loop
                        nlo, nhi = min(lo, llo), max(hi, lhi)
                        if (nlo, nhi) != (lo, hi):
                            iv[g] = (nlo, nhi)
                            lo, hi = nlo, nhi
                            changed = True
    return iv


def plan_kernel(p: Program, buffer_depth: int = 2) -> KernelPlan:
    """Lower `p` to AscendC instructions and a UB plan (sizes symbolic in ROWS_PER_TILE, COL_CHUNK)."""
    ctx = _Ctx(p, buffer_depth)
    all_stmts = p.prologue + p.body + p.epilogue
    root = _view_root(p, all_stmts)
    L = p.locals_by_name
    buffers: list[Buffer] = []
    storage: dict = {}

    # queues for loads (one per loaded local) and stores (one per stored GM tensor)
    load_q: dict = {}
    load_in_body: dict = {}     # ordered (program order): the printed code must be deterministic
    for op, _ in walk(p.body):
        if op.opcode == "load":
            load_q.setdefault(op.out, f"inQ_{op.out}")
            load_in_body[op.out] = True
    borrowed: dict = {}
    body_users = {n for op, _ in walk(p.body + p.epilogue) for n in _op_locals(op, p)}
    for sec in (p.prologue, p.epilogue):
        for op, _ in walk(sec):
            if op.opcode != "load" or op.out in load_q:
                continue
            l = L[op.out]
            # a prologue load only read by the prologue borrows a body queue of the same dtype and
            # columns (its capacity, rows_per_tile rows, is at least one row): InitBuffer is static
            donor = [n for n in load_in_body if L[n].dtype == l.dtype and L[n].cols == l.cols and L[n].per_row]
            if sec is p.prologue and op.out not in body_users and donor:
                load_q[op.out] = load_q[donor[0]]
                borrowed[op.out] = donor[0]
            else:
                load_q.setdefault(op.out, f"inQ_{op.out}")
    store_bind: dict = {}       # id(store op) -> (queue, bound local or None)
    store_q: dict = {}
    for section in (p.prologue, p.body, p.epilogue):
        _plan_stores(section, store_bind, store_q, p, root)

    for name, q in load_q.items():
        storage[name] = name
        if name in borrowed:
            continue
        l = L[name]
        depth = buffer_depth if name in load_in_body else 1    # prologue loads happen once per core
        buffers.append(Buffer(q, "vecin", depth, AlignUp(ctx.cap_elems(l) * l.dtype.nbytes, BUF_ALIGN), (name,)))
        storage[name] = name
    for gm, (q, dtype, per_row, cap) in store_q.items():
        depth = buffer_depth if per_row else 1
        buffers.append(Buffer(q, "vecout", depth, AlignUp(cap * dtype.nbytes, BUF_ALIGN)))
    bound_out = {loc for (_, loc, _) in store_bind.values() if loc}
    for loc in bound_out:
        storage[loc] = loc

    # TBuf slots for everything else (per-core locals: own slots; per-row: shared by liveness)
    tb_locals = [l for l in p.locals if l.name not in storage and l.name not in root]
    groups: dict = {}
    for l in tb_locals:
        groups[l.name] = [l] + [L[v] for v, r in root.items() if r == l.name]
    per_core = [g for g in groups if not L[g].per_row]
    per_row = [g for g in groups if L[g].per_row]
    iv = _intervals(p, p.body, root)
    slots: list = []    # [ [group names], end ]
    for g in sorted(per_row, key=lambda g: iv.get(g, (0, 0))):
        lo, hi = iv.get(g, (0, 0))
        for slot in slots:
            if slot[1] < lo:
                slot[0].append(g)
                slot[1] = hi
                break
        else:
            slots.append([[g], hi])
    for g in per_core:
        slots.append([[g], None])
    for i, (members, _) in enumerate(slots):
        name = f"ub{i}"
        caps = [AlignUp(ctx.cap_elems(m) * m.dtype.nbytes, BUF_ALIGN) for g in members for m in groups[g]]
        buffers.append(Buffer(name, "tbuf", 1, sympy.Max(*caps) if len(caps) > 1 else caps[0],
                              tuple(m.name for g in members for m in groups[g])))
        for g in members:
            for m in groups[g]:
                storage[m.name] = name
    for v, r in root.items():
        storage[v] = storage[r]
    ctx.storage = storage

    def lower(stmts) -> list:
        nodes = []
        for s in stmts:
            if isinstance(s, ChunkLoop):
                nodes.append(Chunk(s.dim, lower(s.body)))
            elif isinstance(s, Repeat):
                nodes.append(Loop(s.var, s.count, lower(s.body), s.reverse))
            elif s.opcode == "load":
                nodes += _load(ctx, s, load_q[s.out])
            elif s.opcode == "store":
                nodes += _lower_store(ctx, s, store_bind[id(s)])
            else:
                bind = [b for b in store_bind.values() if b[1] == s.out and b[2] is s]
                if bind:
                    q = bind[0][0]
                    nodes.append(Queue("alloc", q, s.out, L[s.out].dtype))
                nodes += LOWERING_RULES[s.opcode](ctx, s)
        return nodes

    pro, body, epi = lower(p.prologue), lower(p.body), lower(p.epilogue)
    _insert_frees(pro, body, epi, load_q, L)
    scratch = [("scratch", DType.FP32, ctx.scratch_elems), ("work", DType.FP32, ctx.work_elems),
               ("red", DType.FP32, ctx.red_elems)]
    for name, dt, elems in scratch + [("selmask", DType.UINT8, ctx.mask_bytes)]:
        if not elems:       # only the scratch buffers some rule asked for
            continue
        e = [_cap(x) for x in elems]
        buffers.append(Buffer(name, "tbuf", 1, AlignUp((sympy.Max(*e) if len(e) > 1 else e[0]) * dt.nbytes, BUF_ALIGN)))
    return KernelPlan(p, buffer_depth, buffers, storage, pro, body, epi, ctx.chunk)


def _cap(e: sympy.Expr) -> sympy.Expr:
    """Capacity form of a runtime element count: the tile's rows and chunk at their maximum."""
    return sympy.sympify(e).subs({TR: ROWS_PER_TILE, CL: COL_CHUNK})


def _plan_stores(stmts, store_bind, store_q, p: Program, root):
    """Decide per store whether its source can be computed straight into the VECOUT queue tensor
    (its only definition is the op just before, and nothing reads it later)."""
    flat = list(stmts)
    for idx, s in enumerate(flat):
        if isinstance(s, (ChunkLoop, Repeat)):
            _plan_stores(s.body, store_bind, store_q, p, root)
            continue
        if s.opcode != "store":
            continue
        t = p.tensor(s.args[0])
        src = s.args[1]
        L = p.locals_by_name
        q = f"outQ_{t.name}"
        l = L[src]
        prev = flat[idx - 1] if idx > 0 else None
        defs = [o for o, _ in walk(p.prologue + p.body + p.epilogue) if o.out == src]
        later_reads = [o for o, _ in walk(flat[idx + 1:]) if src in _op_locals(o, p)]
        can_bind = (isinstance(prev, Op) and prev.out == src and len(defs) == 1 and not later_reads
                    and src not in root and src not in root.values() and prev.opcode not in ("load", "view"))
        store_bind[id(s)] = (q, src if can_bind else None, prev if can_bind else None)
        if not can_bind:
            continue
        store_q.setdefault(t.name, (q, t.dtype, l.per_row, None))
        # capacity: the source local's (same layout)
        cap = _cap_local(p, l)
        old = store_q[t.name][3]
        store_q[t.name] = (q, t.dtype, l.per_row, cap if old is None else sympy.Max(old, cap))


def _cap_local(p: Program, l: Local):
    chunk = p.chunk_dims[0] if p.chunk_dims else None
    cols = [COL_CHUNK if (chunk is not None and c == chunk) else c for c in l.cols]
    lead = ROWS_PER_TILE if l.per_row else sympy.Integer(1)
    return lead * sympy.Mul(*cols[:-1]) * AlignUp(cols[-1], PAD)


def _lower_store(ctx: _Ctx, op: Op, bind) -> list:
    q, bound, _ = bind
    t = ctx.p.tensor(op.args[0])
    src = op.args[1]
    l = ctx.L[src]
    if bound:
        var = src
        nodes = [Queue("enque", q, var, t.dtype), Queue("deque", q, var, t.dtype)]
        nodes.append(_store_transfer(ctx, t, var, src, op.attr("col")))
        nodes.append(Queue("free", q, var, t.dtype))
        return nodes
    # a value that lives on (or is written several times) is copied out of its TBuf directly:
    # V -> MTE3 before the copy, MTE3 -> V after it so later vector writes cannot race the DMA
    if l.dtype != t.dtype:
        raise IRError(f"{ctx.p.name}: store of {src} ({l.dtype.value}) into {t.name} ({t.dtype.value}); cast first")
    tr = _store_transfer(ctx, t, ctx.buf(src), src, op.attr("col"))
    tr.ub = Ref(ctx.buf(src), dtype=l.dtype)
    return [Sync("V_MTE3"), tr, Sync("MTE3_V")]


def _insert_frees(pro, body, epi, load_q, L):
    """Free each loaded tensor after its last use in the node list that holds its load."""
    def uses(node, name) -> bool:
        if isinstance(node, Vec):
            refs = [node.dst] + [s for s in node.srcs if isinstance(s, Ref)]
            return any(r is not None and r.buf == name for r in refs)
        if isinstance(node, (GetV,)):
            return node.src.buf == name
        if isinstance(node, SetV):
            return node.dst.buf == name
        if isinstance(node, Transfer):
            return node.ub.buf == name
        if isinstance(node, (Loop, Chunk)):
            return any(uses(n, name) for n in node.body)
        return False

    def used_anywhere(nodes, name):
        return any(uses(n, name) for n in nodes)

    def process(nodes, keep=()):
        for n in nodes:
            if isinstance(n, (Loop, Chunk)):
                process(n.body)
        for name, q in load_q.items():
            if name in keep:
                continue
            idx_deq = [i for i, n in enumerate(nodes) if isinstance(n, Queue) and n.action == "deque" and n.var == name]
            for d in reversed(idx_deq):
                nxt = [i for i, n in enumerate(nodes) if i > d and isinstance(n, Queue) and n.action == "alloc" and n.var == name]
                end = nxt[0] if nxt else len(nodes)
                last = d
                for i in range(d + 1, end):
                    if uses(nodes[i], name):
                        last = i
                nodes.insert(last + 1, Queue("free", q, name, L[name].dtype))
    process(body)
    # prologue loads read by the body or epilogue stay resident and are freed at the very end
    resident = [n for n in load_q if used_anywhere(body, n) or used_anywhere(epi, n)]
    process(pro, keep=resident)
    for name in resident:
        if any(isinstance(n, Queue) and n.action == "deque" and n.var == name for n in pro):
            epi.append(Queue("free", load_q[name], name, L[name].dtype))
    process(epi)
