"""GetSortMaxMinTmpSize on Atlas A2/A3: asc-devkit 82b89a1's implementation supports only the 950 architectures and
returns with the outputs unwritten after logging "Unsupported NpuArch for Sort API."; the emulated A2/A3 chip does
the same (adv_sort_tiling_host.h). asc-devkit's sort example (whose kernel uses the A2 Sort with its own buffers)
then sizes a UB buffer from the minTmpSize it never initialised: asc_program builds host mains with uninitialised
locals filled with a fixed pattern, so it fails the same way on every run (an earlier run passed on a zero that
happened to be on the stack)."""
import os
import subprocess
from pathlib import Path

import pytest

from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

SNIPPET = r'''
#include <cstdio>
#include "tiling/tiling_api.h"
int main() {
  AscendC::TensorShape s({1024});
  AscendC::SortConfig config;
  config.type = AscendC::SortType::MERGE_SORT;
  uint32_t mx = 12345, mn = 678;
  AscendC::GetSortMaxMinTmpSize(s, AscendC::TensorDataType::DT_FLOAT, AscendC::TensorDataType::DT_UINT32, false,
                                config, mx, mn);
  std::printf("%u %u\n", mx, mn);
  return 0;
}
'''


@pytest.mark.skipif(not compiler_available(), reason="no C++ compiler")
@pytest.mark.parametrize("host_first", [False, True])
def test_sort_tmp_size_is_unsupported_on_a2(tmp_path, host_first):
    (tmp_path / "h.cpp").write_text(SNIPPET)
    host = INCLUDE_DIR.parent / "include_host"
    incs = [host, INCLUDE_DIR] if host_first else [INCLUDE_DIR, host]
    subprocess.run([find_compiler(), "-std=c++17", *[f"-I{d}" for d in incs], str(tmp_path / "h.cpp"), "-o",
                    str(tmp_path / "h")], check=True)
    r = subprocess.run([str(tmp_path / "h")], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["12345", "678"]
    assert "Unsupported NpuArch for Sort API." in r.stderr


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
def test_asc_devkit_sort_example_fails_on_its_unwritten_tmp_size():
    from trex.codegen_ascendc.emulator import asc_program
    if not asc_program.uninitialized_locals_flags(find_compiler()):
        pytest.skip("the compiler lacks -ftrivial-auto-var-init=pattern: the example's result is then the stack's")
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api/05_sort/sort")
    assert [r.result for r in results] == ["run error"], [(r.scenario, r.result, r.detail) for r in results]
    assert "UB overflow" in results[0].detail and "InitBuffer(mQueSharedTmp, 1, mSharedTmpBufferSize)" in results[0].detail
