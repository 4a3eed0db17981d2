"""RMSNorm, weighted and weight-free: ``trex::rms_norm`` / ``trex::rms_norm_bwd``.

op.py: the custom ops (reference, fake, autograd, samples, fuzz arguments); pattern.py: the eager
chains and their replacement; ir.py: the Kernel IR programs and runners; kernel.py: the kernel specs.
Importing the package registers all of them (trex.compiler.registry.discover)."""
from . import kernel, op, pattern  # noqa: F401
