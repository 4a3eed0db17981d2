// adv_norm.h: the LayerNorm family of advanced APIs for Atlas A2/A3 (arch 2201): LayerNorm (LayerNormTiling form and
// separate LayerNormPara / LayerNormSeparateTiling form), Normalize, LayerNormGrad, LayerNormGradBeta (asc-devkit
// 高阶API/归一化操作; impl/adv_api/detail/normalization/layernorm/layernorm_common_impl.h + layernorm_common_basic_impl.h,
// normalize/normalize_common_impl.h, layernormgrad/layernormgrad_common_impl.h + layernormgradbeta_common_impl.h),
// with their config / parameter structs. Every step below is one float vector instruction of the impl, in its order;
// half inputs are converted to float exactly (Cast CAST_NONE), half outputs rounded once (CAST_NONE). Rows are
// independent, so the tiling's rounds only set which rows the impl touches and the sizes checked.
//
// Row sums: "fold-sum" (LayerNormReduceSumImpl): the 64-float blocks 1.. of the row added onto block 0 one after the
// other (the partial tail block lane by lane), then WholeReduceSum's pairwise tree over the first min(len, 64) lanes.
// "level-sum" (LayerNormGrad's ReduceSumImpl): 64-float repeats each summed by the tree, level by level, until one
// value is left.
//
// * LayerNorm<T, isReuseSource>(output, outputMean, outputVariance, inputX, gamma, beta[, sharedTmpBuffer], epsilon,
//   LayerNormTiling&), T half/float, x [B*S, H] rows (H = tiling.hLength): c = x * lastDimValueBack; mean = fold-sum(c)
//   over H; d = x - mean; a = (d * d) * lastDimValueBack; var = fold-sum(a); r = 1 / sqrt(var + eps) (Adds, Sqrt, Div);
//   y = ((r * d) * gamma) + beta. half: mean / variance half(mean / var) over meanVarSize. The impl's rounds:
//   loopRound rounds of bsCurLength rows (offsets inputRoundSize / meanVarRoundSize), then meanVarTailSize rows at
//   inputTailPos / meanVarTailPos; with a tail it leaves tiling.bshCurLength / bsCurLength at the tail's sizes (it
//   takes the tiling by reference and writes them). float isReuseSource: the impl's tempTensorA is inputX from its
//   start, so each round leaves its rows' (r * d) * gamma at the start of inputX (the last round's on top).
//   Checks: tiling.oneTmpSize > 0, hLength * sizeof(T) a multiple of 32 B, gamma / beta sizes 32-byte multiples of at
//   least H, rounds within oneTmpSize, the buffer (floats) >= tmpBufSize and thirdTmpStartPos (float isReuseSource:
//   secondTmpStartPos) + oneTmpSize <= tmpBufSize; half with isReuseSource is refused; operands in UB, 32-byte
//   aligned, holding the rows; no overlap within (output, mean, variance, gamma|beta, tmp) and (mean, variance,
//   inputX, tmp).
// * LayerNorm<U, T, isReuseSource, LayerNormConfig{isNoBeta, isNoGamma, isOnlyOutput, isOutputRstd}>(output,
//   outputMean, outputRstd, inputX, gamma, beta, epsilon[, sharedTmpBuffer], LayerNormPara{aLength, rLength,
//   rLengthWithPadding}, LayerNormSeparateTiling&): rows of rLengthWithPadding (rp); first, when rLength != rp, each
//   row of inputX is multiplied (in T) by 1 for j < rLength and 0 beyond (inputX keeps that). Then per row: a =
//   float(x) * rValueBack; mean = fold-sum(a) over rp; b = float(x) + (-mean) for j < tiling.rLength (float(x)
//   beyond); var = fold-sum((b * b) * rValueBack) (kept in the buffer at varianceTmpTensorPos), then Normalize below
//   with the config's isNoBeta / isNoGamma over the buffer from firstTmpStartPos. outputRstd is always written
//   (isOutputRstd does not change the A2/A3 impl). The tiling's arCurLength / aCurLength take the tail's sizes as in
//   the impl. Checks: U/T pairs float/float, half/half, float-gamma with half x; isOnlyOutput false; buffer floats
//   > rp, >= tmpBufSize, secondTmpStartPos + oneTmpSize <= tmpBufSize; aLength * rLength <= inputX size; rp 32-byte
//   aligned; no overlap within (output, mean, rstd, gamma|beta|inputX, tmp).
// * Normalize<U, T, isReuseSource, NormalizeConfig{reducePattern, aLength, isNoBeta, isNoGamma, isOnlyOutput}>(
//   output, outputRstd, inputMean, inputVariance, inputX, gamma, beta[, sharedTmpBuffer], epsilon, NormalizePara):
//   rstd = 1 / sqrt(var + eps) for aLength rows; per row t = (float(x) - mean) * rstd, y = t * float(gamma) (unless
//   isNoGamma), y = y + float(beta) (unless isNoBeta) for j < rLength; float output = y + 0, half output = half(y).
//   Columns rLength.. rp of output come from stale tmp lanes in the impl: the emulator writes the UB fill byte
//   there. Checks: the type pairs, reducePattern AR, config.aLength -1 or para.aLength (never 1), isOnlyOutput false,
//   aLength * rLength <= inputX size, rp 32-byte aligned, tmp floats >= aLength and rows per pass N = tmp / (2 rp)
//   (half gamma: (tmp - 2 rp) / (2 rp)) > 0; no overlap of output / rstd with each input.
// * LayerNormGrad<T, isReuseSource>(outputPdX, resForGamma, inputDy, inputX, inputVariance, inputMean, inputGamma
//   [, sharedTmpBuffer], epsilon, LayerNormGradTiling&[, LayerNormGradShapeInfo]): per row (H = tiling.hLength, k1 /
//   k2 the float bits in lastDimValueBack / lastDimValueBackMulTwo): x1 = dy * g; x2 = x - mean; t = var + eps;
//   r15 = 1 / sqrt((t * t) * t); pdVar = level-sum(((x2 * r15) * x1) * -0.5); r05 = 1 / sqrt(var + eps);
//   resForGamma = x2 * r05; x3 = x1 * r05; pdMean = level-sum(x3 * -1) + pdVar * (level-sum(x2 * -2) * k1);
//   pdX = (((pdVar * k2) * x2) + pdMean * k1) + x3. Rounds: loopNum of nohCalSize rows, then nohTailSize rows.
//   float isReuseSource: inputDy ends holding ((pdVar * k2) * x2) + pdMean * k1 and inputX holding x2 (the impl's
//   x1 / x2 tensors). Checks: tmp bytes >= tiling.stackBufferSize and the tiling's tensors (as far as a round
//   reaches) inside it; H * sizeof(T)
//   and gamma's size 32-byte multiples; ND format; half with isReuseSource refused; outputPdX / resForGamma apart.
// * LayerNormGradBeta<T, isReuseSource>(outputPdGamma, outputPdBeta, resForGamma, inputDy[, sharedTmpBuffer],
//   LayerNormGradBetaTiling&): m = dy * resForGamma; pdGamma[j] = m[row 0][j] + 0, then + m[row i][j] row after row
//   over all rounds; pdBeta likewise over dy (half: float sums, half(sum) out). Only the first originalHLength
//   columns are written, and rows are read originalHLength apart within a round (the impl's stride) while rounds
//   advance by oneCalSize. float isReuseSource: each round's m lands at the start of resForGamma (the impl's tmp
//   is resForGamma from its start). Checks: oneCalSize > 0, tmp floats >=
//   stackBufferSize, the impl's tmp areas inside it, output sizes 32-byte multiples, outputs apart.
// The forms without sharedTmpBuffer take the PopStackBuffer stack (the UB the TPipe left). The tmp buffer holds
// garbage afterwards (scribbled with the UB fill byte).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <type_traits>
#include <vector>

#include "trex_emu/adv_common.h"
#include "trex_emu/adv_math.h"
#include "trex_emu/adv_rmsnorm.h"
#include "trex_emu/adv_welford.h"
#include "trex_emu/pipe.h"
#include "trex_emu/tiling_norm.h"
#include "trex_emu/vec.h"
#include "trex_emu/vec_misc.h"

namespace AscendC {
#ifndef TREX_EMU_REDUCE_PATTERN  // the same enum as adv_reduce_tiling_host.h's (host side), defined once per unit
#define TREX_EMU_REDUCE_PATTERN
enum class ReducePattern : uint32_t { AR = 0, RA = 1, R, ARA, ARAR, ARARA, ARARAR, ARARARA };
#endif
struct LayerNormConfig {
  bool isNoBeta = false;
  bool isNoGamma = false;
  bool isOnlyOutput = false;
  bool isOutputRstd = true;
};
constexpr LayerNormConfig LNCFG_NORM = {false, false, false, true};
struct LayerNormPara {
  uint32_t aLength;
  uint32_t rLength;
  uint32_t rLengthWithPadding;
};
struct NormalizeConfig {
  ReducePattern reducePattern = ReducePattern::AR;
  int32_t aLength = -1;
  bool isNoBeta = false;
  bool isNoGamma = false;
  bool isOnlyOutput = false;
};
constexpr NormalizeConfig NLCFG_NORM = {ReducePattern::AR, -1, false, false, false};
constexpr NormalizeConfig NLCFG_NOBETA = {ReducePattern::AR, -1, true, false, false};
constexpr NormalizeConfig NLCFG_NOGAMMA = {ReducePattern::AR, -1, false, true, false};
constexpr NormalizeConfig NLCFG_NOOPT = {ReducePattern::AR, -1, true, true, false};
struct NormalizePara {
  uint32_t aLength;
  uint32_t rLength;
  uint32_t rLengthWithPadding;
};
struct LayerNormGradShapeInfo {
  DataFormat dataFormat = DataFormat::ND;
};

}  // namespace AscendC

namespace trex_emu {
namespace lnorm {

// LayerNormReduceSumImpl over one row of len floats (see the header comment): Welford's row sum is the same impl
// function (adv_welford.h).
inline float FoldSum(const float* v, uint32_t len) { return WfRowSum(v, len); }

inline float LevelSum(const float* v, uint32_t len) { return RmsRepeatSum(std::vector<float>(v, v + len)); }

struct Span {
  const char* name;
  const void* p;
  uint64_t bytes;
};

template <class T>
inline Span Ub(const char* api, const char* name, const AscendC::LocalTensor<T>& t, uint64_t need) {
  if (t.GetSize() < need) Fail(api, ": ", name, " holds ", t.GetSize(), " elements; ", need, " are needed");
  CheckUbAlign(api, name, t.addr_);
  CheckUbRange(api, name, t.buf_, t.addr_, t.addr_ + need);
  return Span{name, t.addr_, need * sizeof(T)};
}

// TensorReuseVerifyingParameters: the listed tensors must not share UB bytes.
inline void Apart(const char* api, std::initializer_list<Span> spans) {
  const std::vector<Span> v(spans);
  for (size_t i = 0; i < v.size(); ++i)
    for (size_t j = i + 1; j < v.size(); ++j)
      if (WfOverlap(v[i].p, v[i].bytes, v[j].p, v[j].bytes))
        Fail(api, ": ", v[i].name, " and ", v[j].name, " overlap in UB; the implementation does not allow that reuse");
}

inline Span Tmp(const char* api, const AscendC::LocalTensor<uint8_t>& tmp) {
  CheckUbAlign(api, "sharedTmpBuffer", tmp.addr_);
  CheckUbRange(api, "sharedTmpBuffer", tmp.buf_, tmp.addr_, tmp.addr_ + tmp.GetSize());
  return Span{"sharedTmpBuffer", tmp.addr_, tmp.GetSize()};
}

template <class T>
inline void StaticFloat() {
  static_assert(std::is_same<T, float>::value || std::is_same<T, half>::value,
                "template parameter (T) is not half or float");
}

template <class T, bool isReuseSource>
inline void NoHalfReuse(const char* api) {
  if constexpr (std::is_same<T, half>::value && isReuseSource)
    Fail(api, ": isReuseSource must be false for half inputs (only float inputs may reuse the source)");
}

// A row segment list as the impl's rounds visit it: (element offset, row index offset, rows).
struct Round {
  uint64_t elem, row, rows;
};

// ---------------- LayerNorm, LayerNormTiling form ----------------
template <class T, bool isReuseSource>
inline void LayerNormTilingRun(const AscendC::LocalTensor<T>& output, const AscendC::LocalTensor<T>& outMean,
                               const AscendC::LocalTensor<T>& outVar, const AscendC::LocalTensor<T>& x,
                               const AscendC::LocalTensor<T>& gamma, const AscendC::LocalTensor<T>& beta,
                               const AscendC::LocalTensor<uint8_t>& tmp, const T epsilon, LayerNormTiling& t) {
  StaticFloat<T>();
  const char* api = "LayerNorm";
  if (t.oneTmpSize == 0) Fail(api, ": tiling.oneTmpSize must > 0! (compute the tiling with GetLayerNormNDTilingInfo)");
  NoHalfReuse<T, isReuseSource>(api);
  const uint32_t h = t.hLength;
  if (h == 0 || uint64_t{h} * sizeof(T) % 32 != 0)
    Fail(api, ": tiling.hLength is ", h, "; the H axis must be a positive multiple of 32 bytes (", 32 / sizeof(T),
         " elements)");
  if (gamma.GetSize() * sizeof(T) % 32 != 0)
    Fail(api, ": The gamma length is ", gamma.GetSize() * sizeof(T), " B, should be 32B aligned.");
  if (beta.GetSize() * sizeof(T) % 32 != 0)
    Fail(api, ": The beta length is ", beta.GetSize() * sizeof(T), " B, should be 32B aligned.");
  std::vector<Round> rounds;
  for (uint32_t i = 0; i < t.loopRound; ++i)
    rounds.push_back(Round{uint64_t{i} * t.inputRoundSize, uint64_t{i} * t.meanVarRoundSize, t.bsCurLength});
  if (t.bshCurLength > t.oneTmpSize || uint64_t{t.bsCurLength} * h > t.oneTmpSize)
    Fail(api, ": tiling.bshCurLength ", t.bshCurLength, " (", t.bsCurLength, " rows of ", h,
         ") exceeds the tmp tensors' oneTmpSize ", t.oneTmpSize);
  if (t.inputTailSize > 0) {
    if (t.inputTailSize > t.oneTmpSize || uint64_t{t.meanVarTailSize} * h > t.oneTmpSize)
      Fail(api, ": tiling.inputTailSize ", t.inputTailSize, " exceeds the tmp tensors' oneTmpSize ", t.oneTmpSize);
    rounds.push_back(Round{t.inputTailPos, t.meanVarTailPos, t.meanVarTailSize});
  }
  uint64_t elems = 0, rowsAll = 0;
  for (const Round& r : rounds) {
    elems = std::max(elems, r.elem + r.rows * h);
    rowsAll = std::max(rowsAll, r.row + r.rows);
  }
  const uint64_t mvNeed = sizeof(T) == 2 ? std::max<uint64_t>(rowsAll, t.meanVarSize) : rowsAll;
  const Span so = Ub(api, "output", output, elems), sx = Ub(api, "inputX", x, elems);
  const Span sm = Ub(api, "outputMean", outMean, mvNeed), sv = Ub(api, "outputVariance", outVar, mvNeed);
  const Span sg = Ub(api, "gamma", gamma, h), sb = Ub(api, "beta", beta, h);
  const Span st = Tmp(api, tmp);
  const uint64_t floats = tmp.GetSize() / 4;
  const bool floatReuse = isReuseSource && sizeof(T) == 4;
  const uint64_t lastPos = floatReuse ? t.secondTmpStartPos : t.thirdTmpStartPos;
  if (lastPos + t.oneTmpSize > t.tmpBufSize)
    Fail(api, ": ", floatReuse ? "secondTmpStartPos" : "thirdTmpStartPos", " + oneTmpSize is (", lastPos + t.oneTmpSize,
         ") should <= tmpBufSize is (", t.tmpBufSize, ")");
  if (floats < t.tmpBufSize)
    Fail(api, ": sharedTmpBuffer holds ", floats, " floats (", tmp.GetSize(), " B); tiling.tmpBufSize is ",
         t.tmpBufSize, " (GetLayerNormMaxMinTmpSize / GetLayerNormNDTilingInfo give the sizes)");
  if (sizeof(T) == 2 && (uint64_t{t.meanTmpTensorPos} + t.meanVarSize > floats ||
                         uint64_t{t.varianceTmpTensorPos} + t.meanVarSize > floats))
    Fail(api, ": the tiling's mean / variance areas lie past the sharedTmpBuffer's ", floats, " floats");
  Apart(api, {so, sm, sv, sg, st});
  Apart(api, {so, sm, sv, sb, st});
  Apart(api, {sm, sv, sx, st});

  const float eps = ToF(epsilon), k = t.lastDimValueBack;
  std::vector<float> xf(h), c(h), d(h), a(h);
  std::vector<float> meanAll(t.meanVarSize), varAll(t.meanVarSize);
  for (const Round& r : rounds) {
    for (uint64_t i = 0; i < r.rows; ++i) {
      const uint64_t e0 = r.elem + i * h, row = r.row + i;
      for (uint32_t j = 0; j < h; ++j) {
        xf[j] = ToF(x.addr_[e0 + j]);  // round r's rows lie past round 0's, which reuse writes: read before written
        c[j] = xf[j] * k;
      }
      const float mean = FoldSum(c.data(), h);
      for (uint32_t j = 0; j < h; ++j) {
        d[j] = xf[j] - mean;
        const float q = d[j] * d[j];
        a[j] = q * k;
      }
      const float var = FoldSum(a.data(), h);
      float s = var + eps;
      s = std::sqrt(s);
      const float rs = 1.0f / s;
      for (uint32_t j = 0; j < h; ++j) {
        const float xh = rs * d[j];
        const float yg = xh * ToF(gamma.addr_[j]);
        const float y = yg + ToF(beta.addr_[j]);
        // float isReuseSource: tempTensorA is the whole inputX (GetLayerNormNDTensorInfo<float, true>), not the
        // round's slice, so every round leaves its (r * d) * gamma at the start of inputX.
        if constexpr (isReuseSource && sizeof(T) == 4) x.addr_[i * h + j] = yg;
        output.addr_[e0 + j] = FromF<T>(y);
      }
      if constexpr (sizeof(T) == 4) {
        outMean.addr_[row] = mean;
        outVar.addr_[row] = var;
      } else if (row < meanAll.size()) {
        meanAll[row] = mean;
        varAll[row] = var;
      }
    }
  }
  if constexpr (sizeof(T) == 2) {
    // GetOutputMeanVariance: the buffer's float mean / variance cast over meanVarSize (rows the rounds did not reach
    // hold whatever the buffer held: the fill byte here).
    for (uint32_t i = 0; i < t.meanVarSize; ++i) {
      bool seen = false;
      for (const Round& r : rounds) seen = seen || (i >= r.row && i < r.row + r.rows);
      if (seen) {
        outMean.addr_[i] = FromF<T>(meanAll[i]);
        outVar.addr_[i] = FromF<T>(varAll[i]);
      } else {
        std::memset(&outMean.addr_[i], RT().ub_fill, sizeof(T));
        std::memset(&outVar.addr_[i], RT().ub_fill, sizeof(T));
      }
    }
  }
  if (t.inputTailSize > 0) {  // LayerNormND writes the tail's sizes into the caller's tiling
    t.bshCurLength = t.inputTailSize;
    t.bsCurLength = t.meanVarTailSize;
  }
  EndAdvancedApi(api, &tmp, CountFormRepeats(elems, 4) * 12);
}

// ---------------- Normalize ----------------
template <class U, class T>
constexpr bool kNormTypesOk = (std::is_same<T, float>::value && std::is_same<U, float>::value) ||
                              (std::is_same<T, half>::value && std::is_same<U, half>::value) ||
                              (std::is_same<T, half>::value && std::is_same<U, float>::value);

template <class U, class T, bool isNoBeta, bool isNoGamma>
inline void NormalizeCore(const char* api, const AscendC::LocalTensor<T>& output,
                          const AscendC::LocalTensor<float>& outRstd, const AscendC::LocalTensor<float>& mean,
                          const AscendC::LocalTensor<float>& var, const AscendC::LocalTensor<T>& x,
                          const AscendC::LocalTensor<U>& gamma, const AscendC::LocalTensor<U>& beta, uint64_t tmpFloats,
                          const float epsilon, const AscendC::NormalizePara& p) {
  static_assert(kNormTypesOk<U, T>, "Failed to check dtype in Normalize, current api support dtype combination is "
                                    "T: float, U: float; T: half, U: half / float.");
  const uint32_t a = p.aLength, r = p.rLength, rp = p.rLengthWithPadding;
  if (uint64_t{a} * r > x.GetSize())
    Fail(api, ": The result of para.aLength * para.rLength is ", uint64_t{a} * r,
         ", should not be greater inputX size ", x.GetSize(), ".");
  if (rp == 0 || uint64_t{rp} * sizeof(T) % 32 != 0)
    Fail(api, ": The para.rLengthWithPadding is ", rp, ", should be 32B aligned.");
  if (r > rp) Fail(api, ": para.rLength ", r, " exceeds para.rLengthWithPadding ", rp);
  if (tmpFloats < a) Fail(api, ": StackBuffer size must be at least A FP32! (", tmpFloats, " floats for aLength ", a, ")");
  const uint64_t r2 = uint64_t{rp} * 2;
  uint64_t n = std::is_same<U, float>::value ? tmpFloats / r2 : (tmpFloats >= r2 ? (tmpFloats - r2) / r2 : 0);
  if (n == 0)
    Fail(api, ": Stackbuffer size is too small! (", tmpFloats * 4, " B holds no ", std::is_same<U, float>::value ? "" : "2 * R + ",
         "2 * R floats of R = ", rp, "; GetNormalizeMaxMinTmpSize gives the sizes)");
  const uint64_t rows = a;
  const uint64_t xe = rows * rp;
  const Span so = Ub(api, "output", output, xe), sr = Ub(api, "outputRstd", outRstd, a);
  const Span sm = Ub(api, "inputMean", mean, a), sv = Ub(api, "inputVariance", var, a);
  const Span sx = Ub(api, "inputX", x, xe);
  const Span sg = isNoGamma ? Span{"gamma", nullptr, 0} : Ub(api, "gamma", gamma, r);
  const Span sb = isNoBeta ? Span{"beta", nullptr, 0} : Ub(api, "beta", beta, r);
  Apart(api, {so, sr, sm});
  Apart(api, {so, sr, sv});
  Apart(api, {so, sr, sx});
  Apart(api, {so, sr, sg});
  Apart(api, {so, sr, sb});
  std::vector<float> rstd(a);
  for (uint32_t i = 0; i < a; ++i) {
    float s = var.addr_[i] + epsilon;
    s = std::sqrt(s);
    rstd[i] = 1.0f / s;
  }
  for (uint32_t i = 0; i < a; ++i) outRstd.addr_[i] = rstd[i];
  for (uint64_t i = 0; i < rows; ++i) {
    const float m = mean.addr_[i], rs = rstd[i];
    for (uint32_t j = 0; j < r; ++j) {
      float v;
      if constexpr (std::is_same<T, float>::value) v = x.addr_[i * rp + j] + 0.0f;
      else v = ToF(x.addr_[i * rp + j]);
      v = v - m;
      v = v * rs;
      if constexpr (!isNoGamma) v = v * ToF(gamma.addr_[j]);
      if constexpr (!isNoBeta) v = v + ToF(beta.addr_[j]);
      if constexpr (std::is_same<T, float>::value) output.addr_[i * rp + j] = v + 0.0f;
      else output.addr_[i * rp + j] = FromF<T>(v);
    }
    if (rp > r) std::memset(&output.addr_[i * rp + r], RT().ub_fill, (rp - r) * sizeof(T));
  }
}

template <class U, class T, bool isReuseSource, const AscendC::NormalizeConfig& config>
inline void NormalizeRun(const AscendC::LocalTensor<T>& output, const AscendC::LocalTensor<float>& outRstd,
                         const AscendC::LocalTensor<float>& mean, const AscendC::LocalTensor<float>& var,
                         const AscendC::LocalTensor<T>& x, const AscendC::LocalTensor<U>& gamma,
                         const AscendC::LocalTensor<U>& beta, const AscendC::LocalTensor<uint8_t>& tmp,
                         const float epsilon, const AscendC::NormalizePara& p) {
  static_assert(!config.isOnlyOutput, "isOnlyOutput must be set false for now.");
  static_assert(config.aLength != 1, "aLength in config must not be 1.");
  const char* api = "Normalize";
  if (config.reducePattern != AscendC::ReducePattern::AR) Fail(api, ": The config.reducePattern should be ReducePattern::AR.");
  if (config.aLength != -1 && static_cast<uint32_t>(config.aLength) != p.aLength)
    Fail(api, ": The config.aLength is ", config.aLength, ", should be equal to -1 or equal to para.aLength ", p.aLength,
         ".");
  const Span st = Tmp(api, tmp);
  const Span so{"output", output.addr_, uint64_t{p.aLength} * p.rLengthWithPadding * sizeof(T)};
  const Span sr{"outputRstd", outRstd.addr_, uint64_t{p.aLength} * 4};
  Apart(api, {so, st});
  Apart(api, {sr, st});
  NormalizeCore<U, T, config.isNoBeta, config.isNoGamma>(api, output, outRstd, mean, var, x, gamma, beta,
                                                         tmp.GetSize() / 4, epsilon, p);
  EndAdvancedApi(api, &tmp, CountFormRepeats(uint64_t{p.aLength} * p.rLengthWithPadding, 4) * 6);
}

// ---------------- LayerNorm, separate form ----------------
template <class U, class T, bool isReuseSource, const AscendC::LayerNormConfig& config>
inline void LayerNormSeparateRun(const AscendC::LocalTensor<T>& output, const AscendC::LocalTensor<float>& outMean,
                                 const AscendC::LocalTensor<float>& outRstd, const AscendC::LocalTensor<T>& x,
                                 const AscendC::LocalTensor<U>& gamma, const AscendC::LocalTensor<U>& beta,
                                 const float epsilon, const AscendC::LocalTensor<uint8_t>& tmp,
                                 const AscendC::LayerNormPara& p, LayerNormSeparateTiling& t) {
  StaticFloat<T>();
  static_assert(std::is_same<T, half>::value ? (std::is_same<U, half>::value || std::is_same<U, float>::value)
                                             : std::is_same<U, float>::value,
                "current data type is not supported on current device!");
  static_assert(!config.isOnlyOutput, "LayerNorm: config.isOnlyOutput must be false on Atlas A2/A3");
  const char* api = "LayerNorm";
  NoHalfReuse<T, isReuseSource>(api);
  const uint32_t a = p.aLength, rp = p.rLengthWithPadding;
  if (uint64_t{a} * p.rLength > x.GetSize())
    Fail(api, ": The result of para.aLength * para.rLength is ", uint64_t{a} * p.rLength,
         ", should not be greater than inputX size ", x.GetSize(), ".");
  if (rp == 0 || uint64_t{rp} * sizeof(T) % 32 != 0)
    Fail(api, ": The para.rLengthWithPadding is ", rp, ", should be 32B aligned.");
  if (p.rLength > rp || t.rLength > rp)
    Fail(api, ": para.rLength ", p.rLength, " / tiling.rLength ", t.rLength, " exceed para.rLengthWithPadding ", rp);
  const uint64_t floats = tmp.GetSize() / 4;
  if (floats <= rp)
    Fail(api, ": sharedTmpBuffer size must > LayerNormMinTmpSize! (", tmp.GetSize(), " B; GetLayerNormMaxMinTmpSize "
         "gives the sizes)");
  if (uint64_t{t.secondTmpStartPos} + t.oneTmpSize > t.tmpBufSize)
    Fail(api, ": secondTmpStartPos + oneTmpSize is (", uint64_t{t.secondTmpStartPos} + t.oneTmpSize,
         ") should <= tmpBufSize is (", t.tmpBufSize, ")");
  if (floats < t.tmpBufSize)
    Fail(api, ": stackBuffer.GetSize is (", floats, ") should >= tiling.tmpBufSize is (", t.tmpBufSize,
         ") (GetLayerNormMaxMinTmpSize / GetLayerNormNDTilingInfo give the sizes)");
  if (uint64_t{t.varianceTmpTensorPos} + a > floats || t.firstTmpStartPos >= floats)
    Fail(api, ": the tiling's variance / tmp areas lie past the sharedTmpBuffer's ", floats, " floats");
  std::vector<Round> rounds;
  for (uint32_t i = 0; i < t.loopRound; ++i)
    rounds.push_back(Round{uint64_t{i} * t.inputRoundSize, uint64_t{i} * t.meanVarRoundSize, t.aCurLength});
  if (t.arCurLength > t.oneTmpSize || uint64_t{t.aCurLength} * rp > t.oneTmpSize)
    Fail(api, ": tiling.arCurLength ", t.arCurLength, " (", t.aCurLength, " rows of ", rp,
         ") exceeds the tmp tensors' oneTmpSize ", t.oneTmpSize);
  if (t.inputTailSize > 0) {
    if (t.inputTailSize > t.oneTmpSize)
      Fail(api, ": tiling.inputTailSize ", t.inputTailSize, " exceeds the tmp tensors' oneTmpSize ", t.oneTmpSize);
    rounds.push_back(Round{t.inputTailPos, t.meanVarTailPos, t.meanVarTailSize});
  }
  uint64_t elems = uint64_t{a} * rp, rowsAll = a;
  for (const Round& r : rounds) {
    elems = std::max(elems, r.elem + r.rows * rp);
    rowsAll = std::max(rowsAll, r.row + r.rows);
  }
  const Span so = Ub(api, "output", output, uint64_t{a} * rp), sx = Ub(api, "inputX", x, elems);
  const Span sm = Ub(api, "outputMean", outMean, rowsAll), sr = Ub(api, "outputRstd", outRstd, a);
  const Span sg = config.isNoGamma ? Span{"gamma", nullptr, 0} : Ub(api, "gamma", gamma, p.rLength);
  const Span sb = config.isNoBeta ? Span{"beta", nullptr, 0} : Ub(api, "beta", beta, p.rLength);
  const Span st = Tmp(api, tmp);
  Apart(api, {so, sm, sr, sg, st});
  Apart(api, {so, sm, sr, sb, st});
  Apart(api, {so, sm, sr, sx, st});

  // LayerNormPreProc: zero the padding columns by a multiply in T (x * 0: +-0, NaN for inf / NaN).
  if (p.rLength != rp) {
    for (uint32_t i = 0; i < a; ++i)
      for (uint32_t j = 0; j < rp; ++j) {
        T& v = x.addr_[uint64_t{i} * rp + j];
        v = FromF<T>(ToF(v) * (j < p.rLength ? 1.0f : 0.0f));
      }
  }
  const float k = t.rValueBack;
  std::vector<float> var(std::max<uint64_t>(rowsAll, a)), av(rp), bv(rp);
  for (const Round& r : rounds) {
    for (uint64_t i = 0; i < r.rows; ++i) {
      const uint64_t e0 = r.elem + i * rp, row = r.row + i;
      for (uint32_t j = 0; j < rp; ++j) av[j] = ToF(x.addr_[e0 + j]) * k;
      const float mean = FoldSum(av.data(), rp);
      outMean.addr_[row] = mean;
      for (uint32_t j = 0; j < rp; ++j) {
        float b = ToF(x.addr_[e0 + j]);
        if (j < t.rLength) b = b + (-1.0f * mean);
        b = b * b;
        bv[j] = b * k;
      }
      var[row] = FoldSum(bv.data(), rp);
    }
  }
  if (t.inputTailSize > 0) {  // the impl const_casts the tiling and writes the tail's sizes into it
    t.arCurLength = t.inputTailSize;
    t.aCurLength = t.meanVarTailSize;
  }
  // Normalize over the variance kept in the buffer, its tmp the buffer from firstTmpStartPos.
  float* varInBuf = reinterpret_cast<float*>(tmp.addr_) + t.varianceTmpTensorPos;
  for (uint32_t i = 0; i < a; ++i) varInBuf[i] = var[i];
  AscendC::LocalTensor<float> varT(varInBuf, a, tmp.buf_);
  const AscendC::NormalizePara np{p.aLength, p.rLength, p.rLengthWithPadding};
  NormalizeCore<U, T, config.isNoBeta, config.isNoGamma>(api, output, outRstd, outMean, varT, x, gamma, beta,
                                                         floats - t.firstTmpStartPos, epsilon, np);
  EndAdvancedApi(api, &tmp, CountFormRepeats(elems, 4) * 14);
}

// ---------------- LayerNormGrad ----------------
inline float BitsF(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

template <class T, bool isReuseSource>
inline void LayerNormGradRun(const AscendC::LocalTensor<T>& pdX, const AscendC::LocalTensor<T>& resForGamma,
                             const AscendC::LocalTensor<T>& dy, const AscendC::LocalTensor<T>& x,
                             const AscendC::LocalTensor<T>& var, const AscendC::LocalTensor<T>& mean,
                             const AscendC::LocalTensor<T>& gamma, const AscendC::LocalTensor<uint8_t>& tmp,
                             const T epsilon, const LayerNormGradTiling& t,
                             const AscendC::LayerNormGradShapeInfo& shapeInfo) {
  StaticFloat<T>();
  const char* api = "LayerNormGrad";
  NoHalfReuse<T, isReuseSource>(api);
  const uint32_t h = t.hLength;
  if (h == 0 || uint64_t{h} * sizeof(T) % 32 != 0)
    Fail(api, ": tiling.hLength is ", h, "; the H axis must be a positive multiple of 32 bytes (", 32 / sizeof(T),
         " elements); compute the tiling with GetLayerNormGradNDTilingInfo");
  if (gamma.GetSize() * sizeof(T) % 32 != 0)
    Fail(api, ": The inputGamma length is ", gamma.GetSize() * sizeof(T), " B, should be 32B aligned.");
  if (shapeInfo.dataFormat != AscendC::DataFormat::ND) Fail(api, ": Only support ND data format.");
  if (tmp.GetSize() < t.stackBufferSize)
    Fail(api, ": Stack buffer size not enough. (sharedTmpBuffer holds ", tmp.GetSize(), " B; tiling.stackBufferSize is ",
         t.stackBufferSize, " B)");
  if (t.oneCalSize == 0 || t.oneCalSize != t.nohCalSize * h || t.tailSize != t.nohTailSize * h)
    Fail(api, ": the tiling is not filled consistently (oneCalSize ", t.oneCalSize, ", nohCalSize ", t.nohCalSize,
         ", tailSize ", t.tailSize, ", nohTailSize ", t.nohTailSize, ", hLength ", h,
         "); compute it with GetLayerNormGradNDTilingInfo");
  // The tmp tensors the impl places in the buffer (float with isReuseSource: x1 / x2 are inputDy / inputX; float:
  // tmpTensor is outputPdX).
  const uint64_t floats = tmp.GetSize() / 4;
  struct Area {
    const char* name;
    uint32_t pos, size;
  };
  std::vector<Area> areas{{"tmpTensorBSH", t.tmpTensorBSHPos, t.tmpTensorBSHSize},
                          {"pdVarTensor", t.pdVarTensorPos, t.pdVarTensorSize},
                          {"pdMeanTensor", t.pdMeanTensorPos, t.pdMeanTensorSize},
                          {"x3Tensor", t.x3TensorPos, t.x3TensorSize}};
  if (!(isReuseSource && sizeof(T) == 4)) {
    areas.push_back({"x1Tensor", t.x1TensorPos, t.x1TensorSize});
    areas.push_back({"x2Tensor", t.x2TensorPos, t.x2TensorSize});
  }
  if (sizeof(T) == 2) {
    areas.push_back({"tmpTensor", t.tmpTensorPos, t.tmpTensorSize});
    areas.push_back({"tmpTensor1", t.tmpTensor1Pos, t.tmpTensor1Size});
    areas.push_back({"tmpTensor2", t.tmpTensor2Pos, t.tmpTensor2Size});
  }
  // A round touches its calSize elements of each tensor (the host tiling does not cap oneCalSize at B*S*H).
  const uint64_t used = std::max<uint64_t>(t.loopNum ? t.oneCalSize : 0, t.tailSize);
  for (const Area& ar : areas) {
    if (ar.size < used) Fail(api, ": tiling.", ar.name, "Size ", ar.size, " < a round's ", used, " elements");
    if (uint64_t{ar.pos} + used > floats)
      Fail(api, ": the tiling's ", ar.name, " [", ar.pos, ", ", uint64_t{ar.pos} + used,
           ") floats lies past the sharedTmpBuffer's ", floats, " floats (", tmp.GetSize(), " B)");
  }
  std::vector<Round> rounds;
  for (uint32_t i = 0; i < t.loopNum; ++i)
    rounds.push_back(Round{uint64_t{i} * t.oneCalSize, uint64_t{i} * t.nohCalSize, t.nohCalSize});
  if (t.tailSize != 0)
    rounds.push_back(Round{uint64_t{t.loopNum} * t.oneCalSize, uint64_t{t.loopNum} * t.nohCalSize, t.nohTailSize});
  uint64_t rows = 0;
  for (const Round& r : rounds) rows = std::max(rows, r.row + r.rows);
  const uint64_t n = rows * h;
  const Span sp = Ub(api, "outputPdX", pdX, n), sres = Ub(api, "resForGamma", resForGamma, n);
  Ub(api, "inputDy", dy, n);
  Ub(api, "inputX", x, n);
  Ub(api, "inputVariance", var, rows);
  Ub(api, "inputMean", mean, rows);
  Ub(api, "inputGamma", gamma, h);
  const Span st = Tmp(api, tmp);
  Apart(api, {sp, sres});
  Apart(api, {sp, st});
  Apart(api, {sres, st});

  const float eps = ToF(epsilon), k1 = BitsF(t.lastDimValueBack), k2 = BitsF(t.lastDimValueBackMulTwo);
  std::vector<float> x1(h), x2(h), x3(h), w(h);
  for (uint64_t row = 0; row < rows; ++row) {
    const uint64_t e0 = row * h;
    const float m = ToF(mean.addr_[row]), v = ToF(var.addr_[row]);
    for (uint32_t j = 0; j < h; ++j) {
      x1[j] = ToF(dy.addr_[e0 + j]) * ToF(gamma.addr_[j]);
      x2[j] = ToF(x.addr_[e0 + j]) - m;
    }
    float tv = v + eps;
    float p = tv * tv;
    p = p * tv;
    p = std::sqrt(p);
    const float r15 = 1.0f / p;
    for (uint32_t j = 0; j < h; ++j) {
      float q = x2[j] * r15;
      q = x1[j] * q;
      w[j] = q * -0.5f;
    }
    const float pdVar = LevelSum(w.data(), h);
    float t2 = v + eps;
    t2 = std::sqrt(t2);
    const float r05 = 1.0f / t2;
    for (uint32_t j = 0; j < h; ++j) {
      resForGamma.addr_[e0 + j] = FromF<T>(x2[j] * r05);
      x3[j] = x1[j] * r05;
      w[j] = x3[j] * -1.0f;
    }
    float pdMean = LevelSum(w.data(), h);
    for (uint32_t j = 0; j < h; ++j) w[j] = x2[j] * -2.0f;
    float s2 = LevelSum(w.data(), h);
    s2 = s2 * k1;
    s2 = pdVar * s2;
    pdMean = pdMean + s2;
    const float pv2 = pdVar * k2, pm1 = pdMean * k1;
    for (uint32_t j = 0; j < h; ++j) {
      float e = pv2 * x2[j];
      e = e + pm1;
      if constexpr (isReuseSource && sizeof(T) == 4) {
        dy.addr_[e0 + j] = e;
        x.addr_[e0 + j] = x2[j];
      }
      pdX.addr_[e0 + j] = FromF<T>(e + x3[j]);
    }
  }
  EndAdvancedApi(api, &tmp, CountFormRepeats(n, 4) * 20);
}

// ---------------- LayerNormGradBeta ----------------
template <class T, bool isReuseSource>
inline void LayerNormGradBetaRun(const AscendC::LocalTensor<T>& pdGamma, const AscendC::LocalTensor<T>& pdBeta,
                                 const AscendC::LocalTensor<T>& resForGamma, const AscendC::LocalTensor<T>& dy,
                                 const AscendC::LocalTensor<uint8_t>& tmp, const LayerNormGradBetaTiling& t) {
  StaticFloat<T>();
  const char* api = "LayerNormGradBeta";
  NoHalfReuse<T, isReuseSource>(api);
  if (t.oneCalSize == 0) Fail(api, ": tiling.oneCalSize must > 0! (compute the tiling with GetLayerNormGradBetaNDTilingInfo)");
  const uint32_t hc = t.originalHLength;
  if (hc == 0 || hc > t.hLength)
    Fail(api, ": tiling.originalHLength ", hc, " must be in [1, hLength ", t.hLength, "]");
  if (pdGamma.GetSize() * sizeof(T) % 32 != 0)
    Fail(api, ": The outputPdGamma length is ", pdGamma.GetSize() * sizeof(T), " B, should be 32B aligned.");
  if (pdBeta.GetSize() * sizeof(T) % 32 != 0)
    Fail(api, ": The outputPdBeta length is ", pdBeta.GetSize() * sizeof(T), " B, should be 32B aligned.");
  const uint64_t floats = tmp.GetSize() / 4;
  if (floats < t.stackBufferSize)
    Fail(api, ": stackBuffer.GetSize is (", floats, ") >= tiling.stackBufferSize is (", t.stackBufferSize,
         ") failed: sharedTmpBuffer holds ", tmp.GetSize(), " B (GetLayerNormGradBetaMaxMinTmpSize gives the sizes)");
  const bool useRes = sizeof(T) == 2 || !isReuseSource;
  if (useRes && uint64_t{t.resForGammaTmpTensorPos} + t.oneCalSize > t.stackBufferSize)
    Fail(api, ": resForGammaTmpTensorPos + oneCalSize is (", uint64_t{t.resForGammaTmpTensorPos} + t.oneCalSize,
         ") should <= stackBufferSize is (", t.stackBufferSize, ")");
  struct R2 {
    uint64_t elem, rows, n;
  };
  std::vector<R2> rounds{{0, t.bsCurLength, t.bshCurLength}};
  for (uint32_t i = 1; i < t.loopRound; ++i) rounds.push_back({uint64_t{i} * t.oneCalSize, t.bsCurLength, t.bshCurLength});
  if (t.inputTailSize > 0) rounds.push_back({t.inputTailPos, t.bsTailSize, t.inputTailSize});
  uint64_t elems = 0;
  for (const R2& r : rounds) {
    if (r.n > t.oneCalSize)
      Fail(api, ": a round of ", r.n, " elements exceeds tiling.oneCalSize ", t.oneCalSize);
    elems = std::max({elems, r.elem + r.n, r.elem + r.rows * hc});
  }
  Ub(api, "resForGamma", resForGamma, elems);
  Ub(api, "inputDy", dy, elems);
  const Span sg = Ub(api, "outputPdGamma", pdGamma, hc), sb = Ub(api, "outputPdBeta", pdBeta, hc);
  const Span st = Tmp(api, tmp);
  Apart(api, {sg, sb});
  Apart(api, {sg, st});
  Apart(api, {sb, st});

  std::vector<float> g(hc), b(hc), m;
  bool first = true;
  for (const R2& r : rounds) {
    m.assign(r.n, 0.0f);
    for (uint64_t e = 0; e < r.n; ++e) {
      m[e] = ToF(dy.addr_[r.elem + e]) * ToF(resForGamma.addr_[r.elem + e]);
      // float isReuseSource: resForGammaTmpTensor is the whole resForGamma, so each round's products land at its start
      if constexpr (isReuseSource && sizeof(T) == 4) resForGamma.addr_[e] = m[e];
    }
    // ReduceSumFirstN: row i at i * originalHLength within the round; the first round starts with row 0 + 0.
    uint64_t i = 0;
    if (first) {
      for (uint32_t j = 0; j < hc; ++j) {
        g[j] = m[j] + 0.0f;
        b[j] = ToF(dy.addr_[r.elem + j]) + 0.0f;
      }
      i = 1;
      first = false;
    }
    for (; i < r.rows; ++i)
      for (uint32_t j = 0; j < hc; ++j) {
        g[j] = m[i * hc + j] + g[j];
        b[j] = ToF(dy.addr_[r.elem + i * hc + j]) + b[j];
      }
  }
  for (uint32_t j = 0; j < hc; ++j) {
    pdGamma.addr_[j] = FromF<T>(g[j]);
    pdBeta.addr_[j] = FromF<T>(b[j]);
  }
  EndAdvancedApi(api, &tmp, CountFormRepeats(elems, 4) * 3);
}

inline AscendC::LocalTensor<uint8_t> Stack() {
  AscendC::LocalTensor<uint8_t> st;
  AscendC::PopStackBuffer<uint8_t, AscendC::TPosition::LCM>(st);
  return st;
}

}  // namespace lnorm
}  // namespace trex_emu

namespace AscendC {
// LayerNorm, LayerNormTiling form.
template <typename T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean,
                      const LocalTensor<T>& outputVariance, const LocalTensor<T>& inputX, const LocalTensor<T>& gamma,
                      const LocalTensor<T>& beta, const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon,
                      LayerNormTiling& tiling) {
  trex_emu::lnorm::LayerNormTilingRun<T, isReuseSource>(output, outputMean, outputVariance, inputX, gamma, beta,
                                                        sharedTmpBuffer, epsilon, tiling);
}
template <typename T, bool isReuseSource = false>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<T>& outputMean,
                      const LocalTensor<T>& outputVariance, const LocalTensor<T>& inputX, const LocalTensor<T>& gamma,
                      const LocalTensor<T>& beta, const T epsilon, LayerNormTiling& tiling) {
  trex_emu::lnorm::LayerNormTilingRun<T, isReuseSource>(output, outputMean, outputVariance, inputX, gamma, beta,
                                                        trex_emu::lnorm::Stack(), epsilon, tiling);
}
// LayerNorm, separate form (mean and rstd).
template <typename U, typename T, bool isReuseSource = false, const LayerNormConfig& config = LNCFG_NORM>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<float>& outputMean,
                      const LocalTensor<float>& outputRstd, const LocalTensor<T>& inputX, const LocalTensor<U>& gamma,
                      const LocalTensor<U>& beta, const float epsilon, const LayerNormPara& para,
                      const LayerNormSeparateTiling& tiling) {
  trex_emu::lnorm::LayerNormSeparateRun<U, T, isReuseSource, config>(
      output, outputMean, outputRstd, inputX, gamma, beta, epsilon, trex_emu::lnorm::Stack(), para,
      const_cast<LayerNormSeparateTiling&>(tiling));
}
template <typename U, typename T, bool isReuseSource = false, const LayerNormConfig& config = LNCFG_NORM>
inline void LayerNorm(const LocalTensor<T>& output, const LocalTensor<float>& outputMean,
                      const LocalTensor<float>& outputRstd, const LocalTensor<T>& inputX, const LocalTensor<U>& gamma,
                      const LocalTensor<U>& beta, const float epsilon, const LocalTensor<uint8_t>& sharedTmpBuffer,
                      const LayerNormPara& para, const LayerNormSeparateTiling& tiling) {
  trex_emu::lnorm::LayerNormSeparateRun<U, T, isReuseSource, config>(
      output, outputMean, outputRstd, inputX, gamma, beta, epsilon, sharedTmpBuffer, para,
      const_cast<LayerNormSeparateTiling&>(tiling));
}
// Normalize.
template <typename U, typename T, bool isReuseSource = false, const NormalizeConfig& config = NLCFG_NORM>
inline void Normalize(const LocalTensor<T>& output, const LocalTensor<float>& outputRstd,
                      const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                      const LocalTensor<T>& inputX, const LocalTensor<U>& gamma, const LocalTensor<U>& beta,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const float epsilon, const NormalizePara& para) {
  trex_emu::lnorm::NormalizeRun<U, T, isReuseSource, config>(output, outputRstd, inputMean, inputVariance, inputX,
                                                             gamma, beta, sharedTmpBuffer, epsilon, para);
}
template <typename U, typename T, bool isReuseSource = false, const NormalizeConfig& config = NLCFG_NORM>
inline void Normalize(const LocalTensor<T>& output, const LocalTensor<float>& outputRstd,
                      const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                      const LocalTensor<T>& inputX, const LocalTensor<U>& gamma, const LocalTensor<U>& beta,
                      const float epsilon, const NormalizePara& para) {
  trex_emu::lnorm::NormalizeRun<U, T, isReuseSource, config>(output, outputRstd, inputMean, inputVariance, inputX,
                                                             gamma, beta, trex_emu::lnorm::Stack(), epsilon, para);
}
// LayerNormGrad.
template <typename T, bool isReuseSource = false>
inline void LayerNormGrad(const LocalTensor<T>& outputPdX, const LocalTensor<T>& resForGamma,
                          const LocalTensor<T>& inputDy, const LocalTensor<T>& inputX,
                          const LocalTensor<T>& inputVariance, const LocalTensor<T>& inputMean,
                          const LocalTensor<T>& inputGamma, const LocalTensor<uint8_t>& sharedTmpBuffer, T epsilon,
                          LayerNormGradTiling& tiling, const LayerNormGradShapeInfo& shapeInfo = {}) {
  trex_emu::lnorm::LayerNormGradRun<T, isReuseSource>(outputPdX, resForGamma, inputDy, inputX, inputVariance,
                                                      inputMean, inputGamma, sharedTmpBuffer, epsilon, tiling,
                                                      shapeInfo);
}
template <typename T, bool isReuseSource = false>
inline void LayerNormGrad(const LocalTensor<T>& outputPdX, const LocalTensor<T>& resForGamma,
                          const LocalTensor<T>& inputDy, const LocalTensor<T>& inputX,
                          const LocalTensor<T>& inputVariance, const LocalTensor<T>& inputMean,
                          const LocalTensor<T>& inputGamma, T epsilon, LayerNormGradTiling& tiling,
                          const LayerNormGradShapeInfo& shapeInfo = {}) {
  trex_emu::lnorm::LayerNormGradRun<T, isReuseSource>(outputPdX, resForGamma, inputDy, inputX, inputVariance,
                                                      inputMean, inputGamma, trex_emu::lnorm::Stack(), epsilon,
                                                      tiling, shapeInfo);
}
// LayerNormGradBeta.
template <typename T, bool isReuseSource = false>
inline void LayerNormGradBeta(const LocalTensor<T>& outputPdGamma, const LocalTensor<T>& outputPdBeta,
                              const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy,
                              const LocalTensor<uint8_t>& sharedTmpBuffer, const LayerNormGradBetaTiling& tiling) {
  trex_emu::lnorm::LayerNormGradBetaRun<T, isReuseSource>(outputPdGamma, outputPdBeta, resForGamma, inputDy,
                                                          sharedTmpBuffer, tiling);
}
template <typename T, bool isReuseSource = false>
inline void LayerNormGradBeta(const LocalTensor<T>& outputPdGamma, const LocalTensor<T>& outputPdBeta,
                              const LocalTensor<T>& resForGamma, const LocalTensor<T>& inputDy,
                              LayerNormGradBetaTiling& tiling) {
  trex_emu::lnorm::LayerNormGradBetaRun<T, isReuseSource>(outputPdGamma, outputPdBeta, resForGamma, inputDy,
                                                          trex_emu::lnorm::Stack(), tiling);
}
}  // namespace AscendC
