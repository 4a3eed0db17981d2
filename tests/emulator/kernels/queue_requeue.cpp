// trex emulator tests (written for trex): a dequeued tensor enqueued again (DeQue -> modify -> EnQue,
// which CANN's EnQue accepts: the buffer state may be OCCUPIED or DEQUE), and the states it may not be
// enqueued in. y[b*n ...] = 4 * x[b*n ...] through two re-enqueues.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void requeue(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t misuse) {
  GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x + n * GetBlockIdx(), n);
  yg.SetGlobalBuffer((__gm__ float*)y + n * GetBlockIdx(), n);
  TPipe pipe;
  TQue<TPosition::VECOUT, 1> q;
  pipe.InitBuffer(q, 1, n * sizeof(float));
  LocalTensor<float> t = q.AllocTensor<float>();
  DataCopy(t, xg, n);
  q.EnQue(t);
  if (misuse == 2) q.EnQue(t);  // already enqueued
  for (int k = 0; k < 2; ++k) {
    t = q.DeQue<float>();
    Muls(t, t, 2.0f, n);
    q.EnQue(t);
  }
  t = q.DeQue<float>();
  DataCopy(yg, t, n);
  q.FreeTensor(t);
  if (misuse == 1) q.EnQue(t);  // freed
}
