"""TQue hand-offs: a dequeued tensor may be enqueued again (CANN's TQueBind::EnQue asserts the buffer
is OCCUPIED or DEQUE), a free or already-enqueued one may not. Multi-block, poisoned output."""
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(KERNELS / "queue_requeue.cpp", extra_flags=("-O0",))


def test_dequeued_tensor_can_be_enqueued_again(lib):
    blocks, n = 4, 64
    x = torch.randn(blocks * n)
    y = torch.full_like(x, float("nan"))
    counters = lib.launch("requeue", blocks, x, y, n, 0)
    assert counters["blocks_run"] == blocks
    assert torch.equal(y, x * 4)


@pytest.mark.parametrize("misuse, state", [(1, "free"), (2, "already enqueued")])
def test_enqueue_of_a_free_or_enqueued_buffer_raises(lib, misuse, state):
    with pytest.raises(EmulatorError, match=rf"TQue 'q' \(VECOUT, depth 1, 1 buffer\(s\) of 256 B\): EnQue of buffer 0 "
                                            rf"which is {state} \(AllocTensor it, or DeQue it, before enqueueing it\)"):
        lib.launch("requeue", 1, torch.zeros(64), torch.zeros(64), 64, misuse)
