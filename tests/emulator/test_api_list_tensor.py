"""ListTensorDesc / TensorDesc (asc-devkit 基础API/辅助数据结构/ListTensorDesc; the A2 layout of
kernel_operator_list_tensor_impl.h): a list (DYNAMIC) input reaches the kernel as one GM block of shapes and
pointers. Kernel launch with emulator.TensorList (also isolated), the framework launch of an op project
with a DYNAMIC input followed by a REQUIRED one (host: GetDynamicInputShape/GetOptionalInputShape by IR
index), ICPU_RUN_KF with a block built in C++; poisoned outputs, several blocks, odd lengths; the layout
checks, index bounds and GM bounds of every list tensor raise."""
import subprocess
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, TensorList, compile_kernel
from trex.codegen_ascendc.emulator.op_project import OpProject, OpProjectError
from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

KERNELS = Path(__file__).parent / "kernels"
DESC_OBJ, DATA_PTR, INDEX_PAST_END, WRONG_SHAPE_SIZE, OVERRUN = range(5)


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(KERNELS / "list_api.cpp", extra_flags=("-O0",))


@pytest.mark.parametrize("mode", [DESC_OBJ, DATA_PTR])
@pytest.mark.parametrize("n, per, blocks, count", [(999, 336, 3, 3), (40, 40, 1, 1), (4096, 512, 8, 5)])
def test_sum_of_a_list_input(lib, mode, n, per, blocks, count):
    xs = [torch.randn(n) for _ in range(count)]
    y = torch.full((n,), float("nan"))
    lib.launch("list_sum", blocks, TensorList(xs), y, per, count, mode)
    want = torch.zeros(n)
    for x in xs:
        want = want + x
    assert torch.equal(y, want)


def test_isolated_launch_copies_list_tensors(lib):
    xs = [torch.randn(100) for _ in range(2)]
    y = torch.full((100,), float("nan"))
    lib.launch("list_sum", 2, TensorList(xs), y, 64, 2, DESC_OBJ, isolate=True)
    assert torch.equal(y, xs[0] + xs[1])


@pytest.mark.parametrize("mode, message", [
    (INDEX_PAST_END, r"list_sum \(block 0 of 3\): ListTensorDesc::GetDesc\(3\): the list holds 3 tensors"),
    (WRONG_SHAPE_SIZE, r"ListTensorDesc: shapeSize 4 but the list holds 3 tensors"),
    (OVERRUN, r"list_sum \(block 2 of 3\): DataCopyPad\(GM->UB\) touches GM bytes .* outside every kernel argument "
              r"buffer: xs\[0\]=.*\(starts inside xs\[0\], overruns it by 220 B\)"),
])
def test_misuse_raises(lib, mode, message):
    xs = [torch.randn(999) for _ in range(3)]
    with pytest.raises(EmulatorError, match=message):
        lib.launch("list_sum", 3, TensorList(xs), torch.empty(999), 336, 3, mode)


def test_a_plain_buffer_is_not_a_list(lib):
    with pytest.raises(EmulatorError, match=r"ListTensorDesc: dataPtrOffset 0 \(word 0\) is not a multiple of 8 of at least 16"):
        lib.launch("list_sum", 1, torch.zeros(64, dtype=torch.float64), torch.empty(64), 64, 1, DESC_OBJ)


def test_tensor_list_rejects_mixed_ranks():
    with pytest.raises(ValueError, match=r"TensorList: tensors of ranks \[1, 2\]"):
        TensorList([torch.zeros(4), torch.zeros(2, 2)])


@pytest.fixture(scope="module")
def project():
    if not compiler_available():
        pytest.skip("no C++ compiler")
    return OpProject(KERNELS / "list_project" / "op_kernel" / "add_list.cpp", opt="-O0")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("count, n", [(4, 1001), (1, 77)])
def test_framework_launch_with_a_dynamic_input(project, dtype, count, n):
    xs = [torch.randn(n).to(dtype) for _ in range(count)]
    bias = torch.randn(n).to(dtype)
    y = torch.full((n,), float("nan"), dtype=dtype)
    run = project.run([xs, bias], [y])
    assert run.tiling_key == (1 if dtype == torch.float32 else 2)
    assert run.block_dim == (4 if n >= 256 else 1)
    want = bias
    for x in xs:
        want = want + x  # the kernel's order: bias first, then the list in order, rounded per add
    assert torch.equal(y, want)


def test_a_list_for_a_required_input_is_refused(project):
    x = torch.ones(64)
    with pytest.raises(OpProjectError, match=r"input bias is required, not dynamic: pass one tensor, not a list"):
        project.run([[x], [x]], [torch.empty(64)])


def test_icpu_run_kf(tmp_path):
    cxx = find_compiler()
    if cxx is None:
        pytest.skip("no C++ compiler (g++ or $CXX) found")
    exe = tmp_path / "pool_list_icpu"
    subprocess.run([cxx, "-O0", "-std=c++17", f"-I{INCLUDE_DIR}", f"-I{KERNELS}",
                    str(KERNELS / "pool_list_icpu_main.cpp"), "-o", str(exe)], check=True, capture_output=True, text=True)
    ok = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "mismatches=0 blocks=9" in ok.stdout, ok.stdout + ok.stderr
    bad = subprocess.run([str(exe), "list_index"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "list_sum (block 0 of 3): ListTensorDesc::GetDesc(2): the list holds 2 tensors" in bad.stderr
