"""PairReduceSum (asc-devkit 基础API 归约计算 PairReduceSum): per repeat, adjacent (even, odd) pairs summed into
128 bytes of results, dstRepStride in 128-byte units; continuous and bit masks, counter mode (isamax's use),
half and float, several blocks, poisoned outputs; a repeat count outside [0, 255] raises."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

template <class T>
__aicore__ inline void Body(GM_ADDR x, GM_ADDR y, int32_t repeat, int32_t mask, uint32_t counter) {
  constexpr int32_t TILE = 4096;
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inQ;
  TQue<TPosition::VECOUT, 1> outQ;
  pipe.InitBuffer(inQ, 1, TILE * sizeof(T));
  pipe.InitBuffer(outQ, 1, TILE * sizeof(T));
  GlobalTensor<T> xg, yg;
  xg.SetGlobalBuffer((__gm__ T*)x + GetBlockIdx() * TILE, TILE);
  yg.SetGlobalBuffer((__gm__ T*)y + GetBlockIdx() * TILE, TILE);
  LocalTensor<T> src = inQ.AllocTensor<T>();
  DataCopy(src, xg, TILE);
  inQ.EnQue(src);
  src = inQ.DeQue<T>();
  LocalTensor<T> dst = outQ.AllocTensor<T>();
  DataCopy(dst, src, TILE);  // untouched results keep the input, so a wrong skip shows
  if (counter) {
    SetMaskCount();
    SetVectorMask<T, MaskMode::COUNTER>(0, counter);
    PairReduceSum<T, false>(dst, src, 1, MASK_PLACEHOLDER, 1, 1, 8);
    SetMaskNorm();
    ResetMask();
  } else if (mask < 0) {  // bit mask: every other element (the even ones) active
    uint64_t bits[2] = {0x5555555555555555ull, sizeof(T) == 2 ? 0x5555555555555555ull : 0};
    PairReduceSum(dst, src, repeat, bits, 1, 1, 8);
  } else {
    PairReduceSum(dst, src, repeat, mask, 1, 1, 8);
  }
  outQ.EnQue(dst);
  dst = outQ.DeQue<T>();
  DataCopy(yg, dst, TILE);
  outQ.FreeTensor(dst);
  inQ.FreeTensor(src);
}
extern "C" __global__ __aicore__ void pair_float(GM_ADDR x, GM_ADDR y, int32_t repeat, int32_t mask, uint32_t counter) {
  Body<float>(x, y, repeat, mask, counter);
}
extern "C" __global__ __aicore__ void pair_half(GM_ADDR x, GM_ADDR y, int32_t repeat, int32_t mask, uint32_t counter) {
  Body<half>(x, y, repeat, mask, counter);
}
"""
TILE = 4096


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def reference(x, repeat, active):
    """Per block: result k of repeat r at r*per/2 + k = the active elements of pair k summed; others keep x."""
    per = 256 // x.element_size()
    y = x.clone()
    for r in range(repeat):
        seg = x[:, r * per:(r + 1) * per].float() * active.float()
        pairs = seg.view(x.shape[0], per // 2, 2).sum(-1)
        on = active.view(per // 2, 2).any(-1)
        part = y[:, r * per // 2:(r + 1) * per // 2]
        part[:, on] = pairs[:, on].to(x.dtype)
    return y


def run(lib, dtype, blocks, repeat, mask, counter=0):
    x = torch.randn(blocks, TILE).to(dtype)
    y = torch.full_like(x, float("nan"))
    lib.launch("pair_float" if dtype == torch.float32 else "pair_half", blocks, x, y, repeat, mask, counter)
    return x, y


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("repeat, mask, blocks", [(3, 64, 2), (5, 37, 3), (2, -1, 1)])
def test_pairs_of_each_repeat(lib, dtype, repeat, mask, blocks):
    per = 256 // (4 if dtype == torch.float32 else 2)
    if mask < 0:
        active = torch.arange(per) % 2 == 0
    else:
        active = torch.arange(per) < min(mask, per)
    x, y = run(lib, dtype, blocks, repeat, mask)
    assert torch.equal(y, reference(x, repeat, active))


def test_counter_mode_takes_the_first_count_elements(lib):
    x, y = run(lib, torch.float32, 2, 0, 0, counter=51)
    assert torch.equal(y, reference(x, 1, torch.arange(64) < 51))


def test_repeat_out_of_range_raises(lib):
    with pytest.raises(EmulatorError, match="repeatTimes=256"):
        run(lib, torch.float32, 1, 256, 64)
