"""BroadCast / Broadcast of 2- and 4-byte element types (int16_t, int32_t, bfloat16_t), which the A2/A3
implementation moves as bits (asc-devkit's add_broadcast example instantiates them): against torch's expand, 3
blocks, poisoned outputs. 1-byte/half/float are in test_api_broadcast.py. asc-devkit's add_broadcast example compiles
(its gen_data.py needs tensorflow)."""
import pytest
import torch
from pathlib import Path

KERNELS = Path(__file__).parent / "kernels"


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_broadcast_int_api.cpp", extra_flags=("-O1",))


@pytest.mark.parametrize("kernel, dtype", [("bc_int16", torch.int16), ("bc_int32", torch.int32),
                                           ("bc_bf16", torch.bfloat16)])
@pytest.mark.parametrize("axis", [0, 1])
def test_broadcast_bits(lib, kernel, dtype, axis):
    m, k, blocks = 8, 48, 3
    src_n = m if axis == 1 else k
    if dtype.is_floating_point:
        x = torch.randn(blocks, src_n).to(dtype)
        y = torch.full((blocks, m, k), float("nan"), dtype=dtype)
    else:
        x = torch.randint(-30000, 30000, (blocks, src_n), dtype=torch.int32).to(dtype)
        y = torch.full((blocks, m, k), -1, dtype=dtype)
    lib.launch(kernel, blocks, x, y, m, k, axis)
    want = x[:, :, None].expand(blocks, m, k) if axis == 1 else x[:, None, :].expand(blocks, m, k)
    assert torch.equal(y.view(torch.int16) if dtype == torch.bfloat16 else y,
                       want.contiguous().view(torch.int16) if dtype == torch.bfloat16 else want)
