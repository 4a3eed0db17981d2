"""The MAX_MIN_CNT register after a multi-repeat WholeReduceMax/WholeReduceMin (ReduceRepeat<MAX/MIN>): the
extremum over ALL repeats and the index of its first occurrence counted from src's start (asc-devkit
GetReduceRepeatMaxMinSpr(ISASI): "所有repeat内的最值及其索引"; asc_get_reduce_max_cnt: 256 halves in 2 repeats give
index 255), while dst still gets one (value, in-repeat index) pair per repeat. cann-ops' isamax/isamin/icamax/
icamin read it after a counter-mode WholeReduceMax over a block's whole slice. Several blocks, half and float,
counter and normal mask modes, the extremum placed in a non-last repeat, ties across repeats; outputs poisoned.
GetReduceRepeatMaxMinSpr (the 9.1 name) reads the same register; its value-only prototype raises (not on A2/A3)."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

COUNTER_MAX, NORMAL_MIN, VALUE_ONLY_9_1 = range(3)
TILE = 2048

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

template <class T>
__aicore__ inline void Body(GM_ADDR x, GM_ADDR out, GM_ADDR pairs, uint32_t count, uint32_t mode) {
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inQ;
  TBuf<TPosition::VECCALC> dstBuf;
  pipe.InitBuffer(inQ, 1, 2048 * sizeof(T));
  pipe.InitBuffer(dstBuf, 256 * sizeof(T));
  GlobalTensor<T> xg, pg;
  xg.SetGlobalBuffer((__gm__ T*)x + GetBlockIdx() * 2048, 2048);
  pg.SetGlobalBuffer((__gm__ T*)pairs + GetBlockIdx() * 64, 64);
  GlobalTensor<uint32_t> og;
  og.SetGlobalBuffer((__gm__ uint32_t*)out + GetBlockIdx() * 2, 2);
  LocalTensor<T> src = inQ.AllocTensor<T>();
  DataCopy(src, xg, 2048);
  inQ.EnQue(src);
  src = inQ.DeQue<T>();
  LocalTensor<T> dst = dstBuf.Get<T>();
  constexpr uint32_t per = 256 / sizeof(T);
  if (mode == 0) {  // cann-ops isamax's pattern: counter mode over `count` elements, several repeats
    SetMaskCount();
    SetVectorMask<T, MaskMode::COUNTER>(0, count);
    WholeReduceMax<T, false>(dst, src, MASK_PLACEHOLDER, 1, 1, 1, 8);
    SetMaskNorm();
    ResetMask();
  } else if (mode == 2) {
    WholeReduceMax(dst, src, (int32_t)per, 1, 1, 1, 8);
  } else {  // normal mode: a full mask, count / per repeats, continuous (srcRepStride 8)
    WholeReduceMin(dst, src, (int32_t)per, (int32_t)(count / per), 1, 1, 8);
  }
  event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
  SetFlag<HardEvent::V_S>(e);
  WaitFlag<HardEvent::V_S>(e);
  uint32_t value = 0, index = 0;
  GetReduceMaxMinCount<T>(value, index);
  T value9, index9;  // the 9.1 name reads the same register
  GetReduceRepeatMaxMinSpr<T>(value9, index9);
  uint32_t value9Bits = 0, index9Bits = 0;
  std::memcpy(&value9Bits, &value9, sizeof(T));
  std::memcpy(&index9Bits, &index9, sizeof(T));
  if (value9Bits != value || index9Bits != index) index = 0xFFFFFFFFu;
  if (mode == 2) GetReduceRepeatMaxMinSpr<T>(value9);  // the value-only prototype: not on A2/A3
  og.SetValue(0, value);
  og.SetValue(1, index);
  event_t v2m = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::S_MTE3));
  SetFlag<HardEvent::S_MTE3>(v2m);
  WaitFlag<HardEvent::S_MTE3>(v2m);
  DataCopy(pg, dst, 64);  // the per-repeat (value, index) pairs of the first 32 repeats
  inQ.FreeTensor(src);
}

extern "C" __global__ __aicore__ void reg_float(GM_ADDR x, GM_ADDR out, GM_ADDR pairs, uint32_t count, uint32_t mode) {
  Body<float>(x, out, pairs, count, mode);
}
extern "C" __global__ __aicore__ void reg_half(GM_ADDR x, GM_ADDR out, GM_ADDR pairs, uint32_t count, uint32_t mode) {
  Body<half>(x, out, pairs, count, mode);
}
"""


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def launch(lib, x, count, mode):
    blocks = x.shape[0]
    out = torch.full((blocks, 2), 0xDEADBEEF, dtype=torch.int64).to(torch.uint32)  # poisoned
    pairs = torch.full((blocks, 64), float("nan"), dtype=x.dtype)  # poisoned
    lib.launch("reg_float" if x.dtype == torch.float32 else "reg_half", blocks, x, out, pairs, count, mode)
    return out.to(torch.int64), pairs


def bits(v, dtype):
    int_type = torch.int32 if dtype == torch.float32 else torch.int16
    return v.to(dtype).contiguous().view(int_type).to(torch.int64) & (0xFFFFFFFF if dtype == torch.float32 else 0xFFFF)


def draw(dtype, blocks, seed):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(blocks, TILE, generator=g) * 100).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("mode, count", [(COUNTER_MAX, 1999), (COUNTER_MAX, 400), (NORMAL_MIN, 1536)])
def test_register_holds_the_extremum_over_all_repeats(lib, dtype, mode, count):
    blocks = 3
    x = draw(dtype, blocks, count)
    per = 256 // x.element_size()
    # each block's extremum in a different repeat, never the last one
    at = torch.tensor([5, per + 7, 2 * per + 1])
    x[torch.arange(blocks), at] = 200.0 if mode == COUNTER_MAX else -1.0
    out, pairs = launch(lib, x, count, mode)
    assert torch.equal(out[:, 1], at)
    assert torch.equal(out[:, 0], bits(x[torch.arange(blocks), at], dtype))
    # dst still holds each repeat's own (value, index-in-repeat) pair
    head = x[:, :count].float()
    repeats = min(32, -(-count // per))
    for r in range(repeats):
        chunk = head[:, r * per:(r + 1) * per]
        want = chunk.argmax(1) if mode == COUNTER_MAX else chunk.argmin(1)
        assert torch.equal(pairs[:, 2 * r].float(), chunk[torch.arange(blocks), want])
        assert torch.equal(bits(pairs[:, 2 * r + 1], dtype), want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_ties_across_repeats_keep_the_first(lib, dtype):
    x = draw(dtype, 2, 7)
    per = 256 // x.element_size()
    x[:, [per + 3, 3 * per + 1]] = 300.0  # the same maximum in repeats 1 and 3
    out, _ = launch(lib, x, 4 * per, COUNTER_MAX)
    assert torch.equal(out[:, 1], torch.tensor([per + 3] * 2))


def test_value_only_9_1_prototype_is_not_on_a2(lib):
    with pytest.raises(EmulatorError, match="value-only prototype is not supported on Atlas A2/A3"):
        launch(lib, draw(torch.float32, 1, 3), 64, VALUE_ONLY_9_1)
