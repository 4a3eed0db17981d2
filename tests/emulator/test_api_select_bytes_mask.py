"""Select with a bytes mask (asc-devkit 高阶API/筛选/Select, SelectWithBytesMask its earlier name):
dst = mask == 0 ? src0 : src1, one of them a tensor and the other a scalar, over firstAxis rows of srcLastAxis
elements with mask rows maskLastAxis long (their tail ignored). bool and int16 masks, half and float, several blocks,
in place (dst = the source, which the page allows), poisoned output, and the page's shape errors."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

TENSOR_FIRST, SCALAR_FIRST, IN_PLACE, OLD_NAME = range(4)

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

// block b: rows x cols of x, rows x mcols of the mask; info fields given separately so that the tests can break them
template <class T, class U>
__aicore__ inline void Sel(GM_ADDR x, GM_ADDR m, GM_ADDR y, uint32_t rows, uint32_t cols, uint32_t mcols,
                           uint32_t info_rows, uint32_t info_cols, uint32_t info_mcols, float scalar, uint32_t mode) {
  const uint32_t b = GetBlockIdx(), n = rows * cols, mn = rows * mcols;
  GlobalTensor<T> xg, yg;
  GlobalTensor<U> mg;
  xg.SetGlobalBuffer((__gm__ T*)x + b * n);
  yg.SetGlobalBuffer((__gm__ T*)y + b * n);
  mg.SetGlobalBuffer((__gm__ U*)m + b * mn);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> xq, mq;
  TQue<TPosition::VECOUT, 1> yq;
  TBuf<TPosition::VECCALC> tmpb;
  pipe.InitBuffer(xq, 1, n * sizeof(T));
  pipe.InitBuffer(mq, 1, mn * sizeof(U));
  pipe.InitBuffer(yq, 1, n * sizeof(T));
  pipe.InitBuffer(tmpb, 1024);
  LocalTensor<T> v = xq.AllocTensor<T>();
  LocalTensor<U> mk = mq.AllocTensor<U>();
  DataCopy(v, xg, n);
  DataCopy(mk, mg, mn);
  xq.EnQue(v);
  mq.EnQue(mk);
  v = xq.DeQue<T>();
  mk = mq.DeQue<U>();
  LocalTensor<T> out = yq.AllocTensor<T>();
  SelectWithBytesMaskShapeInfo info;
  info.firstAxis = info_rows;
  info.srcLastAxis = info_cols;
  info.maskLastAxis = info_mcols;
  LocalTensor<uint8_t> tmp = tmpb.Get<uint8_t>();
  const T s = static_cast<T>(scalar);
  if (mode == 0) Select(out, v, s, mk, tmp, info);
  else if (mode == 1) Select(out, s, v, mk, tmp, info);
  else if (mode == 2) Select(v, v, s, mk, tmp, info);
  else SelectWithBytesMask(out, s, v, mk, tmp, info);
  if (mode == 2) DataCopy(out, v, n);
  yq.EnQue(out);
  out = yq.DeQue<T>();
  DataCopy(yg, out, n);
  yq.FreeTensor(out);
  xq.FreeTensor(v);
  mq.FreeTensor(mk);
}
extern "C" __global__ __aicore__ void sel_half_bool(GM_ADDR x, GM_ADDR m, GM_ADDR y, uint32_t rows, uint32_t cols,
                                                    uint32_t mcols, uint32_t ir, uint32_t ic, uint32_t im, float s,
                                                    uint32_t mode) {
  Sel<half, bool>(x, m, y, rows, cols, mcols, ir, ic, im, s, mode);
}
extern "C" __global__ __aicore__ void sel_float_int16(GM_ADDR x, GM_ADDR m, GM_ADDR y, uint32_t rows, uint32_t cols,
                                                      uint32_t mcols, uint32_t ir, uint32_t ic, uint32_t im, float s,
                                                      uint32_t mode) {
  Sel<float, int16_t>(x, m, y, rows, cols, mcols, ir, ic, im, s, mode);
}
"""
KERNELS = {(torch.float16, torch.bool): "sel_half_bool", (torch.float32, torch.int16): "sel_float_int16"}


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def run(lib, dtype, mtype, blocks, rows, cols, mcols, mode, info=None):
    g = torch.Generator().manual_seed(blocks * 100 + rows * 10 + cols)
    x = torch.randn(blocks, rows, cols, generator=g).to(dtype)
    raw = torch.randint(0, 3, (blocks, rows, mcols), generator=g)  # 0, 1, 2: nonzero values other than 1 count too
    mask = (raw > 0) if mtype == torch.bool else (raw * 7 - 7).to(mtype)  # int16: -7, 0, 7
    y = torch.full((blocks, rows, cols), float("nan"), dtype=dtype)
    ir, ic, im = info or (rows, cols, mcols)
    lib.launch(KERNELS[(dtype, mtype)], blocks, x.reshape(-1), mask.reshape(-1), y.reshape(-1), rows, cols, mcols,
               ir, ic, im, 2.5, mode)
    zero = (mask[..., :cols] == 0)
    s = torch.tensor(2.5, dtype=dtype)
    want = torch.where(zero, x, s) if mode in (TENSOR_FIRST, IN_PLACE) else torch.where(zero, s, x)
    return y, want


@pytest.mark.parametrize("dtype, mtype", list(KERNELS))
@pytest.mark.parametrize("mode", [TENSOR_FIRST, SCALAR_FIRST, IN_PLACE, OLD_NAME])
@pytest.mark.parametrize("blocks, rows, cols, mcols", [(1, 2, 16, 32), (3, 5, 32, 32), (2, 3, 48, 64)])
def test_select(lib, dtype, mtype, mode, blocks, rows, cols, mcols):
    y, want = run(lib, dtype, mtype, blocks, rows, cols, mcols, mode)
    assert torch.equal(y, want)


@pytest.mark.parametrize("info, message", [
    ((2, 12, 32), r"srcLastAxis = 12 elements is 24 B, not a multiple of 32 B"),
    ((2, 16, 8), r"maskLastAxis = 8 must be a multiple of 16 elements and of 32 B"),
    ((1, 32, 32), r"firstAxis \* srcLastAxis = 32 but the source tensor holds 64 elements"),
    ((2, 48, 32), r"maskLastAxis = 32 is shorter than srcLastAxis = 48"),
])
def test_shape_errors(lib, info, message):
    with pytest.raises(EmulatorError, match=r"Select\(SelectWithBytesMaskShapeInfo\): " + message):
        run(lib, torch.float16, torch.bool, 1, 2, 32, 32, TENSOR_FIRST, info=info)
