"""Exp with a Taylor expansion level (asc-devkit 高阶API/数学计算/Exp; impl exp_common_impl.h): exp(floor(x)) times the
Taylor sum of exp(x - floor(x)) to taylorExpandLevel terms, in float (half through float). Checked against the same
steps in float32 (level 3, far from the true exp) and against torch.exp (level 15), both prototypes, in place, odd
counts over several blocks, poisoned outputs, and a too-small tmp buffer."""
import numpy as np
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

WITH_TMP, FRAMEWORK_TMP, IN_PLACE, SMALL_TMP = range(4)

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

template <class T, uint8_t level>
__aicore__ inline void TaylorExp(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t mode) {
  const uint32_t b = GetBlockIdx();
  GlobalTensor<T> xg, yg;
  xg.SetGlobalBuffer((__gm__ T*)x + b * n);
  yg.SetGlobalBuffer((__gm__ T*)y + b * n);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inq;
  TQue<TPosition::VECOUT, 1> outq;
  TBuf<TPosition::VECCALC> tmpb;
  const uint32_t bytes = (n * sizeof(T) + 31) / 32 * 32;
  pipe.InitBuffer(inq, 1, bytes);
  pipe.InitBuffer(outq, 1, bytes);
  pipe.InitBuffer(tmpb, mode == 3 ? 128 : 4096);
  LocalTensor<T> v = inq.AllocTensor<T>();
  DataCopyPad(v, xg, DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0},
              DataCopyPadExtParams<T>{false, 0, 0, T(0)});
  inq.EnQue(v);
  v = inq.DeQue<T>();
  LocalTensor<T> out = outq.AllocTensor<T>();
  LocalTensor<uint8_t> tmp = tmpb.Get<uint8_t>();
  if (mode == 1) Exp<T, level, false>(out, v, n);
  else if (mode == 2) { Exp<T, level, false>(v, v, tmp, n); DataCopy(out, v, bytes / sizeof(T)); }
  else Exp<T, level, false>(out, v, tmp, n);
  outq.EnQue(out);
  out = outq.DeQue<T>();
  DataCopyPad(yg, out, DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0});
  outq.FreeTensor(out);
  inq.FreeTensor(v);
}
extern "C" __global__ __aicore__ void exp3_float(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t mode) { TaylorExp<float, 3>(x, y, n, mode); }
extern "C" __global__ __aicore__ void exp15_float(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t mode) { TaylorExp<float, 15>(x, y, n, mode); }
extern "C" __global__ __aicore__ void exp15_half(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t mode) { TaylorExp<half, 15>(x, y, n, mode); }
"""


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def inputs(blocks, n, dtype):
    g = torch.Generator().manual_seed(blocks * 1000 + n)
    return (torch.rand(blocks * n, generator=g) * 16 - 8).to(dtype)


def taylor_steps(x, level):
    """The implementation's float steps, each rounded to float32 (numpy), exp of the integer part by numpy."""
    x = x.numpy().astype(np.float32)
    i = np.floor(x)
    d = (x - i).astype(np.float32)
    p, res = d.copy(), (d + np.float32(1)).astype(np.float32)
    for k in range(2, level + 1):
        p = (d * p).astype(np.float32)
        p = (p * (np.float32(1) / np.float32(k))).astype(np.float32)
        res = (res + p).astype(np.float32)
    return torch.from_numpy((res * np.exp(i).astype(np.float32)).astype(np.float32))


@pytest.mark.parametrize("blocks, n", [(1, 7), (3, 100), (2, 333)])
@pytest.mark.parametrize("mode", [WITH_TMP, FRAMEWORK_TMP, IN_PLACE])
def test_level_3_follows_the_implementation(lib, blocks, n, mode):
    x = inputs(blocks, n, torch.float32)
    y = torch.full_like(x, float("nan"))
    lib.launch("exp3_float", blocks, x, y, n, mode)
    want = taylor_steps(x, 3)
    assert torch.allclose(y, want, rtol=2e-6, atol=0)  # exp(integer) by the host libm: its last bit may differ
    assert not torch.allclose(y, torch.exp(x), rtol=1e-3)  # three terms are far from exp


@pytest.mark.parametrize("kernel, dtype, rtol", [("exp15_float", torch.float32, 3e-6), ("exp15_half", torch.float16, 1e-3)])
def test_level_15_is_exp(lib, kernel, dtype, rtol):
    x = inputs(2, 257, dtype)
    y = torch.full_like(x, float("nan"))
    lib.launch(kernel, 2, x, y, 257, WITH_TMP)
    assert torch.allclose(y.float(), torch.exp(x.float()), rtol=rtol, atol=0)


def test_too_small_tmp_raises(lib):
    with pytest.raises(EmulatorError, match=r"Exp\(taylorExpandLevel\): sharedTmpBuffer holds 128 B; the "
                                            r"implementation splits it into 4 float tensors of at least 16 elements"):
        lib.launch("exp15_half", 1, inputs(1, 16, torch.float16), torch.zeros(16, dtype=torch.float16), 16, SMALL_TMP)
