// trex tests (written for trex): kernel-launch kernels for SoftmaxFlashV2, SoftmaxGrad(Front), LogSoftMax and
// AdjustSoftMaxRes (adv_softmax_ext.h). Each block takes `rows` rows of k floats; stats are [rows, 8].
// SoftmaxFlashV3 (PASA, half/float) and its host tiling helpers.
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
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

// SoftmaxFlashV3<half, float, isUpdate>: x half [blocks][m, k]; mean / sum / max float [blocks][m, 8] (inputs
// in mi/si/ai, outputs mo/so/ao), expMax half [blocks][m, 16]; the tiling from SoftMaxFlashV3TilingFunc for
// `work` bytes; tmpBytes 0: the PopStackBuffer form. alias: the outputs are the input tensors (as asc-devkit's example).
template <bool isUpdate>
__aicore__ inline void FlashV3Body(GM_ADDR x, GM_ADDR mi, GM_ADDR si, GM_ADDR ai, GM_ADDR y, GM_ADDR mo, GM_ADDR so,
                                   GM_ADDR ao, GM_ADDR em, uint32_t m, uint32_t k, uint32_t work, uint32_t tmpBytes,
                                   uint32_t alias, uint32_t loopCnt, float alpha) {
  const uint32_t b = GetBlockIdx(), n = m * k, s = m * 8;
  GlobalTensor<half> xg, yg, eg;
  GlobalTensor<float> mig, sig, aig, mog, sog, aog;
  xg.SetGlobalBuffer((__gm__ half*)x + b * n, n);
  yg.SetGlobalBuffer((__gm__ half*)y + b * n, n);
  eg.SetGlobalBuffer((__gm__ half*)em + b * m * 16, m * 16);
  mig.SetGlobalBuffer((__gm__ float*)mi + b * s, s);
  sig.SetGlobalBuffer((__gm__ float*)si + b * s, s);
  aig.SetGlobalBuffer((__gm__ float*)ai + b * s, s);
  mog.SetGlobalBuffer((__gm__ float*)mo + b * s, s);
  sog.SetGlobalBuffer((__gm__ float*)so + b * s, s);
  aog.SetGlobalBuffer((__gm__ float*)ao + b * s, s);
  TPipe pipe;
  TBuf<TPosition::VECCALC> bx, by, be, bmi, bsi, bai, bmo, bso, bao, bt;
  pipe.InitBuffer(bx, n * 2);
  pipe.InitBuffer(by, n * 2);
  pipe.InitBuffer(be, m * 32);
  pipe.InitBuffer(bmi, s * 4);
  pipe.InitBuffer(bsi, s * 4);
  pipe.InitBuffer(bai, s * 4);
  pipe.InitBuffer(bmo, s * 4);
  pipe.InitBuffer(bso, s * 4);
  pipe.InitBuffer(bao, s * 4);
  if (tmpBytes) pipe.InitBuffer(bt, tmpBytes);
  LocalTensor<half> lx = bx.Get<half>(), ly = by.Get<half>(), le = be.Get<half>();
  LocalTensor<float> lmi = bmi.Get<float>(), lsi = bsi.Get<float>(), lai = bai.Get<float>();
  LocalTensor<float> lmo = alias ? lmi : bmo.Get<float>(), lso = alias ? lsi : bso.Get<float>();
  LocalTensor<float> lao = alias ? lai : bao.Get<float>();
  DataCopy(lx, xg, n);
  DataCopy(ly, yg, n);
  DataCopy(le, eg, m * 16);
  DataCopy(lmi, mig, s);
  DataCopy(lsi, sig, s);
  DataCopy(lai, aig, s);
  if (!alias) {
    DataCopy(lmo, mog, s);
    DataCopy(lso, sog, s);
    DataCopy(lao, aog, s);
  }
  PipeBarrier<PIPE_ALL>();
  uint32_t shape[2] = {m, k};
  lx.SetShapeInfo(ShapeInfo(2, shape));
  optiling::SoftMaxTiling tiling;
  SoftMaxFlashV3TilingFunc(ge::Shape({m, k}), sizeof(half), sizeof(float), work, tiling, isUpdate);
  SoftMaxParams params = {m, k, m, k, loopCnt, 8, alpha};
  if (tmpBytes)
    SoftmaxFlashV3<half, float, isUpdate>(ly, lmo, lso, lao, lx, le, lmi, lsi, lai, bt.Get<uint8_t>(), tiling, params);
  else
    SoftmaxFlashV3<half, float, isUpdate>(ly, lmo, lso, lao, lx, le, lmi, lsi, lai, tiling, params);
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, ly, n);
  DataCopy(eg, le, m * 16);
  DataCopy(mog, lmo, s);
  DataCopy(sog, lso, s);
  DataCopy(aog, lao, s);
}
extern "C" __global__ __aicore__ void flash_v3(GM_ADDR x, GM_ADDR mi, GM_ADDR si, GM_ADDR ai, GM_ADDR y, GM_ADDR mo,
                                               GM_ADDR so, GM_ADDR ao, GM_ADDR em, uint32_t m, uint32_t k,
                                               uint32_t work, uint32_t tmpBytes, uint32_t alias, uint32_t update,
                                               uint32_t loopCnt, float alpha) {
  if (update) FlashV3Body<true>(x, mi, si, ai, y, mo, so, ao, em, m, k, work, tmpBytes, alias, loopCnt, alpha);
  else FlashV3Body<false>(x, mi, si, ai, y, mo, so, ao, em, m, k, work, tmpBytes, alias, loopCnt, alpha);
}
// out = {max, min} of GetSoftMaxFlashV3MaxMinTmpSize for [m, k], then the tiling's 16 fields for `work` bytes.
extern "C" __global__ __aicore__ void flash_v3_host(GM_ADDR out, uint32_t m, uint32_t k, uint32_t work) {
  uint32_t mx = 0, mn = 0;
  GetSoftMaxFlashV3MaxMinTmpSize(ge::Shape({m, k}), 2, 4, mx, mn, true);
  optiling::SoftMaxTiling t;
  SoftMaxFlashV3TilingFunc(ge::Shape({m, k}), 2, 4, work, t, true);
  const uint32_t v[18] = {mx, mn, t.srcM, t.srcK, t.srcSize, t.outMaxM, t.outMaxK, t.outMaxSize, t.splitM, t.splitK,
                          t.splitSize, t.reduceM, t.reduceK, t.reduceSize, t.rangeM, t.tailM, t.tailSplitSize,
                          t.tailReduceSize};
  GlobalTensor<uint32_t> o;
  o.SetGlobalBuffer((__gm__ uint32_t*)out, 18);
  for (int i = 0; i < 18; ++i) o.SetValue(i, v[i]);
}
