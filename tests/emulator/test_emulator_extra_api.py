"""LocalMemAllocator, static LocalTensor construction, ShiftLeft/ShiftRight, Sigmoid and Broadcast:
documented semantics and error cases, poisoned outputs, multi-block launches (trex's own kernels)."""
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorCompileError, EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(KERNELS / "extra_api.cpp", extra_flags=("-O0",))


def test_sigmoid_through_local_mem_allocator_multi_block(lib):
    x = torch.linspace(-8, 8, 4 * 256)
    y = torch.full_like(x, float("nan"))
    counters = lib.launch("sigmoid_alloc", 4, x, y, 256)
    assert counters["blocks_run"] == 4 and counters["vector_calls"]["Sigmoid"] == 4
    torch.testing.assert_close(y, torch.sigmoid(x), rtol=1e-6, atol=1e-7)


def test_local_mem_allocator_overflow_names_the_request(lib):
    with pytest.raises(EmulatorError, match=r"UB overflow: .*LocalMemAllocator#0, 60000 elements"):
        lib.launch("sigmoid_alloc", 1, torch.zeros(60000), torch.zeros(60000), 60000)


@pytest.mark.parametrize("s", [0, 3, 31, 40])
def test_shifts_on_static_tensors(lib, s):
    x = torch.tensor([1, -1, 7, -8, 1 << 20, -(1 << 20), 123456, -123456], dtype=torch.int32)
    out = torch.full((16,), 0x5A, dtype=torch.int32)
    lib.launch("shifts", 1, x, out, 8, s)
    if s < 32:
        left = (x.to(torch.int64) << s).to(torch.int64) & 0xFFFFFFFF
        left = torch.where(left >= 1 << 31, left - (1 << 32), left).to(torch.int32)
        right = x >> s
    else:  # a count >= the width: 0, and -1 for negative values shifted right
        left, right = torch.zeros_like(x), torch.where(x < 0, -1, 0).to(torch.int32)
    assert torch.equal(out[:8], left) and torch.equal(out[8:], right)


def test_static_tensor_outside_ub_raises(lib):
    with pytest.raises(EmulatorError, match=r"LocalTensor\(pos, addr=0, tileSize=100000\): \[0, 400000\) lies "
                                            r"outside the 196608 B unified buffer"):
        lib.launch("shifts", 1, torch.zeros(100000, dtype=torch.int32), torch.zeros(200000, dtype=torch.int32), 100000, 1)


@pytest.mark.parametrize("axis", [0, 1])
def test_broadcast_2d_multi_block(lib, axis):
    rows, cols = 8, 16
    v = torch.arange(cols if axis == 0 else rows, dtype=torch.float32) + 1
    y = torch.full((3, rows, cols), float("nan"))
    lib.launch("broadcast2d", 3, v, y, rows, cols, axis)
    ref = v.view(1, cols).expand(rows, cols) if axis == 0 else v.view(rows, 1).expand(rows, cols)
    assert torch.equal(y, ref.expand(3, rows, cols))


def test_shift_on_float_is_a_compile_error():
    if not compiler_available():
        pytest.skip("no C++ compiler")
    src = ('#include "kernel_operator.h"\nusing namespace AscendC;\n'
           'extern "C" __global__ __aicore__ void k(GM_ADDR x) { LocalTensor<float> a; ShiftLeft(a, a, 1.0f, 8); }\n')
    with pytest.raises(EmulatorCompileError, match=r"ShiftLeft: element type not supported"):
        compile_kernel(src, extra_flags=("-O0",))


def test_element_references_read_write_and_bounds(lib):
    x = torch.arange(8, dtype=torch.float32)
    y = torch.full((8,), float("nan"))
    with pytest.raises(EmulatorError, match=r"LocalTensor::operator\(\): tensor accesses UB bytes \[32, 36\) outside"):
        lib.launch("element_refs", 1, x, y, 8)
    assert torch.equal(y, x * 2 + torch.arange(8))  # written before the out-of-bounds access
