"""SetSysWorkspace / GetSysWorkSpacePtr (asc-devkit workspace pages: GetSysWorkSpacePtr returns the system
workspace pointer; the documented example returns early when it is null) and the race check's identical-bytes
rule: cann-ops sasum/scasum zero their one output from every block, SyncAll, then accumulate with SetAtomicAdd.
Plain writes of the same bytes by several blocks end the same whichever lands last, so they are not a race;
writes of different bytes still are. Several blocks, odd lengths (DataCopyPad), poisoned outputs."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

ZERO_THEN_ADD, NO_SET, BLOCK_ID_WRITES, SET_VALUE_SAME, SET_VALUE_DIFFERENT = range(5)

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void sum_rows(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, uint32_t n, uint32_t mode) {
  if (mode != 1) SetSysWorkspace(workspace);
  if (GetSysWorkSpacePtr() == nullptr) return;
  GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * n, n);
  yg.SetGlobalBuffer((__gm__ float*)y, n);
  if (mode == 3 || mode == 4) {
    yg.SetValue(0, mode == 3 ? 7.0f : static_cast<float>(GetBlockIdx()));
    return;
  }
  TPipe pipe;
  TQue<TPosition::VECIN, 1> q;
  pipe.InitBuffer(q, 1, 8192);
  LocalTensor<float> v = q.AllocTensor<float>();
  const DataCopyExtParams copy{1, static_cast<uint32_t>(n * sizeof(float)), 0, 0, 0};
  Duplicate(v, mode == 2 ? static_cast<float>(GetBlockIdx()) : 0.0f, n);
  PipeBarrier<PIPE_ALL>();
  DataCopyPad(yg, v, copy);  // every block writes y: the same zeros (mode 0) or its own index (mode 2)
  PipeBarrier<PIPE_ALL>();
  SyncAll();
  DataCopyPad(v, xg, copy, DataCopyPadExtParams<float>{false, 0, 0, 0});
  PipeBarrier<PIPE_ALL>();
  SetAtomicAdd<float>();
  DataCopyPad(yg, v, copy);
  SetAtomicNone();
  q.FreeTensor(v);
}
"""


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def rows(blocks, n):
    g = torch.Generator().manual_seed(blocks * 1000 + n)
    return torch.randint(-8, 8, (blocks, n), generator=g).float()  # small integers: the sum is exact in any order


@pytest.mark.parametrize("blocks, n", [(8, 1), (4, 333), (3, 1000)])
def test_blocks_zero_the_output_then_accumulate(lib, blocks, n):
    x = rows(blocks, n)
    y = torch.full((n,), float("nan"))  # poisoned: the zeroing must reach every element
    lib.launch("sum_rows", blocks, x, y, torch.zeros(32, dtype=torch.uint8), n, ZERO_THEN_ADD)
    assert torch.equal(y, x.sum(0))


def test_without_set_sys_workspace_the_pointer_is_null(lib):
    y = torch.full((5,), float("nan"))
    lib.launch("sum_rows", 2, rows(2, 5), y, torch.zeros(32, dtype=torch.uint8), 5, NO_SET)
    assert y.isnan().all()  # every block returned before touching y


def test_blocks_writing_different_bytes_still_race(lib):
    with pytest.raises(EmulatorError, match=r"sum_rows: cross-block GM race: block 0 writes and block 1 writes "
                                            r"bytes \[0, 20\) of y"):
        lib.launch("sum_rows", 2, rows(2, 5), torch.zeros(5), torch.zeros(32, dtype=torch.uint8), 5, BLOCK_ID_WRITES)


def test_set_value_of_the_same_bytes_is_not_a_race(lib):
    y = torch.full((3,), float("nan"))
    lib.launch("sum_rows", 4, rows(4, 3), y, torch.zeros(32, dtype=torch.uint8), 3, SET_VALUE_SAME)
    assert y[0] == 7.0 and y[1:].isnan().all()


def test_set_value_of_different_bytes_races(lib):
    with pytest.raises(EmulatorError, match=r"cross-block GM race: block \d writes and block \d writes bytes \[0, 4\) of y"):
        lib.launch("sum_rows", 3, rows(3, 3), torch.zeros(3), torch.zeros(32, dtype=torch.uint8), 3, SET_VALUE_DIFFERENT)
