// Kernels that do what the NPU runs without a fault but CANN's CPU-debug build refuses (and two that
// fault on the NPU too), for the runner's bounds="strict" / bounds="device" modes
// (tests/emulator/test_emulator_device_bounds.py). Each block doubles its own 64-float slice of x.
#include "kernel_operator.h"
using namespace AscendC;

constexpr uint32_t kSlice = 64;  // floats per block: 256 B, one vector repeat

// case 0: a TBuf running past the end of the UB that this path never touches (cann-ops' neg, addcdiv)
// case 1: the same TBuf, touched past the UB's end (a fault on the NPU: no memory there)
// case 2: Duplicate over twice its buffer's length, into the neighbouring (unused) buffer inside the UB
// case 3: a whole 256-B DataCopy from x whose last block holds only `n` floats: reads past x's allocation
// case 4: a whole 256-B DataCopy into y past its allocation (a write: corrupts the neighbour on the NPU)
extern "C" __global__ __aicore__ void device_bounds(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t which) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qin;
  TQue<QuePosition::VECOUT, 1> qout;
  TBuf<QuePosition::VECCALC> spare, unused;
  GlobalTensor<float> gx, gy;
  const uint32_t off = GetBlockIdx() * kSlice;
  gx.SetGlobalBuffer((__gm__ float*)x + off);
  gy.SetGlobalBuffer((__gm__ float*)y + off);
  pipe.InitBuffer(qin, 1, kSlice * sizeof(float));
  pipe.InitBuffer(qout, 1, kSlice * sizeof(float));
  pipe.InitBuffer(spare, kSlice * sizeof(float));
  pipe.InitBuffer(unused, which <= 1 ? 200 * 1024 : kSlice * sizeof(float));  // cases 0, 1: past 192 KB
  LocalTensor<float> in = qin.AllocTensor<float>();
  DataCopy(in, gx, kSlice);  // cases 3, 4: the last block's 64 floats run past n
  qin.EnQue(in);
  in = qin.DeQue<float>();
  LocalTensor<float> out = qout.AllocTensor<float>();
  if (which == 1) {
    LocalTensor<float> far = unused.Get<float>()[(196608 - 768) / sizeof(float)];  // the UB's end
    Muls(far, in, 2.0f, kSlice);
  }
  Duplicate(out, 0.0f, which == 2 ? 2 * kSlice : kSlice);  // case 2: into spare
  Muls(out, in, 2.0f, kSlice);
  qout.EnQue(out);
  qin.FreeTensor(in);
  out = qout.DeQue<float>();
  const uint32_t valid = n - off < kSlice ? n - off : kSlice;
  if (which == 4 || valid == kSlice) {
    DataCopy(gy, out, kSlice);
  } else {
    DataCopyPad(gy, out, DataCopyExtParams{1, static_cast<uint32_t>(valid * sizeof(float)), 0, 0, 0});
  }
  qout.FreeTensor(out);
}

// A queue buffer of 0 B (a tiling that sized it for an empty tile) still goes through Alloc/EnQue/DeQue/Free
// (the tensor is known by its buffer, not its address, as on the NPU), and a sub-tensor y[k] of a queue
// buffer is enqueued as that buffer; each block copies its 64 floats of x to y through one of them.
extern "C" __global__ __aicore__ void queue_by_buffer(GM_ADDR x, GM_ADDR y) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> empty, qin;
  GlobalTensor<float> gx, gy;
  gx.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * kSlice);
  gy.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * kSlice);
  pipe.InitBuffer(empty, 1, 0);
  pipe.InitBuffer(qin, 1, kSlice * sizeof(float));
  LocalTensor<float> none = empty.AllocTensor<float>();
  empty.EnQue(none);
  none = empty.DeQue<float>();
  empty.FreeTensor(none);
  LocalTensor<float> in = qin.AllocTensor<float>();
  DataCopy(in, gx, kSlice);
  qin.EnQue(in[8]);  // the buffer, whichever element the view starts at
  in = qin.DeQue<float>();
  DataCopy(gy, in, kSlice);
  qin.FreeTensor(in);
}
