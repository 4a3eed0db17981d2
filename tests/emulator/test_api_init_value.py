"""OpDef InitValue with SetNeedAtomic (asc-devkit OpParamDef/InitValue.md): an output is set to its initial
value before the kernel runs (CANN's memset) only when the tiling function calls SetNeedAtomic(true);
InitValue(uint64_t) takes only 0. The same project checks the kernel's view of a tiling header that holds
host code (CANN generates the kernel's tiling struct: cann-ops mul_sigmoid_tiling.h), CANN's kernel_utils.h,
ASSERT without a semicolon, and host APIs cann-ops op_host code uses (ge::TypeUtils serial names,
GetPrimaryFormat, ComputeNodeInfo, ge::Operator / ge::Tensor / ge::AscendString)."""
import struct
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator.op_project import OpProject, OpProjectError
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNEL = Path(__file__).parent / "kernels" / "init_value_project" / "op_kernel" / "row_sum.cpp"
ALL_HOST_CHECKS = 0b11111


@pytest.fixture(scope="module")
def project():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return lambda op: OpProject(KERNEL, op=op, opt="-O0")


def poisoned(n, dtype):
    return torch.full((n,), float("nan"), dtype=dtype)


@pytest.mark.parametrize("op, dtype, init", [("RowSumZero", torch.float32, 0.0), ("RowSumScalar", torch.float32, 1.5),
                                             ("RowSumList", torch.float32, 2.5), ("RowSumList", torch.float16, 3.0)])
def test_init_value_before_atomic_adds(project, op, dtype, init):
    x = (torch.arange(37 * 64) % 13 - 6).reshape(37, 64).to(dtype) / 4
    y = poisoned(64, dtype)
    run = project(op).run([x], [y])
    assert (run.block_dim, run.tiling_key) == (8, 1)  # 8 blocks add into y atomically
    assert torch.equal(y.float(), x.float().sum(0) + init)
    rows, cols, checks = struct.unpack_from("<3I", run.tiling.tiling)
    assert (rows, cols) == (37, 64)
    assert checks == ALL_HOST_CHECKS, f"host API checks that failed: {ALL_HOST_CHECKS & ~checks:#07b}"


def test_init_value_needs_set_need_atomic(project):
    x = torch.ones(5, 32)
    y = poisoned(32, torch.float32)
    run = project("RowSumScalar").run([x], [y], {"need_atomic": 0})
    assert (run.block_dim, run.tiling_key) == (5, 2)
    assert torch.isnan(y).all(), "InitValue applies only with SetNeedAtomic(true)"


def test_init_value_uint64_takes_only_zero(project):
    with pytest.raises(OpProjectError, match=r"InitValue\(uint64_t\) takes only 0"):
        project("RowSumBadInit").run([torch.ones(3, 32)], [poisoned(32, torch.float32)])
