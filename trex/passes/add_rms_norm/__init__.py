"""Fused residual add + RMSNorm: ``trex::add_rms_norm``, the worked example of docs/authoring-a-pattern.md.

op.py: the custom op (reference, fake, autograd, samples, fuzz arguments); pattern.py: the eager
chain and its replacement; ir.py: the Kernel IR program and its runner; kernel.py: the kernel spec.
Importing the package registers all of them (trex.compiler.registry.discover)."""
from . import kernel, op, pattern  # noqa: F401
