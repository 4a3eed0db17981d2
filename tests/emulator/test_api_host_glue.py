"""Op-project glue the cann-ops projects use (h23_blockers 9-13): exe_graph/runtime/tiling_context.h,
GetSigmoidMaxMinTmpSize / GetMeanMaxMinTmpSize with asc-devkit's sizes (sigmoid_tiling_impl.cpp,
mean_tiling.cpp), the writable pointer of a TILING_DATA_FIELD_DEF_ARR getter, and DTYPE_<NAME>_REF for the
output of a same-named input/output pair (a ref tensor, updated in place)."""
import struct
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator.op_project import OpProject
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"


def mean_size(n, src, acc):
    per = 256 // src
    work = (-(-n // per) + 31) // 32 * 32
    if (src, acc) == (2, 4):
        inner = (n * src + 31) // 32 * 32 // src
        work = (-(-n // 64) + 31) // 32 * 32 + inner * 4
    return work


@pytest.mark.parametrize("dtype, n", [(torch.float32, 999), (torch.float16, 4096), (torch.float16, 10)])
def test_ref_tensor_and_host_helpers(dtype, n):
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    proj = OpProject(KERNELS / "glue_project" / "op_kernel" / "ref_scale.cpp", opt="-O0")
    y = (torch.arange(n) % 11 - 5).to(dtype)
    want = y * 2
    run = proj.run([y], [y])
    assert torch.equal(y, want)
    n_, smax, smin, mmax, mmin = struct.unpack_from("<5I", run.tiling.tiling)
    size = y.element_size()
    assert (n_, smax, smin) == (n, max(n * size, 256), 256)
    assert mmax == mmin == mean_size(n, size, 4)
