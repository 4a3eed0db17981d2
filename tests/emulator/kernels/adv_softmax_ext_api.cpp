// trex tests (written for trex): kernel-launch kernels for SoftmaxFlashV2, SoftmaxGrad(Front), LogSoftMax and
// AdjustSoftMaxRes (adv_softmax_ext.h). Each block takes `rows` rows of k floats; stats are [rows, 8].
#include "kernel_operator.h"
using namespace AscendC;

enum SmOp : uint32_t { kFlash = 0, kFlashUpdate, kGrad, kGradFront, kLogSoftMax, kAdjust };

// x: [blocks*rows, k]; y: same; st: [blocks*rows, 8] in/out stats (sum), st2 (max), em (expMax) [blocks*rows, 8]
extern "C" __global__ __aicore__ void sm_ext(GM_ADDR x, GM_ADDR g, GM_ADDR y, GM_ADDR st, GM_ADDR st2, GM_ADDR em,
                                             uint32_t rows, uint32_t k, uint32_t op, uint32_t from) {
  const uint32_t b = GetBlockIdx();
  const uint32_t n = rows * k, s = rows * 8;
  GlobalTensor<float> xGm, gGm, yGm, sGm, mGm, eGm;
  xGm.SetGlobalBuffer((__gm__ float*)x + b * n, n);
  gGm.SetGlobalBuffer((__gm__ float*)g + b * n, n);
  yGm.SetGlobalBuffer((__gm__ float*)y + b * n, n);
  sGm.SetGlobalBuffer((__gm__ float*)st + b * s, s);
  mGm.SetGlobalBuffer((__gm__ float*)st2 + b * s, s);
  eGm.SetGlobalBuffer((__gm__ float*)em + b * s, s);
  TPipe pipe;
  TBuf<TPosition::VECCALC> bx, bg, by, bs, bm, be, bt;
  pipe.InitBuffer(bx, n * 4);
  pipe.InitBuffer(bg, n * 4);
  pipe.InitBuffer(by, n * 4);
  pipe.InitBuffer(bs, s * 4);
  pipe.InitBuffer(bm, s * 4);
  pipe.InitBuffer(be, s * 4);
  pipe.InitBuffer(bt, 4096);
  LocalTensor<float> lx = bx.Get<float>(), lg = bg.Get<float>(), ly = by.Get<float>();
  LocalTensor<float> ls = bs.Get<float>(), lm = bm.Get<float>(), le = be.Get<float>();
  LocalTensor<uint8_t> tmp = bt.Get<uint8_t>();
  DataCopy(lx, xGm, n);
  DataCopy(lg, gGm, n);
  DataCopy(ly, yGm, n);
  DataCopy(ls, sGm, s);
  DataCopy(lm, mGm, s);
  PipeBarrier<PIPE_ALL>();
  SoftMaxShapeInfo shape = {rows, k, rows, k};
  SoftMaxTiling tiling;
  LogSoftMaxTiling ltiling;
  switch (op) {
    case kFlash: SoftmaxFlashV2<float, false>(ly, ls, lm, lx, le, ls, lm, tmp, tiling, shape); break;
    case kFlashUpdate: SoftmaxFlashV2<float, true>(ly, ls, lm, lx, le, ls, lm, tmp, tiling, shape); break;
    case kGrad: SoftmaxGrad<float, false>(ly, lg, lx, tmp, tiling, false, shape); break;
    case kGradFront: SoftmaxGradFront<float>(ly, lg, lx, tmp, tiling, shape); break;
    case kLogSoftMax: LogSoftMax<float, false>(ly, ls, lm, lx, tmp, ltiling, shape); break;
    case kAdjust: {
      const bool hit = AdjustSoftMaxRes<float, float>(lx, lm, from, -5.0f, shape);
      le.SetValue(0, hit ? 1.0f : 0.0f);
      DataCopy(ly, lx, n);
      break;
    }
  }
  PipeBarrier<PIPE_ALL>();
  DataCopy(yGm, ly, n);
  DataCopy(sGm, ls, s);
  DataCopy(mGm, lm, s);
  DataCopy(eGm, le, s);
}
