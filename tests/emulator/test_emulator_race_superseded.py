"""The race check (runtime.h FindBlockRace, SupersededInBlock): a plain
write that a later write of the same block covers is not that block's final value, so it is not compared with
other blocks' writes (cann-ops gather: every block copies 1023-element slices with 1024-element DataCopy, each
slice's 4-B spill rewritten by the next slice after PipeBarrier<PIPE_MTE3>, as the DataCopy page asks for
overlapping destinations). A spill that is some block's last write onto another block's bytes still races."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError

ALL_ROWS_FORWARD, ALL_ROWS_BACKWARD, OWN_ROW = range(3)

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

// rows of 7 floats; each row store is 8 floats (32 B), its 8th a -1 marker spilling onto the next row
extern "C" __global__ __aicore__ void copy_rows(GM_ADDR x, GM_ADDR y, uint32_t rows, uint32_t mode) {
  GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x, rows * 7);
  yg.SetGlobalBuffer((__gm__ float*)y, rows * 7 + 1);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> q;
  pipe.InitBuffer(q, 1, 32);
  for (uint32_t k = 0; k < rows; ++k) {
    const uint32_t r = mode == ALL_ROWS_BACKWARD ? rows - 1 - k : k;
    if (mode == OWN_ROW && r != GetBlockIdx()) continue;
    LocalTensor<float> v = q.AllocTensor<float>();
    DataCopyPad(v, xg[r * 7], DataCopyExtParams{1, 28, 0, 0, 0}, DataCopyPadExtParams<float>{false, 0, 0, 0});
    PipeBarrier<PIPE_ALL>();
    v.SetValue(7, -1.0f);
    PipeBarrier<PIPE_ALL>();
    DataCopy(yg[r * 7], v, 8);
    PipeBarrier<PIPE_MTE3>();  // overlapping GM destinations: serialised, as the DataCopy page requires
    q.FreeTensor(v);
  }
}
""".replace("ALL_ROWS_BACKWARD", str(ALL_ROWS_BACKWARD)).replace("OWN_ROW", str(OWN_ROW))


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(SOURCE, extra_flags=("-O1",))


def _x(rows):
    return torch.arange(1, rows * 7 + 1, dtype=torch.float32)


@pytest.mark.parametrize("blocks, rows", [(8, 5), (3, 16)])
def test_every_block_copying_every_row_in_order_is_not_a_race(lib, blocks, rows):
    y = torch.full((rows * 7 + 1,), float("nan"))
    lib.launch("copy_rows", blocks, _x(rows), y, rows, ALL_ROWS_FORWARD)
    assert torch.equal(y[:-1], _x(rows)) and y[-1] == -1  # each spill rewritten by the next row, the last one past it


def test_every_block_spilling_last_ends_the_same_in_any_order(lib):
    rows = 6
    y = torch.full((rows * 7 + 1,), float("nan"))
    lib.launch("copy_rows", 4, _x(rows), y, rows, ALL_ROWS_BACKWARD)
    expected = torch.cat([_x(rows), torch.tensor([-1.0])])
    expected[7:rows * 7:7] = -1  # each block's last write to a row's first element is the spill of the row before
    assert torch.equal(y, expected)


def test_a_spill_onto_another_blocks_row_races(lib):
    with pytest.raises(EmulatorError, match=r"cross-block GM race: block 0 writes and block 1 writes bytes \[28, 32\) of y"):
        lib.launch("copy_rows", 4, _x(4), torch.zeros(29), 4, OWN_ROW)
