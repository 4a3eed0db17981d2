"""Fixtures for the AscendC emulator tests.

Compiling is the slow part (g++ on 2 shared cores), so each kernel source is compiled once per
session, and the shared libraries are cached on disk across sessions (keyed by source + headers).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from trex.codegen_ascendc.emulator import compile_kernel, compiler_available, runtime_library

KERNELS = Path(__file__).parent / "kernels"

os.environ.setdefault("OMP_NUM_THREADS", "2")


def _require_compiler() -> None:
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")


@pytest.fixture(scope="session")
def api():
    """The library of small per-API test kernels (tests/emulator/kernels/api_kernels.cpp)."""
    _require_compiler()
    return compile_kernel(KERNELS / "api_kernels.cpp")


@pytest.fixture(scope="session")
def rt():
    """A kernel-less library exposing the emulator's conversions."""
    _require_compiler()
    return runtime_library()


@pytest.fixture(scope="session")
def kernels_dir() -> Path:
    return KERNELS


@pytest.fixture(scope="session")
def compile_source():
    """compile_kernel, skipping the test where no C++ compiler is found (for tests with their own kernels)."""
    _require_compiler()
    return compile_kernel
