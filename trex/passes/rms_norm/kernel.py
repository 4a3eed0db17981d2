"""The kernels of ``trex::rms_norm`` and ``trex::rms_norm_bwd``: programs and runners of ir.py, the inputs
they do not take, and the example sizes (attn_norm / ffn_norm: d = 7168)."""
from __future__ import annotations

from trex.compiler.kernels import Guard, KernelSpec, Layout, row_op_sizes
from trex.compiler.registry import register_kernel_spec

from .ir import build_rms_norm_bwd, build_rms_norm_fwd, run_rms_norm, run_rms_norm_bwd


register_kernel_spec(KernelSpec(
    op="rms_norm", doc="weighted RMSNorm forward (attn_norm/ffn_norm, d = 7168)",
    layout=Layout(run=run_rms_norm, program=lambda dtype, sizes: build_rms_norm_fwd(dtype, True)),
    sizes=row_op_sizes("D", 7168, small=(512, 2048)), scalars={"eps": 1e-6}))

register_kernel_spec(KernelSpec(
    op="rms_norm_bwd", doc="weighted RMSNorm backward",
    layout=Layout(run=run_rms_norm_bwd, program=lambda dtype, sizes: build_rms_norm_bwd(dtype, True)),
    sizes=row_op_sizes("D", 7168, small=(256, 1024)),
    guards=(Guard(lambda a: a[0].dtype != a[1].dtype,
                  "dy's dtype differs from x's: the program reads dy in x's dtype (a wider dy keeps its precision)"),)))
