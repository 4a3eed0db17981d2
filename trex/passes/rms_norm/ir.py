"""Kernel IR programs of `trex::rms_norm` and `trex::rms_norm_bwd` (docs/contracts.md).

Math (reference/deepseek_v4.md §4; reference/ascendc.md §4.1-4.2):
  forward   rstd = 1/sqrt(mean(x^2) + eps),  y = x * rstd [* w]
  backward  xhat = x * rstd,  g = dy [* w],  dx = rstd * (g - xhat * mean(g * xhat)),
            dw = sum_rows(dy * xhat)   (per-core partials, summed on the host: deterministic)

`run_rms_norm` / `run_rms_norm_bwd` (the kernel spec's runners, kernel.py) map op-level tensors (any
leading shape) to the program's [ROWS, D] views, run it on the target's executor and reshape the
results back. `load_f32` / `store_from_f32` are shared with the other ops' programs.
"""
from __future__ import annotations

from trex.compiler.kernel_ir import DType, HostOp, Program, ProgramBuilder, TensorKind, size
from trex.compiler.kernels import Executor, cached_program, ir_dtype

D = size("D")
F32 = DType.FP32


def load_f32(b: ProgramBuilder, gm: str, dtype: DType, name: str, cols, per_row=True) -> str:
    """Load a GM tensor and bring it to fp32 (a cast only when it is 16-bit)."""
    if dtype == F32:
        return b.op("load", name, gm, dtype=F32, cols=cols, per_row=per_row)
    raw = b.op("load", name + "_in", gm, dtype=dtype, cols=cols, per_row=per_row)
    return b.op("cast", name, raw, dtype=F32, cols=cols, per_row=per_row)


def store_from_f32(b: ProgramBuilder, gm: str, dtype: DType, src: str, cols, per_row=True) -> None:
    if dtype == F32:
        b.op("store", None, gm, src)
        return
    low = b.op("cast", src + "_out", src, dtype=dtype, cols=cols, per_row=per_row)
    b.op("store", None, gm, low)


def norm_builder(name: str, doc: str, dtype: DType | str, has_weight: bool, weight_dtype: DType | str | None,
                 out_dtype: DType | str | None) -> tuple[ProgramBuilder, DType, DType, DType]:
    """The builder of a program that ends in an RMSNorm, named after its variant
    (`<name>_<dtype>_w<weight dtype>|_now_o<out dtype>`), and its (x, weight, out) dtypes: the weight and
    the output default to x's dtype."""
    dtype = DType(dtype)
    wdt = DType(weight_dtype or dtype)
    odt = DType(out_dtype or dtype)
    b = ProgramBuilder(f"{name}_{dtype.value}{'_w' + wdt.value if has_weight else '_now'}_o{odt.value}", doc=doc)
    return b, dtype, wdt, odt


def build_rms_norm_fwd(dtype: DType | str = DType.BF16, has_weight: bool = True,
                       weight_dtype: DType | str | None = None, out_dtype: DType | str | None = None) -> Program:
    b, dtype, wdt, odt = norm_builder("rms_norm_fwd", "y = x * rsqrt(mean(x^2) + eps) [* w]; rstd fp32 per row",
                                      dtype, has_weight, weight_dtype, out_dtype)
    b.gm("x", dtype, (D,))
    if has_weight:
        b.gm("w", wdt, (D,), kind=TensorKind.SHARED)
    b.gm("y", odt, (D,), role="out")
    b.gm("rstd", F32, (1,), role="out")
    eps = b.scalar("eps")
    wf = load_weight(b, wdt) if has_weight else None
    normalize(b, load_f32(b, "x", dtype, "xf", (D,)), eps, wf, odt)
    return b.build()


def load_weight(b: ProgramBuilder, weight_dtype: DType) -> str:
    """The weight "w", loaded once per core (prologue) as fp32; the builder continues in the body."""
    b.section("prologue")
    wf = load_f32(b, "w", weight_dtype, "wf", (D,), per_row=False)
    b.section("body")
    return wf


def normalize(b: ProgramBuilder, xf: str, eps: str, wf: str | None, out_dtype: DType) -> None:
    """The body of RMSNorm on the fp32 row `xf`: store rstd (fp32) and y = xf * rstd [* wf] in `out_dtype`
    into GM tensors "rstd" and "y" (shared by the ops that end in an RMSNorm, e.g. add_rms_norm)."""
    b.op("mul", "sq", xf, xf, dtype=F32, cols=(D,))
    b.op("reduce_sum", "ss", "sq", axis=-1, dtype=F32, cols=(1,))
    b.op("muls", "ms", "ss", 1 / D, dtype=F32, cols=(1,))
    b.op("adds", "ms", "ms", eps)
    b.op("rsqrt", "r", "ms", dtype=F32, cols=(1,))
    b.op("store", None, "rstd", "r")
    b.op("mul", "yf", xf, "r", dtype=F32, cols=(D,))
    if wf is not None:
        b.op("mul", "yf", "yf", wf)
    store_from_f32(b, "y", out_dtype, "yf", (D,))


def build_rms_norm_bwd(dtype: DType | str = DType.BF16, has_weight: bool = True,
                       weight_dtype: DType | str | None = None) -> Program:
    dtype = DType(dtype)
    wdt = DType(weight_dtype or dtype)
    b = ProgramBuilder(f"rms_norm_bwd_{dtype.value}{'_w' + wdt.value if has_weight else '_now'}",
                       doc="dx = rstd*(g - xhat*mean(g*xhat)), g = dy*w, xhat = x*rstd; dw = sum_rows(dy*xhat)")
    b.gm("dy", dtype, (D,))
    b.gm("x", dtype, (D,))
    if has_weight:
        b.gm("w", wdt, (D,), kind=TensorKind.SHARED)
    b.gm("rstd", F32, (1,))
    b.gm("dx", dtype, (D,), role="out")
    if has_weight:
        b.gm("dw_partial", F32, (D,), kind=TensorKind.PARTIAL, role="out")
        b.finalize.append(HostOp("sum_cores", "dw", ("dw_partial",)))
        b.section("prologue")
        wf = load_f32(b, "w", wdt, "wf", (D,), per_row=False)
        b.op("fill", "dw_acc", 0.0, dtype=F32, cols=(D,), per_row=False)
        b.section("body")
    # three row-sized fp32 values live at a time (dyf, xf, t) so D = 7168 fits UB at one row per tile
    dyf = load_f32(b, "dy", dtype, "dyf", (D,))
    xf = load_f32(b, "x", dtype, "xf", (D,))
    b.op("load", "r", "rstd", dtype=F32, cols=(1,))
    b.op("mul", xf, xf, "r")                          # xf <- xhat
    if has_weight:
        b.op("mul", "t", dyf, xf, dtype=F32, cols=(D,))
        b.op("acc_rows", "dw_acc", "dw_acc", "t")
        b.op("mul", dyf, dyf, wf)                     # dyf <- g = dy * w
    b.op("mul", "t", dyf, xf, dtype=F32, cols=(D,))
    b.op("reduce_sum", "s", "t", axis=-1, dtype=F32, cols=(1,))
    b.op("muls", "s", "s", 1 / D)
    b.op("mul", "t", xf, "s")
    b.op("sub", "t", dyf, "t")
    b.op("mul", "t", "t", "r")
    store_from_f32(b, "dx", dtype, "t", (D,))
    if has_weight:
        b.section("epilogue")
        b.op("store", None, "dw_partial", "dw_acc")
    return b.build()


# ------------------------------------------------------------------------------------------------
# runners: op-level tensors <-> program views


def run_rms_norm(execute: Executor, x, weight, eps: float, out_dtype):
    p = cached_program(build_rms_norm_fwd, ir_dtype(x.dtype), weight is not None,
                       ir_dtype(weight.dtype if weight is not None else None), ir_dtype(out_dtype))
    ins = {"x": x.reshape(-1, x.shape[-1])}
    if weight is not None:
        ins["w"] = weight.reshape(-1)
    out = execute(p, ins, {"eps": eps})
    return out["y"].reshape(x.shape), out["rstd"].reshape(x.shape[:-1])


def run_rms_norm_bwd(execute: Executor, dy, x, weight, rstd):
    p = cached_program(build_rms_norm_bwd, ir_dtype(x.dtype), weight is not None,
                       ir_dtype(weight.dtype if weight is not None else None))
    d = x.shape[-1]
    ins = {"dy": dy.reshape(-1, d).to(x.dtype), "x": x.reshape(-1, d), "rstd": rstd.reshape(-1, 1).float()}
    if weight is not None:
        ins["w"] = weight.reshape(-1)
    out = execute(p, ins, {})
    dw = out["dw"].to(weight.dtype) if weight is not None else x.new_empty((0,))
    return out["dx"].reshape(x.shape), dw
