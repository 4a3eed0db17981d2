// trex tests (written for trex): RmsNorm (adv_rmsnorm.h) with a tiling from the host GetRmsNormTilingInfo, in the
// forms kernels use: a sharedTmpBuffer of chosen size, or the PopStackBuffer form (tmpBytes 0). Each block takes
// rows x h elements (h the 32-byte-aligned row, oriH its valid length).
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
using namespace AscendC;

template <class T, bool basic>
__aicore__ inline void RmsBody(GM_ADDR x, GM_ADDR g, GM_ADDR y, uint32_t rows, uint32_t h, uint32_t oriH,
                               uint32_t tmpBytes, float eps, uint32_t tilingTmp) {
  const uint32_t b = GetBlockIdx(), n = rows * h;
  GlobalTensor<T> xg, gg, yg;
  xg.SetGlobalBuffer((__gm__ T*)x + b * n, n);
  gg.SetGlobalBuffer((__gm__ T*)g, h);
  yg.SetGlobalBuffer((__gm__ T*)y + b * n, n);
  TPipe pipe;
  TBuf<TPosition::VECCALC> bx, bgm, by, bt;
  pipe.InitBuffer(bx, n * sizeof(T));
  pipe.InitBuffer(bgm, h * sizeof(T));
  pipe.InitBuffer(by, n * sizeof(T));
  if (tmpBytes) pipe.InitBuffer(bt, tmpBytes);
  LocalTensor<T> lx = bx.Get<T>(), lg = bgm.Get<T>(), ly = by.Get<T>();
  DataCopy(lx, xg, n);
  DataCopy(lg, gg, h);
  DataCopy(ly, yg, n);
  PipeBarrier<PIPE_ALL>();
  optiling::RmsNormTiling tiling;
  ge::Shape shape({1, static_cast<int64_t>(rows), static_cast<int64_t>(h)});
  ge::Shape ori({1, static_cast<int64_t>(rows), static_cast<int64_t>(oriH)});
  uint32_t stackBytes = tmpBytes;
  if (tmpBytes == 0) {  // the stack form: size the tiling by what PopStackBuffer gives, as asc-devkit's example
    LocalTensor<uint8_t> st;
    PopStackBuffer<uint8_t, TPosition::LCM>(st);
    stackBytes = st.GetSize();
  }
  if (!GetRmsNormTilingInfo(shape, ori, tilingTmp ? tilingTmp : stackBytes, sizeof(T), tiling, basic))
    trex_emu::Fail("test: GetRmsNormTilingInfo refused the shape");
  const T e = static_cast<T>(eps);
  if (tmpBytes) RmsNorm<T, basic>(ly, lx, lg, bt.Get<uint8_t>(), e, tiling);
  else RmsNorm<T, basic>(ly, lx, lg, e, tiling);
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, ly, n);
}

extern "C" __global__ __aicore__ void rms_float(GM_ADDR x, GM_ADDR g, GM_ADDR y, uint32_t rows, uint32_t h, uint32_t oriH,
                                           uint32_t tmpBytes, float eps, uint32_t tilingTmp) {
  RmsBody<float, false>(x, g, y, rows, h, oriH, tmpBytes, eps, tilingTmp);
}
extern "C" __global__ __aicore__ void rms_half(GM_ADDR x, GM_ADDR g, GM_ADDR y, uint32_t rows, uint32_t h, uint32_t oriH,
                                           uint32_t tmpBytes, float eps, uint32_t tilingTmp) {
  RmsBody<half, false>(x, g, y, rows, h, oriH, tmpBytes, eps, tilingTmp);
}
extern "C" __global__ __aicore__ void rms_float_basic(GM_ADDR x, GM_ADDR g, GM_ADDR y, uint32_t rows, uint32_t h, uint32_t oriH,
                                           uint32_t tmpBytes, float eps, uint32_t tilingTmp) {
  RmsBody<float, true>(x, g, y, rows, h, oriH, tmpBytes, eps, tilingTmp);
}

// Host helpers as a kernel-side probe: out[0..1] = GetRmsNormMaxMinTmpSize max/min (ok in out[2]), then the tiling.
extern "C" __global__ __aicore__ void rms_host(GM_ADDR out, uint32_t b, uint32_t s, uint32_t h, uint32_t oriH,
                                               uint32_t typeSize, uint32_t stack, uint32_t basic) {
  uint32_t mx = 0, mn = 0;
  ge::Shape shape({b, s, h}), ori({b, s, oriH});
  const bool ok = GetRmsNormMaxMinTmpSize(shape, typeSize, mx, mn, basic != 0);
  optiling::RmsNormTiling t;
  const bool ok2 = GetRmsNormTilingInfo(shape, ori, stack, typeSize, t, basic != 0);
  GlobalTensor<uint32_t> o;
  o.SetGlobalBuffer((__gm__ uint32_t*)out, 16);
  const uint32_t v[16] = {mx, mn, ok, ok2, t.bLength, t.sLength, t.hLength, t.originalHLength, t.mainBshLength,
                          t.mainBsLength, t.mainBsLengthAlign, t.loopRound, t.inputTailPos, t.tailBshLength,
                          t.tailBsLength, 0};
  for (int i = 0; i < 16; ++i) o.SetValue(i, v[i]);
}
