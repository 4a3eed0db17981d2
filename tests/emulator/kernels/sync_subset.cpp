// trex tests (written for trex): the software SyncAll over a subset of blocks (usedCores). Blocks
// [0, used) each sum their n elements of x into part[b*8], SyncAll(sync, ub, used), then read every
// participant's partial and write the total to out[b*8]; the other blocks write -1 and never synchronise.
#include "kernel_operator.h"
using namespace AscendC;

enum SubsetMode : uint32_t { kSubset = 0, kOutsiderReads, kTooManyCores, kParticipantSkips, kTwice };

extern "C" __global__ __aicore__ void subset_total(GM_ADDR x, GM_ADDR sync, GM_ADDR part, GM_ADDR out, uint32_t n,
                                                   uint32_t used, uint32_t mode) {
  const uint32_t b = GetBlockIdx();
  TPipe pipe;
  TBuf<TPosition::VECCALC> xb, sb, ws, work;
  pipe.InitBuffer(xb, n * sizeof(float));
  pipe.InitBuffer(sb, 8 * GetBlockNum() * sizeof(float));
  pipe.InitBuffer(ws, GetBlockNum() * 32);
  pipe.InitBuffer(work, n * sizeof(float));
  GlobalTensor<float> xg, pg, og;
  GlobalTensor<int32_t> syncGm;
  xg.SetGlobalBuffer((__gm__ float*)x + n * b, n);
  pg.SetGlobalBuffer((__gm__ float*)part, 8 * GetBlockNum());
  og.SetGlobalBuffer((__gm__ float*)out + 8 * b, 8);
  syncGm.SetGlobalBuffer((__gm__ int32_t*)sync, 8 * GetBlockNum());
  LocalTensor<float> s = sb.Get<float>();
  const uint32_t cores = mode == kTooManyCores ? GetBlockNum() + 1 : used;
  if (b >= used) {
    if (mode == kOutsiderReads) {
      DataCopy(s, pg, 8);
      PipeBarrier<PIPE_ALL>();
    }
    Duplicate(s, -1.0f, 8);
    PipeBarrier<PIPE_ALL>();
    DataCopy(og, s, 8);
    return;
  }
  LocalTensor<float> a = xb.Get<float>();
  DataCopy(a, xg, n);
  PipeBarrier<PIPE_ALL>();
  ReduceSum(s, a, work.Get<float>(), n);
  PipeBarrier<PIPE_ALL>();
  for (int i = 1; i < 8; ++i) s.SetValue(i, 0.0f);
  DataCopy(pg[8 * b], s, 8);
  PipeBarrier<PIPE_ALL>();
  const int rounds = mode == kTwice ? 2 : 1;
  float total = 0;
  for (int r = 0; r < rounds; ++r) {
    if (!(mode == kParticipantSkips && b + 1 == used)) SyncAll(syncGm, ws.Get<int32_t>(), static_cast<int32_t>(cores));
    DataCopy(s, pg, 8 * used);
    PipeBarrier<PIPE_ALL>();
    total = 0;
    for (uint32_t i = 0; i < used; ++i) total += s.GetValue(8 * i);
    if (r + 1 < rounds) {  // second round: every participant doubles its partial, after everyone has read
      SyncAll(syncGm, ws.Get<int32_t>(), static_cast<int32_t>(cores));
      s.SetValue(0, s.GetValue(8 * b) * 2.0f);
      for (int i = 1; i < 8; ++i) s.SetValue(i, 0.0f);
      DataCopy(pg[8 * b], s, 8);
      PipeBarrier<PIPE_ALL>();
    }
  }
  Duplicate(s, 0.0f, 8);
  PipeBarrier<PIPE_ALL>();
  s.SetValue(0, total);
  DataCopy(og, s, 8);
}
