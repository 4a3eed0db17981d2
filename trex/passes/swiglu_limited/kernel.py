"""The kernels of ``trex::swiglu_limited`` and ``trex::swiglu_limited_bwd``: programs and runners of ir.py,
the inputs they do not take, and the example sizes (routed experts: moe_intermediate 3072, limit 10)."""
from __future__ import annotations

from trex.compiler.kernels import Guard, KernelSpec, Layout, row_op_sizes
from trex.compiler.registry import register_kernel_spec

from .ir import build_swiglu_limited_bwd, build_swiglu_limited_fwd, run_swiglu_limited, run_swiglu_limited_bwd


register_kernel_spec(KernelSpec(
    op="swiglu_limited", doc="limited SwiGLU with route weight (moe_intermediate 3072, limit 10)",
    layout=Layout(run=run_swiglu_limited, program=lambda dtype, sizes: build_swiglu_limited_fwd(dtype, True)),
    sizes=row_op_sizes("F", 3072, small=(256, 1024)), scalars={"limit": 10.0},
    guards=(Guard(lambda a: a[1].dtype != a[0].dtype, "up's dtype differs from gate's"),)))

register_kernel_spec(KernelSpec(
    op="swiglu_limited_bwd", doc="limited SwiGLU backward",
    layout=Layout(run=run_swiglu_limited_bwd, program=lambda dtype, sizes: build_swiglu_limited_bwd(dtype, True)),
    sizes=row_op_sizes("F", 3072, small=(256, 512)), scalars={"limit": 10.0},
    guards=(Guard(lambda a: a[0].dtype != a[1].dtype or a[2].dtype != a[1].dtype, "dh/up dtypes differ from gate's"),
            Guard(lambda a: a[4] is not None and a[4].numel() != a[1].numel() // max(a[1].shape[-1], 1),
                  "a broadcast route weight: its gradient needs a cross-row reduction the program does not do"))))
