"""SyncAll: blocks run as cooperating threads (one at a time), so a cross-block barrier orders every
block's GM writes before every block's reads after it. Kernel-launch and framework-launch templated
style with tiling keys, poisoned outputs, several block counts; a missing barrier is reported as the
race it is on the NPU, and a block that skips the barrier as the hang it is."""
import struct
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.op_project import run_kernel_with_tiling
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(KERNELS / "sync_all.cpp", extra_flags=("-O0",))


@pytest.mark.parametrize("blocks", [1, 3, 8])
def test_sync_all_orders_writes_before_reads_across_blocks(lib, blocks):
    n = 256
    x = torch.randn(blocks * n)
    ws = torch.full((blocks * 8,), float("nan"))
    out = torch.full((blocks * 8,), float("nan"))
    counters = lib.launch("block_total", blocks, x, ws, out, n, 0)
    assert counters["blocks_run"] == blocks
    total = sum(float(x[b * n:(b + 1) * n].sum()) for b in range(blocks))
    for b in range(blocks):
        assert out[b * 8].item() == pytest.approx(total, rel=1e-5, abs=1e-4)
        assert torch.equal(out[b * 8 + 1:b * 8 + 8], torch.zeros(7))


def test_without_the_barrier_the_race_is_reported(lib):
    with pytest.raises(EmulatorError, match=r"block_total: cross-block GM race: block 0 writes and block 1 reads "
                                            r"bytes \[0, 32\) of ws"):
        lib.launch("block_total", 2, torch.ones(512), torch.zeros(16), torch.zeros(16), 256, 1)


def test_a_block_that_skips_the_barrier_is_a_hang(lib):
    with pytest.raises(EmulatorError, match=r"block_total: SyncAll\(\): blocks 0 ended without reaching the barrier"):
        lib.launch("block_total", 3, torch.ones(768), torch.zeros(24), torch.zeros(24), 256, 2)


def test_error_after_a_barrier_names_the_block_and_the_library_stays_usable(lib):
    with pytest.raises(EmulatorError, match=r"block_total \(block 0 of 2\): .*UB overflow"):
        lib.launch("block_total", 2, torch.ones(2 * 60000), torch.zeros(16), torch.zeros(16), 60000, 0)
    out = torch.full((16,), float("nan"))
    lib.launch("block_total", 2, torch.ones(512), torch.zeros(16), out, 256, 0)
    assert out[0].item() == 512 and out[8].item() == 512


@pytest.mark.parametrize("dtype, tdt", [("float32", torch.float32), ("float16", torch.float16)])
@pytest.mark.parametrize("key", [1, 2])
def test_framework_launch_sync_all_per_tiling_key(dtype, tdt, key):
    if not compiler_available():
        pytest.skip("no C++ compiler")
    blocks, n = 4, 128
    x = torch.randn(blocks * n).to(tdt)
    out = torch.full((blocks * 8,), float("nan"))
    workspace = torch.full((blocks * 8,), float("nan"))
    counters = run_kernel_with_tiling(KERNELS / "sync_all_keyed.cpp", blocks, x, out, workspace, struct.pack("<If", n, 0.0),
                                      tiling_key=key, dtypes={"x": dtype},
                                      tiling_header=KERNELS / "keyed_kernel_tiling.h", opt="-O0")
    assert counters["blocks_run"] == blocks
    total = float(x.float().sum())
    for b in range(blocks):
        assert out[b * 8].item() == pytest.approx(total, rel=1e-4, abs=1e-3)


def test_sync_all_outside_a_launch_raises():
    if not compiler_available():
        pytest.skip("no C++ compiler")
    # A host program calling SyncAll directly (not through ICPU_RUN_KF) gets the named error.
    src = ('#include "kernel_operator.h"\nusing namespace AscendC;\n'
           'extern "C" __global__ __aicore__ void k(GM_ADDR x) { (void)x; }\n'
           'extern "C" __attribute__((visibility("default"))) int call_sync_all() { try { SyncAll(); } catch (const trex_emu::KernelError& e) { '
           'return std::string(e.what()).find("SyncAll(): called outside a kernel launch") == 0 ? 1 : 2; } return 0; }\n')
    lib = compile_kernel(src, extra_flags=("-O0",))
    import ctypes
    fn = ctypes.CDLL(str(lib.path)).call_sync_all
    assert fn() == 1
