"""Mean (asc-devkit 高阶API/归约操作/Mean; impl/adv_api/detail/reduce/mean/mean_common_impl.h): dst[r] = the mean of
the first n of row r's inner elements. Integer-valued rows make the tree sums exact, so the results are checked
bit for bit against sum * (1/n rounded to the type); random rows against float64. The padding between n and inner
is NaN (it must not be read), UB starts as NaN, several blocks, odd n, both prototypes, half with a float
accumulator, and the documented errors."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

WITH_TMP, FRAMEWORK_TMP, DST_IS_SRC, SMALL_TMP = range(4)

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

template <class T, class Acc>
__aicore__ inline void RowMeans(GM_ADDR x, GM_ADDR y, uint32_t outter, uint32_t inner, uint32_t n, uint32_t tmp_bytes,
                                uint32_t mode) {
  const uint32_t b = GetBlockIdx();
  GlobalTensor<T> xg, yg;
  xg.SetGlobalBuffer((__gm__ T*)x + b * outter * inner);
  yg.SetGlobalBuffer((__gm__ T*)y + b * outter);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inq;
  TQue<TPosition::VECOUT, 1> outq;
  TBuf<TPosition::VECCALC> tmpb;
  const uint32_t rows = outter > 0 ? outter : 1;  // outter 0 reaches Mean's own check
  pipe.InitBuffer(inq, 1, rows * inner * sizeof(T));
  pipe.InitBuffer(outq, 1, (rows * sizeof(T) + 31) / 32 * 32);
  pipe.InitBuffer(tmpb, mode == 3 ? 32 : tmp_bytes);
  LocalTensor<T> v = inq.AllocTensor<T>();
  DataCopyPad(v, xg, DataCopyExtParams{1, static_cast<uint32_t>(outter * inner * sizeof(T)), 0, 0, 0},
              DataCopyPadExtParams<T>{false, 0, 0, T(0)});
  inq.EnQue(v);
  v = inq.DeQue<T>();
  LocalTensor<T> out = outq.AllocTensor<T>();
  MeanParams p;
  p.outter = outter;
  p.inner = inner;
  p.n = n;
  LocalTensor<uint8_t> tmp = tmpb.Get<uint8_t>();
  if (mode == 1) Mean<T, Acc>(out, v, p);
  else if (mode == 2) Mean<T, Acc>(v, v, tmp, p);
  else Mean<T, Acc>(out, v, tmp, p);
  outq.EnQue(out);
  out = outq.DeQue<T>();
  DataCopyPad(yg, out, DataCopyExtParams{1, static_cast<uint32_t>(outter * sizeof(T)), 0, 0, 0});
  outq.FreeTensor(out);
  inq.FreeTensor(v);
}
extern "C" __global__ __aicore__ void mean_float(GM_ADDR x, GM_ADDR y, uint32_t outter, uint32_t inner, uint32_t n,
                                            uint32_t tmp_bytes, uint32_t mode) {
  RowMeans<float, float>(x, y, outter, inner, n, tmp_bytes, mode);
}
extern "C" __global__ __aicore__ void mean_half(GM_ADDR x, GM_ADDR y, uint32_t outter, uint32_t inner, uint32_t n,
                                            uint32_t tmp_bytes, uint32_t mode) {
  RowMeans<half, half>(x, y, outter, inner, n, tmp_bytes, mode);
}
extern "C" __global__ __aicore__ void mean_half_acc_float(GM_ADDR x, GM_ADDR y, uint32_t outter, uint32_t inner, uint32_t n,
                                            uint32_t tmp_bytes, uint32_t mode) {
  RowMeans<half, float>(x, y, outter, inner, n, tmp_bytes, mode);
}
"""
KERNELS = {(torch.float32, torch.float32): "mean_float", (torch.float16, torch.float16): "mean_half",
           (torch.float16, torch.float32): "mean_half_acc_float"}


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def inner_of(n, dtype):
    per_block = 32 // torch.tensor([], dtype=dtype).element_size()
    return (n + per_block - 1) // per_block * per_block


def rows(blocks, outter, n, inner, dtype, integers):
    g = torch.Generator().manual_seed(blocks * 7919 + outter * 31 + n)
    vals = torch.randint(-8, 9, (blocks, outter, n), generator=g).float() if integers else \
        torch.randn(blocks, outter, n, generator=g)
    x = torch.full((blocks, outter, inner), float("nan"))
    x[..., :n] = vals
    return x.to(dtype), vals


def launch(lib, dtype, acc, blocks, outter, n, mode=WITH_TMP, integers=True):
    inner = inner_of(n, dtype)
    x, vals = rows(blocks, outter, n, inner, dtype, integers)
    y = torch.full((blocks * outter,), float("nan"), dtype=dtype)
    tmp_bytes = 4096 + inner * 4
    lib.launch(KERNELS[(dtype, acc)], blocks, x.reshape(-1), y, outter, inner, n, tmp_bytes, mode)
    return y.reshape(blocks, outter), vals


@pytest.mark.parametrize("dtype, acc", list(KERNELS))
@pytest.mark.parametrize("blocks, outter, n", [(1, 1, 5), (3, 4, 100), (2, 3, 333), (2, 1, 1000)])
def test_integer_rows_are_exact(lib, dtype, acc, blocks, outter, n):
    y, vals = launch(lib, dtype, acc, blocks, outter, n)
    scale = torch.tensor(1.0 / n, dtype=torch.float32).to(acc).float()
    want = (vals.sum(-1) * scale).to(acc).to(dtype)  # integer sums: every tree order gives the same sum
    assert torch.equal(y, want)


@pytest.mark.parametrize("dtype, acc, tol", [(torch.float32, torch.float32, 1e-6), (torch.float16, torch.float32, 1e-3),
                                             (torch.float16, torch.float16, 1e-2)])
def test_random_rows_and_the_framework_prototype(lib, dtype, acc, tol):
    y, vals = launch(lib, dtype, acc, 2, 3, 777, mode=FRAMEWORK_TMP, integers=False)
    want = vals.double().mean(-1)
    assert torch.allclose(y.double(), want, atol=tol, rtol=tol)


@pytest.mark.parametrize("kernel_args, message", [
    ((1, 12, 5), r"MeanParams.inner = 12 elements is 48 B, not a multiple of 32 B"),
    ((1, 8, 9), r"MeanParams.n = 9 must be in \[1, inner = 8\]"),
    ((1, 8, 0), r"MeanParams.n = 0 must be in \[1, inner = 8\]"),
    ((0, 8, 5), r"MeanParams.outter is 0"),
])
def test_documented_parameter_errors(lib, kernel_args, message):
    outter, inner, n = kernel_args
    x = torch.zeros(max(outter, 1) * inner)
    with pytest.raises(EmulatorError, match=r"Mean: " + message):
        lib.launch("mean_float", 1, x, torch.zeros(8), outter, inner, n, 1024, WITH_TMP)


def test_dst_overlapping_src_raises(lib):
    with pytest.raises(EmulatorError, match=r"Mean: dst overlaps src"):
        lib.launch("mean_float", 1, torch.zeros(64), torch.zeros(8), 1, 64, 64, 1024, DST_IS_SRC)


def test_too_small_tmp_raises(lib):
    # half with a float accumulator needs inner * 4 B plus one 32-B slot per repeat: 1024 * 4 + 32 B here
    with pytest.raises(EmulatorError, match=r"Mean: sharedTmpBuffer holds 32 B; the implementation needs 4128 B"):
        lib.launch("mean_half_acc_float", 1, torch.zeros(1024, dtype=torch.float16), torch.zeros(8, dtype=torch.float16),
                   1, 1024, 1000, 4096, SMALL_TMP)
