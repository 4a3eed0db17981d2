// trex test op project (written for trex): y = x * scale over 3 blocks of an odd length, the scale from the
// tiling (which the host read from input 1's data).
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void chain_scale(GM_ADDR x, GM_ADDR scale, GM_ADDR y, GM_ADDR workspace,
                                                  GM_ADDR tiling) {
  GET_TILING_DATA(t, tiling);
  const uint32_t start = GetBlockIdx() * t.perBlock;
  if (start >= t.n) return;
  const uint32_t len = t.n - start < t.perBlock ? t.n - start : t.perBlock;
  GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x + start, len);
  yg.SetGlobalBuffer((__gm__ float*)y + start, len);
  TPipe pipe;
  TBuf<TPosition::VECIN> b;
  pipe.InitBuffer(b, len * sizeof(float));
  LocalTensor<float> v = b.Get<float>();
  const DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(float)), 0, 0, 0};
  DataCopyPad(v, xg, copy, DataCopyPadExtParams<float>{false, 0, 0, 0});
  PipeBarrier<PIPE_ALL>();
  Muls(v, v, t.scale, len);
  PipeBarrier<PIPE_ALL>();
  DataCopyPad(yg, v, copy);
}
