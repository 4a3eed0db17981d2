"""Shared fixtures of the GPU-target tests: every Kernel-IR program variant with small odd sizes.

CPU tests (source structure, tiling, and the Triton interpreter when Triton is installed) run in CI;
tests marked `cuda` need a CUDA GPU and Triton and skip otherwise.
"""
from __future__ import annotations

import importlib.util
import sys

import pytest
import torch

from trex.compiler.kernel_ir import size

HAS_TRITON = importlib.util.find_spec("triton") is not None
HAS_CUDA = HAS_TRITON and torch.cuda.is_available()

requires_triton = pytest.mark.skipif(not HAS_TRITON, reason="triton is not installed (optional: GPU target)")
requires_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU and triton")

INTERPRETER_COMMAND = ("TRITON_INTERPRET=1 python -m pytest tests/gpu/test_interpret.py "
                       "tests/gpu/test_interpret_rows.py")


def use_triton_interpreter(monkeypatch, tmp_path) -> None:
    """Run this test's kernels in Triton's interpreter. Triton decides at import whether its library's
    jit'd functions (tl.sum, tl.max...) are interpreter functions: in a process that imported
    triton.language for the GPU first (a CUDA test ran before, in this process or xdist worker), an
    interpreted kernel fails at its first library call ("Cannot call @triton.jit'd outside of the scope of
    a kernel"), so the test skips and names the command that runs it in a process of its own."""
    standard = sys.modules.get("triton.language.standard")
    if standard is not None and type(getattr(standard, "sum", None)).__name__ != "InterpretedFunction":
        pytest.skip(f"triton.language was imported in this process for the GPU (without TRITON_INTERPRET=1); "
                    f"run the interpreter tests in a process of their own: {INTERPRETER_COMMAND}")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TREX_TRITON_CACHE", str(tmp_path))


def program_variants():
    """(id, program, sizes without ROWS) for every IR program the passes define, in every variant."""
    from trex.passes.mhc_pre.ir import (build_mhc_pre_bwd, build_mhc_pre_bwd_streams, build_mhc_pre_fwd,
                                        build_mhc_pre_fwd_streams)
    from trex.passes.rms_norm.ir import build_rms_norm_bwd, build_rms_norm_fwd
    from trex.passes.rope.ir import build_rope
    from trex.passes.swiglu_limited.ir import build_swiglu_limited_bwd, build_swiglu_limited_fwd
    out = []
    for dt in ("bf16", "fp16", "fp32"):
        for w in (True, False):
            out.append((f"rms_fwd_{dt}_{w}", build_rms_norm_fwd(dt, w), {size("D"): 100}))
            out.append((f"rms_bwd_{dt}_{w}", build_rms_norm_bwd(dt, w), {size("D"): 100}))
        for r in (False, True):
            out.append((f"swiglu_fwd_{dt}_{r}", build_swiglu_limited_fwd(dt, r), {size("F"): 50}))
            out.append((f"swiglu_bwd_{dt}_{r}", build_swiglu_limited_bwd(dt, r), {size("F"): 50}))
        # y = x*C + swap(x)*S: swap by shifted loads (AscendC's form) or in registers (the GPU's);
        # RD = 6 pads the lane block to 8: padding lanes pair among themselves
        for swap in ("shifted_loads", "pairs"):
            for rd in (6, 16, 24):
                out.append((f"rope_{swap}_{dt}_rd{rd}", build_rope(dt, "fp32", swap=swap),
                            {size("HD"): 24, size("RD"): rd, size("CDIV"): 3, size("CROWS"): 5}))
        out.append((f"mhc_fwd_{dt}", build_mhc_pre_fwd(dt), {size("N"): 4, size("HD"): 40, size("ITERS"): 5}))
        out.append((f"mhc_bwd_{dt}", build_mhc_pre_bwd(dt), {size("N"): 4, size("HD"): 40, size("ITERS"): 5}))
        # the per-stream (GPU) variant
        out.append((f"mhc_streams_fwd_{dt}", build_mhc_pre_fwd_streams(dt, 4),
                    {size("N"): 4, size("HD"): 40, size("ITERS"): 5}))
        out.append((f"mhc_streams_bwd_{dt}", build_mhc_pre_bwd_streams(dt, 4),
                    {size("N"): 4, size("HD"): 40, size("ITERS"): 5}))
    return out
