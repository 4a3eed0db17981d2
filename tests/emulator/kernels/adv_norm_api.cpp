// trex tests (written for trex): the LayerNorm family (adv_norm.h) with tilings from the host helpers
// (adv_norm_tiling_host.h), in the forms kernels use: a sharedTmpBuffer of chosen size, or the PopStackBuffer form
// (tmpBytes 0). Each block takes its own rows; outputs are copied back whole (poisoned by the test beforehand).
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
using namespace AscendC;

namespace {
template <class T>
struct Ub {
  GlobalTensor<T> g;
  TBuf<TPosition::VECCALC> b;
  LocalTensor<T> l;
  uint32_t n = 0;
  void Init(TPipe& pipe, GM_ADDR p, uint32_t count, uint32_t offset) {
    n = count;
    g.SetGlobalBuffer((__gm__ T*)p + offset, count);
    pipe.InitBuffer(b, (count * sizeof(T) + 31) / 32 * 32);
    l = b.Get<T>();
    DataCopy(l, g, (count * sizeof(T) + 31) / 32 * 32 / sizeof(T));
  }
  void Out() { DataCopy(g, l, (n * sizeof(T) + 31) / 32 * 32 / sizeof(T)); }
};
uint32_t StackBytes() {
  LocalTensor<uint8_t> st;
  PopStackBuffer<uint8_t, TPosition::LCM>(st);
  return st.GetSize();
}
}  // namespace

// LayerNorm, LayerNormTiling form: x/y [rows, h], mean/var [rows] (half: padded to 16), info[0..3] = loopRound,
// inputTailSize, bshCurLength before and after the call.
template <class T, bool reuse>
__aicore__ inline void LnBody(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR var,
                              GM_ADDR info, uint32_t rows, uint32_t h, uint32_t oriH, uint32_t tmpBytes, float eps,
                              uint32_t tilingBytes) {
  const uint32_t b = GetBlockIdx(), n = rows * h, mv = (rows + 15) / 16 * 16;
  TPipe pipe;
  Ub<T> ux, ug, ube, uy, um, uv;
  ux.Init(pipe, x, n, b * n);
  ug.Init(pipe, gamma, h, 0);
  ube.Init(pipe, beta, h, 0);
  uy.Init(pipe, y, n, b * n);
  um.Init(pipe, mean, mv, b * mv);
  uv.Init(pipe, var, mv, b * mv);
  TBuf<TPosition::VECCALC> bt;
  if (tmpBytes) pipe.InitBuffer(bt, tmpBytes);
  PipeBarrier<PIPE_ALL>();
  ge::Shape shape({1, static_cast<int64_t>(rows), static_cast<int64_t>(h), static_cast<int64_t>(oriH)});
  LayerNormTiling tiling;
  const uint32_t stack = tilingBytes ? tilingBytes : (tmpBytes ? tmpBytes : StackBytes());
  GetLayerNormNDTilingInfo(shape, stack, sizeof(T), reuse, tiling);
  const uint32_t before = tiling.bshCurLength;
  const T e = static_cast<T>(eps);
  if (tmpBytes) LayerNorm<T, reuse>(uy.l, um.l, uv.l, ux.l, ug.l, ube.l, bt.Get<uint8_t>(), e, tiling);
  else LayerNorm<T, reuse>(uy.l, um.l, uv.l, ux.l, ug.l, ube.l, e, tiling);
  PipeBarrier<PIPE_ALL>();
  uy.Out();
  um.Out();
  uv.Out();
  ux.Out();
  if (b == 0) {
    GlobalTensor<uint32_t> o;
    o.SetGlobalBuffer((__gm__ uint32_t*)info, 4);
    o.SetValue(0, tiling.loopRound);
    o.SetValue(1, tiling.inputTailSize);
    o.SetValue(2, before);
    o.SetValue(3, tiling.bshCurLength);
  }
}
extern "C" __global__ __aicore__ void ln_float(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR var,
    GM_ADDR info, uint32_t rows, uint32_t h, uint32_t oriH, uint32_t tmpBytes, float eps, uint32_t tilingBytes) {
  LnBody<float, false>(x, gamma, beta, y, mean, var, info, rows, h, oriH, tmpBytes, eps, tilingBytes);
}
extern "C" __global__ __aicore__ void ln_float_reuse(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR var,
    GM_ADDR info, uint32_t rows, uint32_t h, uint32_t oriH, uint32_t tmpBytes, float eps, uint32_t tilingBytes) {
  LnBody<float, true>(x, gamma, beta, y, mean, var, info, rows, h, oriH, tmpBytes, eps, tilingBytes);
}
extern "C" __global__ __aicore__ void ln_half(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR var,
    GM_ADDR info, uint32_t rows, uint32_t h, uint32_t oriH, uint32_t tmpBytes, float eps, uint32_t tilingBytes) {
  LnBody<half, false>(x, gamma, beta, y, mean, var, info, rows, h, oriH, tmpBytes, eps, tilingBytes);
}

extern "C" __global__ __aicore__ void ln_half_reuse(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean,
    GM_ADDR var, GM_ADDR info, uint32_t rows, uint32_t h, uint32_t oriH, uint32_t tmpBytes, float eps,
    uint32_t tilingBytes) {
  LnBody<half, true>(x, gamma, beta, y, mean, var, info, rows, h, oriH, tmpBytes, eps, tilingBytes);
}
// Misuse: outputMean and outputVariance one tensor.
extern "C" __global__ __aicore__ void ln_alias(GM_ADDR x, uint32_t rows, uint32_t h) {
  TPipe pipe;
  Ub<float> ux, ug, uy, um;
  ux.Init(pipe, x, rows * h, 0);
  ug.Init(pipe, x, h, 0);
  uy.Init(pipe, x, rows * h, 0);
  um.Init(pipe, x, 16, 0);
  LayerNormTiling tiling;
  ge::Shape shape({1, static_cast<int64_t>(rows), static_cast<int64_t>(h), static_cast<int64_t>(h)});
  GetLayerNormNDTilingInfo(shape, 4096, 4, false, tiling);
  LayerNorm<float, false>(uy.l, um.l, um.l, ux.l, ug.l, ug.l, 1e-5f, tiling);
}

// LayerNorm separate form and Normalize: x/y [a, rp], gamma/beta [rp] of U, mean/rstd [a] (padded to 8).
// mode 0: LayerNorm (mean, rstd out); 1: LayerNorm with isNoBeta; 2: Normalize over the given mean / var.
constexpr LayerNormConfig kLnNoBeta = {true, false, false, true};
constexpr NormalizeConfig kNlNoGamma = {ReducePattern::AR, -1, false, true, false};
template <class U, class T, int mode>
__aicore__ inline void SepBody(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR rstd,
                               GM_ADDR var, uint32_t a, uint32_t r, uint32_t rp, uint32_t tmpBytes, float eps,
                               uint32_t tilingBytes) {
  const uint32_t b = GetBlockIdx(), n = a * rp, a8 = (a + 7) / 8 * 8;
  TPipe pipe;
  Ub<T> ux, uy;
  Ub<U> ug, ube;
  Ub<float> um, ur, uv;
  ux.Init(pipe, x, n, b * n);
  ug.Init(pipe, gamma, rp, 0);
  ube.Init(pipe, beta, rp, 0);
  uy.Init(pipe, y, n, b * n);
  um.Init(pipe, mean, a8, b * a8);
  ur.Init(pipe, rstd, a8, b * a8);
  uv.Init(pipe, var, a8, b * a8);
  TBuf<TPosition::VECCALC> bt;
  if (tmpBytes) pipe.InitBuffer(bt, tmpBytes);
  PipeBarrier<PIPE_ALL>();
  if constexpr (mode == 2) {
    NormalizePara para = {a, r, rp};
    if (tmpBytes)
      Normalize<U, T, false, kNlNoGamma>(uy.l, ur.l, um.l, uv.l, ux.l, ug.l, ube.l, bt.Get<uint8_t>(), eps, para);
    else
      Normalize<U, T, false, NLCFG_NORM>(uy.l, ur.l, um.l, uv.l, ux.l, ug.l, ube.l, eps, para);
  } else {
    ge::Shape shape({static_cast<int64_t>(a), static_cast<int64_t>(r)});
    LayerNormSeparateTiling tiling;
    const uint32_t stack = tilingBytes ? tilingBytes : (tmpBytes ? tmpBytes : StackBytes());
    GetLayerNormNDTilingInfo(shape, stack, sizeof(T), false, true, tiling);
    LayerNormPara para = {a, r, rp};
    if constexpr (mode == 1) {
      LayerNorm<U, T, false, kLnNoBeta>(uy.l, um.l, ur.l, ux.l, ug.l, ube.l, eps, bt.Get<uint8_t>(), para, tiling);
    } else {
      if (tmpBytes) LayerNorm<U, T>(uy.l, um.l, ur.l, ux.l, ug.l, ube.l, eps, bt.Get<uint8_t>(), para, tiling);
      else LayerNorm<U, T>(uy.l, um.l, ur.l, ux.l, ug.l, ube.l, eps, para, tiling);
    }
  }
  PipeBarrier<PIPE_ALL>();
  uy.Out();
  um.Out();
  ur.Out();
  ux.Out();
}
extern "C" __global__ __aicore__ void sep_float(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR rstd,
    GM_ADDR var, uint32_t a, uint32_t r, uint32_t rp, uint32_t tmpBytes, float eps, uint32_t tilingBytes) {
  SepBody<float, float, 0>(x, gamma, beta, y, mean, rstd, var, a, r, rp, tmpBytes, eps, tilingBytes);
}
extern "C" __global__ __aicore__ void sep_half_float(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR rstd,
    GM_ADDR var, uint32_t a, uint32_t r, uint32_t rp, uint32_t tmpBytes, float eps, uint32_t tilingBytes) {
  SepBody<float, half, 0>(x, gamma, beta, y, mean, rstd, var, a, r, rp, tmpBytes, eps, tilingBytes);
}
extern "C" __global__ __aicore__ void sep_half_half(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR rstd,
    GM_ADDR var, uint32_t a, uint32_t r, uint32_t rp, uint32_t tmpBytes, float eps, uint32_t tilingBytes) {
  SepBody<half, half, 0>(x, gamma, beta, y, mean, rstd, var, a, r, rp, tmpBytes, eps, tilingBytes);
}
extern "C" __global__ __aicore__ void sep_float_nobeta(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR rstd,
    GM_ADDR var, uint32_t a, uint32_t r, uint32_t rp, uint32_t tmpBytes, float eps, uint32_t tilingBytes) {
  SepBody<float, float, 1>(x, gamma, beta, y, mean, rstd, var, a, r, rp, tmpBytes, eps, tilingBytes);
}
extern "C" __global__ __aicore__ void norm_float(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR rstd,
    GM_ADDR var, uint32_t a, uint32_t r, uint32_t rp, uint32_t tmpBytes, float eps, uint32_t tilingBytes) {
  SepBody<float, float, 2>(x, gamma, beta, y, mean, rstd, var, a, r, rp, tmpBytes, eps, tilingBytes);
}
extern "C" __global__ __aicore__ void norm_half_half(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR rstd,
    GM_ADDR var, uint32_t a, uint32_t r, uint32_t rp, uint32_t tmpBytes, float eps, uint32_t tilingBytes) {
  SepBody<half, half, 2>(x, gamma, beta, y, mean, rstd, var, a, r, rp, tmpBytes, eps, tilingBytes);
}

// LayerNormGrad then LayerNormGradBeta on its resForGamma: dy/x/pdx/res [rows, h], var/mean [rows] (padded to 16),
// gamma [h], pdGamma/pdBeta [h] per block. which: 1 Grad only, 2 GradBeta only (res given), 3 both.
template <class T, bool reuse>
__aicore__ inline void GradBody(GM_ADDR dy, GM_ADDR x, GM_ADDR var, GM_ADDR mean, GM_ADDR gamma, GM_ADDR pdx,
                                GM_ADDR res, GM_ADDR pdg, GM_ADDR pdb, uint32_t rows, uint32_t h, uint32_t oriH,
                                uint32_t tmpBytes, float eps, uint32_t which) {
  const uint32_t b = GetBlockIdx(), n = rows * h, mv = (rows + 15) / 16 * 16, hp = (h + 15) / 16 * 16;
  TPipe pipe;
  Ub<T> udy, ux, uvar, umean, ug, upd, ures, upg, upb;
  udy.Init(pipe, dy, n, b * n);
  ux.Init(pipe, x, n, b * n);
  uvar.Init(pipe, var, mv, b * mv);
  umean.Init(pipe, mean, mv, b * mv);
  ug.Init(pipe, gamma, h, 0);
  upd.Init(pipe, pdx, n, b * n);
  ures.Init(pipe, res, n, b * n);
  upg.Init(pipe, pdg, hp, b * hp);
  upb.Init(pipe, pdb, hp, b * hp);
  TBuf<TPosition::VECCALC> bt;
  if (tmpBytes) pipe.InitBuffer(bt, tmpBytes);
  PipeBarrier<PIPE_ALL>();
  ge::Shape shape({1, static_cast<int64_t>(rows), static_cast<int64_t>(h), static_cast<int64_t>(oriH)});
  const uint32_t stack = tmpBytes ? tmpBytes : StackBytes();
  const T e = static_cast<T>(eps);
  if (which & 1) {
    LayerNormGradTiling gt;
    GetLayerNormGradNDTilingInfo(shape, stack, sizeof(T), reuse, gt);
    if (tmpBytes) {
      LocalTensor<uint8_t> tmp = bt.Get<uint8_t>();
      LayerNormGrad<T, reuse>(upd.l, ures.l, udy.l, ux.l, uvar.l, umean.l, ug.l, tmp, e, gt);
    } else {
      LayerNormGrad<T, reuse>(upd.l, ures.l, udy.l, ux.l, uvar.l, umean.l, ug.l, e, gt);
    }
  }
  if (which & 2) {
    LayerNormGradBetaTiling bt2;
    GetLayerNormGradBetaNDTilingInfo(shape, stack, sizeof(T), reuse, bt2);
    if (tmpBytes) LayerNormGradBeta<T, reuse>(upg.l, upb.l, ures.l, udy.l, bt.Get<uint8_t>(), bt2);
    else LayerNormGradBeta<T, reuse>(upg.l, upb.l, ures.l, udy.l, bt2);
  }
  PipeBarrier<PIPE_ALL>();
  upd.Out();
  ures.Out();
  upg.Out();
  upb.Out();
  udy.Out();
  ux.Out();
}
extern "C" __global__ __aicore__ void grad_float(GM_ADDR dy, GM_ADDR x, GM_ADDR var, GM_ADDR mean, GM_ADDR gamma, GM_ADDR pdx,
    GM_ADDR res, GM_ADDR pdg, GM_ADDR pdb, uint32_t rows, uint32_t h, uint32_t oriH, uint32_t tmpBytes, float eps,
    uint32_t which) {
  GradBody<float, false>(dy, x, var, mean, gamma, pdx, res, pdg, pdb, rows, h, oriH, tmpBytes, eps, which);
}
extern "C" __global__ __aicore__ void grad_float_reuse(GM_ADDR dy, GM_ADDR x, GM_ADDR var, GM_ADDR mean, GM_ADDR gamma, GM_ADDR pdx,
    GM_ADDR res, GM_ADDR pdg, GM_ADDR pdb, uint32_t rows, uint32_t h, uint32_t oriH, uint32_t tmpBytes, float eps,
    uint32_t which) {
  GradBody<float, true>(dy, x, var, mean, gamma, pdx, res, pdg, pdb, rows, h, oriH, tmpBytes, eps, which);
}
extern "C" __global__ __aicore__ void grad_half(GM_ADDR dy, GM_ADDR x, GM_ADDR var, GM_ADDR mean, GM_ADDR gamma, GM_ADDR pdx,
    GM_ADDR res, GM_ADDR pdg, GM_ADDR pdb, uint32_t rows, uint32_t h, uint32_t oriH, uint32_t tmpBytes, float eps,
    uint32_t which) {
  GradBody<half, false>(dy, x, var, mean, gamma, pdx, res, pdg, pdb, rows, h, oriH, tmpBytes, eps, which);
}

// Host helpers as a kernel-side probe: out = [LayerNorm max, min, LayerNormTiling (26)], [separate max, min,
// LayerNormSeparateTiling (26)], [Normalize max, min], [Grad max, min, LayerNormGradTiling (30)],
// [GradBeta max, min, LayerNormGradBetaTiling (20)]; shape [b, s, h, oh] (the [A, R] ones take [b*s, oh]).
extern "C" __global__ __aicore__ void ln_host(GM_ADDR out, uint32_t b, uint32_t s, uint32_t h, uint32_t oh,
                                              uint32_t typeSize, uint32_t stack, uint32_t reuse, uint32_t normU) {
  uint32_t v[140] = {};
  uint32_t k = 0;
  auto put = [&](const void* p, size_t bytes) {
    std::memcpy(&v[k], p, bytes);
    k += bytes / 4;
  };
  ge::Shape s4({b, s, h, oh}), s2({b * s, oh});
  uint32_t mx = 0, mn = 0;
  GetLayerNormMaxMinTmpSize(s4, typeSize, reuse != 0, mx, mn);
  LayerNormTiling t1;
  GetLayerNormNDTilingInfo(s4, stack, typeSize, reuse != 0, t1);
  v[k++] = mx;
  v[k++] = mn;
  put(&t1, sizeof(t1));
  mx = mn = 0;
  GetLayerNormMaxMinTmpSize(s2, typeSize, reuse != 0, true, false, mx, mn);
  LayerNormSeparateTiling t2;
  GetLayerNormNDTilingInfo(s2, stack, typeSize, reuse != 0, true, t2);
  v[k++] = mx;
  v[k++] = mn;
  put(&t2, sizeof(t2));
  mx = mn = 0;
  GetNormalizeMaxMinTmpSize(s2, normU, typeSize, reuse != 0, true, false, mx, mn);
  v[k++] = mx;
  v[k++] = mn;
  mx = mn = 0;
  GetLayerNormGradMaxMinTmpSize(s4, typeSize, reuse != 0, mx, mn);
  LayerNormGradTiling t3;
  GetLayerNormGradNDTilingInfo(s4, stack, typeSize, reuse != 0, t3);
  v[k++] = mx;
  v[k++] = mn;
  put(&t3, sizeof(t3));
  mx = mn = 0;
  GetLayerNormGradBetaMaxMinTmpSize(s4, typeSize, reuse != 0, mx, mn);
  LayerNormGradBetaTiling t4;
  GetLayerNormGradBetaNDTilingInfo(s4, stack, typeSize, reuse != 0, t4);
  v[k++] = mx;
  v[k++] = mn;
  put(&t4, sizeof(t4));
  GlobalTensor<uint32_t> o;
  o.SetGlobalBuffer((__gm__ uint32_t*)out, 140);
  for (uint32_t i = 0; i < 140; ++i) o.SetValue(i, v[i]);
}
