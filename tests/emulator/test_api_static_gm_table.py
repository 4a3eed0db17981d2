"""A kernel's own `static const __gm__` table (cann-ops diag_v2's assist matrix, lin_space's table) is GM the
kernel binary carries: reading it is legal in both bounds modes; a read past every argument buffer that is
not in the kernel's image still fails. Three blocks, poisoned outputs."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;
static const __gm__ float kTable[3 * 8] = {0, 1, 2, 3, 4, 5, 6, 7, 10, 11, 12, 13, 14, 15, 16, 17,
                                           20, 21, 22, 23, 24, 25, 26, 27};
extern "C" __global__ __aicore__ void table_rows(GM_ADDR y, uint32_t wild) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> q;
  pipe.InitBuffer(q, 1, 32);
  GlobalTensor<float> table, out;
  table.SetGlobalBuffer((wild ? (__gm__ float*)y + (1 << 20) : (__gm__ float*)kTable) + GetBlockIdx() * 8);  // wild: 4 MiB past y
  out.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * 8);
  LocalTensor<float> t = q.AllocTensor<float>();
  DataCopy(t, table, 8);
  q.EnQue(t);
  t = q.DeQue<float>();
  DataCopy(out, t, 8);
  q.FreeTensor(t);
}
"""


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(SOURCE)


@pytest.mark.parametrize("bounds", ["strict", "device"])
def test_static_gm_table_reads(lib, bounds):
    y = torch.full((24,), float("nan"))
    counters = lib.launch("table_rows", 3, y, 0, bounds=bounds)
    assert y.tolist() == [10 * (i // 8) + i % 8 for i in range(24)]
    assert counters["findings"] == {}


def test_a_read_outside_the_image_and_the_arguments_still_fails(lib):
    with pytest.raises(EmulatorError, match=r"DataCopy\(GM->UB\) touches GM bytes .* outside every kernel argument"):
        lib.launch("table_rows", 1, torch.zeros(8), 1, bounds="device")
