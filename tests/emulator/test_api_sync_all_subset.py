"""SyncAll over a subset of blocks (asc-devkit 基础API/同步控制/核间同步/SyncAll.md, the software form's
usedCores; the counter algorithm of dav_c220 kernel_operator_sync_impl.h): participants order their GM
writes before each other's reads; blocks outside the subset run on unsynchronised, so what they read of
the participants' data races; a participant that never arrives is a hang; usedCores above the block count
raises. Kernel launch, framework launch with tiling keys, ICPU_RUN_KF (test_api_list_tensor.py's program)."""
import struct
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.op_project import run_kernel_with_tiling
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"
SUBSET, OUTSIDER_READS, TOO_MANY_CORES, PARTICIPANT_SKIPS, TWICE = range(5)


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(KERNELS / "sync_subset.cpp", extra_flags=("-O0",))


def launch(lib, blocks, used, mode, n=64):
    x = torch.randn(blocks * n)
    sync = torch.zeros(blocks * 8, dtype=torch.int32)  # the page: zeroed by the host
    part = torch.full((blocks * 8,), float("nan"))
    out = torch.full((blocks * 8,), float("nan"))
    lib.launch("subset_total", blocks, x, sync, part, out, n, used, mode)
    total = sum(float(x[b * n:(b + 1) * n].sum()) for b in range(used))
    return out, total, sync


@pytest.mark.parametrize("blocks, used", [(5, 3), (4, 1), (8, 7), (3, 3)])
def test_participants_see_each_others_writes(lib, blocks, used):
    out, total, sync = launch(lib, blocks, used, SUBSET)
    for b in range(blocks):
        assert out[b * 8].item() == (pytest.approx(total, rel=1e-5, abs=1e-4) if b < used else -1.0)
    if used < blocks:  # the counters of the algorithm: one increment per call, in each participant's 32-byte slot
        assert sync[::8].tolist() == [1] * used + [0] * (blocks - used)


def test_counters_count_generations(lib):
    out, total, sync = launch(lib, 5, 3, TWICE)
    assert out[0].item() == pytest.approx(2 * total, rel=1e-5, abs=1e-4)
    assert sync[::8].tolist() == [3, 3, 3, 0, 0]


def test_a_block_outside_the_subset_races(lib):
    with pytest.raises(EmulatorError, match=r"subset_total: cross-block GM race: block 0 writes and block 3 reads bytes "
                                            r"\[0, 32\) of part"):
        launch(lib, 5, 3, OUTSIDER_READS)


def test_a_participant_that_never_arrives_hangs(lib):
    with pytest.raises(EmulatorError, match=r"subset_total: SyncAll: blocks 0, 1 wait for blocks that never arrive "
                                            r"\(ended: 2, 3, 4\); on the NPU this hangs"):
        launch(lib, 5, 3, PARTICIPANT_SKIPS)


def test_used_cores_above_the_block_count_raises(lib):
    with pytest.raises(EmulatorError, match=r"usedCores=6\): usedCores must be in \[0, 5\]"):
        launch(lib, 5, 3, TOO_MANY_CORES)


FRAMEWORK_KERNEL = r'''
#include "kernel_operator.h"
using namespace AscendC;
struct SubsetTiling { uint32_t n; };
// key k: every block copies its slice of x to y; blocks [0, k) then SyncAll over k cores, and block 0 adds the
// other participants' copies (written before the barrier) into its own slice.
extern "C" __global__ __aicore__ void subset_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA_WITH_STRUCT(SubsetTiling, t, tiling);
  const uint32_t used = static_cast<uint32_t>(TILING_KEY_VAR);
  const uint32_t b = GetBlockIdx();
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf, buf2, ws;
  pipe.InitBuffer(buf, t.n * sizeof(DTYPE_X));
  pipe.InitBuffer(buf2, t.n * sizeof(DTYPE_X));
  pipe.InitBuffer(ws, GetBlockNum() * 32);
  GlobalTensor<DTYPE_X> xg, yg;
  xg.SetGlobalBuffer((__gm__ DTYPE_X*)x + t.n * b, t.n);
  yg.SetGlobalBuffer((__gm__ DTYPE_X*)y, t.n * GetBlockNum());
  LocalTensor<DTYPE_X> v = buf.Get<DTYPE_X>();
  DataCopy(v, xg, t.n);
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg[t.n * b], v, t.n);
  if (b >= used) return;
  GlobalTensor<int32_t> syncGm;
  syncGm.SetGlobalBuffer((__gm__ int32_t*)workspace, 8 * GetBlockNum());
  SyncAll(syncGm, ws.Get<int32_t>(), static_cast<int32_t>(used));
  if (b != 0) return;
  for (uint32_t i = 1; i < used; ++i) {
    LocalTensor<DTYPE_X> u = buf2.Get<DTYPE_X>();
    DataCopy(u, yg[t.n * i], t.n);
    PipeBarrier<PIPE_ALL>();
    Add(v, v, u, t.n);
    PipeBarrier<PIPE_ALL>();
  }
  DataCopy(yg, v, t.n);
}
'''


@pytest.mark.parametrize("key", [2, 3])
def test_framework_launch_per_tiling_key(tmp_path, key):
    if not compiler_available():
        pytest.skip("no C++ compiler")
    src = tmp_path / "subset_custom.cpp"
    src.write_text(FRAMEWORK_KERNEL)
    blocks, n = 4, 64
    x = torch.randn(blocks * n)
    y = torch.full((blocks * n,), float("nan"))
    workspace = torch.zeros(blocks * 8, dtype=torch.int32)
    counters = run_kernel_with_tiling(src, blocks, x, y, workspace, struct.pack("<I", n), tiling_key=key,
                                      dtypes={"x": "float32"}, opt="-O0")
    want = x.clone()
    for i in range(1, key):
        want[:n] += x[i * n:(i + 1) * n]
    assert torch.equal(y, want) and counters["blocks_run"] == blocks
    assert workspace[::8].tolist() == [1] * key + [0] * (blocks - key)
