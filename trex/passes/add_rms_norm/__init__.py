"""Fused residual add + RMSNorm: ``trex::add_rms_norm``, the worked example of docs/authoring-a-pattern.md.

op.py: the custom op (reference, fake, autograd, samples, fuzz arguments); pattern.py: the eager
chain and its replacement. Importing the package registers all of them (trex.compiler.registry.discover)."""
from . import op, pattern  # noqa: F401
