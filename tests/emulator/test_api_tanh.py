"""Tanh (adv API, asc-devkit 高阶API/数学计算/Tanh接口/Tanh.md; impl/adv_api/detail/math/tanh/tanh_common_impl.h):
the emulator follows the A2/A3 steps — clip to [-8.8, 8.8], e = exp(2x), (e - 1) / (e + 1) in float, half via
float with CAST_NONE both ways — so float Tanh equals those float32 steps in torch up to Exp's last bit (the
host libm's), and the true tanh within a few ulp. GetTanhMaxMinTmpSize / GetTanhTmpBufferFactorSize give
tanh_tiling_impl.cpp's sizes. Several blocks, odd lengths, outputs poisoned; overlap and a too-small
sharedTmpBuffer raise."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

WITH_TMP, NO_TMP, IN_PLACE, SMALL_TMP = range(4)

SOURCE = r"""
#include "tiling/tiling_api.h"
#include "kernel_operator.h"
using namespace AscendC;

template <class T>
__aicore__ inline void Body(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t per, uint32_t mode) {
  const uint32_t start = GetBlockIdx() * per;
  const uint32_t len = n - start < per ? n - start : per;
  GlobalTensor<T> xg, yg;
  xg.SetGlobalBuffer((__gm__ T*)x + start, len);
  yg.SetGlobalBuffer((__gm__ T*)y + start, len);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inQ;
  TQue<TPosition::VECOUT, 1> outQ;
  TBuf<TPosition::VECCALC> tmp;
  pipe.InitBuffer(inQ, 1, per * sizeof(T));
  pipe.InitBuffer(outQ, 1, per * sizeof(T));
  uint32_t maxTmp = 0, minTmp = 0;
  GetTanhMaxMinTmpSize(ge::Shape({static_cast<int64_t>(per)}), sizeof(T), false, maxTmp, minTmp);
  pipe.InitBuffer(tmp, mode == 3 ? 128 : minTmp);
  LocalTensor<T> src = inQ.AllocTensor<T>();
  DataCopyPad(src, xg, DataCopyExtParams{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0},
              DataCopyPadExtParams<T>{false, 0, 0, 0});
  inQ.EnQue(src);
  src = inQ.DeQue<T>();
  LocalTensor<T> dst = outQ.AllocTensor<T>();
  if (mode == 0 || mode == 3) Tanh(dst, src, tmp.Get<uint8_t>(), len);
  else if (mode == 1) Tanh(dst, src, len);
  else Tanh(src, src, len);
  outQ.EnQue(dst);
  dst = outQ.DeQue<T>();
  DataCopyPad(yg, dst, DataCopyExtParams{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0});
  outQ.FreeTensor(dst);
  inQ.FreeTensor(src);
}
extern "C" __global__ __aicore__ void tanh_float(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t per, uint32_t mode) {
  Body<float>(x, y, n, per, mode);
}
extern "C" __global__ __aicore__ void tanh_half(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t per, uint32_t mode) {
  Body<half>(x, y, n, per, mode);
}
extern "C" __global__ __aicore__ void tanh_sizes(GM_ADDR out, uint32_t n) {
  uint32_t* o = (uint32_t*)out;
  GetTanhMaxMinTmpSize(ge::Shape({static_cast<int64_t>(n)}), 2, false, o[0], o[1]);
  GetTanhMaxMinTmpSize(ge::Shape({static_cast<int64_t>(n)}), 4, false, o[2], o[3]);
  GetTanhTmpBufferFactorSize(2, o[4], o[5]);
  GetTanhTmpBufferFactorSize(4, o[6], o[7]);
}
"""


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def tanh_steps(x):
    c = x.float().clamp(-8.8, 8.8) * 2
    e = torch.exp(c)
    return (e + -1.0) / (e + 1.0)


def run(lib, dtype, n, per, mode):
    x = torch.linspace(-12, 12, n).to(dtype)
    x[::5] = (torch.randn(len(x[::5])) * 0.3).to(dtype)
    y = torch.full((n,), float("nan"), dtype=dtype)
    lib.launch("tanh_float" if dtype == torch.float32 else "tanh_half", -(-n // per), x, y, n, per, mode)
    return x, y


@pytest.mark.parametrize("mode", [WITH_TMP, NO_TMP])
@pytest.mark.parametrize("n, per", [(999, 336), (4096, 1024), (5, 64)])
def test_float_tanh_follows_the_npu_steps(lib, mode, n, per):
    x, y = run(lib, torch.float32, n, per, mode)
    torch.testing.assert_close(y, tanh_steps(x), rtol=4e-7, atol=1e-7)  # Exp: the host libm's last bit
    assert (y.double() - torch.tanh(x.double())).abs().max() < 1e-6


def test_half_tanh_rounds_the_float_result(lib):
    x, y = run(lib, torch.float16, 1000, 256, WITH_TMP)
    want = tanh_steps(x).half()
    assert (y.float() - want.float()).abs().max() <= 2 ** -11  # at most one half ulp off through Exp's last bit
    assert not torch.isnan(y).any()


def test_host_sizes_are_the_devkit_ones(lib):
    out = torch.zeros(8, dtype=torch.int32)
    lib.launch("tanh_sizes", 1, out, 1000)
    # half: k = 4, float: k = 1 (tanh_tiling_impl.cpp); min k*256 B, max k*max(n*typeSize, 256 B)
    assert out.tolist() == [4 * 2000, 4 * 256, 4000, 256, 4, 0, 1, 0]


@pytest.mark.parametrize("mode, message", [(IN_PLACE, "overlap src"), (SMALL_TMP, "sharedTmpBuffer holds 128 B")])
def test_misuse_raises(lib, mode, message):
    with pytest.raises(EmulatorError, match=message):
        run(lib, torch.float16, 100, 128, mode)
