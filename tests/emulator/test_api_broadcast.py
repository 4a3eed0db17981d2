"""BroadCast (asc-devkit 高阶API/张量变换/BroadCast; include/adv_api/pad/broadcast.h): the source's length-1 axis repeated
to the destination's length, dense ND: [m, 1] -> [m, k], [1, k] -> [m, k], [1] -> [k]. Both prototypes, odd and
unaligned k, float/half/int8, several blocks, a poisoned UB (NaN) and output, and the shape and overlap errors."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

WITH_TMP, FRAMEWORK_TMP, DST_IS_SRC, BAD_SRC_AXIS, BAD_OTHER_DIM = range(5)

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

// y (block b at y + b * m * k) = x (block b at x + b * src_n) broadcast; axis 1: [m, 1] -> [m, k], axis 0: [1, k] -> [m, k]
template <class T, int32_t dim, int32_t axis>
__aicore__ inline void Bc(GM_ADDR x, GM_ADDR y, uint32_t m, uint32_t k, uint32_t mode) {
  const uint32_t src_n = dim == 1 ? 1 : (axis == 1 ? m : k), dst_n = m * k, b = GetBlockIdx();
  GlobalTensor<T> xg, yg;
  xg.SetGlobalBuffer((__gm__ T*)x + b * src_n);
  yg.SetGlobalBuffer((__gm__ T*)y + b * dst_n);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inq;
  TQue<TPosition::VECOUT, 1> outq;
  TBuf<TPosition::VECCALC> tmpb;
  pipe.InitBuffer(inq, 1, (src_n * sizeof(T) + 31) / 32 * 32);
  pipe.InitBuffer(outq, 1, (dst_n * sizeof(T) + 31) / 32 * 32);
  pipe.InitBuffer(tmpb, 1024);
  LocalTensor<T> v = inq.AllocTensor<T>();
  DataCopyPad(v, xg, DataCopyExtParams{1, static_cast<uint32_t>(src_n * sizeof(T)), 0, 0, 0},
              DataCopyPadExtParams<T>{false, 0, 0, T(0)});
  inq.EnQue(v);
  v = inq.DeQue<T>();
  LocalTensor<T> out = outq.AllocTensor<T>();
  uint32_t dst_shape[2] = {dim == 1 ? k : m, k};
  uint32_t src_shape[2] = {dim == 1 ? 1 : (axis == 0 ? 1 : m), axis == 1 ? 1 : k};
  if (mode == 3) src_shape[axis] = 2;
  if (mode == 4) src_shape[1 - axis] += 1;
  LocalTensor<uint8_t> tmp = tmpb.Get<uint8_t>();
  if (mode == 0) BroadCast<T, dim, axis>(out, v, dst_shape, src_shape, tmp);
  else if (mode == 2) BroadCast<T, dim, axis>(v, v, dst_shape, src_shape);
  else BroadCast<T, dim, axis>(out, v, dst_shape, src_shape);
  outq.EnQue(out);
  out = outq.DeQue<T>();
  DataCopyPad(yg, out, DataCopyExtParams{1, static_cast<uint32_t>(dst_n * sizeof(T)), 0, 0, 0});
  outq.FreeTensor(out);
  inq.FreeTensor(v);
}
extern "C" __global__ __aicore__ void bc_rows_float(GM_ADDR x, GM_ADDR y, uint32_t m, uint32_t k, uint32_t mode) {
  Bc<float, 2, 1>(x, y, m, k, mode);
}
extern "C" __global__ __aicore__ void bc_cols_half(GM_ADDR x, GM_ADDR y, uint32_t m, uint32_t k, uint32_t mode) {
  Bc<half, 2, 0>(x, y, m, k, mode);
}
extern "C" __global__ __aicore__ void bc_rows_int8(GM_ADDR x, GM_ADDR y, uint32_t m, uint32_t k, uint32_t mode) {
  Bc<int8_t, 2, 1>(x, y, m, k, mode);
}
extern "C" __global__ __aicore__ void bc_1d_float(GM_ADDR x, GM_ADDR y, uint32_t m, uint32_t k, uint32_t mode) {
  Bc<float, 1, 0>(x, y, m, k, mode);
}
"""


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def values(n, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(-100, 100, (n,), generator=g).to(dtype)


@pytest.mark.parametrize("kernel, dtype, axis, blocks, m, k", [
    ("bc_rows_float", torch.float32, 1, 3, 5, 16),
    ("bc_rows_float", torch.float32, 1, 2, 7, 13),   # k not a multiple of 8: the GatherMask path on the NPU
    ("bc_cols_half", torch.float16, 0, 2, 6, 21),
    ("bc_rows_int8", torch.int8, 1, 4, 3, 33),
    ("bc_1d_float", torch.float32, None, 2, 1, 37),
])
@pytest.mark.parametrize("mode", [WITH_TMP, FRAMEWORK_TMP])
def test_broadcast(lib, kernel, dtype, axis, blocks, m, k, mode):
    src_n = 1 if axis is None else (m if axis == 1 else k)
    x = values(blocks * src_n, dtype, m * k).reshape(blocks, src_n)
    poison = 0x5A if dtype == torch.int8 else float("nan")
    y = torch.full((blocks * m * k,), poison, dtype=dtype)
    lib.launch(kernel, blocks, x.reshape(-1), y, m, k, mode)
    if axis == 1:
        want = x[:, :, None].expand(blocks, m, k)
    elif axis == 0:
        want = x[:, None, :].expand(blocks, m, k)
    else:
        want = x.expand(blocks, k)
    assert torch.equal(y, want.reshape(-1))


def test_dst_overlapping_src_raises(lib):
    with pytest.raises(EmulatorError, match=r"BroadCast: dst UB bytes .* overlap src"):
        lib.launch("bc_rows_float", 1, torch.zeros(8), torch.zeros(8), 8, 1, DST_IS_SRC)  # k = 1: dst fits in src's buffer


@pytest.mark.parametrize("mode, message", [
    (BAD_SRC_AXIS, r"BroadCast: srcShape\[1\] = 2 but axis 1 is the one broadcast, so it must be 1"),
    (BAD_OTHER_DIM, r"BroadCast: srcShape\[0\] = 9 differs from dstShape\[0\] = 8; only axis 1 is broadcast"),
])
def test_shape_errors(lib, mode, message):
    with pytest.raises(EmulatorError, match=message):
        lib.launch("bc_rows_float", 1, torch.zeros(8), torch.zeros(64), 8, 8, mode)
