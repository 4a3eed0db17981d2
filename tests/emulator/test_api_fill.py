"""Fill / InitGlobalMemory (asc-devkit 高阶API/张量变换/Fill; InitGlobalMemory is its CANN 8.0 name): GM
elements set to a value, per block, on odd lengths, over poisoned outputs; the documented workspace idiom
(zero, SyncAll, atomic accumulate); the documented constraint (only before InitBuffer) and the emulator's
GM bounds and race checks. Kernel launch, framework launch (run_kernel_with_tiling) and ICPU_RUN_KF
(test_api_erf.py's ICPU program runs Fill as well)."""
import struct
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.op_project import run_kernel_with_tiling
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"
FILL, INIT_GLOBAL_MEMORY, FILL_AFTER_INIT_BUFFER, FILL_SAME_RANGE, FILL_ZERO_THEN_ACCUMULATE = range(5)
KERNEL_OF = {torch.float32: "fill_float", torch.float16: "fill_half", torch.int32: "fill_int32",
             torch.uint16: "fill_uint16"}


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(KERNELS / "erf_fill_api.cpp", extra_flags=("-O1",))


def poisoned(n, dtype):
    return torch.full((n,), 0x5A5A, dtype=torch.int32).to(dtype) if not dtype.is_floating_point else \
        torch.full((n,), float("nan"), dtype=dtype)


@pytest.mark.parametrize("dtype", list(KERNEL_OF))
@pytest.mark.parametrize("mode", [FILL, INIT_GLOBAL_MEMORY])
@pytest.mark.parametrize("n, per, blocks", [(999, 336, 3), (17, 17, 1), (4096, 512, 8)])
def test_each_block_fills_its_range(lib, dtype, mode, n, per, blocks):
    z = poisoned(n, dtype)
    counters = lib.launch(KERNEL_OF[dtype], blocks, z, n, per, 3.0, mode)
    want = torch.tensor([3 + min(i // per, blocks - 1) for i in range(n)]).to(dtype)
    assert torch.equal(z, want)
    assert counters["mte3_bytes"] == n * z.element_size() and counters["mte3_transfers"] == blocks


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int32])
def test_zero_then_sync_all_then_atomic_accumulate(lib, dtype):
    blocks, n = 4, 100  # 400 B of float / 200 B of half: odd tails on both
    z = poisoned(n, dtype)
    lib.launch(KERNEL_OF[dtype], blocks, z, n, 32, 0.0, FILL_ZERO_THEN_ACCUMULATE)
    assert torch.equal(z, torch.full((n,), blocks).to(dtype))


def test_fill_after_init_buffer_is_refused(lib):
    with pytest.raises(EmulatorError, match=r"fill_float \(block 0 of 1\): Fill: called after TPipe::InitBuffer handed "
                                            r"out 1024 B of UB; .*supported only before InitBuffer"):
        lib.launch("fill_float", 1, torch.zeros(64), 64, 64, 1.0, FILL_AFTER_INIT_BUFFER)


def test_blocks_filling_the_same_bytes_race(lib):
    with pytest.raises(EmulatorError, match=r"cross-block GM race: block 0 writes and block 1 writes bytes \[0, 256\) of z"):
        lib.launch("fill_float", 2, torch.zeros(64), 64, 32, 1.0, FILL_SAME_RANGE)


def test_fill_past_the_buffer_is_a_gm_bounds_error(lib):
    z = torch.zeros(64)  # the last block fills n - start = 200 - 0 elements of a 64-element buffer
    with pytest.raises(EmulatorError, match=r"Fill touches GM bytes .* outside every kernel argument buffer: "
                                            r"z=.*overruns it by"):
        lib.launch("fill_float", 1, z, 200, 200, 1.0, FILL)


FRAMEWORK_KERNEL = r'''
#include "kernel_operator.h"
struct FillTiling { uint32_t n; float value; };
extern "C" __global__ __aicore__ void fill_custom(GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA_WITH_STRUCT(FillTiling, t, tiling);
  const uint32_t per = (t.n + AscendC::GetBlockNum() - 1) / AscendC::GetBlockNum();
  const uint32_t start = per * AscendC::GetBlockIdx();
  const uint32_t len = start >= t.n ? 0 : (t.n - start < per ? t.n - start : per);
  AscendC::GlobalTensor<DTYPE_Z> zGm;
  zGm.SetGlobalBuffer((__gm__ DTYPE_Z*)z + start, len);
  if (TILING_KEY_IS(1)) AscendC::Fill(zGm, len, static_cast<DTYPE_Z>(t.value));
  else if (TILING_KEY_IS(2)) AscendC::InitGlobalMemory(zGm, len, static_cast<DTYPE_Z>(t.value));
}
'''


@pytest.mark.parametrize("dtype, name", [(torch.float16, "float16"), (torch.int32, "int32")])
@pytest.mark.parametrize("key", [1, 2])
def test_framework_launch_per_tiling_key(tmp_path, dtype, name, key):
    if not compiler_available():
        pytest.skip("no C++ compiler")
    src = tmp_path / "fill_custom.cpp"
    src.write_text(FRAMEWORK_KERNEL)
    n = 1001
    z = poisoned(n, dtype)
    counters = run_kernel_with_tiling(src, 5, z, torch.zeros(32, dtype=torch.uint8), struct.pack("<If", n, -7.0),
                                      tiling_key=key, dtypes={"z": name}, opt="-O0")
    assert torch.equal(z, torch.full((n,), -7).to(dtype)) and counters["blocks_run"] == 5
