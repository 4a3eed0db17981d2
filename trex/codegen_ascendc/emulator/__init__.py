"""AscendC emulator: run AscendC kernels (CANN's documented C++ style) on the host CPU.

C++ side: `include/kernel_operator.h` (+ `include/trex_emu/*.h`) implements the AscendC API subset that
trex's printer emits and that hand-written vector kernels use, so a kernel compiles with plain g++
unchanged. Python side: `compile_kernel` builds and caches a shared library, `KernelLibrary.launch`
runs a kernel on torch CPU tensors and returns per-pipe counters. See docs/emulator.md.
"""
from .runner import (
    INCLUDE_DIR,
    EmulatorCompileError,
    EmulatorError,
    EmulatorUnavailable,
    KernelLibrary,
    RoundMode,
    TensorList,
    cache_dir,
    cache_limit_bytes,
    clear_cache,
    evict_cache,
    compile_kernel,
    compiler_available,
    find_compiler,
    run_kernel,
    runtime_library,
)
from .signature import KernelParam, KernelSignature, SignatureError, parse_kernel_signatures

__all__ = [
    "INCLUDE_DIR", "EmulatorCompileError", "EmulatorError", "EmulatorUnavailable", "KernelLibrary", "KernelParam",
    "KernelSignature", "RoundMode", "TensorList", "SignatureError", "cache_dir", "cache_limit_bytes", "clear_cache", "evict_cache", "compile_kernel", "compiler_available",
    "find_compiler", "parse_kernel_signatures", "run_kernel", "runtime_library",
]
