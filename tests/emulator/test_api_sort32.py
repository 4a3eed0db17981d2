"""Sort32 (asc-devkit 基础API 排序组合 Sort32): per repeat 32 scores sorted descending with their uint32 indices,
as 8-byte (score, index) structures (score in the low 4 B for float / low 2 B for half, index in the high 4 B);
equal scores keep the lower position first; repeats sort independently. Several blocks, half and float, ties,
outputs poisoned; a repeat of 256 raises."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

template <class T>
__aicore__ inline void Body(GM_ADDR x, GM_ADDR idx, GM_ADDR out, int32_t repeat) {
  constexpr uint32_t N = 256;
  GlobalTensor<T> xg;
  xg.SetGlobalBuffer((__gm__ T*)x + GetBlockIdx() * N, N);
  GlobalTensor<uint32_t> ig;
  ig.SetGlobalBuffer((__gm__ uint32_t*)idx + GetBlockIdx() * N, N);
  GlobalTensor<uint8_t> og;
  og.SetGlobalBuffer((__gm__ uint8_t*)out + GetBlockIdx() * N * 8, N * 8);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> qs, qi;
  TQue<TPosition::VECOUT, 1> qo;
  pipe.InitBuffer(qs, 1, N * sizeof(T));
  pipe.InitBuffer(qi, 1, N * 4);
  pipe.InitBuffer(qo, 1, N * 8);
  LocalTensor<T> s = qs.AllocTensor<T>();
  LocalTensor<uint32_t> i = qi.AllocTensor<uint32_t>();
  DataCopy(s, xg, N);
  DataCopy(i, ig, N);
  qs.EnQue(s); qi.EnQue(i);
  s = qs.DeQue<T>(); i = qi.DeQue<uint32_t>();
  LocalTensor<T> d = qo.AllocTensor<T>();
  Duplicate(d.template ReinterpretCast<uint16_t>(), (uint16_t)0xBEEF, N * 4);
  Sort32(d, s, i, repeat);
  qo.EnQue(d);
  d = qo.DeQue<T>();
  DataCopy(og, d.template ReinterpretCast<uint8_t>(), N * 8);
  qo.FreeTensor(d); qs.FreeTensor(s); qi.FreeTensor(i);
}
extern "C" __global__ __aicore__ void sort_float(GM_ADDR x, GM_ADDR idx, GM_ADDR out, int32_t repeat) { Body<float>(x, idx, out, repeat); }
extern "C" __global__ __aicore__ void sort_half(GM_ADDR x, GM_ADDR idx, GM_ADDR out, int32_t repeat) { Body<half>(x, idx, out, repeat); }
"""
N = 256


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def run(lib, dtype, blocks, repeat):
    g = torch.Generator().manual_seed(blocks + repeat)
    x = (torch.randint(-20, 20, (blocks, N), generator=g).float() / 4).to(dtype)  # many ties
    idx = torch.randint(0, 1 << 30, (blocks, N), generator=g, dtype=torch.int64).to(torch.int32)
    out = torch.full((blocks, N * 8), 0x77, dtype=torch.uint8)
    lib.launch("sort_float" if dtype == torch.float32 else "sort_half", blocks, x, idx, out, repeat)
    return x, idx, out


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("blocks, repeat", [(2, 8), (3, 3), (1, 1)])
def test_each_repeat_sorted_descending_with_indices(lib, dtype, blocks, repeat):
    x, idx, out = run(lib, dtype, blocks, repeat)
    slots = out.view(blocks, N, 8)
    for b in range(blocks):
        for r in range(repeat):
            seg = x[b, r * 32:(r + 1) * 32].float()
            order = sorted(range(32), key=lambda i: -seg[i].item())  # stable: lower position first on ties
            got = slots[b, r * 32:(r + 1) * 32]
            scores = got[:, :dtype.itemsize].contiguous().view(dtype).flatten()
            assert torch.equal(scores, x[b, r * 32:(r + 1) * 32][order])
            assert torch.equal(got[:, 4:].contiguous().view(torch.int32).flatten(), idx[b, r * 32:(r + 1) * 32][order])
            if dtype == torch.float16:
                assert (got[:, 2:4] == 0).all()  # the reserved bytes
        assert (slots[b, repeat * 32:] == 0xEF).logical_or(slots[b, repeat * 32:] == 0xBE).all()  # untouched


def test_repeat_out_of_range_raises(lib):
    with pytest.raises(EmulatorError, match="repeatTimes=256"):
        run(lib, torch.float32, 1, 256)
