"""API misuse surfaces as EmulatorError with a message that names the problem (and the process survives)."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorCompileError, EmulatorError, compile_kernel

MISUSE = {
    0: r"UB overflow: .*api_kernels\.cpp:\d+: pipe\.InitBuffer\(calcBuf, 96 \* 1024\) asks for 98304 B for buffer "
       r"'calcBuf', but only 65536 B of the 196608 B unified buffer remain .*inQueueX=131072 B",
    1: r"Add: dst starts at UB offset 12, which is not 32-byte aligned",
    2: r"TQue 'inQueueX' \(VECIN, depth 2, 2 buffer\(s\) of 65536 B\): AllocTensor while all 2 buffers are in use",
    3: r"DeQue on an empty queue",
    4: r"DataCopy\(GM->UB\) touches GM bytes .* outside every kernel argument buffer: x=.*overruns it by 224 B.*"
       r"padded as a device allocation is",  # 256 B tensor: a 288 B device allocation
    5: r"WaitFlag<V_S>\(0\) without a matching SetFlag",
    6: r"Compare: count\*sizeof\(float\) = 160 bytes is not a multiple of 256",
    8: r"repeatTimes=300 is outside \[0, 255\]",
    10: r"already free \(double free\)",
    11: r"Exp: dst accesses UB bytes \[\d+, \d+\) outside its buffer calcBuf",
    12: r"Add: dst UB bytes \[32, 288\) partially overlap src0 \[0, 256\); AscendC allows aliasing only when",
}


@pytest.mark.parametrize("which", list(MISUSE))
def test_misuse_raises_with_clear_message(api, which):
    x = torch.zeros(64)
    with pytest.raises(EmulatorError, match=MISUSE[which]) as info:
        api.launch("misuse", 1, x, which)
    assert "misuse (block 0 of 1)" in str(info.value)


def test_library_is_usable_after_an_error(api):
    with pytest.raises(EmulatorError):
        api.launch("misuse", 1, torch.zeros(64), 0)
    a, b, out = torch.ones(8), torch.ones(8), torch.zeros(8)
    api.launch("vec_binary", 1, a, b, out, 8, 0)
    assert torch.equal(out, torch.full((8,), 2.0))


def test_crash_is_contained_with_isolate(api):
    with pytest.raises(EmulatorError, match="SIGSEGV"):
        api.launch("crash", 1, torch.zeros(8), isolate=True)


def test_argument_validation(api):
    with pytest.raises(TypeError, match=r"takes 5 arguments, got 2"):
        api.launch("vec_binary", 1, torch.zeros(4), torch.zeros(4))
    with pytest.raises(ValueError, match=r"argument a: tensor is not contiguous"):
        api.launch("vec_binary", 1, torch.zeros(4, 4).t(), torch.zeros(16), torch.zeros(16), 16, 0)
    with pytest.raises(ValueError, match=r"argument n \(uint32_t\) = -1 is outside"):
        api.launch("vec_binary", 1, torch.zeros(4), torch.zeros(4), torch.zeros(4), -1, 0)
    with pytest.raises(KeyError, match="no __global__ kernel named 'nope'"):
        api.launch("nope", 1)


def test_unsupported_dtype_is_a_compile_error(api):
    source = '''#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void bf16_add(GM_ADDR x) {
  TPipe pipe; TBuf<TPosition::VECCALC> b; pipe.InitBuffer(b, 256);
  LocalTensor<bfloat16_t> t = b.Get<bfloat16_t>();
  Add(t, t, t, 128);
}
'''
    with pytest.raises(EmulatorCompileError, match=r"bfloat16_t must be Cast to float first"):
        compile_kernel(source)


@pytest.mark.parametrize("which,pattern", [
    (0, r"cross-block GM race: block 0 writes and block 1 writes bytes \[0, 64\) of out"),
    (1, r"cross-block GM race: block \d (reads|writes) and block \d (reads|writes) bytes \[\d+, \d+\) of out"),
])
def test_cross_block_races_are_reported(api, which, pattern):
    n, blocks = 16, 3
    x, out = torch.randn(blocks * n), torch.zeros(blocks * n)
    with pytest.raises(EmulatorError, match=pattern):
        api.launch("block_race", blocks, x, out, n, which)
    api.launch("block_race", blocks, x, out, n, which, check_races=False)  # the check can be switched off


def test_disjoint_blocks_do_not_race(api):
    n, blocks = 16, 3
    x, out = torch.randn(blocks * n), torch.zeros(blocks * n)
    api.launch("block_race", blocks, x, out, n, 2)
    assert torch.equal(out, x)


SYNC_MISUSE = {
    13: r"sync hazard: Exp \(PIPE_V\) reads UB bytes \[\d+, \d+\) of calcBuf \(src\) that Duplicate \(PIPE_V\) "
        r"wrote, .* insert PipeBarrier<PIPE_V>\(\) in between",
    14: r"sync hazard: Exp \(PIPE_V\) reads .* of inQueueX\[0\] \(src\) that DataCopy\(GM->UB\) \(PIPE_MTE2\) wrote.*"
        r"DeQue the tensor from its VECIN queue, or SetFlag/WaitFlag<HardEvent::MTE2_V>",
    16: r"sync hazard: LocalTensor::GetValue \(PIPE_S\) reads .* that Duplicate \(PIPE_V\) wrote.*"
        r"SetFlag/WaitFlag<HardEvent::V_S>",
    17: r"sync hazard: DataCopy\(UB->GM\) \(PIPE_MTE3\) reads .* that Duplicate \(PIPE_V\) wrote.*HardEvent::V_MTE3",
}


@pytest.mark.parametrize("which", list(SYNC_MISUSE))
def test_sync_checker_reports_missing_synchronisation(api, which):
    x = torch.zeros(64)
    with pytest.raises(EmulatorError, match=SYNC_MISUSE[which]):
        api.launch("misuse", 1, x, which, check_sync=True)
    api.launch("misuse", 1, x, which)  # off by default: the sequential result is the same either way


def test_sync_checker_accepts_documented_synchronisation(api):
    api.launch("misuse", 1, torch.zeros(64), 15, check_sync=True)
