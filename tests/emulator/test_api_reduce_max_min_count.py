"""GetReduceMaxMinCount (asc-devkit 基础API 归约计算 GetReduceMaxMinCount(ISASI); impl
impl/basic_api/dav_c220/kernel_operator_vec_reduce_impl.h): reads the MAX_MIN_CNT register that the block's
last ReduceMax/ReduceMin/WholeReduceMax/WholeReduceMin set, the value and its index (the index's integer bits
stored in a T). Several blocks (each block has its own register), odd counts, half and float, the uint32_t
prototype; outputs poisoned; a read before any reduction and the value-only prototype (not on A2/A3) raise."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

WHOLE_MAX, WHOLE_MIN, REDUCE_MAX, REDUCE_MIN_REPEAT, NO_REDUCTION, VALUE_ONLY = range(6)
TILE = 2048  # elements each block copies in; it reduces the first `count`

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

template <class T>
__aicore__ inline void Body(GM_ADDR x, GM_ADDR out, uint32_t count, uint32_t mode) {
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inQ;
  TBuf<TPosition::VECCALC> dstBuf, workBuf;
  pipe.InitBuffer(inQ, 1, 2048 * sizeof(T));
  pipe.InitBuffer(dstBuf, 256);
  pipe.InitBuffer(workBuf, 2048 * sizeof(T));
  GlobalTensor<T> xg;
  xg.SetGlobalBuffer((__gm__ T*)x + GetBlockIdx() * 2048, 2048);
  GlobalTensor<uint32_t> og;
  og.SetGlobalBuffer((__gm__ uint32_t*)out + GetBlockIdx() * 4, 4);
  LocalTensor<T> src = inQ.AllocTensor<T>();
  DataCopy(src, xg, 2048);
  inQ.EnQue(src);
  src = inQ.DeQue<T>();
  LocalTensor<T> dst = dstBuf.Get<T>();
  LocalTensor<T> work = workBuf.Get<T>();
  if (mode == 0) {  // isamax's pattern: counter mode, one WholeReduceMax over count elements
    SetMaskCount();
    SetVectorMask<T, MaskMode::COUNTER>(0, count);
    WholeReduceMax<T, false>(dst, src, MASK_PLACEHOLDER, 1, 1, 1, 8);
    SetMaskNorm();
    ResetMask();
  } else if (mode == 1) {
    WholeReduceMin(dst, src, (int32_t)count, 1, 1, 1, 8);
  } else if (mode == 2) {
    ReduceMax(dst, src, work, (int32_t)count, true);
  } else if (mode == 3) {
    uint64_t mask[2] = {~uint64_t{0}, sizeof(T) == 2 ? ~uint64_t{0} : 0};
    ReduceMin(dst, src, work, mask, (int32_t)(count / (256 / sizeof(T))), 8, true);
  }
  event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
  SetFlag<HardEvent::V_S>(e);
  WaitFlag<HardEvent::V_S>(e);
  T value, index;
  if (mode == 5) {
    GetReduceMaxMinCount<T>(value);
  } else {
    GetReduceMaxMinCount<T>(value, index);
  }
  uint32_t valueBits = 0, indexBits = 0, rawValue = 0, rawIndex = 0;
  std::memcpy(&valueBits, &value, sizeof(T));
  std::memcpy(&indexBits, &index, sizeof(T));
  GetReduceMaxMinCount<T>(rawValue, rawIndex);  // the uint32_t prototype: the same register
  og.SetValue(0, valueBits);
  og.SetValue(1, indexBits);
  og.SetValue(2, rawValue);
  og.SetValue(3, rawIndex);
  inQ.FreeTensor(src);
}

extern "C" __global__ __aicore__ void count_float(GM_ADDR x, GM_ADDR out, uint32_t count, uint32_t mode) {
  Body<float>(x, out, count, mode);
}
extern "C" __global__ __aicore__ void count_half(GM_ADDR x, GM_ADDR out, uint32_t count, uint32_t mode) {
  Body<half>(x, out, count, mode);
}
"""


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def launch(lib, dtype, blocks, count, mode, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.randn(blocks, TILE, generator=g) * 10).to(dtype)
    out = torch.full((blocks, 4), 0xDEADBEEF, dtype=torch.int64).to(torch.uint32)  # poisoned
    lib.launch("count_float" if dtype == torch.float32 else "count_half", blocks, x, out, count, mode)
    return x, out.to(torch.int64)


def bits(v, dtype):
    """The integer bits of each value of v (dtype), as int64."""
    int_type = torch.int32 if dtype == torch.float32 else torch.int16
    b = v.to(dtype).contiguous().view(int_type).to(torch.int64)
    return b & (0xFFFFFFFF if dtype == torch.float32 else 0xFFFF)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("mode, count, blocks", [(WHOLE_MAX, 37, 3), (WHOLE_MIN, 61, 2), (REDUCE_MAX, 1999, 3)])
def test_register_holds_each_blocks_extremum_and_index(lib, dtype, mode, count, blocks):
    x, out = launch(lib, dtype, blocks, count, mode, seed=count)
    head = x[:, :count].float()
    want = head.argmin(1) if mode == WHOLE_MIN else head.argmax(1)
    values = x[torch.arange(blocks), want]
    assert torch.equal(out[:, 0], bits(values, dtype))
    assert torch.equal(out[:, 1], want)  # the index's integer bits, in a T
    assert torch.equal(out[:, 2], out[:, 0]) and torch.equal(out[:, 3], want)  # the uint32_t prototype


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_mask_repeat_reduce_min_sets_the_overall_index(lib, dtype):
    per = 256 // (4 if dtype == torch.float32 else 2)
    x, out = launch(lib, dtype, 2, 5 * per, REDUCE_MIN_REPEAT, seed=5)
    want = x[:, :5 * per].float().argmin(1)
    assert torch.equal(out[:, 1], want)
    assert torch.equal(out[:, 0], bits(x[torch.arange(2), want], dtype))


def test_read_before_any_reduction_is_a_misuse(lib):
    with pytest.raises(EmulatorError, match="no ReduceMax/ReduceMin/WholeReduceMax/WholeReduceMin ran in this block"):
        launch(lib, torch.float32, 1, 64, NO_REDUCTION)


def test_value_only_prototype_is_not_on_a2(lib):
    with pytest.raises(EmulatorError, match="value-only prototype is not supported on Atlas A2/A3"):
        launch(lib, torch.float16, 1, 64, VALUE_ONLY)
