"""Kernel-side includes of op_host headers (h23_blockers 20: tiling/platform/platform_ascendc.h and
register/op_def_registry.h, which cann-ops tiling headers include next to their tiling struct) resolve, and
SoftMax without sumTensor/maxTensor (asc-devkit include/adv_api/activation/softmax.h: SoftMax(dst, src, tiling,
shapeInfo), also with a sharedTmpBuffer) writes dst only. Several blocks, odd valid row lengths, poisoned output,
a row length beyond the stride raises."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

ROWS, STRIDE = 4, 64  # per block

SOURCE = r"""
#include "tiling/platform/platform_ascendc.h"
#include "register/op_def_registry.h"
#include "tiling/tiling_api.h"
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void softmax_rows(GM_ADDR x, GM_ADDR y, uint32_t validK, uint32_t withTmp) {
  constexpr uint32_t ROWS = 4, STRIDE = 64, N = ROWS * STRIDE;
  GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * N, N);
  yg.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * N, N);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inQ;
  TQue<TPosition::VECOUT, 1> outQ;
  TBuf<TPosition::VECCALC> tmp;
  pipe.InitBuffer(inQ, 1, N * sizeof(float));
  pipe.InitBuffer(outQ, 1, N * sizeof(float));
  pipe.InitBuffer(tmp, 4096);
  LocalTensor<float> src = inQ.AllocTensor<float>();
  DataCopy(src, xg, N);
  inQ.EnQue(src);
  src = inQ.DeQue<float>();
  LocalTensor<float> dst = outQ.AllocTensor<float>();
  Duplicate(dst, -1.0f, N);  // columns past validK keep this
  SoftMaxTiling tiling{};
  SoftMaxShapeInfo info{ROWS, STRIDE, ROWS, validK};
  if (withTmp) {
    SoftMax<float>(dst, src, tmp.Get<uint8_t>(), tiling, info);
  } else {
    SoftMax<float>(dst, src, tiling, info);
  }
  outQ.EnQue(dst);
  dst = outQ.DeQue<float>();
  DataCopy(yg, dst, N);
  outQ.FreeTensor(dst);
  inQ.FreeTensor(src);
}
"""


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


@pytest.mark.parametrize("valid_k, with_tmp, blocks", [(37, 0, 3), (64, 1, 2), (1, 0, 1)])
def test_rows_softmax_dst_only(lib, valid_k, with_tmp, blocks):
    x = torch.randn(blocks * ROWS, STRIDE) * 3
    y = torch.full_like(x, float("nan"))
    lib.launch("softmax_rows", blocks, x, y, valid_k, with_tmp)
    want = torch.full_like(x, -1.0)
    want[:, :valid_k] = torch.softmax(x[:, :valid_k], -1)
    torch.testing.assert_close(y, want, rtol=2e-6, atol=1e-7)


def test_valid_length_beyond_stride_raises(lib):
    with pytest.raises(EmulatorError, match="oriSrcK=65 exceeds srcK=64"):
        lib.launch("softmax_rows", 1, torch.zeros(ROWS * STRIDE), torch.zeros(ROWS * STRIDE), 65, 0)
