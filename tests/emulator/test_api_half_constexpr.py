"""half / bfloat16_t are literal types: `constexpr half HALF_ONE = 1.0;` compiles (cann-ops' cast kernel
writes it at namespace scope) and rounds exactly as the run-time conversion does (nearest even from the
double: overflow to inf, subnormals, -0); float16_t is half, float32_t float."""
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"


def test_constant_expression_conversion_equals_the_runtime_one():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    lib = compile_kernel(KERNELS / "half_constants.cpp", extra_flags=("-O0",))
    out = torch.full((4 * 13,), 0x5A5A, dtype=torch.int32).to(torch.int16)
    lib.launch("half_constants", 1, out)
    bits = out.view(torch.uint16).to(torch.int64).view(13, 4)
    assert torch.equal(bits[:, 0], bits[:, 1]) and torch.equal(bits[:, 2], bits[:, 3])
    # values exact in float: torch's float -> half/bf16 (nearest even) is the reference
    exact_in_float = [1.0, -2.5, 65504.0, 65519.0, 65520.0, -1e6, 2.9802322387695312e-08, -0.0]
    rows = [0, 1, 3, 4, 5, 6, 8, 11]
    want_h = torch.tensor(exact_in_float, dtype=torch.float32).half().view(torch.int16).to(torch.int64) & 0xFFFF
    want_b = torch.tensor(exact_in_float, dtype=torch.float32).bfloat16().view(torch.int16).to(torch.int64) & 0xFFFF
    assert bits[rows, 0].tolist() == want_h.tolist() and bits[rows, 2].tolist() == want_b.tolist()
    assert bits[4, 0] == 0x7BFF and bits[5, 0] == 0x7C00 and bits[11, 0] == 0x8000  # 65519 -> max, 65520 -> inf, -0
