"""Partial interleaved rotary embedding, forward and inverse: ``trex::rope``.

op.py: the custom op (reference, fake, autograd, samples, fuzz arguments); pattern.py: the eager
chains and their replacement; ir.py: the Kernel IR program and runners; kernel.py: the kernel spec.
Importing the package registers all of them (trex.compiler.registry.discover)."""
from . import kernel, op, pattern  # noqa: F401
