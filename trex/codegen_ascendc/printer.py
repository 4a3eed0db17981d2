"""AscendC printer: Kernel IR -> one `.cpp` kernel in the classic direct-call style.

The instruction selection is lowering.py (one rule per IR opcode), whose plan the cost model counts
too (counting.py), so predicted bytes/repeats are those of the printed code. This module renders
those instructions (isa.py): `RENDER` is the table from instruction kind / API to C++.

Printed structure (reference/ascendc.md §1, §8):
  * tiling struct (POD; the kernel copies it from GM; layout in `tiling_fields`),
  * a kernel class with Init (front/tail row split over GetBlockNum() cores, GlobalTensors,
    TPipe.InitBuffer for every queue/TBuf) and Process (prologue, row-tile loop, epilogue),
  * CopyIn_<local> / CopyOut_<tensor> methods around VECIN/VECOUT queues of depth BUFFER_NUM,
    DataCopy when a transfer is 32-byte aligned and contiguous, DataCopyPad otherwise,
  * fp32 compute with Cast CAST_NONE up and CAST_RINT down to bf16, PipeBarrier<PIPE_V> after
    every vector instruction, V_S/S_V flags around scalar-unit accesses,
  * the `extern "C" __global__ __aicore__` entry with GM_ADDR arguments.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import sympy
from sympy.printing.c import C99CodePrinter

from trex.codegen_ascendc.isa import (BLOCK_IDX, C0, RESIDENT, ROW0, Chunk, GetV, KernelPlan, Loop, Queue, Ref, Scal,
                                      SetV, Sync, Transfer, Vec)
from trex.codegen_ascendc.lowering import plan_kernel
from trex.compiler.kernel_ir import ROWS, DType, IRError, Program
from trex.cost_models.kernel_counts import CL, COL_CHUNK, ROWS_PER_TILE, TR

CTYPE = {DType.BF16: "bfloat16_t", DType.FP16: "half", DType.FP32: "float", DType.INT32: "int32_t",
         DType.UINT8: "uint8_t"}
_RUNTIME = {TR: "tileRows", CL: "chunkLen", ROWS_PER_TILE: "tl_.rowsPerTile", COL_CHUNK: "tl_.colChunk",
            ROW0: "row0", C0: "c0", BLOCK_IDX: "(int64_t)GetBlockIdx()", RESIDENT: "resident_"}
_SWITCH_DOC = {RESIDENT: "1: the resident rows stay in UB across the passes (they fit at this tiling); 0: re-read per chunk"}


def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[^0-9a-zA-Z]+", name) if p)


class _IntPrinter(C99CodePrinter):
    """sympy -> C++ int64 expression over tiling fields, loop variables and runtime values."""

    def _print_Symbol(self, s):
        if s in _RUNTIME:
            return _RUNTIME[s]
        if s.name == "ROWS":
            return "tl_.rows"
        if s.name.isupper():
            return f"tl_.{s.name}"
        return s.name

    def _print_AlignUp(self, e):
        return f"AlignUp({self._print(e.args[0])}, {self._print(e.args[1])})"

    def _print_CeilDiv(self, e):
        return f"CeilDiv({self._print(e.args[0])}, {self._print(e.args[1])})"

    def _print_floor(self, e):
        num, den = sympy.fraction(sympy.together(e.args[0]))
        return f"(({self._print(num)}) / ({self._print(den)}))"

    def _print_Mod(self, e):
        return f"(({self._print(e.args[0])}) % ({self._print(e.args[1])}))"

    def _print_Integer(self, e):
        return str(int(e))

    def _print_Max(self, e):
        out = self._print(e.args[0])
        for a in e.args[1:]:
            out = f"Max64({out}, {self._print(a)})"
        return out


class _FloatPrinter(_IntPrinter):
    def _print_Symbol(self, s):
        return f"(double){super()._print_Symbol(s)}"

    def _print_Integer(self, e):
        return f"{int(e)}.0"


_IP = _IntPrinter()
_FP = _FloatPrinter()


def cint(e) -> str:
    return _IP.doprint(sympy.sympify(e))


def cfloat_expr(e) -> str:
    return f"(float)({_FP.doprint(sympy.sympify(e))})"


def cfloat_const(v: float) -> str:
    if v != v:
        return "NAN"
    r = repr(float(v))
    if "e" not in r and "." not in r:
        r += ".0"
    return r + "f"


@dataclass
class _Env:
    plan: KernelPlan
    queue_vars: set          # LocalTensor variables held by queues (declared at alloc/deque)
    queue_dtype: dict        # queue -> dtype
    tbuf_views: set          # (slot, dtype) views used


class AscendCPrinter:
    """Render a KernelPlan. `print_kernel(program, buffer_depth)` is the entry point."""

    def __init__(self, plan: KernelPlan):
        self.plan = plan
        self.p = plan.program
        self.kname = self.p.name
        self.cls = camel(self.p.name) + "Kernel"
        self.tname = camel(self.p.name) + "Tiling"
        self.lines: list[str] = []
        self.helpers: list[str] = []
        self.views: set = set()
        self.queue_of_local: dict = {}
        self.queue_dtype: dict = {}
        self.queue_kind: dict = {b.name: b.kind for b in plan.buffers}
        self._helper_done: set = set()

    # ------------------------------------------------------------------ operands
    def view(self, ref: Ref) -> str:
        buf = ref.buf
        if buf in self.queue_kind and self.queue_kind[buf] == "tbuf":
            name = f"{buf}_{ref.dtype.value}"
            self.views.add((buf, ref.dtype))
        else:
            name = buf          # a LocalTensor variable held by a queue
        off = sympy.sympify(ref.off)
        return name if off == 0 else f"{name}[(uint32_t)({cint(off)})]"

    def scalar(self, s: Scal, dtype: DType = DType.FP32) -> str:
        if s.kind == "const_int":
            v = f"(int32_t){int(s.value)}"
        elif s.kind == "param":
            v = f"tl_.{s.value}"
        elif s.kind == "const":
            v = cfloat_const(s.value)
        elif s.kind == "expr":
            v = cfloat_expr(s.value)
        else:
            v = s.value
        return f"(-{v})" if s.negate else v

    # ------------------------------------------------------------------ nodes
    def emit(self, nodes, ind: int, out: list, ctx: str = "process"):
        pad = "  " * ind
        for n in nodes:
            if isinstance(n, Vec):
                out.append(pad + RENDER[n.api](self, n) + ";")
                out.append(pad + "PipeBarrier<PIPE_V>();")
            elif isinstance(n, GetV):
                out.append(f"{pad}const float {n.var} = {self._view_at(n.src)}.GetValue((uint32_t)({cint(n.src.off)}));")
            elif isinstance(n, SetV):
                out.append(f"{pad}{self._view_at(n.dst)}.SetValue((uint32_t)({cint(n.dst.off)}), {n.var});")
            elif isinstance(n, Sync):
                out.append(f"{pad}SyncFlag<HardEvent::{n.kind}>();")
            elif isinstance(n, Loop) and n.guard:
                out.append(f"{pad}if (({cint(n.extent)}) != 0) {{")
                self.emit(n.body, ind + 1, out, ctx)
                out.append(pad + "}")
            elif isinstance(n, Loop):
                e = cint(n.extent)
                if n.reverse:
                    out.append(f"{pad}for (int64_t {n.var} = ({e}) - 1; {n.var} >= 0; --{n.var}) {{")
                else:
                    out.append(f"{pad}for (int64_t {n.var} = 0; {n.var} < ({e}); ++{n.var}) {{")
                self.emit(n.body, ind + 1, out, ctx)
                out.append(pad + "}")
            elif isinstance(n, Chunk):
                full = cint(n.dim)
                out.append(f"{pad}for (int64_t c0 = 0; c0 < {full}; c0 += tl_.colChunk) {{")
                out.append(f"{pad}  const int64_t chunkLen = Min64(tl_.colChunk, {full} - c0);")
                self.emit(n.body, ind + 1, out, ctx)
                out.append(pad + "}")
            elif isinstance(n, Queue):
                self._queue(n, pad, out)
            elif isinstance(n, Transfer):
                out += [pad + l for l in self._transfer(n, self._view_at(n.ub), n.ub.off)]
            else:
                raise IRError(f"printer: no render rule for {type(n).__name__}")

    def _view_at(self, ref: Ref) -> str:
        return self.view(Ref(ref.buf, sympy.Integer(0), ref.dtype))

    # queues: loads go through CopyIn_<local>() helpers, stores through CopyOut_<tensor>()
    def _queue(self, n: Queue, pad: str, out: list):
        ct = CTYPE[n.dtype]
        q = n.queue
        if n.action == "alloc":
            if self.queue_kind.get(q) == "vecin":
                return      # loads are grouped into CopyIn_<local>() by render_nodes
            out.append(f"{pad}LocalTensor<{ct}> {n.var} = {q}.AllocTensor<{ct}>();")
        elif n.action == "enque":
            if self.queue_kind.get(q) == "vecin":
                return
            out.append(f"{pad}{q}.EnQue({n.var});")
        elif n.action == "deque":
            if self.queue_kind.get(q) == "vecin":
                out.append(f"{pad}LocalTensor<{ct}> {n.var} = {q}.DeQue<{ct}>();")
            else:
                pass    # the CopyOut helper dequeues
        elif n.action == "free":
            if self.queue_kind.get(q) == "vecin":
                out.append(f"{pad}{q}.FreeTensor({n.var});")

    def render_nodes(self, nodes, ind: int) -> list:
        """Group load sequences (alloc, transfers, enque) into CopyIn calls and store sequences
        (enque, deque, transfer, free) into CopyOut calls, render the rest inline."""
        out: list = []
        i = 0
        pad = "  " * ind
        while i < len(nodes):
            n = nodes[i]
            if isinstance(n, Queue) and n.action == "alloc" and self.queue_kind.get(n.queue) == "vecin":
                j = i + 1
                while not (isinstance(nodes[j], Queue) and nodes[j].action == "enque"):
                    j += 1
                helper = f"CopyIn_{n.var}"
                self._make_copy_helper(helper, n, nodes[i + 1:j], "in")
                out.append(f"{pad}{helper}(row0, tileRows, c0, chunkLen);")
                i = j + 1
                continue
            if (isinstance(n, Queue) and n.action == "enque" and self.queue_kind.get(n.queue) == "vecout"):
                # enque, deque, transfer, free
                tr = nodes[i + 2]
                helper = f"CopyOut_{tr.gm}"
                out.append(f"{pad}{n.queue}.EnQue({n.var});")
                self._make_copy_helper(helper, n, [tr], "out")
                out.append(f"{pad}{helper}(row0, tileRows, c0, chunkLen);")
                i += 4
                continue
            if isinstance(n, (Loop, Chunk)):
                body = self.render_nodes(n.body, ind + 1)
                if isinstance(n, Loop) and n.guard:
                    out += [f"{pad}if (({cint(n.extent)}) != 0) {{"] + body + [pad + "}"]
                elif isinstance(n, Loop):
                    e = cint(n.extent)
                    head = (f"for (int64_t {n.var} = ({e}) - 1; {n.var} >= 0; --{n.var}) {{" if n.reverse
                            else f"for (int64_t {n.var} = 0; {n.var} < ({e}); ++{n.var}) {{")
                    out += [pad + head] + body + [pad + "}"]
                else:
                    full = cint(n.dim)
                    out += [f"{pad}for (int64_t c0 = 0; c0 < {full}; c0 += tl_.colChunk) {{",
                            f"{pad}  const int64_t chunkLen = Min64(tl_.colChunk, {full} - c0);"] + body + [pad + "}"]
                i += 1
                continue
            self.emit([n], ind, out)
            i += 1
        return out

    def _make_copy_helper(self, name: str, q: Queue, transfers: list, direction: str):
        if name in self._helper_done:
            return
        self._helper_done.add(name)
        ct = CTYPE[q.dtype]
        lines = [f"  // {'CopyIn: GM -> UB (MTE2) into queue ' if direction == 'in' else 'CopyOut: UB -> GM (MTE3) from queue '}{q.queue}",
                 f"  __aicore__ inline void {name}(int64_t row0, int64_t tileRows, int64_t c0, int64_t chunkLen) {{",
                 "    (void)row0; (void)tileRows; (void)c0; (void)chunkLen;"]
        if direction == "in":
            lines.append(f"    LocalTensor<{ct}> t = {q.queue}.AllocTensor<{ct}>();")
        else:
            lines.append(f"    LocalTensor<{ct}> t = {q.queue}.DeQue<{ct}>();")
        body: list = []
        for n in transfers:
            self._emit_transfer_tree(n, 2, body)
        lines += body
        lines.append(f"    {q.queue}.EnQue(t);" if direction == "in" else f"    {q.queue}.FreeTensor(t);")
        lines.append("  }")
        self.helpers += lines

    def _emit_transfer_tree(self, n, ind, out):
        pad = "  " * ind
        if isinstance(n, Loop):
            out.append(f"{pad}for (int64_t {n.var} = 0; {n.var} < ({cint(n.extent)}); ++{n.var}) {{")
            for b in n.body:
                self._emit_transfer_tree(b, ind + 1, out)
            out.append(pad + "}")
        elif isinstance(n, Transfer):
            out += [pad + l for l in self._transfer(n, "t", n.ub.off)]
        else:
            raise IRError(f"printer: unexpected {type(n).__name__} inside a copy sequence")

    def _transfer(self, t: Transfer, ubvar: str, ub_off) -> list:
        ct = CTYPE[t.dtype]
        sz = t.dtype.nbytes
        ub = ubvar if sympy.sympify(ub_off) == 0 else f"{ubvar}[(uint32_t)({cint(ub_off)})]"
        gm = f"{t.gm}Gm_[(uint64_t)({cint(t.gm_off)})]"
        bc, bl, gap, st = cint(t.block_count), cint(t.block_len), cint(t.gm_gap), cint(t.ub_stride)
        padded = f"rowBytes + {(t.pad_left + t.pad_right) * sz}" if (t.pad_left or t.pad_right) else "rowBytes"
        lines = ["{",
                 f"  const int64_t blockCount = {bc}, blockLen = {bl}, gmGap = {gap}, ubStride = {st};",
                 f"  const uint32_t rowBytes = (uint32_t)(blockLen * {sz});",
                 f"  const uint32_t ubGapBlocks = (uint32_t)((ubStride * {sz} - AlignUp({padded}, 32)) / 32);",
                 "  if (gmGap == 0 && ubStride == blockLen && rowBytes % 32 == 0) {  // contiguous and 32-B aligned"]
        if t.direction == "in":
            lines += [f"    DataCopy({ub}, {gm}, (uint32_t)(blockCount * blockLen));",
                      "  } else {  // rows not 32-B aligned (or strided): DataCopyPad pads each UB row to 32 B",
                      f"    DataCopyPad({ub}, {gm}, DataCopyExtParams{{(uint16_t)blockCount, rowBytes, "
                      f"(uint32_t)(gmGap * {sz}), ubGapBlocks, 0}}, DataCopyPadExtParams<{ct}>{{false, {t.pad_left}, {t.pad_right}, 0}});"]
        else:
            lines += [f"    DataCopy({gm}, {ub}, (uint32_t)(blockCount * blockLen));",
                      "  } else {  // rows not 32-B aligned (or strided): DataCopyPad drops the UB row padding",
                      f"    DataCopyPad({gm}, {ub}, DataCopyExtParams{{(uint16_t)blockCount, rowBytes, "
                      f"ubGapBlocks, (uint32_t)(gmGap * {sz}), 0}});"]
        lines += ["  }", "}"]
        if t.pad_left or t.pad_right:     # shifted copy: always DataCopyPad (it places the pad lanes)
            lines = lines[:4] + [l[2:] for l in lines[7:8]] + ["}"]
        return lines

    # ------------------------------------------------------------------ whole kernel
    def tiling_fields(self) -> list:
        """[(C type, field name, meaning)] of the tiling struct, in memory order: int64 fields
        first, then floats (no padding)."""
        sizes = [s for s in self.p.sizes if s != ROWS]
        ints = [("int64_t", "rows", "kernel rows (ROWS)"), ("int64_t", "rowsPerTile", "rows per UB tile"),
                ("int64_t", "colChunk", "column chunk of the streamed dim (1 when none)")]
        ints += [("int64_t", s.name, f"size {s.name}") for s in sizes]
        ints += [("int64_t", sp.name, f"scalar ${sp.name}") for sp in self.p.scalars if sp.dtype != DType.FP32]
        floats = [("float", sp.name, f"scalar ${sp.name}") for sp in self.p.scalars if sp.dtype == DType.FP32]
        names = [f[1] for f in ints + floats]
        dup = {n for n in names if names.count(n) > 1}
        if dup:
            raise IRError(f"{self.p.name}: tiling field names collide: {sorted(dup)}")
        return ints + floats

    def print(self) -> str:
        p, plan = self.p, self.plan
        pro = self.render_nodes(plan.prologue, 2)
        body = self.render_nodes(plan.body, 3)
        epi = self.render_nodes(plan.epilogue, 2)
        fields = self.tiling_fields()
        L = []
        L.append(f"// Generated by trex codegen_ascendc from Kernel IR program {p.name} (IR fingerprint {p.fingerprint()}).")
        L.append("// Do not edit: regenerate with `trex codegen`. Target: AscendC, NPU arch 2201 (910B / 910C), AIV only.")
        L += ["//", "// Kernel IR:"] + [f"//   {l}" for l in str(p).splitlines()]
        L += ["", '#include "kernel_operator.h"', "using namespace AscendC;", ""]
        L.append(f"constexpr int32_t BUFFER_NUM = {plan.buffer_depth};  // queue depth (double buffering when 2)")
        L.append("")
        L.append("// Tiling data, copied by the kernel from GM (little-endian POD; int64 fields, then float fields):")
        L.append(f"struct {self.tname} {{")
        for ct, name, doc in fields:
            L.append(f"  {ct} {name};  // {doc}")
        L.append("};")
        L += ["",
              "__aicore__ inline int64_t AlignUp(int64_t x, int64_t a) { return (x + a - 1) / a * a; }",
              "__aicore__ inline int64_t CeilDiv(int64_t x, int64_t a) { return (x + a - 1) / a; }",
              "__aicore__ inline int64_t Min64(int64_t a, int64_t b) { return a < b ? a : b; }",
              "__aicore__ inline int64_t Max64(int64_t a, int64_t b) { return a > b ? a : b; }",
              "template <HardEvent E>",
              "__aicore__ inline void SyncFlag() {  // cross-pipe hand-off (scalar <-> vector, vector <-> MTE3)",
              "  event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(E));",
              "  SetFlag<E>(e);",
              "  WaitFlag<E>(e);",
              "}", ""]
        L.append(f"class {self.cls} {{")
        L.append(" public:")
        args = ", ".join(f"GM_ADDR {t.name}" for t in p.tensors)
        L.append(f"  __aicore__ inline void Init({args}, GM_ADDR tiling) {{")
        L.append(f"    tl_ = *reinterpret_cast<__gm__ const {self.tname}*>(tiling);")
        L.append("    // front/tail split of the rows over the launched cores")
        if p.row_group is not None:
            L.append(f"    const int64_t block = AlignUp(CeilDiv(tl_.rows, (int64_t)GetBlockNum()), {cint(p.row_group)});"
                     f"  // whole row groups per core")
        else:
            L.append("    const int64_t block = CeilDiv(tl_.rows, (int64_t)GetBlockNum());")
        L.append("    rowStart_ = Min64((int64_t)GetBlockIdx() * block, tl_.rows);")
        L.append("    rowEnd_ = Min64(rowStart_ + block, tl_.rows);")
        for t in p.tensors:
            L.append(f"    {t.name}Gm_.SetGlobalBuffer((__gm__ {CTYPE[t.dtype]}*){t.name});")
        for sym, ub, cap in plan.switches:
            L.append(f"    // {_SWITCH_DOC.get(sym, str(sym))}: the UB plan with it at 1 fits {cap} B")
            L.append(f"    {_RUNTIME[sym]} = (({cint(ub)}) <= {int(cap)}) ? 1 : 0;")
        for b in plan.buffers:
            nbytes = f"(uint32_t)({cint(b.nbytes)})"
            if b.kind == "tbuf":
                L.append(f"    pipe_.InitBuffer({b.name}, {nbytes});")
            else:
                depth = "BUFFER_NUM" if b.depth == plan.buffer_depth else str(b.depth)
                L.append(f"    pipe_.InitBuffer({b.name}, {depth}, {nbytes});")
        L.append("  }")
        L.append("")
        L.append("  __aicore__ inline void Process() {")
        L.append("    const int64_t row0 = rowStart_, tileRows = 0, c0 = 0, chunkLen = 0;")
        L.append("    (void)row0; (void)tileRows; (void)c0; (void)chunkLen;")
        view_lines = self._view_decls()
        L += view_lines
        L.append("    // prologue (once per core)")
        L += pro
        L.append("    for (int64_t row0 = rowStart_; row0 < rowEnd_; row0 += tl_.rowsPerTile) {")
        L.append("      const int64_t tileRows = Min64(tl_.rowsPerTile, rowEnd_ - row0);")
        if plan.chunk_dim is None:
            L.append("      const int64_t c0 = 0, chunkLen = 0;")
            L.append("      (void)c0; (void)chunkLen;")
        L += body
        L.append("    }")
        L.append("    // epilogue (once per core)")
        L += epi
        L.append("  }")
        L.append("")
        L.append(" private:")
        L += self.helpers
        L.append("")
        L.append("  TPipe pipe_;")
        for b in plan.buffers:
            if b.kind == "vecin":
                depth = "BUFFER_NUM" if b.depth == plan.buffer_depth else str(b.depth)
                L.append(f"  TQue<QuePosition::VECIN, {depth}> {b.name};")
            elif b.kind == "vecout":
                depth = "BUFFER_NUM" if b.depth == plan.buffer_depth else str(b.depth)
                L.append(f"  TQue<QuePosition::VECOUT, {depth}> {b.name};")
            else:
                L.append(f"  TBuf<TPosition::VECCALC> {b.name};  // {', '.join(b.holds) or 'scratch'}")
        for t in p.tensors:
            L.append(f"  GlobalTensor<{CTYPE[t.dtype]}> {t.name}Gm_;")
        L.append(f"  {self.tname} tl_;")
        L.append("  int64_t rowStart_ = 0, rowEnd_ = 0;")
        for sym, _, _ in plan.switches:
            L.append(f"  int64_t {_RUNTIME[sym]} = 0;")
        L.append("};")
        L.append("")
        L.append(f'extern "C" __global__ __aicore__ void {self.kname}({args}, GM_ADDR tiling) {{')
        L.append("  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);")
        L.append(f"  {self.cls} op;")
        L.append(f"  op.Init({', '.join(t.name for t in p.tensors)}, tiling);")
        L.append("  op.Process();")
        L.append("}")
        return "\n".join(L) + "\n"

    def _view_decls(self) -> list:
        out = []
        for buf, dt in sorted(self.views, key=lambda x: (x[0], x[1].value)):
            out.append(f"    LocalTensor<{CTYPE[dt]}> {buf}_{dt.value} = {buf}.Get<{CTYPE[dt]}>();")
        return out


# ---------------------------------------------------------------------------------------- render table

def _b(api):
    return lambda pr, n: f"{api}({pr.view(n.dst)}, {pr.view(n.srcs[0])}, {pr.view(n.srcs[1])}, (int32_t)({cint(n.count)}))"


def _s(api):
    return lambda pr, n: f"{api}({pr.view(n.dst)}, {pr.view(n.srcs[0])}, {pr.scalar(n.srcs[1])}, (int32_t)({cint(n.count)}))"


def _u(api):
    return lambda pr, n: f"{api}({pr.view(n.dst)}, {pr.view(n.srcs[0])}, (int32_t)({cint(n.count)}))"


def _select(pr, n):
    mask, x, y = n.srcs
    yv = pr.view(y) if isinstance(y, Ref) else pr.scalar(y)
    return (f"Select({pr.view(n.dst)}, {pr.view(Ref(mask.buf, mask.off, DType.UINT8))}, {pr.view(x)}, {yv}, "
            f"SELMODE::{n.extra['mode']}, (uint32_t)({cint(n.count)}))")


RENDER = {
    **{a: _b(a) for a in ("Add", "Sub", "Mul", "Div", "Max", "Min")},
    **{a: _s(a) for a in ("Adds", "Muls", "Maxs", "Mins")},
    **{a: _u(a) for a in ("Exp", "Ln", "Abs", "Sqrt", "Relu", "Rsqrt", "Reciprocal")},
    "Duplicate": lambda pr, n: f"Duplicate({pr.view(n.dst)}, {pr.scalar(n.srcs[0])}, (int32_t)({cint(n.count)}))",
    "Cast": lambda pr, n: (f"Cast({pr.view(n.dst)}, {pr.view(n.srcs[0])}, RoundMode::{n.extra['round']}, "
                           f"(uint32_t)({cint(n.count)}))"),
    "ReduceSum": lambda pr, n: (f"ReduceSum<float>({pr.view(n.dst)}, {pr.view(n.srcs[0])}, {pr.view(n.srcs[1])}, "
                                f"(int32_t)({cint(n.count)}))"),
    "ReduceMax": lambda pr, n: (f"ReduceMax<float>({pr.view(n.dst)}, {pr.view(n.srcs[0])}, {pr.view(n.srcs[1])}, "
                                f"(int32_t)({cint(n.count)}), false)"),
    "CompareScalar": lambda pr, n: (f"CompareScalar({pr.view(Ref(n.dst.buf, n.dst.off, DType.UINT8))}, "
                                    f"{pr.view(n.srcs[0])}, {pr.scalar(n.srcs[1])}, CMPMODE::{n.extra['cmp']}, "
                                    f"(uint32_t)({cint(n.count)}))"),
    "Compare": lambda pr, n: (f"Compare({pr.view(Ref(n.dst.buf, n.dst.off, DType.UINT8))}, {pr.view(n.srcs[0])}, "
                              f"{pr.view(n.srcs[1])}, CMPMODE::{n.extra['cmp']}, (uint32_t)({cint(n.count)}))"),
    "Select": _select,
}


def print_kernel(program: Program, buffer_depth: int = 2) -> str:
    """AscendC source of `program` with queues of depth `buffer_depth`."""
    return AscendCPrinter(plan_kernel(program, buffer_depth)).print()
