"""Fused-op tests: importing the backend registers backend="trex" for the trace-time checks."""
import trex_compiler.backend  # noqa: F401
