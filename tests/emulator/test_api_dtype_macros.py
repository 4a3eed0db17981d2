"""DT_* are macros, as CANN's kernel_type.h (included by kernel_operator.h) defines them, so a kernel's
`#if ORIG_DTYPE_X == DT_BF16` picks its path in the preprocessor (an enum reads as 0 there: every such test
was true; cann-ops non_finite_check took its bf16 path for float). The ge::DataType enum of the host headers
still declares the same names when a kernel includes them (the names are hidden inside the host headers; a
kernel spelling ge::DT_FLOAT after kernel_operator.h fails as it does under CANN)."""
from pathlib import Path

import pytest
import torch

import trex.codegen_ascendc.emulator as emulator

HOST_INCLUDE = Path(emulator.__file__).parent / "include_host"  # what op-project kernel compiles also see

SOURCE = r"""
#include "kernel_operator.h"
#include "tiling/platform/platform_ascendc.h"  // host header: its ge::DataType beside the DT_* macros
using namespace AscendC;
#if ORIG_DTYPE_X == DT_BF16
constexpr int32_t kPath = 27;
#elif ORIG_DTYPE_X == DT_FLOAT16
constexpr int32_t kPath = 1;
#elif ORIG_DTYPE_X == DT_FLOAT
constexpr int32_t kPath = 100;
#else
constexpr int32_t kPath = -1;
#endif
static_assert(sizeof(ge::DataType) == 4, "the host header's enum is declared beside the macros");
extern "C" __global__ __aicore__ void dtype_path(GM_ADDR y) {
  GlobalTensor<int32_t> g;
  g.SetGlobalBuffer((__gm__ int32_t*)y);
  g.SetValue(GetBlockIdx() * 8, kPath + static_cast<int32_t>(GetBlockIdx()));
}
"""


# CANN's build passes the symbol (-DORIG_DTYPE_X=DT_FLOAT16, its generated op .py); trex's op projects the number
@pytest.mark.parametrize("flag, path", [("DT_BF16", 27), ("DT_FLOAT16", 1), ("DT_FLOAT", 100), ("0", 100),
                                        ("27", 27), ("DT_INT32", -1)])
def test_orig_dtype_selects_the_path_in_the_preprocessor(compile_source, flag, path):
    lib = compile_source(SOURCE, extra_flags=(f"-DORIG_DTYPE_X={flag}", f"-I{HOST_INCLUDE}"))
    y = torch.full((24,), -7, dtype=torch.int32)  # poisoned; each of 3 blocks writes its own 32-B block's head
    lib.launch("dtype_path", 3, y)
    assert y[::8].tolist() == [path, path + 1, path + 2]
