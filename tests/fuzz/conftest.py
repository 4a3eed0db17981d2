"""Fuzz-suite fixtures: the "emulate" target registered explicitly (also reachable through the
`trex.targets` entry point) and one emulator executor per session, so each (program, buffer depth)
kernel is printed and compiled once and reused by every example (shapes and tilings travel in the
tiling struct). Skips without a C++ compiler."""
import os

import pytest

from trex.codegen_ascendc import target as emulate
from trex.codegen_ascendc.emulator.runner import compiler_available

# small CI shapes compile in ~2.5x less time at -O0 and run fast enough; nightly's 4097 x 7168 needs -O2
OPT_BY_PROFILE = {"dev": "-O0", "ci": "-O0", "nightly": "-O2"}


def pytest_collection_modifyitems(config, items):
    if compiler_available():
        return
    skip = pytest.mark.skip(reason="no C++ compiler (g++/$CXX) for the AscendC emulator")
    for item in items:
        if "tests/fuzz" in str(item.fspath).replace(os.sep, "/"):
            item.add_marker(skip)


@pytest.fixture(scope="session")
def emulator():
    emulate.register()
    return emulate.EmulatorExecutor(opt=OPT_BY_PROFILE.get(os.environ.get("TREX_FUZZ_PROFILE", "ci"), "-O2"))
