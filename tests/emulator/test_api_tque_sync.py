"""TQueSync<src, dst> (asc-devkit 同步控制/核内同步/TQueSync; impl/basic_api/kernel_tquesync_impl.h: set_flag /
wait_flag(src, dst, id)): heaviside's pattern — TBufs, TQueSync<PIPE_MTE2, PIPE_V> between the copy in and the
vector op, TQueSync<PIPE_V, PIPE_MTE3> before the copy out — runs under the sync checker over several blocks and
odd tails; leaving one out is a sync hazard naming the pipes; a WaitFlag without SetFlag, a second SetFlag and
an id outside [0, 8) raise; src == dst does not compile."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorCompileError, EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.runner import compiler_available

FULL, NO_IN_SYNC, NO_OUT_SYNC, WAIT_ONLY, SET_TWICE, BAD_ID = range(6)
TILE = 1024

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void sync_abs(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t mode) {
  const uint32_t start = GetBlockIdx() * 1024;
  const uint32_t len = n - start < 1024 ? n - start : 1024;
  GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x + start, 1024);
  yg.SetGlobalBuffer((__gm__ float*)y + start, 1024);
  TPipe pipe;
  TBuf<TPosition::VECIN> inBuf;
  TBuf<TPosition::VECOUT> outBuf;
  pipe.InitBuffer(inBuf, 1024 * sizeof(float));
  pipe.InitBuffer(outBuf, 1024 * sizeof(float));
  LocalTensor<float> in = inBuf.Get<float>();
  LocalTensor<float> out = outBuf.Get<float>();
  TQueSync<PIPE_MTE2, PIPE_V> copyIn;
  TQueSync<PIPE_V, PIPE_MTE3> copyOut;
  if (mode == 3) copyIn.WaitFlag(0);
  if (mode == 5) copyIn.SetFlag(8);
  DataCopyPad(in, xg, DataCopyExtParams{1, len * 4u, 0, 0, 0}, DataCopyPadExtParams<float>{false, 0, 0, 0});
  if (mode != 1) {
    copyIn.SetFlag(1);
    if (mode == 4) copyIn.SetFlag(1);
    copyIn.WaitFlag(1);
  }
  Abs(out, in, len);
  if (mode != 2) {
    copyOut.SetFlag(0);
    copyOut.WaitFlag(0);
  }
  DataCopyPad(yg, out, DataCopyExtParams{1, len * 4u, 0, 0, 0});
}
"""


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(SOURCE, extra_flags=("-O1",))


def run(lib, n, mode):
    blocks = -(-n // TILE)
    x = torch.randn(n)
    y = torch.full((n,), float("nan"))
    lib.launch("sync_abs", blocks, x, y, n, mode, check_sync=True)
    return x, y


@pytest.mark.parametrize("n", [1000, 3 * TILE + 17, 5])
def test_pipe_pair_flags_order_the_pipes(lib, n):
    x, y = run(lib, n, FULL)
    assert torch.equal(y, x.abs())


@pytest.mark.parametrize("mode, pipes", [(NO_IN_SYNC, r"Abs \(PIPE_V\) reads .* \(PIPE_MTE2\) wrote"),
                                         (NO_OUT_SYNC, r"DataCopyPad\(UB->GM\) \(PIPE_MTE3\) reads .* Abs \(PIPE_V\) wrote")])
def test_missing_pair_is_a_sync_hazard(lib, mode, pipes):
    with pytest.raises(EmulatorError, match="sync hazard: " + pipes):
        run(lib, 100, mode)


@pytest.mark.parametrize("mode, message", [(WAIT_ONLY, r"WaitFlag<MTE2_V>\(0\) without a matching SetFlag"),
                                           (SET_TWICE, r"SetFlag<MTE2_V>\(1\) twice"),
                                           (BAD_ID, r"SetFlag<MTE2_V>\(8\): event id must be in \[0, 8\)")])
def test_misuse_raises(lib, mode, message):
    with pytest.raises(EmulatorError, match=message):
        run(lib, 100, mode)


def test_same_pipe_does_not_compile():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    src = ('#include "kernel_operator.h"\nusing namespace AscendC;\n'
           'extern "C" __global__ __aicore__ void k(GM_ADDR x) { TQueSync<PIPE_V, PIPE_V> s; s.SetFlag(0); }\n')
    with pytest.raises(EmulatorCompileError, match="src/dst pipe cannot be the same"):
        compile_kernel(src)
