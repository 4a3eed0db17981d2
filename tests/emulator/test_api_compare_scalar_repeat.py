"""CompareScalar's repeat form (asc-devkit Compare/CompareScalar page, tensor-scalar 高维切分: mask as a count or
mask[2] bits, repeatTimes, UnaryRepeatParams), as cann-ops radius calls it: each repeat writes 256/sizeof(T)
bits, repeats packed; inactive elements' bits are 0. Several blocks, poisoned outputs, a repeat of 256 raises."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void cmp_scalar(GM_ADDR x, GM_ADDR out, float s, int32_t repeat, int32_t mode) {
  constexpr uint32_t N = 1024;
  GlobalTensor<float> xg;
  xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * N, N);
  GlobalTensor<uint8_t> og;
  og.SetGlobalBuffer((__gm__ uint8_t*)out + GetBlockIdx() * (N / 8), N / 8);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> qi;
  TQue<TPosition::VECOUT, 1> qo;
  pipe.InitBuffer(qi, 1, N * sizeof(float));
  pipe.InitBuffer(qo, 1, N / 8);
  LocalTensor<float> v = qi.AllocTensor<float>();
  DataCopy(v, xg, N);
  qi.EnQue(v);
  v = qi.DeQue<float>();
  LocalTensor<uint8_t> bits = qo.AllocTensor<uint8_t>();
  Duplicate(bits.ReinterpretCast<uint16_t>(), (uint16_t)0xA5A5, N / 16);
  UnaryRepeatParams p;
  if (mode == 0) {
    uint64_t mask[2] = {0x00FF00FF00FF00FFull, 0};  // the even bytes' elements of each 64-float repeat
    CompareScalar(bits, v, s, CMPMODE::GT, mask, repeat, p);
  } else {
    CompareScalar(bits, v, s, CMPMODE::LE, (uint64_t)mode, repeat, p);  // the first `mode` elements
  }
  qo.EnQue(bits);
  bits = qo.DeQue<uint8_t>();
  DataCopy(og, bits, N / 8);
  qo.FreeTensor(bits);
  qi.FreeTensor(v);
}
"""
N = 1024


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def run(lib, blocks, repeat, mode, s=0.25):
    x = torch.randn(blocks * N)
    out = torch.full((blocks * N // 8,), 0x3C, dtype=torch.uint8)
    lib.launch("cmp_scalar", blocks, x, out, s, repeat, mode)
    return x, ((out[:, None].int() >> torch.arange(8)) & 1).flatten().bool().view(blocks, N)


@pytest.mark.parametrize("blocks, repeat, mode", [(2, 16, 0), (3, 5, 37), (1, 16, 64)])
def test_repeat_bits(lib, blocks, repeat, mode):
    x, bits = run(lib, blocks, repeat, mode)
    i = torch.arange(64)
    active = (i // 8) % 2 == 0 if mode == 0 else i < mode
    x = x.view(blocks, N)
    want = torch.zeros(blocks, N, dtype=torch.bool)
    for r in range(repeat):
        seg = x[:, r * 64:(r + 1) * 64]
        want[:, r * 64:(r + 1) * 64] = active & (seg > 0.25 if mode == 0 else seg <= 0.25)
    filler = torch.tensor([(0xA5 >> b) & 1 for b in range(8)], dtype=torch.bool).repeat(N // 8)
    want[:, repeat * 64:] = filler[repeat * 64:]  # bits past the repeats keep the Duplicate
    assert torch.equal(bits, want)


def test_repeat_out_of_range_raises(lib):
    with pytest.raises(EmulatorError, match="repeatTimes=256"):
        run(lib, 1, 256, 64)
