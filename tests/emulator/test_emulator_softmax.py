"""The SoftMax advanced API and its host tiling (SoftMaxTiling, SoftMaxTilingFunc, GetSoftMaxMin/MaxTmpSize):
per row max, exp(x - max) / sum, max and sum repeated over one 32-byte block per row (asc-devkit's SoftMax
page). Kernel-launch style (softmax_api.cpp) and an op project whose templated kernel reads the SoftMax tiling
its op_host computed, per tiling key (softmax_project); poisoned outputs, multi-block launches."""
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorCompileError, EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.op_project import OpProject
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"
NAN = float("nan")


def _require_compiler():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")


@pytest.fixture(scope="module")
def lib():
    _require_compiler()
    return compile_kernel(KERNELS / "softmax_api.cpp", extra_flags=("-O0",))


def _reference(x, valid):
    xs = x[..., :valid].float()
    mx = xs.max(-1, keepdim=True).values
    e = torch.exp(xs - mx)
    return e / e.sum(-1, keepdim=True), mx, e.sum(-1, keepdim=True)


@pytest.mark.parametrize("dtype, stat_dtype, mixed", [(torch.float32, torch.float32, 0), (torch.float16, torch.float16, 0),
                                                      (torch.float16, torch.float32, 1)])
@pytest.mark.parametrize("with_tmp", [0, 1])
def test_softmax_rows_multi_block(lib, dtype, stat_dtype, mixed, with_tmp):
    blocks, rows, cols = 3, 4, 64
    x = (torch.randn(blocks, rows, cols) * 3).to(dtype)
    per = 32 // stat_dtype.itemsize
    y = torch.full_like(x, NAN)
    mx = torch.full((blocks, rows, per), NAN, dtype=stat_dtype)
    sm = torch.full((blocks, rows, per), NAN, dtype=stat_dtype)
    lib.launch("softmax_rows", blocks, x, y, mx, sm, rows, cols, cols, int(dtype == torch.float16), mixed, with_tmp)
    ref, rmax, rsum = _reference(x, cols)
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == torch.float32 else dict(rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(y.float(), ref.to(dtype).float(), **tol)
    assert torch.equal(mx, rmax.to(stat_dtype).expand(blocks, rows, per))
    torch.testing.assert_close(sm.float(), rsum.to(stat_dtype).float().expand(blocks, rows, per), **tol)


def test_softmax_valid_columns_leave_the_padding_unwritten(lib):
    rows, cols, valid = 2, 64, 50  # columns 50..63 are padding: not read, and dst keeps what it held (0)
    x = torch.randn(rows, cols)
    x[:, valid:] = 1e30
    y = torch.full_like(x, NAN)
    mx, sm = torch.full((rows, 8), NAN), torch.full((rows, 8), NAN)
    lib.launch("softmax_rows", 1, x, y, mx, sm, rows, cols, valid, 0, 0, 0)
    ref, rmax, _ = _reference(x, valid)
    torch.testing.assert_close(y[:, :valid], ref, rtol=1e-6, atol=1e-7)
    assert torch.equal(y[:, valid:], torch.zeros(rows, cols - valid))
    assert torch.equal(mx, rmax.expand(rows, 8))


def test_softmax_errors(lib):
    with pytest.raises(EmulatorError, match=r"SoftMax: oriSrcK=80 exceeds srcK=64"):
        lib.launch("softmax_rows", 1, torch.zeros(128), torch.zeros(128), torch.zeros(16), torch.zeros(16), 2, 64, 80, 0, 0, 0)


def test_softmax_nz_format_is_a_compile_error():
    _require_compiler()
    src = ('#include "kernel_operator.h"\nusing namespace AscendC;\n'
           'extern "C" __global__ __aicore__ void k(GM_ADDR x) {\n'
           '  LocalTensor<float> a; SoftMaxTiling t{}; SoftMax<float, false, false, true>(a, a, a, a, t);\n}\n')
    with pytest.raises(EmulatorCompileError, match=r"SoftMax: the NZ data format is not emulated"):
        compile_kernel(src, extra_flags=("-O0",))


@pytest.fixture(scope="module")
def project():
    _require_compiler()
    return OpProject(KERNELS / "softmax_project" / "op_kernel" / "softmax_rows.cpp", opt="-O0")


@pytest.mark.parametrize("dtype, key", [(torch.float32, 1), (torch.float16, 2)])
@pytest.mark.parametrize("shape, cores, blocks", [((16, 64), 8, 8), ((6, 3, 128), 4, 3), ((5, 32), 8, 5)])
def test_op_project_softmax_with_host_tiling(project, dtype, key, shape, cores, blocks):
    x = (torch.randn(shape) * 2).to(dtype)
    y = torch.full_like(x, NAN)
    run = project.run([x], [y], cores=cores)
    assert (run.block_dim, run.tiling_key) == (blocks, key)
    ref = torch.softmax(x.float(), -1).to(dtype)
    tol = dict(rtol=1e-6, atol=1e-7) if dtype == torch.float32 else dict(rtol=1e-3, atol=1e-3)
    torch.testing.assert_close(y.float(), ref.float(), **tol)
