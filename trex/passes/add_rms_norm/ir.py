"""Kernel IR program of `trex::add_rms_norm` (docs/authoring-a-pattern.md, section 6).

  h = x + residual, stored in x's dtype (the new residual stream); y = rms_norm(h) [* w]; rstd fp32.

The norm reads h as the op returns it: rounded to x's dtype first (a bf16 h is normalised as bf16,
like the reference, which normalises the tensor it returns). Everything after the add is RMSNorm's
own program (trex/passes/rms_norm/ir.py: `norm_builder`, `load_weight`, `normalize`).
`run_add_rms_norm` (the kernel spec's runner, kernel.py) maps op-level tensors (any leading shape)
to the program's [ROWS, D] views and back.
"""
from __future__ import annotations

from trex.compiler.kernel_ir import DType, Program, TensorKind
from trex.compiler.kernels import Executor, cached_program, ir_dtype

from ..rms_norm.ir import D, F32, load_f32, load_weight, norm_builder, normalize


def build_add_rms_norm(dtype: DType | str = DType.BF16, has_weight: bool = True,
                       weight_dtype: DType | str | None = None, out_dtype: DType | str | None = None) -> Program:
    b, dtype, wdt, odt = norm_builder("add_rms_norm", "h = x + residual; y = h * rsqrt(mean(h^2) + eps) [* w]; "
                                      "rstd fp32 per row", dtype, has_weight, weight_dtype, out_dtype)
    b.gm("x", dtype, (D,))
    b.gm("residual", dtype, (D,))
    if has_weight:
        b.gm("w", wdt, (D,), kind=TensorKind.SHARED)
    b.gm("y", odt, (D,), role="out")
    b.gm("h", dtype, (D,), role="out")
    b.gm("rstd", F32, (1,), role="out")
    eps = b.scalar("eps")
    wf = load_weight(b, wdt) if has_weight else None
    hf = load_f32(b, "x", dtype, "hf", (D,))
    b.op("add", hf, hf, load_f32(b, "residual", dtype, "rf", (D,)))
    if dtype == F32:
        b.op("store", None, "h", hf)
    else:
        b.op("cast", "h_out", hf, dtype=dtype, cols=(D,))
        b.op("store", None, "h", "h_out")
        b.op("cast", hf, "h_out")          # normalise h as it is returned (rounded to x's dtype)
    normalize(b, hf, eps, wf, odt)
    return b.build()


def run_add_rms_norm(execute: Executor, x, residual, weight, eps: float, out_dtype):
    p = cached_program(build_add_rms_norm, ir_dtype(x.dtype), weight is not None,
                       ir_dtype(weight.dtype if weight is not None else None), ir_dtype(out_dtype))
    d = x.shape[-1]
    ins = {"x": x.reshape(-1, d), "residual": residual.reshape(-1, d)}
    if weight is not None:
        ins["w"] = weight.reshape(-1)
    out = execute(p, ins, {"eps": eps})
    return out["y"].reshape(x.shape), out["h"].reshape(x.shape), out["rstd"].reshape(x.shape[:-1])
