// trex tests (written for trex): kernel-launch kernels for WelfordUpdate / WelfordFinalize (adv_welford.h).
// Each block owns one row: WelfordUpdate over abLength elements at block * abLength; WelfordFinalize over
// abLength partials at block * abLength, writing 8 floats at block * 8. The outputs are first loaded from GM
// (poisoned by the test), so elements an API leaves alone keep the poison. tmpBytes 0: the form without
// sharedTmpBuffer (the TPipe's stack buffer).
#include "kernel_operator.h"
using namespace AscendC;

enum WfMode : uint32_t { kPlain = 0, kInplace = 1, kReuse = 2, kInplaceReuse = 3 };
constexpr WelfordUpdateConfig kInplaceCfg = {true};
constexpr WelfordUpdateConfig kPlainCfg = {false};

template <class T>
__aicore__ inline void UpdateBody(GM_ADDR x, GM_ADDR inMean, GM_ADDR inVar, GM_ADDR outMean, GM_ADDR outVar,
                                  uint32_t abLength, uint32_t abComputeLength, float nRec, uint32_t mode,
                                  uint32_t tmpBytes, GM_ADDR xAfter) {
  const uint32_t off = abLength * GetBlockIdx();
  GlobalTensor<T> xGm, xaGm;
  GlobalTensor<float> imGm, ivGm, omGm, ovGm;
  xGm.SetGlobalBuffer((__gm__ T*)x + off, abLength);
  xaGm.SetGlobalBuffer((__gm__ T*)xAfter + off, abLength);
  imGm.SetGlobalBuffer((__gm__ float*)inMean + off, abLength);
  ivGm.SetGlobalBuffer((__gm__ float*)inVar + off, abLength);
  omGm.SetGlobalBuffer((__gm__ float*)outMean + off, abLength);
  ovGm.SetGlobalBuffer((__gm__ float*)outVar + off, abLength);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> qx, qm, qv;
  TQue<TPosition::VECOUT, 1> qom, qov;
  TBuf<TPosition::VECCALC> tmpBuf;
  pipe.InitBuffer(qx, 1, abLength * sizeof(T));
  pipe.InitBuffer(qm, 1, abLength * sizeof(float));
  pipe.InitBuffer(qv, 1, abLength * sizeof(float));
  pipe.InitBuffer(qom, 1, abLength * sizeof(float));
  pipe.InitBuffer(qov, 1, abLength * sizeof(float));
  if (tmpBytes) pipe.InitBuffer(tmpBuf, tmpBytes);
  LocalTensor<T> lx = qx.AllocTensor<T>();
  LocalTensor<float> lm = qm.AllocTensor<float>();
  LocalTensor<float> lv = qv.AllocTensor<float>();
  LocalTensor<float> om = qom.AllocTensor<float>();
  LocalTensor<float> ov = qov.AllocTensor<float>();
  DataCopy(lx, xGm, abLength);
  DataCopy(lm, imGm, abLength);
  DataCopy(lv, ivGm, abLength);
  DataCopy(om, omGm, abLength);
  DataCopy(ov, ovGm, abLength);
  PipeBarrier<PIPE_ALL>();
  WelfordUpdateParam para = {1, abLength, abComputeLength, nRec};
  LocalTensor<uint8_t> tmp;
  if (tmpBytes) tmp = tmpBuf.Get<uint8_t>();
  const bool t = tmpBytes != 0;
  switch (mode) {
    case kPlain:
      if (t) WelfordUpdate<T, float>(om, ov, lm, lv, lx, tmp, para);
      else WelfordUpdate<T, float>(om, ov, lm, lv, lx, para);
      break;
    case kInplace:
      if (t) WelfordUpdate<T, float, false, kInplaceCfg>(om, ov, lm, lv, lx, tmp, para);
      else WelfordUpdate<T, float, false, kInplaceCfg>(om, ov, lm, lv, lx, para);
      break;
    case kReuse:
      if (t) WelfordUpdate<T, float, true, kPlainCfg>(om, ov, lm, lv, lx, tmp, para);
      else WelfordUpdate<T, float, true>(om, ov, lm, lv, lx, para);
      break;
    default:
      WelfordUpdate<T, float, true, kInplaceCfg>(om, ov, lm, lv, lx, tmp, para);
      break;
  }
  PipeBarrier<PIPE_ALL>();
  DataCopy(omGm, om, abLength);
  DataCopy(ovGm, ov, abLength);
  DataCopy(xaGm, lx, abLength);
  PipeBarrier<PIPE_ALL>();
  qx.FreeTensor(lx);
  qm.FreeTensor(lm);
  qv.FreeTensor(lv);
  qom.FreeTensor(om);
  qov.FreeTensor(ov);
}

extern "C" __global__ __aicore__ void wf_update_float(GM_ADDR x, GM_ADDR inMean, GM_ADDR inVar, GM_ADDR outMean,
                                                     GM_ADDR outVar, uint32_t abLength, uint32_t abComputeLength,
                                                     float nRec, uint32_t mode, uint32_t tmpBytes, GM_ADDR xAfter) {
  UpdateBody<float>(x, inMean, inVar, outMean, outVar, abLength, abComputeLength, nRec, mode, tmpBytes, xAfter);
}
extern "C" __global__ __aicore__ void wf_update_half(GM_ADDR x, GM_ADDR inMean, GM_ADDR inVar, GM_ADDR outMean,
                                                    GM_ADDR outVar, uint32_t abLength, uint32_t abComputeLength,
                                                    float nRec, uint32_t mode, uint32_t tmpBytes, GM_ADDR xAfter) {
  UpdateBody<half>(x, inMean, inVar, outMean, outVar, abLength, abComputeLength, nRec, mode, tmpBytes, xAfter);
}

// WelfordFinalize; useCounts selects the counts forms. outMean / outVar: 8 floats per block.
extern "C" __global__ __aicore__ void wf_finalize(GM_ADDR inMean, GM_ADDR inVar, GM_ADDR counts, GM_ADDR outMean,
                                                 GM_ADDR outVar, uint32_t abLength, uint32_t rnLength,
                                                 uint32_t headCount, uint32_t headCountLength, uint32_t tailCount,
                                                 uint32_t tailCountLength, float abRec, float rRec,
                                                 uint32_t useCounts, uint32_t tmpBytes) {
  const uint32_t off = abLength * GetBlockIdx();
  GlobalTensor<float> imGm, ivGm, omGm, ovGm;
  GlobalTensor<int32_t> cGm;
  imGm.SetGlobalBuffer((__gm__ float*)inMean + off, abLength);
  ivGm.SetGlobalBuffer((__gm__ float*)inVar + off, abLength);
  cGm.SetGlobalBuffer((__gm__ int32_t*)counts + off, abLength);
  omGm.SetGlobalBuffer((__gm__ float*)outMean + 8 * GetBlockIdx(), 8);
  ovGm.SetGlobalBuffer((__gm__ float*)outVar + 8 * GetBlockIdx(), 8);
  TPipe pipe;
  TBuf<TPosition::VECCALC> bm, bv, bc, bom, bov, bt;
  pipe.InitBuffer(bm, abLength * sizeof(float));
  pipe.InitBuffer(bv, abLength * sizeof(float));
  pipe.InitBuffer(bc, abLength * sizeof(int32_t));
  pipe.InitBuffer(bom, 8 * sizeof(float));
  pipe.InitBuffer(bov, 8 * sizeof(float));
  if (tmpBytes) pipe.InitBuffer(bt, tmpBytes);
  LocalTensor<float> lm = bm.Get<float>(), lv = bv.Get<float>(), om = bom.Get<float>(), ov = bov.Get<float>();
  LocalTensor<int32_t> lc = bc.Get<int32_t>();
  DataCopy(lm, imGm, abLength);
  DataCopy(lv, ivGm, abLength);
  DataCopy(lc, cGm, abLength);
  DataCopy(om, omGm, 8);
  DataCopy(ov, ovGm, 8);
  PipeBarrier<PIPE_ALL>();
  WelfordFinalizePara para = {rnLength, abLength, headCount, headCountLength, tailCount, tailCountLength, abRec, rRec};
  if (tmpBytes) {
    LocalTensor<uint8_t> tmp = bt.Get<uint8_t>();
    if (useCounts) WelfordFinalize(om, ov, lm, lv, lc, tmp, para);
    else WelfordFinalize<false>(om, ov, lm, lv, tmp, para);
  } else {
    if (useCounts) WelfordFinalize<false>(om, ov, lm, lv, lc, para);
    else WelfordFinalize(om, ov, lm, lv, para);
  }
  PipeBarrier<PIPE_ALL>();
  DataCopy(omGm, om, 8);
  DataCopy(ovGm, ov, 8);
}

// Misuse: the outputs alias the inputs (outMean = inMean).
extern "C" __global__ __aicore__ void wf_update_alias(GM_ADDR x, GM_ADDR inMean, GM_ADDR inVar, uint32_t abLength) {
  GlobalTensor<float> xGm, imGm, ivGm;
  xGm.SetGlobalBuffer((__gm__ float*)x, abLength);
  imGm.SetGlobalBuffer((__gm__ float*)inMean, abLength);
  ivGm.SetGlobalBuffer((__gm__ float*)inVar, abLength);
  TPipe pipe;
  TBuf<TPosition::VECCALC> bx, bm, bv, bo, bt;
  pipe.InitBuffer(bx, abLength * 4);
  pipe.InitBuffer(bm, abLength * 4);
  pipe.InitBuffer(bv, abLength * 4);
  pipe.InitBuffer(bo, abLength * 4);
  pipe.InitBuffer(bt, 512);
  LocalTensor<float> lx = bx.Get<float>(), lm = bm.Get<float>(), lv = bv.Get<float>(), lo = bo.Get<float>();
  DataCopy(lx, xGm, abLength);
  DataCopy(lm, imGm, abLength);
  DataCopy(lv, ivGm, abLength);
  PipeBarrier<PIPE_ALL>();
  WelfordUpdate<float, float>(lm, lo, lm, lv, lx, bt.Get<uint8_t>(), {1, abLength, abLength, 0.5f});
}
