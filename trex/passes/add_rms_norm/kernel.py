"""The kernel of ``trex::add_rms_norm``: its program and runner (ir.py), the inputs it does not take,
and the example sizes (a pre-norm residual stream of d = 7168). Its backward is ``rms_norm_bwd``'s."""
from __future__ import annotations

from trex.compiler.kernels import Guard, KernelSpec, Layout, row_op_sizes
from trex.compiler.registry import register_kernel_spec

from .ir import build_add_rms_norm, run_add_rms_norm

register_kernel_spec(KernelSpec(
    op="add_rms_norm", doc="residual add + weighted RMSNorm (the authoring guide's example, d = 7168)",
    layout=Layout(run=run_add_rms_norm, program=lambda dtype, sizes: build_add_rms_norm(dtype, True)),
    sizes=row_op_sizes("D", 7168, small=(512, 2048)),
    scalars={"eps": 1e-6},
    guards=(Guard(lambda a: a[1].dtype != a[0].dtype or a[1].shape != a[0].shape,
                  "residual's dtype or shape differs from x's: the reference raises the argument error"),)))
