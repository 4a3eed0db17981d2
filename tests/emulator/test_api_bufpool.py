"""TBufPool (asc-devkit 基础API/资源管理/TBufPool, TPipe/InitBufPool): two stages in pools that reuse the
same UB, as asc-devkit's tbufpool_management example does, shared and subdivided; the documented
constraints (Reset between stages, paired Alloc/Free before Reset, buffer-id and length limits) raise;
data is invalid after Reset. Kernel launch, framework launch with tiling keys, ICPU_RUN_KF; poisoned
outputs, several blocks, odd lengths."""
import struct
import subprocess
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.op_project import run_kernel_with_tiling
from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

KERNELS = Path(__file__).parent / "kernels"
(REUSE, SUBDIVIDE, NO_RESET_BETWEEN, RESET_WHILE_ALLOCATED, POOL_OVERFLOW, TOO_MANY_IDS, STALE_AFTER_RESET,
 SHARED_TOO_LONG) = range(8)


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(KERNELS / "bufpool_api.cpp", extra_flags=("-O0",))


def run(lib, mode, n=999, per=336, blocks=3):
    x, y = torch.randn(n), torch.randn(n)
    z, w = torch.full((n,), float("nan")), torch.full((n,), float("nan"))
    counters = lib.launch("bufpool_kernel", blocks, x, y, z, w, n, per, mode)
    return x, y, z, w, counters


@pytest.mark.parametrize("n, per, blocks", [(999, 336, 3), (64, 64, 1), (4096, 512, 8)])
def test_two_stages_reuse_one_pool_of_ub(lib, n, per, blocks):
    x, y, z, w, counters = run(lib, REUSE, n, per, blocks)
    assert torch.equal(z, x + y) and torch.equal(w, x * y)
    assert counters["ub_peak_bytes"] == 3 * per * 4  # pool2 reuses pool1: one pool's worth of UB


def test_subdivided_pools(lib):
    x, y, z, w, counters = run(lib, SUBDIVIDE)
    assert torch.equal(z, x + y) and torch.equal(w, x * y)
    assert counters["ub_peak_bytes"] == 4 * 336 * 4  # everything lives in pool0


def test_data_is_invalid_after_reset(lib):
    x, y, z, w, _ = run(lib, STALE_AFTER_RESET)
    assert torch.equal(z, x + y) and torch.isnan(w).all()


@pytest.mark.parametrize("mode, message", [
    (NO_RESET_BETWEEN, r"TBufPool::InitBuffer\(inX2_, 1, bufSize\) hands out memory of TBufPool 'pool2_' while "
                       r"TBufPool 'pool1_', which shares that UB, still holds buffers of its stage; call pool1_.Reset\(\)"),
    (RESET_WHILE_ALLOCATED, r"TBufPool 'pool1_'.Reset\(\): buffer 0 of TQue 'inY_' .* is still allocated"),
    (POOL_OVERFLOW, r"UB overflow: .*TBufPool::InitBuffer\(out_, .*\) asks for 2688 B for 'out_', but only 1344 B of "
                    r"the 4032 B TBufPool 'pool1_' remain"),
    (TOO_MANY_IDS, r"needs 1 buffer id\(s\) but TBufPool 'pool1_' has 0 of its bufIDSize = 3 left"),
    (SHARED_TOO_LONG, r"InitBufPool\(pool2_, .*\): 5376 B exceed the 4032 B of the shared TBufPool 'pool1_'"),
])
def test_documented_constraints_raise(lib, mode, message):
    with pytest.raises(EmulatorError, match=r"bufpool_kernel \(block 0 of 3\): .*" + message):
        run(lib, mode)


def test_pipe_ub_limit_still_applies(lib):
    with pytest.raises(EmulatorError, match=r"UB overflow: .*pipe.InitBuffer\(pool1_|UB overflow: .*InitBufPool\(pool1_"):
        run(lib, REUSE, n=60000, per=20000, blocks=3)


FRAMEWORK_KERNEL = r'''
#include "kernel_operator.h"
using namespace AscendC;
struct PoolTiling { uint32_t n; uint32_t perBlock; };
extern "C" __global__ __aicore__ void pool_custom(GM_ADDR x, GM_ADDR z, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA_WITH_STRUCT(PoolTiling, t, tiling);
  const uint32_t start = t.perBlock * GetBlockIdx();
  const uint32_t len = GetBlockIdx() + 1 == GetBlockNum() ? t.n - start : t.perBlock;
  GlobalTensor<DTYPE_X> xGm, zGm;
  xGm.SetGlobalBuffer((__gm__ DTYPE_X*)x + start, len);
  zGm.SetGlobalBuffer((__gm__ DTYPE_X*)z + start, len);
  TPipe pipe;
  TBufPool<TPosition::VECCALC> a, b;
  TQue<TPosition::VECIN, 1> qa, qb;
  pipe.InitBufPool(a, t.perBlock * sizeof(DTYPE_X));
  pipe.InitBufPool(b, t.perBlock * sizeof(DTYPE_X), a);
  const DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(DTYPE_X)), 0, 0, 0};
  a.InitBuffer(qa, 1, t.perBlock * sizeof(DTYPE_X));
  LocalTensor<DTYPE_X> v = qa.AllocTensor<DTYPE_X>();
  DataCopyPad(v, xGm, copy, DataCopyPadExtParams<DTYPE_X>{false, 0, 0, 0});
  qa.EnQue(v);
  v = qa.DeQue<DTYPE_X>();
  if (TILING_KEY_IS(1)) Adds(v, v, static_cast<DTYPE_X>(1), len);   // key 1: x + 1 in stage a
  DataCopyPad(zGm, v, copy);
  qa.FreeTensor(v);
  a.Reset();
  b.InitBuffer(qb, 1, t.perBlock * sizeof(DTYPE_X));
  LocalTensor<DTYPE_X> u = qb.AllocTensor<DTYPE_X>();
  DataCopyPad(u, zGm, copy, DataCopyPadExtParams<DTYPE_X>{false, 0, 0, 0});
  qb.EnQue(u);
  u = qb.DeQue<DTYPE_X>();
  if (TILING_KEY_IS(2)) Muls(u, u, static_cast<DTYPE_X>(3), len);   // key 2: x * 3 in stage b
  DataCopyPad(zGm, u, copy);
  qb.FreeTensor(u);
  b.Reset();
}
'''


@pytest.mark.parametrize("dtype, name", [(torch.float32, "float32"), (torch.float16, "float16")])
@pytest.mark.parametrize("key", [1, 2])
def test_framework_launch_per_tiling_key(tmp_path, dtype, name, key):
    if not compiler_available():
        pytest.skip("no C++ compiler")
    src = tmp_path / "pool_custom.cpp"
    src.write_text(FRAMEWORK_KERNEL)
    n, per = 333, 128
    x = (torch.arange(n) % 17 - 8).to(dtype)
    z = torch.full((n,), float("nan"), dtype=dtype)
    run_kernel_with_tiling(src, 3, x, z, torch.zeros(32, dtype=torch.uint8), struct.pack("<II", n, per),
                           tiling_key=key, dtypes={"x": name}, opt="-O0")
    assert torch.equal(z, x + 1 if key == 1 else x * 3)


def test_icpu_run_kf(tmp_path):
    cxx = find_compiler()
    if cxx is None:
        pytest.skip("no C++ compiler (g++ or $CXX) found")
    exe = tmp_path / "pool_icpu"
    subprocess.run([cxx, "-O0", "-std=c++17", f"-I{INCLUDE_DIR}", f"-I{KERNELS}",
                    str(KERNELS / "pool_list_icpu_main.cpp"), "-o", str(exe)], check=True, capture_output=True, text=True)
    ok = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "mismatches=0 blocks=9" in ok.stdout, ok.stdout + ok.stderr
    bad = subprocess.run([str(exe), "no_reset"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "bufpool_kernel (block 0 of 3)" in bad.stderr and "call pool1_.Reset()" in bad.stderr
