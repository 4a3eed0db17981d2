"""mHC pre-projection of DeepSeek-V4: ``trex::mhc_pre`` / ``trex::mhc_pre_bwd``.

op.py: the custom ops (reference, fake, autograd, samples, fuzz arguments); pattern.py: the eager
chains, the Sinkhorn-pass refinement and the replacement; ir.py: the Kernel IR programs (the AscendC
layout and the per-stream one) and runners; kernel.py: the kernel specs.
Importing the package registers all of them (trex.compiler.registry.discover)."""
from . import kernel, op, pattern  # noqa: F401
