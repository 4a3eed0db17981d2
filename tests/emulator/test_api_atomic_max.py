"""SetAtomicMax / SetAtomicMin (asc-devkit 基础API/原子操作/SetAtomicMax(ISASI).md, SetAtomicMin(ISASI).md): UB->GM
copies after them write the element-wise max / min of the copied and the GM values; SetAtomicNone restores plain
writes. Every block folds its own row into one shared output (no cross-block race: atomics commute), odd lengths
through DataCopyPad, float/half/int32/int16/int8; a type the page does not list does not compile."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorCompileError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

MAX, MIN, NONE_AFTER = range(3)

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

template <class T>
__aicore__ inline void Fold(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t mode) {
  GlobalTensor<T> xg, yg;
  xg.SetGlobalBuffer((__gm__ T*)x + GetBlockIdx() * n, n);
  yg.SetGlobalBuffer((__gm__ T*)y, n);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> q;
  pipe.InitBuffer(q, 1, 8192);
  LocalTensor<T> v = q.AllocTensor<T>();
  const DataCopyExtParams copy{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
  DataCopyPad(v, xg, copy, DataCopyPadExtParams<T>{false, 0, 0, 0});
  q.EnQue(v);
  v = q.DeQue<T>();
  if (mode == 0) SetAtomicMax<T>();
  else SetAtomicMin<T>();
  if (mode == 2) SetAtomicNone();
  DataCopyPad(yg, v, copy);
  SetAtomicNone();
  q.FreeTensor(v);
}
extern "C" __global__ __aicore__ void fold_float(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t mode) { Fold<float>(x, y, n, mode); }
extern "C" __global__ __aicore__ void fold_half(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t mode) { Fold<half>(x, y, n, mode); }
extern "C" __global__ __aicore__ void fold_int32(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t mode) { Fold<int32_t>(x, y, n, mode); }
extern "C" __global__ __aicore__ void fold_int16(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t mode) { Fold<int16_t>(x, y, n, mode); }
extern "C" __global__ __aicore__ void fold_int8(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t mode) { Fold<int8_t>(x, y, n, mode); }
"""
KERNELS = {torch.float32: "fold_float", torch.float16: "fold_half", torch.int32: "fold_int32",
           torch.int16: "fold_int16", torch.int8: "fold_int8"}


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def rows(dtype, blocks, n):
    g = torch.Generator().manual_seed(n)
    return (torch.randn(blocks, n, generator=g) * 50).to(dtype)


@pytest.mark.parametrize("dtype", list(KERNELS))
@pytest.mark.parametrize("mode, blocks, n", [(MAX, 4, 333), (MIN, 3, 1000), (MAX, 1, 7)])
def test_blocks_fold_into_gm(lib, dtype, mode, blocks, n):
    x = rows(dtype, blocks, n)
    start = rows(dtype, 1, n)[0]  # what GM held before
    y = start.clone()
    lib.launch(KERNELS[dtype], blocks, x, y, n, mode)
    everything = torch.cat([x, start[None]]).float()
    want = everything.amax(0) if mode == MAX else everything.amin(0)
    assert torch.equal(y.float(), want)


def test_atomic_none_restores_plain_writes(lib):
    x = rows(torch.float32, 1, 100)
    y = torch.full((100,), 1e9)
    lib.launch("fold_float", 1, x, y, 100, NONE_AFTER)
    assert torch.equal(y, x[0])


def test_unlisted_type_does_not_compile():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    src = ('#include "kernel_operator.h"\nusing namespace AscendC;\n'
           'extern "C" __global__ __aicore__ void k(GM_ADDR x) { SetAtomicMax<uint32_t>(); }\n')
    with pytest.raises(EmulatorCompileError, match="SetAtomicMax supports int8_t"):
        compile_kernel(src)
