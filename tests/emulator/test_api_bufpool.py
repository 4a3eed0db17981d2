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


# A user-defined pool (asc-devkit's EXTERN_IMPL_BUFPOOL, 自定义TBufPool; tbufpool_management's scenario 3 style):
# its own InitBuffer members hand out non-contiguous blocks (a 32-byte gap after each) through InitStartBufHandle
# / InitBufHandle, one handle per buffer. Stage 1 in poolA computes z = x * y + x with a double-buffered input
# queue; stage 2 in poolB, which reuses poolA's memory, computes w = x * y - y. The kernel class has a member of
# its own called InitBuffer too (no arguments). Other modes misuse the pool.
USER_POOL_KERNEL = r'''
#include "kernel_operator.h"
using namespace AscendC;

class GapPool {
 public:
  __aicore__ inline GapPool() { Init(); }
  template <class T>
  __aicore__ inline bool InitBuffer(T& que, uint8_t num, uint32_t len) {
    len = (len + 32 - 1) / 32 * 32;
    auto start = this->GetBufHandle(this->GetCurBufSize());
    auto addr = this->GetCurAddr();
    que.InitStartBufHandle(start, num, len);
    for (uint32_t i = 0; i < num; i++) {
      // asc-devkit's example passes `start` for every i (fine for its num = 1); each buffer needs its handle
      auto h = sameHandle ? start : this->GetBufHandle(this->GetCurBufSize() + i);
      que.InitBufHandle(this, i, h, addr + i * (len + 32), len);
    }
    this->SetCurAddr(addr + num * (len + 32));
    this->SetCurBufSize(this->GetCurBufSize() + num);
    return true;
  }
  template <TPosition bufPos>
  __aicore__ inline bool InitBuffer(TBuf<bufPos>& buf, uint32_t len) {
    len = (len + 32 - 1) / 32 * 32;
    auto h = this->GetBufHandle(this->GetCurBufSize());
    buf.InitStartBufHandle(h, 1, len);
    buf.InitBufHandle(this, 0, h, this->GetCurAddr(), len);
    this->SetCurAddr(this->GetCurAddr() + len + 32);
    this->SetCurBufSize(this->GetCurBufSize() + 1);
    return true;
  }
  bool sameHandle = false;
  EXTERN_IMPL_BUFPOOL(GapPool, TPosition::VECCALC, 5);
};

enum Mode : uint32_t { kOk = 0, kOverflow, kSameHandle, kTooManyHandles, kAfterReset };

class UserPoolKernel {
 public:
  __aicore__ inline void Run(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR w, uint32_t n, uint32_t perBlock,
                             uint32_t tile, uint32_t mode) {
    const uint32_t start = perBlock * GetBlockIdx();
    len_ = GetBlockIdx() + 1 == GetBlockNum() ? n - start : perBlock;
    tile_ = tile;
    xGm_.SetGlobalBuffer((__gm__ float*)x + start, len_);
    yGm_.SetGlobalBuffer((__gm__ float*)y + start, len_);
    zGm_.SetGlobalBuffer((__gm__ float*)z + start, len_);
    wGm_.SetGlobalBuffer((__gm__ float*)w + start, len_);
    poolA_.sameHandle = mode == kSameHandle;
    InitBuffer(mode == kOverflow ? 4 : 5);
    Stage(poolA_, zGm_, false, mode);
    poolA_.Reset();
    if (mode == kAfterReset) poolA_.InitBuffer(inX_, 2, tile_ * sizeof(float));
    Stage(poolB_, wGm_, true, mode);
    poolB_.Reset();
  }

 private:
  __aicore__ inline void InitBuffer() {}  // a kernel's own InitBuffer (the macro rewrites it consistently)
  __aicore__ inline void InitBuffer(uint32_t slots) {
    InitBuffer();
    const uint32_t poolBytes = slots * (tile_ * sizeof(float) + 32);
    pipe_.InitBufPool(poolA_, poolBytes);
    pipe_.InitBufPool(poolB_, poolBytes, poolA_);
  }
  __aicore__ inline void Stage(GapPool& pool, GlobalTensor<float>& dst, bool second, uint32_t mode) {
    const uint32_t bytes = tile_ * sizeof(float);
    pool.InitBuffer(inX_, 2, bytes);
    pool.InitBuffer(inY_, 1, bytes);
    pool.InitBuffer(tmp_, bytes);
    pool.InitBuffer(outQ_, 1, bytes);
    if (mode == kTooManyHandles) pool.InitBuffer(spare_, 32);
    for (uint32_t off = 0; off < len_; off += tile_) {
      const uint32_t cnt = len_ - off < tile_ ? len_ - off : tile_;
      const DataCopyExtParams copy{1, static_cast<uint32_t>(cnt * sizeof(float)), 0, 0, 0};
      LocalTensor<float> a = inX_.AllocTensor<float>();
      LocalTensor<float> b = inY_.AllocTensor<float>();
      DataCopyPad(a, xGm_[off], copy, DataCopyPadExtParams<float>{false, 0, 0, 0});
      DataCopyPad(b, yGm_[off], copy, DataCopyPadExtParams<float>{false, 0, 0, 0});
      inX_.EnQue(a);
      inY_.EnQue(b);
      a = inX_.DeQue<float>();
      b = inY_.DeQue<float>();
      LocalTensor<float> t = tmp_.Get<float>();
      LocalTensor<float> c = outQ_.AllocTensor<float>();
      Mul(t, a, b, cnt);
      if (second) Sub(c, t, b, cnt);
      else Add(c, t, a, cnt);
      outQ_.EnQue(c);
      inX_.FreeTensor(a);
      inY_.FreeTensor(b);
      c = outQ_.DeQue<float>();
      DataCopyPad(dst[off], c, copy);
      outQ_.FreeTensor(c);
    }
  }

  TPipe pipe_;
  GapPool poolA_, poolB_;
  TQue<TPosition::VECIN, 1> inX_, inY_;
  TQue<TPosition::VECOUT, 1> outQ_;
  TBuf<TPosition::VECCALC> tmp_, spare_;
  GlobalTensor<float> xGm_, yGm_, zGm_, wGm_;
  uint32_t len_ = 0, tile_ = 0;
};

extern "C" __global__ __aicore__ void user_pool_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR w, uint32_t n,
                                                       uint32_t perBlock, uint32_t tile, uint32_t mode) {
  UserPoolKernel k;
  k.Run(x, y, z, w, n, perBlock, tile, mode);
}
'''
U_OK, U_OVERFLOW, U_SAME_HANDLE, U_TOO_MANY_HANDLES, U_AFTER_RESET = range(5)


def _line_of(text):
    return next(i for i, l in enumerate(USER_POOL_KERNEL.splitlines(), 1) if text in l)


@pytest.fixture(scope="module")
def user_lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(USER_POOL_KERNEL, extra_flags=("-O0",))


def run_user(lib, mode, n=1000, per=336, tile=128, blocks=3):
    x, y = torch.randn(n), torch.randn(n)
    z, w = torch.full((n,), float("nan")), torch.full((n,), float("nan"))
    counters = lib.launch("user_pool_kernel", blocks, x, y, z, w, n, per, tile, mode)
    return x, y, z, w, counters


@pytest.mark.parametrize("n, per, tile, blocks", [(1000, 336, 128, 3), (64, 64, 64, 1), (4097, 512, 96, 8)])
def test_user_pool_extern_impl_bufpool(user_lib, n, per, tile, blocks):
    x, y, z, w, counters = run_user(user_lib, U_OK, n, per, tile, blocks)
    assert torch.allclose(z, x * y + x, rtol=1e-6, atol=1e-6)
    assert torch.allclose(w, x * y - y, rtol=1e-6, atol=1e-6)
    # only the pipe's InitBufPool takes UB: poolB reuses poolA's 5 slots of tile bytes + a 32-byte gap
    assert counters["ub_peak_bytes"] == 5 * (tile * 4 + 32)


@pytest.mark.parametrize("mode, message", [
    (U_OVERFLOW, r"UB overflow: \S+:{line}: InitBuffer\(outQ_, 1, bytes\) asks for 512 B for 'outQ_\[0\]' at UB "
                 r"offset 2176, but pool 'poolA_' spans UB \[0, 2176\) \(2176 B\); enlarge the pool"
                 .replace("{line}", str(_line_of("pool.InitBuffer(outQ_, 1, bytes);")))),
    (U_SAME_HANDLE, r"TQue 'inX_' \(VECIN, depth 1, 2 buffer\(s\) of 512 B\): AllocTensor hands out buffer 1, which "
                    r"InitStartBufHandle counted but no InitBufHandle gave an address"),
    (U_TOO_MANY_HANDLES, r"InitBuffer\(spare_, 32\): the handle of 'spare_' is not one of the 5 handles of pool "
                         r"'poolA_'"),
    (U_AFTER_RESET, r"InitBuffer\(inX_, 2, tile_ \* sizeof\(float\)\) hands out 'inX_\[0\]' from pool 'poolA_', "
                    r"which has no memory"),
])
def test_user_pool_misuse_raises(user_lib, mode, message):
    with pytest.raises(EmulatorError, match=r"user_pool_kernel \(block 0 of 3\): .*" + message):
        run_user(user_lib, mode)
