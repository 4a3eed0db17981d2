"""DataCopy with SliceInfo (asc-devkit 基础API/数据搬运/切片数据搬运; impl/basic_api/kernel_operator_data_copy_intf_impl.h):
GM -> VECIN and VECOUT -> GM copies of a multi-dimensional slice. The first dimension gives bursts of burstLen 32-B
blocks with `stride` elements between them (a whole number of 32-B blocks: DataCopy, otherwise DataCopyPad with the
GM gap in bytes); every further dimension repeats the slice every (1 + stride) rows of the dimensions below it.
Expected values here come from that description with torch indexing; several blocks, odd row counts and gaps,
poisoned outputs (UB filled with NaN, GM with a sentinel), and the documented argument errors."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

// spec (int32): dims, then dims x {start, end, stride, burstLen, shape} for dst, then for src.
// mode 0: GM -> UB with the slices, then the UB buffer's first n_out elements to y (block b at y + b * n_out).
// mode 1: x's first n_in elements to UB, then UB -> GM with the slices (block b writes at y + b * y_block).
extern "C" __global__ __aicore__ void slice_copy(GM_ADDR x, GM_ADDR y, GM_ADDR spec, uint32_t n_in, uint32_t n_out,
                                                 uint32_t y_block, uint32_t mode) {
  const int32_t* sp = reinterpret_cast<const int32_t*>(spec);
  const uint32_t dims = static_cast<uint32_t>(sp[0]);
  SliceInfo dst[8], src[8];
  for (uint32_t i = 0; i < dims && i < 8; ++i) {
    const int32_t* d = sp + 1 + 5 * i;
    const int32_t* s = sp + 1 + 5 * dims + 5 * i;
    dst[i] = SliceInfo(d[0], d[1], d[2], d[3], d[4]);
    src[i] = SliceInfo(s[0], s[1], s[2], s[3], s[4]);
  }
  const uint32_t b = GetBlockIdx();
  GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x + b * n_in);
  yg.SetGlobalBuffer((__gm__ float*)y + b * (mode == 0 ? n_out : y_block));
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inq;
  TQue<TPosition::VECOUT, 1> outq;
  pipe.InitBuffer(inq, 1, 16384);
  pipe.InitBuffer(outq, 1, 16384);
  if (mode == 0) {
    LocalTensor<float> v = inq.AllocTensor<float>();
    DataCopy(v, xg, dst, src, dims);
    inq.EnQue(v);
    v = inq.DeQue<float>();
    DataCopyPad(yg, v, DataCopyExtParams{1, static_cast<uint32_t>(n_out * sizeof(float)), 0, 0, 0});
    inq.FreeTensor(v);
  } else {
    LocalTensor<float> v = outq.AllocTensor<float>();
    DataCopyPad(v.ReinterpretCast<float>(), xg, DataCopyExtParams{1, static_cast<uint32_t>(n_in * sizeof(float)), 0, 0, 0},
                DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
    PipeBarrier<PIPE_ALL>();
    outq.EnQue(v);
    v = outq.DeQue<float>();
    DataCopy(yg, v, dst, src, dims);
    outq.FreeTensor(v);
  }
}
"""
SENTINEL = -7.0


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def spec(dst, src):
    flat = [len(dst)] + [v for s in dst for v in s] + [v for s in src for v in s]
    return torch.tensor(flat, dtype=torch.int32)


def data(blocks, n):
    return torch.arange(blocks * n, dtype=torch.float32).reshape(blocks, n) + 0.5


@pytest.mark.parametrize("blocks, rows, cols, c0, k, r0, step", [
    (1, 5, 40, 8, 2, 0, 1),   # rows 0..4 of a [5, 40] tile, columns 8..23
    (3, 7, 24, 0, 3, 1, 2),   # every second row from 1 (stride 1), whole 24-column rows, three blocks
    (2, 9, 56, 16, 1, 2, 3),  # every third row from 2, one 32-B burst each
])
def test_gm_to_ub_two_dimensional_slice(lib, blocks, rows, cols, c0, k, r0, step):
    n_in = rows * cols
    x = data(blocks, n_in)
    picked = list(range(r0, rows, step))
    n_out = len(picked) * 8 * k
    y = torch.full((blocks * n_out,), SENTINEL)
    src = [(c0, c0 + 8 * k - 1, 0, 1, cols), (r0, rows - 1, step - 1, 1, rows)]
    dst = [(0, 8 * k - 1, 0, 1, 8 * k), (0, len(picked) - 1, 0, 1, len(picked))]
    lib.launch("slice_copy", blocks, x, y, spec(dst, src), n_in, n_out, 0, 0)
    want = x.reshape(blocks, rows, cols)[:, picked, c0:c0 + 8 * k].reshape(-1)
    assert torch.equal(y, want)


@pytest.mark.parametrize("gap", [3, 8, 13])  # 12 B and 52 B: DataCopyPad; 32 B: DataCopy
def test_gm_to_ub_first_dimension_gap(lib, gap):
    bursts, blocks = 5, 2
    n_in = bursts * (8 + gap)
    x = data(blocks, n_in)
    y = torch.full((blocks * bursts * 8,), SENTINEL)
    src = [(0, bursts * (8 + gap) - gap - 1, gap, 1, n_in)]
    dst = [(0, bursts * 8 - 1, 0, 1, bursts * 8)]
    lib.launch("slice_copy", blocks, x, y, spec(dst, src), n_in, bursts * 8, 0, 0)
    want = torch.stack([x[:, i * (8 + gap):i * (8 + gap) + 8] for i in range(bursts)], 1).reshape(-1)
    assert torch.equal(y, want)


@pytest.mark.parametrize("gap", [6, 8, 21])
def test_ub_to_gm_scatter_with_a_gap(lib, gap):
    # eye_fp64's pattern: packed 32-B blocks in UB land `gap` elements apart in GM; the gaps keep their bytes
    bursts, blocks = 7, 3
    n_in = bursts * 8
    y_block = bursts * (8 + gap)
    x = data(blocks, n_in)
    y = torch.full((blocks * y_block,), SENTINEL)
    src = [(0, n_in - 1, 0, 1, n_in)]
    dst = [(0, bursts * (8 + gap) - gap - 1, gap, 1, y_block)]
    lib.launch("slice_copy", blocks, x, y, spec(dst, src), n_in, 0, y_block, 1)
    want = torch.full((blocks, y_block), SENTINEL)
    for i in range(bursts):
        want[:, i * (8 + gap):i * (8 + gap) + 8] = x[:, i * 8:(i + 1) * 8]
    assert torch.equal(y, want.reshape(-1))


def test_ub_to_gm_two_dimensional(lib):
    rows, cols, blocks = 3, 32, 2
    x = data(blocks, rows * 16)
    y = torch.full((blocks * rows * 2 * cols,), SENTINEL)  # every second row of a [6, 32] tile, columns 8..23
    src = [(0, 15, 0, 1, 16), (0, rows - 1, 0, 1, rows)]
    dst = [(8, 23, 0, 1, cols), (0, 2 * rows - 2, 1, 1, 2 * rows)]
    lib.launch("slice_copy", blocks, x, y, spec(dst, src), rows * 16, 0, rows * 2 * cols, 1)
    want = torch.full((blocks, 2 * rows, cols), SENTINEL)
    want[:, 0::2, 8:24] = x.reshape(blocks, rows, 16)
    assert torch.equal(y, want.reshape(-1))


@pytest.mark.parametrize("dst, src, message", [
    ([], [], r"dimValue = 0 must be in \[1, 8\]"),
    ([(0, 7, 0, 1, 8), (0, 1, 0, 2, 2)], [(0, 7, 0, 1, 8), (0, 1, 0, 1, 2)],
     r"dstSliceInfo\[1\]\.burstLen = 2; beyond the first dimension it must be 1"),
    ([(0, 7, 0, 1, 8)], [(0, 7, 0, 1, 0)], r"srcSliceInfo\[0\]\.shapeValue is 0.*give every SliceInfo its shapeValue"),
])
def test_documented_errors(lib, dst, src, message):
    with pytest.raises(EmulatorError, match=r"DataCopy\(GM->UB, SliceInfo\): " + message):
        lib.launch("slice_copy", 1, torch.zeros(64), torch.zeros(64), spec(dst, src), 64, 8, 0, 0)


def test_slice_past_the_buffer_is_a_ub_bounds_error(lib):
    src = [(0, 8 * 600 - 1, 0, 1, 8 * 600)]  # 19200 B into a 16384-B queue buffer
    dst = [(0, 8 * 600 - 1, 0, 1, 8 * 600)]
    with pytest.raises(EmulatorError, match=r"dst accesses UB bytes .* outside its buffer"):
        lib.launch("slice_copy", 1, torch.zeros(8 * 600), torch.zeros(8), spec(dst, src), 8 * 600, 8, 0, 0)
