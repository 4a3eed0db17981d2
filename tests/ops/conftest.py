"""Fused-op tests: importing the backend registers backend="trex" for the trace-time checks."""
import trex.compiler.backend  # noqa: F401
