"""The kernel of ``trex::add_rms_norm``: its program and runner (ir.py), the inputs it does not take,
and the example sizes (a pre-norm residual stream of d = 7168). Its backward is ``rms_norm_bwd``'s."""
from __future__ import annotations

from trex.compiler.kernels import EXAMPLE_TOKENS, V4PRO_TOKENS, Guard, KernelSpec, Layout
from trex.compiler.registry import register_kernel_spec

from .ir import build_add_rms_norm, run_add_rms_norm

register_kernel_spec(KernelSpec(
    op="add_rms_norm", doc="residual add + weighted RMSNorm (the authoring guide's example, d = 7168)",
    layout=Layout(run=run_add_rms_norm, program=lambda dtype, sizes: build_add_rms_norm(dtype, True)),
    sizes={"example": {"ROWS": EXAMPLE_TOKENS, "D": 7168}, "small": {"ROWS": 512, "D": 2048},
           "tiny": {"ROWS": 24, "D": 128}, "v4pro": {"ROWS": V4PRO_TOKENS, "D": 7168}},
    scalars={"eps": 1e-6},
    guards=(Guard(lambda a: a[1].dtype != a[0].dtype or a[1].shape != a[0].shape,
                  "residual's dtype or shape differs from x's: the reference raises the argument error"),)))
