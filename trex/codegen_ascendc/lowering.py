"""Instruction selection: a Kernel IR program -> the AscendC instructions of its kernel (`plan_kernel`).

`LOWERING_RULES` is the rule table per IR opcode (a new vector op needs one rule here plus one
render template in the printer); loads and stores are lowered here too, through the queues and
transfers of the UB plan (ub_plan.py). `plan_kernel(program, buffer_depth)` drives the steps:
storage planning, instruction selection per section, queue frees, scratch buffers, and returns the
`KernelPlan` (isa.py) that the printer renders and `counting.count` reduces to the cost model's
counts, so the predicted MTE2/MTE3 bytes and vector repeats are those of the printed kernel by
construction. The plan of a (program, buffer depth) is computed once (`plan_kernel` is cached) and
shared by the cost model, the printer, the emulator launcher and the project emitter.
"""
from __future__ import annotations

import functools
from typing import Callable

import sympy

from trex.codegen_ascendc.isa import (BLOCK_IDX, C0, RESIDENT, ROW0, Chunk, GetV, KernelPlan, Loop, Queue, Ref, Scal,
                                      SetV, Sync, Transfer, Vec)
from trex.codegen_ascendc.ub_plan import PAD, insert_frees, plan_storage, scratch_buffers
from trex.compiler.kernel_ir import (ROW_TREE_LEVELS, DType, GMTensor, IRError, Op, Program, ChunkLoop, Repeat, TensorKind,
                                     is_chunk_slice, is_scalar_arg, resident_locals, walk)
from trex.cost_models.hardware import ASCEND_TARGETS
from trex.cost_models.kernel_counts import CL, COL_CHUNK, TR, AlignUp, CeilDiv

# the UB bytes a kernel may use on every AIV of the targets it is printed for (arch 2201: 910B, 910C die);
# the RESIDENT switch compares its resident plan's UB against it
UB_CAPACITY = min(hw.ub_capacity for hw in ASCEND_TARGETS.values())


# --------------------------------------------------------------------------------------------
# shapes in the plan


class _Ctx:
    """Lowering state of one program: its locals' shapes, their storage, fresh loop variables and
    the scratch space the rules ask for (sized by ub_plan.scratch_buffers)."""

    def __init__(self, p: Program):
        self.p = p
        dims = p.chunk_dims
        if len(dims) > 1:
            raise IRError(f"program {p.name}: one chunked dim supported, got {dims}")
        self.chunk = dims[0] if dims else None
        self.L = p.locals_by_name
        self.tmp = 0
        self.scratch_elems: list = []
        self.work_elems: list = []
        self.red_elems: list = []
        self.mask_bytes: list = []
        self.storage: dict = {}
        self.resident = set(resident_locals(p))   # whole rows in UB (the chunked dim at full extent)
        self.mode = None                          # "resident" | "reread" while lowering a program with them
        self.chunk_alias: dict = {}               # chunk slice out -> its resident local (resident branch)

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
        if name in self.resident:       # whole rows
            return lead, list(l.cols), AlignUp(l.cols[-1], PAD)
        cols = self.cols_rt(l.cols)
        S = AlignUp(self.cols_cap(l.cols)[-1], PAD)
        return lead, cols, S

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
    extra = {"round": mode, "src_dtype": sdt, "dst_dtype": ddt}
    if src in ctx.chunk_alias:
        return _cast_resident_chunk(ctx, op, ctx.chunk_alias[src], sdt, ddt, extra)
    return [Vec("Cast", Ref(ctx.buf(op.out), dtype=ddt), (Ref(ctx.buf(src), dtype=sdt),), ctx.total(op.out), _width(sdt, ddt),
                extra)]


def _cast_resident_chunk(ctx: _Ctx, op: Op, res: str, sdt: DType, ddt: DType, extra: dict) -> list:
    """The cast of a chunk slice of a resident local, read in place: per padded row of the tile (its rows x
    the non-innermost axes) one Cast of the chunk's padded length from column C0 of the resident row. C0 is
    a multiple of the chunk (a multiple of 16 elements unless one chunk spans the row) and the resident
    rows are padded to 16: every source start is 32-byte aligned and C0 + AlignUp(CL, 16) stays inside
    its row."""
    lead, cols, S = ctx.shape(op.out)
    _, _, R = ctx.shape(res)
    i = sympy.Symbol(ctx.fresh("r"), integer=True, nonnegative=True)
    return [Loop(i.name, lead * sympy.Mul(*cols[:-1]),
                 [Vec("Cast", Ref(ctx.buf(op.out), i * S, ddt), (Ref(ctx.buf(res), i * R + C0, sdt),), AlignUp(CL, PAD),
                      _width(sdt, ddt), dict(extra))])]


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
    rows = ctx.buf(src)

    def row(i):
        return Ref(rows, i * per)
    nodes = []
    # the IR's pairwise tree (kernel_ir.ops.row_tree), in place in src's rows (the IR consumes src):
    # level k adds row i + ceil(n_k / 2) into row i, n_k = ceil(TR / 2**k). One Add of one row per
    # pair, so a tile costs TR Adds as the row-by-row sum did; levels past the tile's depth run 0 times
    left = slead                                   # n_k
    for k in range(ROW_TREE_LEVELS if slead != 1 else 0):
        offset = CeilDiv(slead, 2 ** (k + 1))      # ceil(n_k / 2) = ceil(TR / 2**(k+1))
        i = sympy.Symbol(ctx.fresh("t"), integer=True, nonnegative=True)
        nodes.append(Loop(i.name, left - offset, [Vec("Add", row(i), (row(i), row(i + offset)), per, 4)]))
        left = offset
    t = sympy.Symbol(ctx.fresh("t"), integer=True, nonnegative=True)
    return nodes + [Loop(t.name, left, [Vec("Add", dst, (dst, row(t)), per, 4)])]


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
    body = [GetV(v, Ref(ctx.buf(g), go)),
            Vec("Muls", scr, (Ref(ctx.buf(w), ms * per), Scal("var", v)), per, 4),
            Vec("Add", dst, (dst, scr), per, 4)]
    return [Sync("V_S"), Loop(t, glead, [Vec("Duplicate", dst, (Scal("const", 0.0),), per, 4), Loop(m, M, body)])]


def _pair_swap(ctx: _Ctx, op: Op) -> list:
    # a UB -> UB copy at a one-element offset breaks the 32-byte alignment rule (reference/ascendc.md),
    # and the vector unit has no lane shuffle: Ascend programs form swap(x) from shifted GM loads
    raise IRError(f"`{op}`: pair_swap has no AscendC lowering (a one-element UB shift breaks the 32-byte "
                  f"rule); build the Ascend program with swap='shifted_loads' (trex/passes/rope/ir.py, build_rope)")


def _pair_expand(ctx: _Ctx, op: Op) -> list:
    # the vector unit has no lane shuffle; Ascend programs read tables the runner expanded on the host
    raise IRError(f"`{op}`: pair_expand has no AscendC lowering (no lane shuffle on the vector unit); build "
                  f"the Ascend program with swap='shifted_loads', which reads host-expanded tables "
                  f"(trex/passes/rope/ir.py, build_rope)")


def _view(ctx: _Ctx, op: Op) -> list:
    return []      # storage is aliased (ub_plan.plan_storage)


LOWERING_RULES: dict[str, Callable] = {
    **{k: _binary for k in _TENSOR_API},
    **{k: _unary for k in ("exp", "ln", "abs", "sqrt", "relu", "copy", "neg", "rsqrt", "reciprocal", "sigmoid")},
    **{k: _scalar_op for k in _SCALAR_API},
    "fill": _fill, "cast": _cast, "reduce_sum": _reduce, "reduce_max": _reduce, "acc_rows": _acc_rows,
    "select": _select, "parity_select": _parity_select, "pair_swap": _pair_swap, "pair_expand": _pair_expand, "slice": _slice_like, "set_slice": _slice_like, "hist_read": _slice_like,
    "hist_write": _slice_like, "transpose": _transpose, "view": _view, "matvec": _matvec, "matvec_t": _matvec_t,
}
# opcodes lowered by plan_kernel itself (queues + transfers: _load, _lower_store), not by LOWERING_RULES
STRUCTURAL_OPS = frozenset({"load", "store"})


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


def _load_resident(ctx: _Ctx, op: Op, qname: str) -> list:
    """Whole rows of an identity-mapped ROW tensor (the chunked dim at full extent) into a resident local's
    queue: one transfer of TR x the non-innermost axes blocks of a full row each."""
    t = ctx.p.tensor(op.args[0])
    l = ctx.L[op.out]
    _, cols, S = ctx.shape(op.out)
    bc = TR * sympy.Mul(*cols[:-1])
    return [Queue("alloc", qname, op.out, l.dtype),
            Transfer("in", t.name, t.dtype, ROW0 * _row_size(t), Ref(op.out, dtype=t.dtype), bc, cols[-1],
                     sympy.Integer(0), S),
            Queue("enque", qname, op.out, l.dtype), Queue("deque", qname, op.out, l.dtype)]


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
# the driver


@functools.lru_cache(maxsize=256)
def plan_kernel(p: Program, buffer_depth: int = 2) -> KernelPlan:
    """Lower `p` to AscendC instructions and a UB plan (sizes symbolic in ROWS_PER_TILE, COL_CHUNK).

    Cached per (program, buffer depth): the cost model's counts, the printer, the emulator and the
    project emitter all use the one plan; treat it as read-only."""
    ctx = _Ctx(p)
    st = plan_storage(p, buffer_depth)
    ctx.storage = st.storage
    L = p.locals_by_name
    res_tensor = {op.out: op.args[0] for op, _ in walk(p.body) if op.opcode == "load" and op.out in ctx.resident}
    for op, _ in walk(p.body):
        if is_chunk_slice(op):
            readers = [o for o, _ in walk(p.body) if op.out in o.args]
            if any(o.opcode != "cast" or L[o.out].dtype != DType.FP32 for o in readers) or L[op.out].dtype == DType.FP32:
                raise IRError(f"{p.name}: `{op}`: the AscendC lowering reads a chunk of a resident local through casts "
                              f"of a 16-bit tile to fp32 only (each Cast reads the resident rows in place)")

    def lower(stmts) -> list:
        nodes = []
        for s in stmts:
            if isinstance(s, ChunkLoop):
                nodes.append(Chunk(s.dim, lower(s.body)))
            elif isinstance(s, Repeat):
                nodes.append(Loop(s.var, s.count, lower(s.body), s.reverse))
            elif s.opcode == "load" and s.out in ctx.resident:
                if ctx.mode == "resident":     # the re-reading branch loads chunk by chunk at the slices
                    nodes += _load_resident(ctx, s, st.load_queue[s.out])
            elif is_chunk_slice(s):
                if ctx.mode == "resident":     # read in place by the casts
                    ctx.chunk_alias[s.out] = s.args[0]
                else:                          # today's chunk load of the resident local's tensor
                    nodes += _load(ctx, Op("load", s.out, (res_tensor[s.args[0]],)), st.load_queue[s.out])
            elif s.opcode == "load":
                nodes += _load(ctx, s, st.load_queue[s.out])
            elif s.opcode == "store":
                nodes += _lower_store(ctx, s, st.store_bind[id(s)])
            else:
                bind = [b for b in st.store_bind.values() if b[1] == s.out and b[2] is s]
                if bind:
                    q = bind[0][0]
                    nodes.append(Queue("alloc", q, s.out, L[s.out].dtype))
                nodes += LOWERING_RULES[s.opcode](ctx, s)
        return nodes

    pro, epi = lower(p.prologue), lower(p.epilogue)
    if ctx.resident:
        # the tile body twice: with the resident rows kept in UB (one load per tile, the chunks cast in place)
        # and re-reading every chunk from GM; the RESIDENT switch selects one per launch
        ctx.mode = "resident"
        kept = lower(p.body)
        ctx.mode, ctx.chunk_alias = "reread", {}
        reread = lower(p.body)
        body = [Loop(ctx.fresh("resident"), RESIDENT, kept, guard=True),
                Loop(ctx.fresh("reread"), 1 - RESIDENT, reread, guard=True)]
    else:
        body = lower(p.body)
    insert_frees(pro, body, epi, st.load_queue, L)
    buffers = st.buffers + scratch_buffers(ctx.scratch_elems, ctx.work_elems, ctx.red_elems, ctx.mask_bytes)
    switches = ()
    if ctx.resident:    # keep the rows where the whole plan with their queues fits the UB at this tiling
        ub_kept = sympy.Add(*[b.depth * b.nbytes for b in buffers]).xreplace({RESIDENT: sympy.Integer(1)})
        switches = ((RESIDENT, ub_kept, UB_CAPACITY),)
    return KernelPlan(p, buffer_depth, buffers, st.storage, pro, body, epi, ctx.chunk, switches)


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
