"""Kernel IR programs of `trex::mhc_pre` and `trex::mhc_pre_bwd` (math: reference/deepseek_v4.md §1).

Per token (kernel row) with streams x [N, HD] (xf = fp32):
  ss = sum(xf^2), r = rsqrt(ss / (N*HD) + rms_eps), h = fn @ xf  (fn viewed [2+N, N, N, HD]),
  z = h * r;  pre = sigmoid(s0*z[0] + b[0]) + hc_eps;  post = 2*sigmoid(s1*z[1] + b[1]);
  P = softmax(s2*z[2:] + b[2:], -1) + hc_eps;  Sinkhorn: column pass, then ITERS-1 x (row, column);
  layer_input = sum_i pre[i] * xf[i, :].
A row of 4 x 7168 fp32 does not fit UB, so the programs stream HD in column chunks: a reduce pass
(sum of squares, [the projection,] in backward d(pre)) and an apply pass (the collapse; in backward dx).

Layouts, in the order of this file: the all-vector programs (build_mhc_pre_fwd / _bwd: the projection
as `matvec` on the vector unit, fn loaded chunk by chunk and shared by the rows of a tile; version 0 of
bench/NOTES_ascend_mhc.md, 1.4x over eager in the model; the GPU printer tests print them); the Cube
split (the AscendC layout the kernel spec runs: the GEMMs as `rows_matmul` host steps, the row work in
AIV programs); the per-stream and split per-stream programs (cuda_fused, cuda_split) and the projection
layout (cuda: the reduce pass as the executor's split-K host step, the row math from its partial sums).

Backward: the Sinkhorn iterates are recomputed in UB into a small history local (2*ITERS
matrices of N x N) and the normalisation steps are reversed: for Y = X / (sum_axis X + eps),
dX = (dY - sum_axis(dY * Y)) / (sum_axis X + eps). dfn = dh^T @ xf (dh = dz * r) is a rows-GEMM,
left to the host (cube unit / ATen) via `rows_matmul`; dscale and dbase are per-core partials summed on
the host.
"""
from __future__ import annotations

import torch

from trex.compiler.kernel_ir import DType, HostOp, Program, ProgramBuilder, TensorKind, size
from trex.compiler.kernels import Executor, cached_program, ir_dtype

from ..rms_norm.ir import load_f32, store_from_f32

N = size("N")          # streams (hc_mult)
HD = size("HD")        # hidden size d
ITERS = size("ITERS")  # Sinkhorn iterations
F32 = DType.FP32
SHARED, PARTIAL = TensorKind.SHARED, TensorKind.PARTIAL


def _declare_common(b: ProgramBuilder, dtype: DType):
    b.gm("x", dtype, (N, HD))
    b.gm("fn", F32, (2 + N, N, N, HD), kind=SHARED)
    b.gm("scale", F32, (3, 1), kind=SHARED)
    b.gm("base", F32, (2 + N, N), kind=SHARED)


def _declare_scalars(b: ProgramBuilder):
    b.scalar("iters", DType.INT32)
    b.size_params.append((ITERS, "iters"))
    return b.scalar("hc_eps"), b.scalar("rms_eps")


def _sum_squares(b: ProgramBuilder, xf: str):
    """ss += sum of the chunk's x^2 (x's [N, chunk] fp32 tile)."""
    b.op("mul", "sq", xf, xf, dtype=F32, cols=(N, HD))
    b.op("reduce_sum", "sq1", "sq", axis=-1, dtype=F32, cols=(N, 1))
    b.op("reduce_sum", "sq2", "sq1", axis=-2, dtype=F32, cols=(1, 1))
    b.op("add", "ss", "ss", "sq2")


def _dpre_chunk(b: ProgramBuilder, dtype: DType, xf: str):
    """dpre [N, 1] += x . dli over the chunk (d(pre) of layer_input = sum_s pre_s x_s)."""
    dli = load_f32(b, "dli", dtype, "dlif", (HD,))
    b.op("view", "dli3", dli, dtype=F32, cols=(1, HD))
    b.op("mul", "xd", xf, "dli3", dtype=F32, cols=(N, HD))
    b.op("reduce_sum", "xd1", "xd", axis=-1, dtype=F32, cols=(N, 1))
    b.op("add", "dpre", "dpre", "xd1")


def _reduce_pass_body(b: ProgramBuilder, dtype: DType, with_dli: bool):
    """One chunk of the reduce pass: ss += sum x^2; h += fn_chunk . x_chunk [; dpre += x . dli]."""
    xf = load_f32(b, "x", dtype, "xf", (N, HD))
    _sum_squares(b, xf)
    b.op("load", "w", "fn", dtype=F32, cols=(2 + N, N, N, HD), per_row=False)
    b.op("matvec", "hp", xf, "w", dtype=F32, cols=(2 + N, N))
    b.op("add", "h", "h", "hp")
    if with_dli:
        _dpre_chunk(b, dtype, xf)


def _coefficients(b: ProgramBuilder, hc_eps: str, rms_eps: str):
    """r, z, pre (T,1,N), postv (T,1,N), P (T,N,N) from ss and h."""
    b.op("muls", "ms", "ss", 1 / (N * HD), dtype=F32, cols=(1, 1))
    b.op("adds", "ms", "ms", rms_eps)
    b.op("rsqrt", "r", "ms", dtype=F32, cols=(1, 1))
    b.op("mul", "z", "h", "r", dtype=F32, cols=(2 + N, N))
    for i, (nm, lo, hi) in enumerate((("p", 0, 1), ("q", 1, 2), ("c", 2, 2 + N))):
        rows = hi - lo
        b.op("slice", "z" + nm, "z", axis=-2, start=lo, stop=hi, step=1, dtype=F32, cols=(rows, N))
        b.op("slice", "b" + nm, "bias", axis=-2, start=lo, stop=hi, step=1, dtype=F32, cols=(rows, N), per_row=False)
        b.op("slice", "g" + nm, "sc", axis=-2, start=i, stop=i + 1, step=1, dtype=F32, cols=(1, 1), per_row=False)
        b.op("mul", "a" + nm, "z" + nm, "g" + nm, dtype=F32, cols=(rows, N))
        b.op("add", "a" + nm, "a" + nm, "b" + nm)
    b.op("sigmoid", "sp", "ap", dtype=F32, cols=(1, N))
    b.op("adds", "pre", "sp", hc_eps, dtype=F32, cols=(1, N))
    b.op("sigmoid", "sq_", "aq", dtype=F32, cols=(1, N))
    b.op("muls", "postv", "sq_", 2.0, dtype=F32, cols=(1, N))
    b.op("reduce_max", "mx", "ac", axis=-1, dtype=F32, cols=(N, 1))
    b.op("sub", "e", "ac", "mx", dtype=F32, cols=(N, N))
    b.op("exp", "e", "e")
    b.op("reduce_sum", "se", "e", axis=-1, dtype=F32, cols=(N, 1))
    b.op("div", "sm", "e", "se", dtype=F32, cols=(N, N))
    b.op("adds", "M", "sm", hc_eps, dtype=F32, cols=(N, N))


def _normalize(b: ProgramBuilder, axis: int, hc_eps: str):
    cols = (1, N) if axis == -2 else (N, 1)
    name = "cden" if axis == -2 else "rden"
    b.op("reduce_sum", name, "M", axis=axis, dtype=F32, cols=cols)
    b.op("adds", name, name, hc_eps)
    b.op("div", "M", "M", name)


def _sinkhorn(b: ProgramBuilder, hc_eps: str, hist: bool):
    if hist:
        b.op("hist_write", "H", "H", "M", slot=0)
    _normalize(b, -2, hc_eps)
    if hist:
        b.op("hist_write", "H", "H", "M", slot=1)
    it = "it"
    with b.repeat(it, ITERS - 1):
        _normalize(b, -1, hc_eps)
        if hist:
            b.op("hist_write", "H", "H", "M", slot=2 * size(it) + 2)
        _normalize(b, -2, hc_eps)
        if hist:
            b.op("hist_write", "H", "H", "M", slot=2 * size(it) + 3)


def _prologue(b: ProgramBuilder):
    b.section("prologue")
    b.op("load", "bias", "base", dtype=F32, cols=(2 + N, N), per_row=False)
    b.op("load", "sc", "scale", dtype=F32, cols=(3, 1), per_row=False)
    b.section("body")


def build_mhc_pre_fwd(dtype: DType | str = DType.BF16) -> Program:
    dtype = DType(dtype)
    b = ProgramBuilder(f"mhc_pre_fwd_{dtype.value}", doc="mHC pre: coefficients, Sinkhorn, collapse (2-pass over HD)")
    _declare_common(b, dtype)
    b.gm("layer_input", dtype, (HD,), role="out")
    b.gm("post", F32, (N,), role="out")
    b.gm("comb", F32, (N, N), role="out")
    hc_eps, rms_eps = _declare_scalars(b)
    _prologue(b)
    b.op("fill", "ss", 0.0, dtype=F32, cols=(1, 1))
    b.op("fill", "h", 0.0, dtype=F32, cols=(2 + N, N))
    with b.chunk_loop(HD):
        _reduce_pass_body(b, dtype, with_dli=False)
    _coefficients(b, hc_eps, rms_eps)
    _sinkhorn(b, hc_eps, hist=False)
    _store_coefficients_and_collapse(b, dtype)
    return b.build()


def _x_chunk(b: ProgramBuilder, dtype: DType, resident: bool) -> str:
    """x's current [N, chunk] tile in fp32: the chunk of the resident row tile x_row (loaded once per tile,
    `_load_x_row`), or loaded from GM again."""
    if not resident:
        return load_f32(b, "x", dtype, "xf", (N, HD))
    b.op("slice", "xf_in", "x_row", axis=-1, chunk=HD, dtype=dtype, cols=(N, HD))
    return b.op("cast", "xf", "xf_in", dtype=F32, cols=(N, HD))


def _load_x_row(b: ProgramBuilder, dtype: DType) -> None:
    """x's whole rows [N, HD] in x's dtype, a resident local: the passes over HD read it chunk by chunk
    (kernel_ir resident_locals; the AscendC kernel keeps it in UB where the UB holds it, else reads each
    chunk again)."""
    b.op("load", "x_row", "x", dtype=dtype, cols=(N, HD))


def _store_coefficients_and_collapse(b: ProgramBuilder, dtype: DType, resident: bool = False) -> None:
    """The forward's tail: post and comb stored, then the collapse pass over x,
    layer_input = sum over the streams of pre[n] * x[n]."""
    b.op("view", "post2", "postv", dtype=F32, cols=(N,))
    b.op("store", None, "post", "post2")
    b.op("store", None, "comb", "M")
    b.op("transpose", "pre_t", "pre", dtype=F32, cols=(N, 1))
    with b.chunk_loop(HD):
        xf = _x_chunk(b, dtype, resident)
        b.op("mul", "px", xf, "pre_t", dtype=F32, cols=(N, HD))
        b.op("reduce_sum", "li", "px", axis=-2, dtype=F32, cols=(1, HD))
        b.op("view", "li2", "li", dtype=F32, cols=(HD,))
        store_from_f32(b, "layer_input", dtype, "li2", (HD,))


def _norm_bwd(b: ProgramBuilder, axis: int, slot_x, slot_y, hc_eps: str):
    """dM <- (dM - sum_axis(dM * Y)) / (sum_axis(X) + eps), X = H[slot_x], Y = H[slot_y]."""
    cols = (1, N) if axis == -2 else (N, 1)
    b.op("hist_read", "HX", "H", slot=slot_x, dtype=F32, cols=(N, N))
    b.op("hist_read", "HY", "H", slot=slot_y, dtype=F32, cols=(N, N))
    tag = "c" if axis == -2 else "r"
    b.op("reduce_sum", "bden" + tag, "HX", axis=axis, dtype=F32, cols=cols)
    b.op("adds", "bden" + tag, "bden" + tag, hc_eps)
    b.op("mul", "dmy", "dM", "HY", dtype=F32, cols=(N, N))
    b.op("reduce_sum", "bsum" + tag, "dmy", axis=axis, dtype=F32, cols=cols)
    b.op("sub", "dM", "dM", "bsum" + tag)
    b.op("div", "dM", "dM", "bden" + tag)


def _bwd_coefficients(b: ProgramBuilder, hc_eps: str, rms_eps: str, dpre_t):
    """From ss, h and d(pre) (emitted by `dpre_t()` at its place): the Sinkhorn reverse and the
    per-row terms of dx: dhv (2+N, N) = d(projection), c2 (1, 1) = d(sum of squares) x 2."""
    _coefficients(b, hc_eps, rms_eps)
    b.op("fill", "H", 0.0, dtype=F32, cols=(2 * ITERS, N, N))
    _sinkhorn(b, hc_eps, hist=True)
    # Sinkhorn backward (steps 2*ITERS-2 .. 1 in the loop, step 0 after it)
    b.op("load", "dM", "dcomb", dtype=F32, cols=(N, N))
    with b.repeat("it", ITERS - 1, reverse=True):
        k = 2 * size("it")
        _norm_bwd(b, -2, k + 2, k + 3, hc_eps)
        _norm_bwd(b, -1, k + 1, k + 2, hc_eps)
    _norm_bwd(b, -2, 0, 1, hc_eps)
    # softmax (+eps) backward: dL = sm * (dP - sum(dP * sm))
    b.op("mul", "t", "dM", "sm", dtype=F32, cols=(N, N))
    b.op("reduce_sum", "tsum", "t", axis=-1, dtype=F32, cols=(N, 1))
    b.op("sub", "dac", "dM", "tsum", dtype=F32, cols=(N, N))
    b.op("mul", "dac", "dac", "sm")
    # post = 2 sigmoid(aq): daq = dpost * 2 sq_ (1 - sq_)
    b.op("load", "dpo", "dpost", dtype=F32, cols=(N,))
    b.op("view", "dpo2", "dpo", dtype=F32, cols=(1, N))
    b.op("muls", "t1", "sq_", -1.0, dtype=F32, cols=(1, N))
    b.op("adds", "t1", "t1", 1.0)
    b.op("mul", "t1", "t1", "sq_")
    b.op("muls", "t1", "t1", 2.0)
    b.op("mul", "daq", "dpo2", "t1", dtype=F32, cols=(1, N))
    # pre = sigmoid(ap) + eps: dap = dpre * sp (1 - sp)
    dpre_t()
    b.op("muls", "t1", "sp", -1.0)
    b.op("adds", "t1", "t1", 1.0)
    b.op("mul", "t1", "t1", "sp")
    b.op("mul", "dap", "dpre_t", "t1", dtype=F32, cols=(1, N))
    # assemble d(pre-activation) da [2+N, N]; dz = da * s; dscale = sum(da * z); dbase = da
    b.op("fill", "da", 0.0, dtype=F32, cols=(2 + N, N))
    b.op("fill", "dz", 0.0, dtype=F32, cols=(2 + N, N))
    b.op("fill", "dsr", 0.0, dtype=F32, cols=(3, 1))
    for i, (nm, lo, hi) in enumerate((("p", 0, 1), ("q", 1, 2), ("c", 2, 2 + N))):
        rows = hi - lo
        src = "da" + nm
        b.op("set_slice", "da", "da", src, axis=-2, start=lo, stop=hi, step=1)
        dzs = "dzs" + nm
        b.op("mul", dzs, src, "g" + nm, dtype=F32, cols=(rows, N))
        b.op("set_slice", "dz", "dz", dzs, axis=-2, start=lo, stop=hi, step=1)
        b.op("mul", "dsz" + nm, src, "z" + nm, dtype=F32, cols=(rows, N))
        b.op("reduce_sum", "dsr1" + nm, "dsz" + nm, axis=-1, dtype=F32, cols=(rows, 1))
        b.op("reduce_sum", "dsr2" + nm, "dsr1" + nm, axis=-2, dtype=F32, cols=(1, 1))
        b.op("set_slice", "dsr", "dsr", "dsr2" + nm, axis=-2, start=i, stop=i + 1, step=1)
    b.op("acc_rows", "dsc_acc", "dsc_acc", "dsr")
    b.op("acc_rows", "db_acc", "db_acc", "da")
    # z = h * r: dh = dz * r; dr = sum(dz * h); r = (ss/(N HD) + eps)^-1/2 -> dx += xf * c2,
    # c2 = 2 dss = -dr r^3 / (N HD)
    b.op("mul", "dhv", "dz", "r", dtype=F32, cols=(2 + N, N))
    b.op("store", None, "dh", "dhv")
    b.op("mul", "t2", "dz", "h", dtype=F32, cols=(2 + N, N))
    b.op("reduce_sum", "t3", "t2", axis=-1, dtype=F32, cols=(2 + N, 1))
    b.op("reduce_sum", "dr", "t3", axis=-2, dtype=F32, cols=(1, 1))
    b.op("mul", "c2", "r", "r", dtype=F32, cols=(1, 1))
    b.op("mul", "c2", "c2", "r")
    b.op("mul", "c2", "c2", "dr")
    b.op("muls", "c2", "c2", -1 / (N * HD))


def _declare_output_grads(b: ProgramBuilder, dtype: DType):
    """The backward's inputs that are gradients of the forward's outputs (first, as in the op's
    signature): d layer_input (x's dtype), d post and d comb (fp32)."""
    b.gm("dli", dtype, (HD,))
    b.gm("dpost", F32, (N,))
    b.gm("dcomb", F32, (N, N))


def _declare_bwd_tail(b: ProgramBuilder, host_dfn: bool):
    """The backward's outputs after dx (dh, per-core partials of dscale/dbase and their host sums;
    with `host_dfn`, dfn = dh^T @ x as a host step), its scalars, and the partial accumulators."""
    b.gm("dh", F32, (2 + N, N), role="out")     # per-row d(projection); dfn = dh^T @ x on the host
    b.gm("dscale_partial", F32, (3, 1), kind=PARTIAL, role="out")
    b.gm("dbase_partial", F32, (2 + N, N), kind=PARTIAL, role="out")
    b.finalize += ([HostOp("rows_matmul", "dfn", ("dh", "x"))] if host_dfn else []) + [
        HostOp("sum_cores", "dscale", ("dscale_partial",)), HostOp("sum_cores", "dbase", ("dbase_partial",))]
    hc_eps, rms_eps = _declare_scalars(b)
    _prologue(b)
    b.section("prologue")
    b.op("fill", "dsc_acc", 0.0, dtype=F32, cols=(3, 1), per_row=False)
    b.op("fill", "db_acc", 0.0, dtype=F32, cols=(2 + N, N), per_row=False)
    b.section("body")
    return hc_eps, rms_eps


def build_mhc_pre_bwd(dtype: DType | str = DType.BF16) -> Program:
    dtype = DType(dtype)
    b = ProgramBuilder(f"mhc_pre_bwd_{dtype.value}",
                       doc="mHC pre backward: recompute (Sinkhorn iterates kept in UB), reverse, 2-pass over HD")
    _declare_output_grads(b, dtype)
    _declare_common(b, dtype)
    b.gm("dx", dtype, (N, HD), role="out")
    hc_eps, rms_eps = _declare_bwd_tail(b, host_dfn=True)
    b.op("fill", "ss", 0.0, dtype=F32, cols=(1, 1))
    b.op("fill", "h", 0.0, dtype=F32, cols=(2 + N, N))
    b.op("fill", "dpre", 0.0, dtype=F32, cols=(N, 1))
    with b.chunk_loop(HD):
        _reduce_pass_body(b, dtype, with_dli=True)
    _bwd_coefficients(b, hc_eps, rms_eps,
                      lambda: b.op("transpose", "dpre_t", "dpre", dtype=F32, cols=(1, N)))
    b.op("transpose", "pre_t", "pre", dtype=F32, cols=(N, 1))
    with b.chunk_loop(HD):
        xf = load_f32(b, "x", dtype, "xf", (N, HD))
        dli = load_f32(b, "dli", dtype, "dlif", (HD,))
        b.op("view", "dli3", dli, dtype=F32, cols=(1, HD))
        b.op("mul", "dxf", xf, "c2", dtype=F32, cols=(N, HD))
        b.op("mul", "xd", "dli3", "pre_t", dtype=F32, cols=(N, HD))
        b.op("add", "dxf", "dxf", "xd")
        b.op("load", "w", "fn", dtype=F32, cols=(2 + N, N, N, HD), per_row=False)
        b.op("matvec_t", "xd", "dhv", "w")
        b.op("add", "dxf", "dxf", "xd")
        store_from_f32(b, "dx", dtype, "dxf", (N, HD))
    b.section("epilogue")
    b.op("store", None, "dscale_partial", "dsc_acc")
    b.op("store", None, "dbase_partial", "db_acc")
    return b.build()


# ------------------------------------------------------------------------------------------------
# the Cube split (the AscendC layout): the projection GEMMs on the Cube, the rest in AIV programs
#
# The programs above do the (2+N)N x N*HD projection on the vector unit: 11.3 GFLOP per direction at
# V4-Pro sizes, whose AIV floor (one multiply-add per lane at the VMUL rate, 5.7 TFLOP/s on 48 AIV) is
# 2.0 ms against a 0.37 ms GM byte floor (bench/NOTES_ascend_mhc.md). Here every GEMM is the executor's
# `rows_matmul` host step (the Cube's work on an NPU: 364 TFLOP/s bf16 per 910C die) and the AIV programs
# keep only row work: the sum of squares, the coefficients with the RMS scale applied after the
# projection (z = h r), Sinkhorn in UB, the collapse, and in backward the Sinkhorn reverse and dx.
#   forward:  h = x fn^T (Cube) -> mhc_pre_fwd_cube (ss pass, coefficients, collapse pass)
#   backward: h = x fn^T (Cube) -> mhc_pre_bwd_coeff_cube (one pass over x and dli: dh, dss2, pre)
#             -> dxp = dh fn, dfn = dh^T x (Cube) -> mhc_pre_bwd_apply_cube (dx, one pass)


def _declare_cube_inputs(b: ProgramBuilder, dtype: DType):
    """x, the Cube's projection hproj = x fn^T per row (fp32), scale and base."""
    b.gm("x", dtype, (N, HD))
    b.gm("hproj", F32, (2 + N, N))
    b.gm("scale", F32, (3, 1), kind=SHARED)
    b.gm("base", F32, (2 + N, N), kind=SHARED)


def _ss_pass(b: ProgramBuilder, dtype: DType, with_dli: bool, resident: bool = False):
    """ss (1, 1) [and dpre (N, 1)] over HD in column chunks, then h (2+N, N) from the Cube's output."""
    b.op("fill", "ss", 0.0, dtype=F32, cols=(1, 1))
    if with_dli:
        b.op("fill", "dpre", 0.0, dtype=F32, cols=(N, 1))
    if resident:
        _load_x_row(b, dtype)
    with b.chunk_loop(HD):
        xf = _x_chunk(b, dtype, resident)
        _sum_squares(b, xf)
        if with_dli:
            _dpre_chunk(b, dtype, xf)
    b.op("load", "h", "hproj", dtype=F32, cols=(2 + N, N))


def build_mhc_pre_fwd_cube(dtype: DType | str = DType.BF16, resident: bool | None = None) -> Program:
    """The forward's AIV program. `resident` (default: for 16-bit x): x's rows are a resident local that both
    passes read chunk by chunk (the AscendC kernel keeps the 16-bit row tile in UB between the passes where
    it fits and upcasts each chunk there: x read once, bench/NOTES_ascend_mhc.md session 15); False: each pass
    loads its chunks from GM (fp32 x always: its rows are twice as wide and the chunk would need a copy)."""
    dtype = DType(dtype)
    resident = dtype != F32 if resident is None else bool(resident)
    if resident and dtype == F32:
        raise ValueError("build_mhc_pre_fwd_cube: the resident row tile is for 16-bit x (upcast per chunk)")
    b = ProgramBuilder(f"mhc_pre_fwd_cube_{dtype.value}",
                       doc="mHC pre after the Cube's projection: sum of squares, coefficients, Sinkhorn, collapse"
                           + (" (x's rows resident across both passes)" if resident else ""))
    _declare_cube_inputs(b, dtype)
    b.gm("layer_input", dtype, (HD,), role="out")
    b.gm("post", F32, (N,), role="out")
    b.gm("comb", F32, (N, N), role="out")
    hc_eps, rms_eps = _declare_scalars(b)
    _prologue(b)
    _ss_pass(b, dtype, with_dli=False, resident=resident)
    _coefficients(b, hc_eps, rms_eps)
    _sinkhorn(b, hc_eps, hist=False)
    _store_coefficients_and_collapse(b, dtype, resident)
    return b.build()


def build_mhc_pre_bwd_coeff_cube(dtype: DType | str = DType.BF16) -> Program:
    dtype = DType(dtype)
    b = ProgramBuilder(f"mhc_pre_bwd_coeff_cube_{dtype.value}",
                       doc="mHC pre backward after the Cube's projection: one pass over x and dli, Sinkhorn "
                           "recomputed and reversed in UB -> dh, dss2, pre")
    _declare_output_grads(b, dtype)
    _declare_cube_inputs(b, dtype)
    b.gm("pre_mix", F32, (N,), role="out")
    b.gm("dss2", F32, (1,), role="out")
    hc_eps, rms_eps = _declare_bwd_tail(b, host_dfn=False)
    _ss_pass(b, dtype, with_dli=True)
    _bwd_coefficients(b, hc_eps, rms_eps,
                      lambda: b.op("transpose", "dpre_t", "dpre", dtype=F32, cols=(1, N)))
    return _build_bwd_coefficients(b)


def build_mhc_pre_bwd_apply_cube(dtype: DType | str = DType.BF16) -> Program:
    dtype = DType(dtype)
    b = ProgramBuilder(f"mhc_pre_bwd_apply_cube_{dtype.value}",
                       doc="mHC pre backward apply: dx = x dss2 + pre_s dli + dxp (dxp = dh fn from the Cube), one pass")
    b.gm("x", dtype, (N, HD))
    b.gm("dli", dtype, (HD,))
    b.gm("dxp", F32, (N, HD))
    b.gm("dss2", F32, (1,))
    b.gm("pre_mix", F32, (N,))
    b.gm("dx", dtype, (N, HD), role="out")
    b.op("load", "c2v", "dss2", dtype=F32, cols=(1,))
    b.op("view", "c2", "c2v", dtype=F32, cols=(1, 1))
    b.op("load", "prem", "pre_mix", dtype=F32, cols=(N,))
    b.op("view", "pre", "prem", dtype=F32, cols=(1, N))
    b.op("transpose", "pre_t", "pre", dtype=F32, cols=(N, 1))
    with b.chunk_loop(HD):
        xf = load_f32(b, "x", dtype, "xf", (N, HD))
        dli = load_f32(b, "dli", dtype, "dlif", (HD,))
        b.op("view", "dli3", dli, dtype=F32, cols=(1, HD))
        b.op("load", "dxpf", "dxp", dtype=F32, cols=(N, HD))
        b.op("mul", "dxf", xf, "c2", dtype=F32, cols=(N, HD))
        b.op("mul", "xd", "dli3", "pre_t", dtype=F32, cols=(N, HD))
        b.op("add", "dxf", "dxf", "xd")
        b.op("add", "dxf", "dxf", "dxpf")
        store_from_f32(b, "dx", dtype, "dxf", (N, HD))
    return b.build()


# ------------------------------------------------------------------------------------------------
# the per-stream layout (the GPU's fusion variant)
#
# The programs above hold a chunk of all N streams as one [N, chunk] tile, so the projection's
# contraction runs over an (N, chunk) pair of axes: fine for the AscendC printer (UB tiles are flat),
# but a Triton printer has to reshape the 3-d x tile and the 5-d fn tile into 2-d dot operands in
# every iteration (layout conversions through shared memory; run 1-2 in bench/NOTES_gpu.md measured
# that kernel at 9% of the roofline). Here each stream is its own GM tensor (a row-strided view
# x[:, s, :] of the same memory) and fn is given per stream as [(2+N)*N, HD], so every tile is 2-d
# and every contraction is one [rows, chunk] x [chunk, (2+N)*N] dot. N is fixed when the program is
# built (the stream loop is unrolled). dfn = dh^T @ x is left to the caller (one GEMM over x: the
# executor's rows_matmul host step).


def _stream_names(n: int):
    return [f"x{s}" for s in range(n)], [f"fn{s}" for s in range(n)]


def _declare_streams(b: ProgramBuilder, dtype: DType, n: int):
    xs, fns = _stream_names(n)
    for x in xs:
        b.gm(x, dtype, (HD,))
    for f in fns:
        b.gm(f, F32, ((2 + N) * N, HD), kind=SHARED)
    b.gm("scale", F32, (3, 1), kind=SHARED)
    b.gm("base", F32, (2 + N, N), kind=SHARED)
    return xs, fns


def _streams_reduce_pass(b: ProgramBuilder, dtype: DType, n: int, with_dli: bool):
    """ss (1, 1), h (2+N, N) [, dpre_t (1, N)]: one pass over HD, each stream a 2-d tile."""
    xs, fns = _stream_names(n)
    b.op("fill", "ss1", 0.0, dtype=F32, cols=(1,))
    b.op("fill", "h1", 0.0, dtype=F32, cols=((2 + N) * N,))
    if with_dli:
        for s in range(n):
            b.op("fill", f"dpre{s}", 0.0, dtype=F32, cols=(1,))
    with b.chunk_loop(HD):
        if with_dli:
            load_f32(b, "dli", dtype, "dlif", (HD,))
        # every stream's tile is loaded before any is used: n loads in flight per iteration (a GPU
        # hides DRAM latency with bytes in flight; the compiler does not hoist loads past the dots)
        xfs = [load_f32(b, xs[s], dtype, f"xf{s}", (HD,)) for s in range(n)]
        for s in range(n):
            xf = xfs[s]
            b.op("mul", "sq", xf, xf, dtype=F32, cols=(HD,))
            b.op("reduce_sum", "sq1", "sq", axis=-1, dtype=F32, cols=(1,))
            b.op("add", "ss1", "ss1", "sq1")
            b.op("load", "w", fns[s], dtype=F32, cols=((2 + N) * N, HD), per_row=False)
            b.op("matvec", "hp", xf, "w", dtype=F32, cols=((2 + N) * N,))
            b.op("add", "h1", "h1", "hp")
            if with_dli:
                b.op("mul", "xd", xf, "dlif", dtype=F32, cols=(HD,))
                b.op("reduce_sum", "xd1", "xd", axis=-1, dtype=F32, cols=(1,))
                b.op("add", f"dpre{s}", f"dpre{s}", "xd1")
    b.op("view", "ss", "ss1", dtype=F32, cols=(1, 1))
    b.op("view", "h", "h1", dtype=F32, cols=(2 + N, N))
    if with_dli:
        b.op("fill", "dpre_t", 0.0, dtype=F32, cols=(1, N))
        for s in range(n):
            b.op("view", f"dpre{s}v", f"dpre{s}", dtype=F32, cols=(1, 1))
            b.op("set_slice", "dpre_t", "dpre_t", f"dpre{s}v", axis=-1, start=s, stop=s + 1, step=1)


def _stream_weights(b: ProgramBuilder, n: int):
    """pre (1, N) -> one (1,) weight per stream."""
    for s in range(n):
        b.op("slice", f"pre{s}2", "pre", axis=-1, start=s, stop=s + 1, step=1, dtype=F32, cols=(1, 1))
        b.op("view", f"pre{s}", f"pre{s}2", dtype=F32, cols=(1,))


def build_mhc_pre_fwd_streams(dtype: DType | str = DType.BF16, n: int = 4) -> Program:
    dtype = DType(dtype)
    b = ProgramBuilder(f"mhc_pre_fwd_streams{n}_{dtype.value}",
                       doc="mHC pre, per-stream 2-d tiles: coefficients, Sinkhorn, collapse (2-pass over HD)")
    _declare_streams(b, dtype, n)
    b.gm("layer_input", dtype, (HD,), role="out")
    b.gm("post", F32, (N,), role="out")
    b.gm("comb", F32, (N, N), role="out")
    hc_eps, rms_eps = _declare_scalars(b)
    _prologue(b)
    _streams_reduce_pass(b, dtype, n, with_dli=False)
    _coefficients(b, hc_eps, rms_eps)
    _sinkhorn(b, hc_eps, hist=False)
    b.op("view", "post2", "postv", dtype=F32, cols=(N,))
    b.op("store", None, "post", "post2")
    b.op("store", None, "comb", "M")
    _stream_weights(b, n)
    xs, _ = _stream_names(n)
    with b.chunk_loop(HD):
        xfs = [load_f32(b, xs[s], dtype, f"xf{s}", (HD,)) for s in range(n)]
        for s in range(n):
            xf = xfs[s]
            if s == 0:
                b.op("mul", "li", xf, "pre0", dtype=F32, cols=(HD,))
            else:
                b.op("mul", "px", xf, f"pre{s}", dtype=F32, cols=(HD,))
                b.op("add", "li", "li", "px")
        store_from_f32(b, "layer_input", dtype, "li", (HD,))
    return b.build()


def build_mhc_pre_bwd_streams(dtype: DType | str = DType.BF16, n: int = 4) -> Program:
    dtype = DType(dtype)
    b = ProgramBuilder(f"mhc_pre_bwd_streams{n}_{dtype.value}",
                       doc="mHC pre backward, per-stream 2-d tiles (dfn = dh^T x left to the caller)")
    _declare_output_grads(b, dtype)
    xs, fns = _declare_streams(b, dtype, n)
    for s in range(n):
        b.gm(f"dx{s}", dtype, (HD,), role="out")
    hc_eps, rms_eps = _declare_bwd_tail(b, host_dfn=False)
    _streams_reduce_pass(b, dtype, n, with_dli=True)
    _bwd_coefficients(b, hc_eps, rms_eps, lambda: None)
    b.op("view", "dhf", "dhv", dtype=F32, cols=((2 + N) * N,))
    b.op("view", "c2v", "c2", dtype=F32, cols=(1,))
    _stream_weights(b, n)
    with b.chunk_loop(HD):
        load_f32(b, "dli", dtype, "dlif", (HD,))
        xfs = [load_f32(b, xs[s], dtype, f"xf{s}", (HD,)) for s in range(n)]
        for s in range(n):
            xf = xfs[s]
            b.op("mul", "dxf", xf, "c2v", dtype=F32, cols=(HD,))
            b.op("mul", "xd", "dlif", f"pre{s}", dtype=F32, cols=(HD,))
            b.op("add", "dxf", "dxf", "xd")
            b.op("load", "w", fns[s], dtype=F32, cols=((2 + N) * N, HD), per_row=False)
            b.op("matvec_t", "xd", "dhf", "w")
            b.op("add", "dxf", "dxf", "xd")
            store_from_f32(b, f"dx{s}", dtype, "dxf", (HD,))
    b.section("epilogue")
    b.op("store", None, "dscale_partial", "dsc_acc")
    b.op("store", None, "dbase_partial", "db_acc")
    return b.build()


# ------------------------------------------------------------------------------------------------
# the split per-stream programs: the reduce pass and the apply pass as two kernels
#
# The fused programs above run both passes in one program, so both get one tiling: the reduce pass needs
# wide row tiles (fn, 2.75 MB fp32, is re-read from L2 by every row tile: 0.375x the x bytes at 128 rows)
# and its dots, while the apply pass is a plain stream that runs at copy bandwidth with one row per
# program. A 128-row tile of full rows is 7.3 MB, so the fused program's second pass reads x from DRAM
# anyway (128 tiles x 7.3 MB = all of x in flight, L2 holds 60 MB): splitting costs no DRAM bytes. The
# kernels meet through small per-row tensors: pre_mix [N] (forward), and in backward dh [(2+N), N],
# dss2 [1] (d(sum of squares) x 2) and pre_mix, which the executor's `mhc_pre_dx_dfn` host step reads with
# x and dli to write dx and dfn in one pass over x.


def _store_rows(b: ProgramBuilder, *pairs):
    """Store per-row locals into GM row tensors through a view to the tensor's columns."""
    for gm, local, cols in pairs:
        b.op("view", local + "_st", local, dtype=F32, cols=cols)
        b.op("store", None, gm, local + "_st")


def _build_bwd_coefficients(b: ProgramBuilder) -> Program:
    """The tail of a backward coefficient program: pre and dss2 per row, the dscale/dbase partials."""
    _store_rows(b, ("pre_mix", "pre", (N,)), ("dss2", "c2", (1,)))
    b.section("epilogue")
    b.op("store", None, "dscale_partial", "dsc_acc")
    b.op("store", None, "dbase_partial", "db_acc")
    return b.build()


def _load_pre_mix(b: ProgramBuilder, n: int):
    """pre (1, N) and the per-stream weights pre0..pre{n-1} from the pre_mix row tensor."""
    b.op("load", "prem", "pre_mix", dtype=F32, cols=(N,))
    b.op("view", "pre", "prem", dtype=F32, cols=(1, N))
    _stream_weights(b, n)


def build_mhc_pre_coeff_streams(dtype: DType | str = DType.BF16, n: int = 4) -> Program:
    dtype = DType(dtype)
    b = ProgramBuilder(f"mhc_pre_coeff_streams{n}_{dtype.value}",
                       doc="mHC pre reduce pass, per-stream 2-d tiles: sum of squares, projection, Sinkhorn -> pre, post, comb")
    _declare_streams(b, dtype, n)
    b.gm("pre_mix", F32, (N,), role="out")
    b.gm("post", F32, (N,), role="out")
    b.gm("comb", F32, (N, N), role="out")
    hc_eps, rms_eps = _declare_scalars(b)
    _prologue(b)
    _streams_reduce_pass(b, dtype, n, with_dli=False)
    _coefficients(b, hc_eps, rms_eps)
    _sinkhorn(b, hc_eps, hist=False)
    _store_rows(b, ("pre_mix", "pre", (N,)), ("post", "postv", (N,)))
    b.op("store", None, "comb", "M")
    return b.build()


def _apply_streams(b: ProgramBuilder, dtype: DType, n: int):
    xs, _ = _stream_names(n)
    for x in xs:
        b.gm(x, dtype, (HD,))
    b.gm("pre_mix", F32, (N,))
    return xs


def build_mhc_pre_apply_streams(dtype: DType | str = DType.BF16, n: int = 4) -> Program:
    dtype = DType(dtype)
    b = ProgramBuilder(f"mhc_pre_apply_streams{n}_{dtype.value}",
                       doc="mHC pre apply pass, per-stream 2-d tiles: layer_input = sum_s pre_s x_s")
    xs = _apply_streams(b, dtype, n)
    b.gm("layer_input", dtype, (HD,), role="out")
    _load_pre_mix(b, n)
    with b.chunk_loop(HD):
        xfs = [load_f32(b, xs[s], dtype, f"xf{s}", (HD,)) for s in range(n)]
        b.op("mul", "li", xfs[0], "pre0", dtype=F32, cols=(HD,))
        for s in range(1, n):
            b.op("mul", "px", xfs[s], f"pre{s}", dtype=F32, cols=(HD,))
            b.op("add", "li", "li", "px")
        store_from_f32(b, "layer_input", dtype, "li", (HD,))
    return b.build()


def build_mhc_pre_bwd_coeff_streams(dtype: DType | str = DType.BF16, n: int = 4) -> Program:
    dtype = DType(dtype)
    b = ProgramBuilder(f"mhc_pre_bwd_coeff_streams{n}_{dtype.value}",
                       doc="mHC pre backward reduce pass, per-stream 2-d tiles: recompute, Sinkhorn reverse -> dh, dss2, pre")
    _declare_output_grads(b, dtype)
    _declare_streams(b, dtype, n)
    b.gm("pre_mix", F32, (N,), role="out")
    b.gm("dss2", F32, (1,), role="out")
    hc_eps, rms_eps = _declare_bwd_tail(b, host_dfn=False)
    _streams_reduce_pass(b, dtype, n, with_dli=True)
    _bwd_coefficients(b, hc_eps, rms_eps, lambda: None)
    return _build_bwd_coefficients(b)


# ------------------------------------------------------------------------------------------------
# the projection layout (cuda): the reduce pass as the executor's `mhc_pre_proj` host step, the row math alone
#
# The split programs above still do the reduce pass and the coefficient math in one kernel: a row tile's
# stream of x (the bytes) and its Sinkhorn, its reverse and their history (the registers) share one tiling,
# and both lose (H200 run 12: 459 us for 0.94 GB of x, 2.05 TB/s; at d = 1024 the backward's took 313 us
# over 84 MB). Here the executor's `mhc_pre_proj` host step runs the pass (on CUDA a split-K GEMM over
# column slices of each stream, trex/codegen_triton/mhc_proj.py) and writes PARTS partial sums per row:
# the projection, the sum of squares and, in the backward, d(pre) per stream and slice. These programs
# read no x: they add the partials in a fixed order (deterministic) and do the per-row math, at a tiling
# of their own. The apply pass (forward) and the dx + dfn step (backward) are the split layout's.

PARTS = size("PARTS")      # partial sums per row (the host step's column slices: PARTS / N per stream)


def _declare_partials(b: ProgramBuilder, with_dpre: bool):
    b.gm("hpart", F32, (PARTS, (2 + N) * N))
    b.gm("sspart", F32, (PARTS,))
    if with_dpre:
        b.gm("dppart", F32, (N, PARTS / N))
    b.gm("scale", F32, (3, 1), kind=SHARED)
    b.gm("base", F32, (2 + N, N), kind=SHARED)


def _hd_from_scalar(b: ProgramBuilder):
    """HD (the rms mean's divisor) from a scalar: these programs read no [.., HD] tensor."""
    b.scalar("hd", DType.INT32)
    b.size_params.append((HD, "hd"))


def _sum_partials(b: ProgramBuilder, with_dpre: bool):
    """ss (1, 1), h (2+N, N) [, dpre_t (1, N)] from the partial sums of the row."""
    b.op("load", "hpf", "hpart", dtype=F32, cols=(PARTS, (2 + N) * N))
    b.op("reduce_sum", "h1", "hpf", axis=-2, dtype=F32, cols=(1, (2 + N) * N))
    b.op("view", "h", "h1", dtype=F32, cols=(2 + N, N))
    b.op("load", "ssf", "sspart", dtype=F32, cols=(PARTS,))
    b.op("reduce_sum", "ss1", "ssf", axis=-1, dtype=F32, cols=(1,))
    b.op("view", "ss", "ss1", dtype=F32, cols=(1, 1))
    if with_dpre:
        b.op("load", "dpf", "dppart", dtype=F32, cols=(N, PARTS / N))
        b.op("reduce_sum", "dp1", "dpf", axis=-1, dtype=F32, cols=(N, 1))
        b.op("transpose", "dpre_t", "dp1", dtype=F32, cols=(1, N))


def build_mhc_pre_coeff_proj(dtype: DType | str = DType.BF16) -> Program:
    dtype = DType(dtype)   # the layout's dtype (x's); this program reads only fp32 partials
    b = ProgramBuilder(f"mhc_pre_coeff_proj_{dtype.value}",
                       doc="mHC pre from the reduce pass's partial sums: coefficients, Sinkhorn -> pre, post, comb")
    _declare_partials(b, with_dpre=False)
    b.gm("pre_mix", F32, (N,), role="out")
    b.gm("post", F32, (N,), role="out")
    b.gm("comb", F32, (N, N), role="out")
    hc_eps, rms_eps = _declare_scalars(b)
    _hd_from_scalar(b)
    _prologue(b)
    _sum_partials(b, with_dpre=False)
    _coefficients(b, hc_eps, rms_eps)
    _sinkhorn(b, hc_eps, hist=False)
    _store_rows(b, ("pre_mix", "pre", (N,)), ("post", "postv", (N,)))
    b.op("store", None, "comb", "M")
    return b.build()


def build_mhc_pre_bwd_coeff_proj(dtype: DType | str = DType.BF16) -> Program:
    dtype = DType(dtype)
    b = ProgramBuilder(f"mhc_pre_bwd_coeff_proj_{dtype.value}",
                       doc="mHC pre backward from the reduce pass's partial sums: recompute, Sinkhorn reverse -> dh, dss2, pre")
    b.gm("dpost", F32, (N,))
    b.gm("dcomb", F32, (N, N))
    _declare_partials(b, with_dpre=True)
    b.gm("pre_mix", F32, (N,), role="out")
    b.gm("dss2", F32, (1,), role="out")
    hc_eps, rms_eps = _declare_bwd_tail(b, host_dfn=False)
    _hd_from_scalar(b)
    _sum_partials(b, with_dpre=True)
    _bwd_coefficients(b, hc_eps, rms_eps, lambda: None)
    return _build_bwd_coefficients(b)


def proj_from_default(inputs: dict) -> dict:
    """The projection layout's program inputs from the default programs' (x [ROWS, N, HD], the Cube's
    hproj, scale, base, output gradients): one partial sum per stream (PARTS = N, as the reference host
    step writes them; the Cube's whole projection in the first), so the benchmarks and tuning can run
    these programs on the default programs' draws."""
    x, h = inputs["x"], inputs["hproj"]
    rows, n, d = x.shape
    xf = x.float()
    hpart = torch.zeros(rows, n, h[0].numel(), device=x.device)
    hpart[:, 0] = h.float().reshape(rows, -1)
    ins = {"hpart": hpart, "sspart": (xf * xf).sum(-1), "scale": inputs["scale"], "base": inputs["base"]}
    if "dli" in inputs:
        ins["dppart"] = (xf * inputs["dli"].float().reshape(rows, 1, d)).sum(-1).reshape(rows, n, 1)
        ins.update(dpost=inputs["dpost"], dcomb=inputs["dcomb"])
    return ins


def stream_views(x, fn, scale, base) -> tuple[dict, int, int, int]:
    """Inputs of the per-stream programs: x[:, s, :] row-strided views (no copy) and fn regrouped per
    stream as one contiguous [N, (2+N)*N, HD] copy (fn is small: 2.75 MB at N=4, HD=7168)."""
    n, d = x.shape[-2], x.shape[-1]
    rows = x.numel() // (n * d) if x.numel() else 0
    x3 = x.reshape(rows, n, d)
    fnp = fn.float().reshape((2 + n) * n, n, d).transpose(0, 1).contiguous()
    ins = {f"x{s}": x3[:, s, :] for s in range(n)}
    ins.update({f"fn{s}": fnp[s] for s in range(n)})
    ins.update(scale=scale.float().reshape(3, 1), base=base.float().reshape(2 + n, n))
    return ins, rows, n, d


def streams_from_default(inputs: dict) -> dict:
    """The per-stream programs' inputs from the default programs' (x [ROWS, N, HD], scale, base, the output
    gradients passed through): the views the per-stream runners make. The default (AscendC) programs take
    the Cube's projection hproj = x fn^T instead of fn, so fn [2+N, N, N, HD] is drawn here (standard
    normal, on x's device), seeded by the draw's hproj: the same draw always gives the same fn."""
    x, h = inputs["x"], inputs["hproj"]
    n, d = x.shape[-2], x.shape[-1]
    seed = int(h.double().abs().sum().item() * 1e6) % (2 ** 63) if h.numel() else 0
    fn = torch.randn(2 + n, n, n, d, generator=torch.Generator(device=x.device).manual_seed(seed), device=x.device)
    ins, *_ = stream_views(x, fn, inputs["scale"], inputs["base"])
    ins.update({k: v for k, v in inputs.items() if k not in ("x", "hproj", "scale", "base")})
    return ins


def _dx_views(rows: int, n: int, d: int, dtype, device) -> tuple[torch.Tensor, dict]:
    """dx [ROWS, N, HD] and its per-stream row views dx[:, s, :], the per-stream backward's outputs."""
    dx = torch.empty(rows, n, d, dtype=dtype, device=device)
    return dx, {f"dx{s}": dx[:, s, :] for s in range(n)}


def streams_dx_views(inputs: dict) -> dict:
    """The per-stream backward's preallocated outputs for its ``inputs`` (as run_mhc_pre_bwd_streams makes them)."""
    n = sum(1 for k in inputs if k.startswith("x") and k[1:].isdigit())
    x0 = inputs["x0"]
    return _dx_views(x0.shape[0], n, x0.shape[1], inputs["dli"].dtype, x0.device)[1]


# ------------------------------------------------------------------------------------------------
# runners: op-level tensors <-> program views


def _views(x, fn, scale, base):
    n, d = x.shape[-2], x.shape[-1]
    rows = x.numel() // (n * d) if x.numel() else 0
    return {"x": x.reshape(rows, n, d), "fn": fn.float().reshape(2 + n, n, n, d),
            "scale": scale.float().reshape(3, 1), "base": base.float().reshape(2 + n, n)}, rows, n, d


def _forward_outputs(out: dict, x, n: int, d: int):
    lead = x.shape[:-2]
    return out["layer_input"].reshape(*lead, d), out["post"].reshape(*lead, n), out["comb"].reshape(*lead, n, n)


def _grads_of_outputs(ins: dict, rows: int, n: int, d: int, d_layer_input, d_post, d_comb, x) -> None:
    ins.update(dli=d_layer_input.reshape(rows, d).to(x.dtype), dpost=d_post.reshape(rows, n).float(),
               dcomb=d_comb.reshape(rows, n, n).float())


def _backward_outputs(dx, dfn, out: dict, x, fn, scale, base):
    return (dx.reshape(x.shape), dfn.reshape(fn.shape).to(fn.dtype),
            out["dscale"].reshape(scale.shape).to(scale.dtype), out["dbase"].reshape(base.shape).to(base.dtype))


def _cube_projection(execute: Executor, x2: torch.Tensor, fn2: torch.Tensor) -> torch.Tensor:
    """h = x fn^T [rows, (2+N)N] fp32, the Cube's GEMM: `rows_matmul` contracts over its first axis,
    here the n*d columns (x2 [rows, n*d] in x's dtype, fn2 [(2+N)N, n*d] fp32)."""
    return execute.rows_matmul(x2.T, fn2.T)


def run_mhc_pre(execute: Executor, x, fn, scale, base, iters: int, hc_eps: float, rms_eps: float):
    """The AscendC layout (the Cube split, above): h = x fn^T on the Cube, then one AIV program."""
    ins, rows, n, d = _views(x, fn, scale, base)
    fn2 = ins.pop("fn").reshape(-1, n * d)
    ins["hproj"] = _cube_projection(execute, ins["x"].reshape(rows, n * d), fn2).reshape(rows, 2 + n, n)
    p = cached_program(build_mhc_pre_fwd_cube, ir_dtype(x.dtype))
    out = execute(p, ins, {"iters": iters, "hc_eps": hc_eps, "rms_eps": rms_eps})
    return _forward_outputs(out, x, n, d)


def run_mhc_pre_bwd(execute: Executor, d_layer_input, d_post, d_comb, x, fn, scale, base, iters: int,
                    hc_eps: float, rms_eps: float):
    """The AscendC layout's backward: h on the Cube, the coefficient program (dh, dss2, pre), the Cube's
    dxp = dh fn and dfn = dh^T x, then the apply program (dx)."""
    ins, rows, n, d = _views(x, fn, scale, base)
    _grads_of_outputs(ins, rows, n, d, d_layer_input, d_post, d_comb, x)
    fn2 = ins.pop("fn").reshape(-1, n * d)
    x2 = ins["x"].reshape(rows, n * d)
    ins["hproj"] = _cube_projection(execute, x2, fn2).reshape(rows, 2 + n, n)
    coeff = execute(cached_program(build_mhc_pre_bwd_coeff_cube, ir_dtype(x.dtype)), ins,
                    {"iters": iters, "hc_eps": hc_eps, "rms_eps": rms_eps})
    dh = coeff["dh"].reshape(rows, -1)
    dxp = execute.rows_matmul(dh.T, fn2)            # dh @ fn [rows, n*d]
    dfn = execute.rows_matmul(dh, x2)               # dh^T @ x [(2+N)N, n*d]
    out = execute(cached_program(build_mhc_pre_bwd_apply_cube, ir_dtype(x.dtype)),
                  {"x": ins["x"], "dli": ins["dli"], "dxp": dxp.reshape(rows, n, d), "dss2": coeff["dss2"],
                   "pre_mix": coeff["pre_mix"]}, {})
    return _backward_outputs(out["dx"], dfn, coeff, x, fn, scale, base)


def run_mhc_pre_streams(execute: Executor, x, fn, scale, base, iters: int, hc_eps: float, rms_eps: float):
    """The per-stream layout (the cuda target's): every tile 2-d, every contraction one dot."""
    ins, rows, n, d = stream_views(x, fn, scale, base)
    p = cached_program(build_mhc_pre_fwd_streams, ir_dtype(x.dtype), n)
    out = execute(p, ins, {"iters": iters, "hc_eps": hc_eps, "rms_eps": rms_eps})
    return _forward_outputs(out, x, n, d)


def run_mhc_pre_bwd_streams(execute: Executor, d_layer_input, d_post, d_comb, x, fn, scale, base, iters: int,
                            hc_eps: float, rms_eps: float):
    """The per-stream backward: dx written through row-strided views of one tensor, and dfn = dh^T @ x
    over the rows as the executor's rows_matmul (one GEMM reading x once in its own dtype)."""
    ins, rows, n, d = stream_views(x, fn, scale, base)
    _grads_of_outputs(ins, rows, n, d, d_layer_input, d_post, d_comb, x)
    dx, dx_views = _dx_views(rows, n, d, x.dtype, x.device)
    p = cached_program(build_mhc_pre_bwd_streams, ir_dtype(x.dtype), n)
    out = execute(p, ins, {"iters": iters, "hc_eps": hc_eps, "rms_eps": rms_eps}, out=dx_views)
    dfn = execute.rows_matmul(out["dh"].reshape(rows, -1), x.reshape(rows, n * d))
    return _backward_outputs(dx, dfn, out, x, fn, scale, base)


def run_mhc_pre_split(execute: Executor, x, fn, scale, base, iters: int, hc_eps: float, rms_eps: float):
    """The per-stream layout as two kernels: the reduce pass (pre, post, comb) and the apply pass."""
    ins, rows, n, d = stream_views(x, fn, scale, base)
    sc = {"iters": iters, "hc_eps": hc_eps, "rms_eps": rms_eps}
    coeff = execute(cached_program(build_mhc_pre_coeff_streams, ir_dtype(x.dtype), n), ins, sc)
    out = execute(cached_program(build_mhc_pre_apply_streams, ir_dtype(x.dtype), n),
                  dict({x_: ins[x_] for x_ in _stream_names(n)[0]}, pre_mix=coeff["pre_mix"]), {})
    return _forward_outputs(dict(coeff, layer_input=out["layer_input"]), x, n, d)


def run_mhc_pre_bwd_split(execute: Executor, d_layer_input, d_post, d_comb, x, fn, scale, base, iters: int,
                          hc_eps: float, rms_eps: float):
    """The per-stream backward as the reduce kernel (dh, dss2, pre, dscale/dbase partials) and the
    executor's `mhc_pre_dx_dfn` host step: dx and dfn = dh^T x from one read of x (a column-blocked GEMM
    with dx in its epilogue on CUDA: the accumulator of dfn is per column across all rows, which a row
    program cannot hold)."""
    ins, rows, n, d = stream_views(x, fn, scale, base)
    _grads_of_outputs(ins, rows, n, d, d_layer_input, d_post, d_comb, x)
    sc = {"iters": iters, "hc_eps": hc_eps, "rms_eps": rms_eps}
    coeff = execute(cached_program(build_mhc_pre_bwd_coeff_streams, ir_dtype(x.dtype), n), ins, sc)
    x2 = x.reshape(rows, n * d)
    dx, dfn = execute.mhc_pre_dx_dfn(x2, ins["dli"], fn.reshape(-1, n * d), coeff["dh"].reshape(rows, -1),
                                     coeff["dss2"], coeff["pre_mix"])
    return _backward_outputs(dx, dfn, coeff, x, fn, scale, base)


def run_mhc_pre_proj(execute: Executor, x, fn, scale, base, iters: int, hc_eps: float, rms_eps: float):
    """The projection layout: the reduce pass as the executor's host step (partial sums), the row math
    (pre, post, comb), then the split layout's apply pass."""
    n, d = x.shape[-2], x.shape[-1]
    rows = x.numel() // (n * d) if x.numel() else 0
    x3 = x.reshape(rows, n, d)          # stream s is the row-strided view x3[:, s, :] (no copy; fn is not regrouped)
    hpart, sspart, _ = execute.mhc_pre_proj(x3.reshape(rows, n * d), fn.float().reshape(-1, n * d), n)
    sc = {"iters": iters, "hc_eps": hc_eps, "rms_eps": rms_eps, "hd": d}
    coeff = execute(cached_program(build_mhc_pre_coeff_proj, ir_dtype(x.dtype)),
                    {"hpart": hpart, "sspart": sspart, "scale": scale.float().reshape(3, 1),
                     "base": base.float().reshape(2 + n, n)}, sc)
    out = execute(cached_program(build_mhc_pre_apply_streams, ir_dtype(x.dtype), n),
                  dict({x_: x3[:, s, :] for s, x_ in enumerate(_stream_names(n)[0])}, pre_mix=coeff["pre_mix"]), {})
    return _forward_outputs(dict(coeff, layer_input=out["layer_input"]), x, n, d)


def run_mhc_pre_bwd_proj(execute: Executor, d_layer_input, d_post, d_comb, x, fn, scale, base, iters: int,
                         hc_eps: float, rms_eps: float):
    """The projection layout's backward: the reduce pass as the host step (with d(pre) from dli), the
    Sinkhorn reverse from the partial sums (dh, dss2, pre, dscale/dbase partials), then the split
    layout's `mhc_pre_dx_dfn` host step (dx and dfn from one read of x)."""
    rows, n, d = (x.numel() // (x.shape[-2] * x.shape[-1]) if x.numel() else 0), x.shape[-2], x.shape[-1]
    x2, fn2 = x.reshape(rows, n * d), fn.float().reshape(-1, n * d)
    dli = d_layer_input.reshape(rows, d).to(x.dtype)
    hpart, sspart, dppart = execute.mhc_pre_proj(x2, fn2, n, dli)
    ins = {"dpost": d_post.reshape(rows, n).float(), "dcomb": d_comb.reshape(rows, n, n).float(),
           "hpart": hpart, "sspart": sspart, "dppart": dppart,
           "scale": scale.float().reshape(3, 1), "base": base.float().reshape(2 + n, n)}
    coeff = execute(cached_program(build_mhc_pre_bwd_coeff_proj, ir_dtype(x.dtype)), ins,
                    {"iters": iters, "hc_eps": hc_eps, "rms_eps": rms_eps, "hd": d})
    dx, dfn = execute.mhc_pre_dx_dfn(x2, dli, fn2, coeff["dh"].reshape(rows, -1), coeff["dss2"], coeff["pre_mix"])
    return _backward_outputs(dx, dfn, coeff, x, fn, scale, base)
