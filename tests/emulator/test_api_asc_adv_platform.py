"""platform_ascendc::PlatformAscendCManager::GetInstance(socVersion), which asc-devkit's example data_utils.h calls
for the CPU-debug platform: an Atlas A2/A3 SoC name gives the emulated platform (the same instance as
GetInstance()), another SoC nullptr (not emulated)."""
import subprocess

import pytest

from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

SNIPPET = r'''
#include <cstdio>
#include "tiling/platform/platform_ascendc.h"
int main() {
  auto* a = platform_ascendc::PlatformAscendCManager::GetInstance("Ascend910B1");
  auto* b = platform_ascendc::PlatformAscendCManager::GetInstance("Ascend910_9391");
  auto* c = platform_ascendc::PlatformAscendCManager::GetInstance("Ascend950PR_9589");
  auto* d = platform_ascendc::PlatformAscendCManager::GetInstance();
  std::printf("%d %d %d %u\n", a == d, b == d, c == nullptr, a->GetCoreNumAiv());
  return 0;
}
'''


@pytest.mark.skipif(not compiler_available(), reason="no C++ compiler")
@pytest.mark.parametrize("host_first", [False, True])
def test_get_instance_by_soc(tmp_path, host_first):
    (tmp_path / "p.cpp").write_text(SNIPPET)
    host = INCLUDE_DIR.parent / "include_host"
    incs = [host, INCLUDE_DIR] if host_first else [INCLUDE_DIR, host]
    subprocess.run([find_compiler(), "-std=c++17", *[f"-I{d}" for d in incs], str(tmp_path / "p.cpp"), "-o",
                    str(tmp_path / "p")], check=True)
    out = subprocess.run([str(tmp_path / "p")], capture_output=True, text=True, check=True).stdout.split()
    assert out[:3] == ["1", "1", "1"] and int(out[3]) > 0
