"""Triton printer of trex's Kernel IR (the "cuda" target).

    import trex.codegen_triton
    trex.codegen_triton.register_cuda_target()      # CUDA tensors now run torch.ops.trex.* through Triton

Modules: printer (Kernel IR -> @triton.jit source, one rule per opcode), tiling (time model over the
candidate tilings, constants from calibration), calibration (measured copy bandwidth / launch overhead,
JSON), launcher (kernel cache, argument binding, host finalize), gemm (the rows_matmul host step),
target (the "cuda" target: the kernel specs' runners on Triton, registration), backend
(`trex_inductor`: trex's fusions, then Inductor for the rest of the graph). Importing this package needs neither Triton nor a GPU; launching does.
"""
from __future__ import annotations

from . import calibration, printer, tiling
from .launcher import kernel_report, run_program
from .printer import KernelSource, Tiling, print_program

__all__ = ["calibration", "printer", "tiling", "print_program", "run_program", "kernel_report", "Tiling",
           "KernelSource", "register_cuda_target", "available"]


def available() -> tuple[bool, str]:
    from .target import available as _available
    return _available()


def register_cuda_target() -> None:
    """Register the "cuda" target with trex's runtime and the CUDA kernels of every fused op."""
    from .target import register
    register()
