"""Queue misuse that the NPU build of TQue runs with the right pipe order, as long as the buffer is used once.

asc-devkit impl/basic_api/kernel_tquebind_impl.h: on the NPU, EnQue stores the tensor's buffer handle and sets the
queue's EnQue event, FreeTensor writes FREE and sets the free event; the range/state checks are debug asserts
(compiled out without ASCENDC_CPU_DEBUG / ASCENDC_DEBUG). So
  * EnQue of another queue's tensor (contest scatter_max / scatter_sub): the queue's DeQue hands that buffer to its
    consumer after its own EnQue event (V -> MTE3 ordered); its FreeTensor stores a wrong-kind free event id in the
    other queue's buffer, so that queue's next AllocTensor of it is unordered (race) or waits forever (hang);
  * FreeTensor of an enqueued tensor of a depth-1 queue (cann-ops inplace_attn_softmax): the next AllocTensor
    waits for the free event as usual; the EnQue's event id stays taken (only DeQue releases it), so the 9th
    such free on a pipe runs out of event ids (8).
bounds="device" records these as "queue misuse" findings and fails where the NPU races, hangs or runs out of ids;
bounds="strict" refuses them as CANN's CPU-debug build does. Multi-block launches over NaN-poisoned outputs."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t kTile = 64;  // floats: 256 B

// Each block doubles its `tiles` tiles of x into y (y = 2 x) and stores inq.GetTensorCountInQue() at cnt[block * 8].
// which 0: EnQue of inq's tensor into outq (scatter_max's sequence: outq never allocates)
// which 1: EnQue of inq's tensor into outq while outq's own tensor stays allocated (scatter_sub_v1's sequence)
// which 2: FreeTensor of inq's enqueued tensor without DeQue, its MTE2 -> V order set by hand
//          (inplace_attn_softmax's mulCopyIn)
// which 3: as 2 on a depth-2 queue
template <int32_t DEPTH>
__aicore__ inline void Run(GM_ADDR x, GM_ADDR y, GM_ADDR cnt, uint32_t tiles, uint32_t which) {
  TPipe pipe;
  TQue<QuePosition::VECIN, DEPTH> inq;
  TQue<QuePosition::VECOUT, 1> outq;
  GlobalTensor<float> gx, gy;
  GlobalTensor<int32_t> gc;
  const uint32_t base = GetBlockIdx() * tiles * kTile;
  gx.SetGlobalBuffer((__gm__ float*)x + base);
  gy.SetGlobalBuffer((__gm__ float*)y + base);
  gc.SetGlobalBuffer((__gm__ int32_t*)cnt + GetBlockIdx() * 8);
  pipe.InitBuffer(inq, 1, kTile * sizeof(float));
  pipe.InitBuffer(outq, 1, kTile * sizeof(float));
  for (uint32_t t = 0; t < tiles; ++t) {
    LocalTensor<float> a = inq.template AllocTensor<float>();
    DataCopy(a, gx[t * kTile], kTile);
    if (which <= 1) {
      inq.EnQue(a);
      a = inq.template DeQue<float>();
      LocalTensor<float> unused;
      if (which == 1) unused = outq.AllocTensor<float>();
      Muls(a, a, 2.0f, kTile);
      outq.EnQue(a);  // inq's tensor
      inq.FreeTensor(a);
      LocalTensor<float> o = outq.DeQue<float>();
      DataCopy(gy[t * kTile], o, kTile);
      outq.FreeTensor(o);
    } else {
      event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::MTE2_V));
      SetFlag<HardEvent::MTE2_V>(e);
      WaitFlag<HardEvent::MTE2_V>(e);
      inq.EnQue(a);
      LocalTensor<float> o = outq.AllocTensor<float>();
      Muls(o, a, 2.0f, kTile);
      inq.FreeTensor(a);  // still enqueued
      outq.EnQue(o);
      o = outq.DeQue<float>();
      DataCopy(gy[t * kTile], o, kTile);
      outq.FreeTensor(o);
    }
  }
  gc.SetValue(0, inq.GetTensorCountInQue());
}

extern "C" __global__ __aicore__ void queue_misuse(GM_ADDR x, GM_ADDR y, GM_ADDR cnt, uint32_t tiles, uint32_t which) {
  if (which == 3) Run<2>(x, y, cnt, tiles, which);
  else Run<1>(x, y, cnt, tiles, which);
}
"""

BLOCKS = 3


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(SOURCE)


def _launch(lib, tiles, which, bounds):
    x = torch.arange(BLOCKS * tiles * 64, dtype=torch.float32) - 100.0
    y = torch.full_like(x, float("nan"))
    cnt = torch.full((BLOCKS * 8,), -7, dtype=torch.int32)
    counters = lib.launch("queue_misuse", BLOCKS, x, y, cnt, tiles, which, bounds=bounds)
    return x, y, cnt, counters


STRICT = {
    0: r"TQue 'outq' \(VECOUT, depth 1, 1 buffer\(s\) of 256 B\): EnQue of a tensor that does not belong to this queue",
    1: r"TQue 'outq' \(VECOUT, depth 1, 1 buffer\(s\) of 256 B\): EnQue of a tensor that does not belong to this queue",
    2: r"TQue 'inq' \(VECIN, depth 1, 1 buffer\(s\) of 256 B\): FreeTensor of buffer 0 while it is still enqueued "
       r"\(DeQue it first\)",
}


@pytest.mark.parametrize("which", list(STRICT))
def test_strict_refuses_it_as_cpu_debug_does(lib, which):
    with pytest.raises(EmulatorError, match=STRICT[which]):
        _launch(lib, 1, which, "strict")


@pytest.mark.parametrize("which", [0, 1])
def test_enqueue_into_another_queue_runs_once_with_findings(lib, which):
    x, y, cnt, counters = _launch(lib, 1, which, "device")
    assert torch.equal(y, 2 * x)  # every block's tile written, through inq's buffer, the poison overwritten
    assert cnt.view(BLOCKS, 8)[:, 0].tolist() == [0] * BLOCKS
    assert counters["blocks_run"] == BLOCKS
    assert counters["findings"] == {
        "queue misuse: EnQue of inq[0] into outq (another queue's tensor)": BLOCKS,
        "queue misuse: FreeTensor on outq of inq[0] (another queue's tensor, dequeued from outq)": BLOCKS,
    }


def test_reusing_a_buffer_enqueued_into_another_queue_fails(lib):
    """The second tile's AllocTensor hands inq's buffer out again: the NPU's wait uses outq's MTE3_V id."""
    with pytest.raises(EmulatorError, match=r"TQue 'inq' \(VECIN, .*\): AllocTensor hands out buffer 0 again after it "
                                            r"was enqueued into outq .*stores an MTE3_V event id in it, where this "
                                            r"AllocTensor waits on V_MTE2 .*a race.*a hang"):
        _launch(lib, 2, 0, "device")


@pytest.mark.parametrize("tiles", [1, 4, 8])
def test_free_of_an_enqueued_tensor_runs_with_findings(lib, tiles):
    x, y, cnt, counters = _launch(lib, tiles, 2, "device")
    assert torch.equal(y, 2 * x)
    # the NPU's usedCount: FreeTensor does not take the freed tensors off it
    assert cnt.view(BLOCKS, 8)[:, 0].tolist() == [tiles] * BLOCKS
    assert counters["findings"] == {
        "queue misuse: FreeTensor of inq[0] while enqueued (no DeQue; its MTE2_V event id stays taken)": BLOCKS * tiles}


def test_free_of_enqueued_tensors_runs_out_of_event_ids(lib):
    """Each such free leaves its EnQue's MTE2_V id taken: the ninth EnQue on the pipe has none of the 8 left."""
    with pytest.raises(EmulatorError, match=r"TQue 'inq' .*: EnQue needs an MTE2_V event id, but all 8 are taken "
                                            r"\(8 left taken by FreeTensor of enqueued tensors\)"):
        _launch(lib, 9, 2, "device")


def test_free_of_an_enqueued_tensor_of_a_deeper_queue_fails(lib):
    """A depth-2 queue's ring keeps the freed tensor at its head: its next DeQue would return it."""
    for bounds in ("device", "strict"):
        with pytest.raises(EmulatorError, match=r"TQue 'inq' \(VECIN, depth 2, .*\): FreeTensor of buffer 0 while it "
                                                r"is still enqueued \(DeQue it first\)"):
            _launch(lib, 1, 3, bounds)
