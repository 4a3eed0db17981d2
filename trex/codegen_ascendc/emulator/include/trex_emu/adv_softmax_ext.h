// trex AscendC emulator: the SoftMax family beyond SoftMax (asc-devkit docs/zh/api/SIMD-API/高阶API/激活函数/SoftMax接口,
// LogSoftMax接口), ND format, for Atlas A2/A3:
//   AdjustSoftMaxRes(res, max, from, to, shape): rows whose max (its bits, the first element of the row's data block
//     or, with stepSizeMode != 0, element j) equal `from` are set to `to`; returns whether any was (the row scan of
//     impl/adv_api/detail/activation/softmax/membase/common/softmax_common_impl.h).
//   SoftmaxFlashV2<T, isUpdate>: per row, !isUpdate: max = rowmax(x), dst = exp(x - max), sum = rowsum(dst);
//     isUpdate: max' = max(inMax, rowmax(x)), dst = exp(x - max'), expMax = exp(inMax - max'),
//     sum = expMax * inSum + rowsum(dst) (SoftmaxFlashV2.md's formula).
//   SoftmaxGrad(dst, grad, src, tiling, isFront): s = rowsum(grad * src); isFront: dst = s (one data block a row),
//     else dst = (grad - s) * src.  SoftmaxGradFront: the isFront form.
//   LogSoftMax(dst, sum, max, src): dst = ln(exp(x - max) / sum) * 0.4342944819 (log10, as the implementation's
//     Ln + Muls), max and sum written too.
//   SoftmaxFlashV3<half, float, isUpdate>(dst, mean, expSum, max, src, expMax, inMean, inExpSum, inMax, [tmp],
//     tiling, SoftMaxParams): the PASA form, as membase/v220/softmax_flashv3_impl.h computes it per row (float x,
//     n = oriSrcK, baseK = n / splitMeanCnt, a = alpha / (1 - alpha)): lane[l] = blocksum(x[8l..8l+7]) for the
//     first 512 columns, then lane[l] = x[512 + 64r + l] + lane[l] for each further 64 columns; local[j] =
//     blocksum(lane[8j..8j+7]) * (1 / baseK); g = blocksum(local) * (1 / 8); x[c] -= (g - local[c / baseK]) * a;
//     mean = g (isUpdate: (inMean * (loopCnt - 1) + g) * (1 / loopCnt)); shiftCurr = (g - mean) * a;
//     max = rowmax(x) + shiftCurr (isUpdate: shiftPrev = (inMean - mean) * a, max = max(max, inMax + shiftPrev),
//     em = exp(inMax - max + shiftPrev), expSum = em * inExpSum, expMax = half(em)); dst = half(exp(x - (max -
//     shiftCurr)[c % 8])), expSum (+)= rowsum. Block ops are done lane by lane on the tensors' memory in the
//     implementation's order, so aliasing meanTensor with inMeanTensor (as the docs allow) reads what it reads there.
//     Checks: n >= 512 and a multiple of 64, splitMeanCnt 8, loopCnt >= 1 (isUpdate), the tiling's split
//     consistent, the rows and blocks in UB, and the workspace (sharedTmpBuffer, else PopStackBuffer's) holding
//     splitSize + splitM * 64 + reduceSize * (isUpdate ? 4 : 3) + splitK floats, apart from the operands.
// Computation in float (half converted up and rounded back once); row sums in ReduceSum's order (RowSum below:
// lane-wise over 64-float repeats, then a pairwise tree). max/sum/expMax tensors hold one 32-byte data block per row, the row's value
// repeated. Rows: the SoftMaxShapeInfo's srcM / srcK (else the tiling's), valid columns oriSrcK. The temporary
// buffer is checked to be in UB and 32-byte aligned; its size is the tiling's business (the split is the
// emulator's, see softmax_tiling_host.h), not checked.
#pragma once
#include <cmath>
#include <cstring>
#include <vector>

#include "trex_emu/adv_softmax.h"
#include "trex_emu/adv_common.h"
#include "trex_emu/logsoftmax_tiling.h"
#include "trex_emu/adv_rmsnorm.h"  // PopStackBuffer

namespace AscendC {
struct SoftMaxParams {
  uint32_t srcM{0};
  uint32_t srcK{0};
  uint32_t oriSrcM{0};
  uint32_t oriSrcK{0};
  uint32_t loopCnt{1};
  uint32_t splitMeanCnt{8};
  float alpha{0.9375};
};
}  // namespace AscendC

namespace trex_emu {
struct SmShape {
  uint32_t m, k, vk;
};
template <class Tiling>
inline SmShape SmRows(const char* api, const Tiling& tiling, const AscendC::SoftMaxShapeInfo& info) {
  SmShape s{info.srcM ? info.srcM : tiling.srcM, info.srcK ? info.srcK : tiling.srcK, 0};
  s.vk = info.oriSrcK ? info.oriSrcK : s.k;
  if (s.m == 0 || s.k == 0)
    Fail(api, ": the shape is [", s.m, ", ", s.k, "]; pass SoftMaxShapeInfo{srcM, srcK, oriSrcM, oriSrcK} or a tiling");
  if (s.vk > s.k) Fail(api, ": oriSrcK=", s.vk, " exceeds srcK=", s.k);
  return s;
}
template <class T>
inline void SmRange(const char* api, const char* name, const AscendC::LocalTensor<T>& t, uint64_t n) {
  CheckUbAlign(api, name, t.addr_);
  CheckUbRange(api, name, t.buf_, t.addr_, t.addr_ + n);
}
inline void SmTmp(const char* api, const AscendC::LocalTensor<uint8_t>* tmp) {
  if (tmp == nullptr || tmp->addr_ == nullptr) return;
  CheckUbAlign(api, "sharedTmpBuffer", tmp->addr_);
  CheckUbRange(api, "sharedTmpBuffer", tmp->buf_, tmp->addr_, tmp->addr_ + tmp->GetSize());
}
template <class U>
inline void PutBlock(const AscendC::LocalTensor<U>& t, uint32_t row, float v) {
  const uint32_t per = 32 / sizeof(U);
  for (uint32_t j = 0; j < per; ++j) t.addr_[uint64_t{row} * per + j] = Down<U>(v);
}
template <class U>
inline float GetBlock(const AscendC::LocalTensor<U>& t, uint32_t row) {
  return ToF(t.addr_[uint64_t{row} * (32 / sizeof(U))]);
}
// A row sum in the order of the implementation's ReduceSum over a row (NewReduceSumLastNDImpl): the row's 64-float
// repeats added lane-wise into the first, then the 64 lanes halved pairwise (32 + 32, 16 + 16, ...) to one value.
inline float RowSum(const float* v, uint32_t n) {
  float lane[64] = {0};
  const uint32_t first = n < 64 ? n : 64;
  for (uint32_t l = 0; l < first; ++l) lane[l] = v[l];
  for (uint32_t i = 64; i < n; ++i) lane[i % 64] += v[i];
  for (uint32_t w = 32; w >= 1; w /= 2)
    for (uint32_t l = 0; l < w; ++l) lane[l] = lane[l] + lane[l + w];
  return lane[0];
}
inline float NanMaxF(float a, float b) { return (a != a || b != b) ? NAN : std::fmax(a, b); }

template <class T, class U, bool isUpdate>
inline void FlashV2(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<U>& sum,
                    const AscendC::LocalTensor<U>& max, const AscendC::LocalTensor<T>& src,
                    const AscendC::LocalTensor<T>& expMax, const AscendC::LocalTensor<U>& inSum,
                    const AscendC::LocalTensor<U>& inMax, const AscendC::LocalTensor<uint8_t>* tmp,
                    const SoftMaxTiling& tiling, const AscendC::SoftMaxShapeInfo& info) {
  static_assert(kFloatTypes<T> && kFloatTypes<U>, "SoftmaxFlashV2: half/float only on Atlas A2/A3");
  const char* api = "SoftmaxFlashV2";
  const SmShape s = SmRows(api, tiling, info);
  const uint64_t blk = uint64_t{s.m} * (32 / sizeof(U));
  SmRange(api, "src", src, uint64_t{s.m} * s.k);
  SmRange(api, "dst", dst, uint64_t{s.m} * s.k);
  SmRange(api, "expSumTensor", sum, blk);
  SmRange(api, "maxTensor", max, blk);
  if (isUpdate) {
    SmRange(api, "inExpSumTensor", inSum, blk);
    SmRange(api, "inMaxTensor", inMax, blk);
    SmRange(api, "expMaxTensor", expMax, uint64_t{s.m} * (32 / sizeof(T)));
  }
  SmTmp(api, tmp);
  std::vector<float> row(s.vk);
  for (uint32_t r = 0; r < s.m; ++r) {
    const T* x = src.addr_ + uint64_t{r} * s.k;
    float mx = -INFINITY;
    for (uint32_t j = 0; j < s.vk; ++j) mx = NanMaxF(mx, row[j] = ToF(x[j]));
    float in_max = 0, in_sum = 0;
    if (isUpdate) {
      in_max = GetBlock(inMax, r);
      in_sum = GetBlock(inSum, r);
      mx = NanMaxF(mx, in_max);
    }
    for (uint32_t j = 0; j < s.vk; ++j) row[j] = std::exp(row[j] - mx);
    float total = RowSum(row.data(), s.vk);
    T* d = dst.addr_ + uint64_t{r} * s.k;
    for (uint32_t j = 0; j < s.vk; ++j) d[j] = Down<T>(row[j]);
    if (isUpdate) {
      const float em = std::exp(in_max - mx);
      total = em * in_sum + total;
      const uint32_t per = 32 / sizeof(T);
      for (uint32_t j = 0; j < per; ++j) expMax.addr_[uint64_t{r} * per + j] = Down<T>(em);
    }
    PutBlock(max, r, mx);
    PutBlock(sum, r, total);
  }
  CountRepeats(api, CountFormRepeats(uint64_t{s.m} * s.k, sizeof(float)));
}

template <class T>
inline void Grad(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& grad,
                 const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<uint8_t>* tmp,
                 const SoftMaxTiling& tiling, bool isFront, const AscendC::SoftMaxShapeInfo& info) {
  static_assert(kFloatTypes<T>, "SoftmaxGrad: half/float only on Atlas A2/A3");
  const SmShape s = SmRows(api, tiling, info);
  SmRange(api, "gradTensor", grad, uint64_t{s.m} * s.k);
  SmRange(api, "srcTensor", src, uint64_t{s.m} * s.k);
  SmRange(api, "dstTensor", dst, isFront ? uint64_t{s.m} * (32 / sizeof(T)) : uint64_t{s.m} * s.k);
  SmTmp(api, tmp);
  std::vector<float> g(s.vk), y(s.vk);
  for (uint32_t r = 0; r < s.m; ++r) {
    const uint64_t o = uint64_t{r} * s.k;
    std::vector<float> p(s.vk);
    for (uint32_t j = 0; j < s.vk; ++j) {
      g[j] = ToF(grad.addr_[o + j]);
      y[j] = ToF(src.addr_[o + j]);
      p[j] = g[j] * y[j];
    }
    const float total = RowSum(p.data(), s.vk);
    if (isFront) {
      // rows are written after all reads of the row; dst may be src, but a front result row lies at r * 32 B
      PutBlock(dst, r, total);
    } else {
      for (uint32_t j = 0; j < s.vk; ++j) dst.addr_[o + j] = Down<T>((g[j] - total) * y[j]);
    }
  }
  CountRepeats(api, CountFormRepeats(uint64_t{s.m} * s.k, sizeof(float)));
}

template <class T>
inline void LogSm(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& sum,
                  const AscendC::LocalTensor<T>& max, const AscendC::LocalTensor<T>& src,
                  const AscendC::LocalTensor<uint8_t>* tmp, const LogSoftMaxTiling& tiling,
                  const AscendC::SoftMaxShapeInfo& info) {
  static_assert(kFloatTypes<T>, "LogSoftMax: half/float only on Atlas A2/A3");
  const char* api = "LogSoftMax";
  const SmShape s = SmRows(api, tiling, info);
  if (s.k * sizeof(T) % 32 != 0) Fail(api, ": the last axis (", s.k, " elements) must be 32-byte aligned");
  const uint64_t blk = uint64_t{s.m} * (32 / sizeof(T));
  SmRange(api, "src", src, uint64_t{s.m} * s.k);
  SmRange(api, "dst", dst, uint64_t{s.m} * s.k);
  SmRange(api, "sumTensor", sum, blk);
  SmRange(api, "maxTensor", max, blk);
  SmTmp(api, tmp);
  std::vector<float> row(s.vk);
  for (uint32_t r = 0; r < s.m; ++r) {
    const uint64_t o = uint64_t{r} * s.k;
    float mx = -INFINITY;
    for (uint32_t j = 0; j < s.vk; ++j) mx = NanMaxF(mx, row[j] = ToF(src.addr_[o + j]));
    for (uint32_t j = 0; j < s.vk; ++j) row[j] = std::exp(row[j] - mx);
    float total = RowSum(row.data(), s.vk);
    for (uint32_t j = 0; j < s.vk; ++j) dst.addr_[o + j] = Down<T>(std::log(row[j] / total) * 0.4342944819f);
    PutBlock(max, r, mx);
    PutBlock(sum, r, total);
  }
  CountRepeats(api, CountFormRepeats(uint64_t{s.m} * s.k, sizeof(float)));
}

template <bool isUpdate>
inline void FlashV3(const AscendC::LocalTensor<half>& dst, const AscendC::LocalTensor<float>& mean,
                    const AscendC::LocalTensor<float>& expSum, const AscendC::LocalTensor<float>& max,
                    const AscendC::LocalTensor<half>& src, const AscendC::LocalTensor<half>& expMax,
                    const AscendC::LocalTensor<float>& inMean, const AscendC::LocalTensor<float>& inExpSum,
                    const AscendC::LocalTensor<float>& inMax, const AscendC::LocalTensor<uint8_t>& work,
                    const SoftMaxTiling& t, const AscendC::SoftMaxParams& p) {
  const char* api = "SoftmaxFlashV3";
  uint32_t n = p.oriSrcK;
  if (p.srcM == 0 || p.srcK == 0) {
    const AscendC::ShapeInfo si = src.GetShapeInfo();
    n = si.originalShapeDim ? si.originalShape[si.originalShapeDim - 1] : 0;
  }
  const uint32_t k = t.splitK, sm = t.splitM;
  if (k == 0 || sm == 0 || t.splitSize != sm * k || t.reduceSize != sm * 8 || t.reduceK != 8 ||
      t.tailSplitSize != t.tailM * k || t.tailReduceSize != t.tailM * 8 || t.srcK != k)
    Fail(api, ": the tiling's split is inconsistent (splitM ", sm, ", splitK ", k, ", splitSize ", t.splitSize,
         ", reduceSize ", t.reduceSize, ", tailM ", t.tailM, "); compute it with SoftMaxFlashV3TilingFunc");
  if (n < 512) Fail(api, ": Failed to check shape in SoftmaxFlashV3, the last axis (", n, ") should be at least 512");
  if (n % 64 != 0 || n > k) Fail(api, ": the last axis ", n, " must be a multiple of 64 and at most srcK ", k);
  if (p.splitMeanCnt != 8) Fail(api, ": params.splitMeanCnt is ", p.splitMeanCnt, "; only 8 is supported");
  if (isUpdate && p.loopCnt < 1) Fail(api, ": params.loopCnt must be >= 1 when isUpdate");
  const uint64_t rows = uint64_t{t.rangeM} * sm + t.tailM;
  SmRange(api, "srcTensor", src, rows * k);
  SmRange(api, "dstTensor", dst, rows * k);
  SmRange(api, "meanTensor", mean, rows * 8);
  SmRange(api, "expSumTensor", expSum, rows * 8);
  SmRange(api, "maxTensor", max, rows * 8);
  if (isUpdate) {
    SmRange(api, "expMaxTensor", expMax, rows * 16);
    SmRange(api, "inMeanTensor", inMean, rows * 8);
    SmRange(api, "inExpSumTensor", inExpSum, rows * 8);
    SmRange(api, "inMaxTensor", inMax, rows * 8);
  }
  const uint64_t need = (uint64_t{t.splitSize} + uint64_t{sm} * 64 + uint64_t{t.reduceSize} * (isUpdate ? 4 : 3) + k) * 4;
  if (work.GetSize() < need)
    Fail(api, ": the temporary buffer holds ", work.GetSize(), " B; a split of ", sm, " rows of ", k, " needs ", need,
         " B (GetSoftMaxFlashV3MaxMinTmpSize / SoftMaxFlashV3TilingFunc give the sizes)");
  SmTmp(api, &work);
  {
    const uint8_t* w = work.addr_;
    auto hit = [&](const void* q, uint64_t b) {
      const uint8_t* c = static_cast<const uint8_t*>(q);
      return c != nullptr && b && w < c + b && c < w + need;
    };
    if (hit(src.addr_, rows * k * 2) || hit(dst.addr_, rows * k * 2) || hit(mean.addr_, rows * 32) ||
        hit(expSum.addr_, rows * 32) || hit(max.addr_, rows * 32) ||
        (isUpdate && (hit(expMax.addr_, rows * 32) || hit(inMean.addr_, rows * 32) || hit(inExpSum.addr_, rows * 32) ||
                      hit(inMax.addr_, rows * 32))))
      Fail(api, ": the temporary buffer overlaps an operand; it must not (the docs' constraint)");
  }
  const uint32_t baseK = n / p.splitMeanCnt;
  const float a = p.alpha / (1 - p.alpha);
  const float a2 = static_cast<float>(p.alpha / (1.0f - p.alpha));
  std::vector<float> x(n);
  for (uint64_t r = 0; r < rows; ++r) {
    const half* s = src.addr_ + r * k;
    for (uint32_t c = 0; c < n; ++c) x[c] = ToF(s[c]);
    float lane[64];
    for (uint32_t l = 0; l < 64; ++l) {
      float b[8];
      for (int e = 0; e < 8; ++e) b[e] = x[8 * l + e];
      lane[l] = TreeSum(b, 8);
    }
    for (uint32_t c = 512; c < n; c += 64)
      for (uint32_t l = 0; l < 64; ++l) lane[l] = x[c + l] + lane[l];
    float local[8], g8[8];
    for (int j = 0; j < 8; ++j) {
      local[j] = TreeSum(lane + 8 * j, 8);
      if (baseK != 0) local[j] = local[j] * static_cast<float>(1.0f / baseK);
      g8[j] = local[j];
    }
    const float g = TreeSum(g8, 8) * static_cast<float>(1.0f / 8);
    float shift[8];
    for (int j = 0; j < 8; ++j) shift[j] = (g - local[j]) * a2;
    for (uint32_t c = 0; c < n; ++c) x[c] = x[c] - shift[c / baseK];
    float mx = -INFINITY;
    for (uint32_t c = 0; c < n; ++c) mx = NanMaxF(mx, x[c]);
    float* me = mean.addr_ + r * 8;
    float* ma = max.addr_ + r * 8;
    float* es = expSum.addr_ + r * 8;
    float cur[8], em[8];
    // block steps lane by lane, on the tensors themselves (outputs may be the inputs)
    for (int l = 0; l < 8; ++l) {
      if (isUpdate) {
        float v = inMean.addr_[r * 8 + l] * (p.loopCnt - 1.0f);
        v = v + g;
        me[l] = v * static_cast<float>(1.0f / p.loopCnt);
      } else {
        me[l] = g;
      }
    }
    for (int l = 0; l < 8; ++l) {
      cur[l] = (g - me[l]) * a;
      ma[l] = mx + cur[l];
    }
    if (isUpdate) {
      float prev[8], mt[8];
      for (int l = 0; l < 8; ++l) {
        prev[l] = (inMean.addr_[r * 8 + l] - me[l]) * a;
        mt[l] = inMax.addr_[r * 8 + l] + prev[l];
      }
      for (int l = 0; l < 8; ++l) ma[l] = NanMaxF(ma[l], mt[l]);
      for (int l = 0; l < 8; ++l) {
        float v = inMax.addr_[r * 8 + l] - ma[l];
        v = prev[l] + v;
        em[l] = std::exp(v);
      }
      for (int l = 0; l < 8; ++l) es[l] = em[l] * inExpSum.addr_[r * 8 + l];
    }
    for (int l = 0; l < 8; ++l) cur[l] = ma[l] - cur[l];
    for (uint32_t c = 0; c < n; ++c) x[c] = std::exp(x[c] - cur[c % 8]);
    half* d = dst.addr_ + r * k;
    for (uint32_t c = 0; c < n; ++c) d[c] = Down<half>(x[c]);
    const float total = RowSum(x.data(), n);
    for (int l = 0; l < 8; ++l) es[l] = isUpdate ? es[l] + total : total;
    if (isUpdate)
      for (int l = 0; l < 16; ++l) expMax.addr_[r * 16 + l] = Down<half>(em[l / 2]);
  }
  EndAdvancedApi(api, work.addr_, need, CountFormRepeats(rows * k, sizeof(float)) * 8);
}
}  // namespace trex_emu

namespace AscendC {
template <typename T1, typename T2, bool isDataFormatNZ = false, uint8_t stepSizeMode = 0>
inline bool AdjustSoftMaxRes(const LocalTensor<T1>& softMaxRes, const LocalTensor<T2>& maxTensor, const uint32_t from,
                             const T1 to, const SoftMaxShapeInfo& softmaxShapeInfo) {
  static_assert(!isDataFormatNZ, "AdjustSoftMaxRes: the NZ data format is not emulated (ND only)");
  static_assert((std::is_same<T1, half>::value && std::is_same<T2, float>::value) ||
                    (std::is_same<T1, half>::value && std::is_same<T2, half>::value) ||
                    (std::is_same<T1, float>::value && std::is_same<T2, float>::value),
                "AdjustSoftMaxRes: T1/T2 must be half/float, half/half or float/float");
  const char* api = "AdjustSoftMaxRes";
  const uint32_t m = softmaxShapeInfo.srcM, k = softmaxShapeInfo.srcK;
  const uint32_t step = stepSizeMode ? 1 : 32 / sizeof(T2);
  trex_emu::SmRange(api, "softMaxRes", softMaxRes, uint64_t{m} * k);
  trex_emu::SmRange(api, "maxTensor", maxTensor, m ? uint64_t{m - 1} * step + 1 : 0);
  bool hit = false;
  for (uint32_t r = 0; r < m; ++r) {
    const T2 v = maxTensor.addr_[uint64_t{r} * step];
    bool eq;
    if constexpr (sizeof(T2) == 4) {
      uint32_t bits;
      std::memcpy(&bits, &v, 4);
      eq = bits == from;
    } else {
      uint16_t bits;
      std::memcpy(&bits, &v, 2);
      eq = bits == static_cast<uint16_t>(from);
    }
    if (eq) {
      for (uint32_t j = 0; j < k; ++j) softMaxRes.addr_[uint64_t{r} * k + j] = to;
      hit = true;
    }
  }
  trex_emu::CountRepeats(api, trex_emu::CountFormRepeats(uint64_t{m} * k, sizeof(T1)));
  return hit;
}

// SoftmaxFlashV2: T data with T or float (half data) max/sum; with or without sharedTmpBuffer.
template <typename T, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftmaxFlashV2(const LocalTensor<T>& dstTensor, const LocalTensor<T>& expSumTensor,
                           const LocalTensor<T>& maxTensor, const LocalTensor<T>& srcTensor,
                           const LocalTensor<T>& expMaxTensor, const LocalTensor<T>& inExpSumTensor,
                           const LocalTensor<T>& inMaxTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                           const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftmaxFlashV2: the NZ data format is not emulated (ND only)");
  trex_emu::FlashV2<T, T, isUpdate>(dstTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor, inExpSumTensor,
                                    inMaxTensor, &sharedTmpBuffer, tiling, softmaxShapeInfo);
}
template <typename T, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftmaxFlashV2(const LocalTensor<T>& dstTensor, const LocalTensor<T>& expSumTensor,
                           const LocalTensor<T>& maxTensor, const LocalTensor<T>& srcTensor,
                           const LocalTensor<T>& expMaxTensor, const LocalTensor<T>& inExpSumTensor,
                           const LocalTensor<T>& inMaxTensor, const SoftMaxTiling& tiling,
                           const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftmaxFlashV2: the NZ data format is not emulated (ND only)");
  trex_emu::FlashV2<T, T, isUpdate>(dstTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor, inExpSumTensor,
                                    inMaxTensor, nullptr, tiling, softmaxShapeInfo);
}
template <typename T, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftmaxFlashV2(const LocalTensor<half>& dstTensor, const LocalTensor<float>& expSumTensor,
                           const LocalTensor<float>& maxTensor, const LocalTensor<half>& srcTensor,
                           const LocalTensor<half>& expMaxTensor, const LocalTensor<float>& inExpSumTensor,
                           const LocalTensor<float>& inMaxTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                           const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftmaxFlashV2: the NZ data format is not emulated (ND only)");
  trex_emu::FlashV2<half, float, isUpdate>(dstTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor,
                                           inExpSumTensor, inMaxTensor, &sharedTmpBuffer, tiling, softmaxShapeInfo);
}
template <typename T, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftmaxFlashV2(const LocalTensor<half>& dstTensor, const LocalTensor<float>& expSumTensor,
                           const LocalTensor<float>& maxTensor, const LocalTensor<half>& srcTensor,
                           const LocalTensor<half>& expMaxTensor, const LocalTensor<float>& inExpSumTensor,
                           const LocalTensor<float>& inMaxTensor, const SoftMaxTiling& tiling,
                           const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftmaxFlashV2: the NZ data format is not emulated (ND only)");
  trex_emu::FlashV2<half, float, isUpdate>(dstTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor,
                                           inExpSumTensor, inMaxTensor, nullptr, tiling, softmaxShapeInfo);
}

template <typename T, bool isReuseSource = false, bool isDataFormatNZ = false>
inline void SoftmaxGrad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& gradTensor,
                        const LocalTensor<T>& srcTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                        const SoftMaxTiling& tiling, bool isFront = false,
                        const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftmaxGrad: the NZ data format is not emulated (ND only)");
  trex_emu::Grad("SoftmaxGrad", dstTensor, gradTensor, srcTensor, &sharedTmpBuffer, tiling, isFront, softmaxShapeInfo);
}
template <typename T, bool isReuseSource = false, bool isDataFormatNZ = false>
inline void SoftmaxGrad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& gradTensor,
                        const LocalTensor<T>& srcTensor, const SoftMaxTiling& tiling, bool isFront = false,
                        const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftmaxGrad: the NZ data format is not emulated (ND only)");
  trex_emu::Grad("SoftmaxGrad", dstTensor, gradTensor, srcTensor, nullptr, tiling, isFront, softmaxShapeInfo);
}
template <typename T, bool isBasicBlock = false, bool isDataFormatNZ = false>
inline void SoftmaxGradFront(const LocalTensor<T>& dstTensor, const LocalTensor<T>& gradTensor,
                             const LocalTensor<T>& srcTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                             const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftmaxGradFront: the NZ data format is not emulated (ND only)");
  trex_emu::Grad("SoftmaxGradFront", dstTensor, gradTensor, srcTensor, &sharedTmpBuffer, tiling, true,
                 softmaxShapeInfo);
}
template <typename T, bool isBasicBlock = false, bool isDataFormatNZ = false>
inline void SoftmaxGradFront(const LocalTensor<T>& dstTensor, const LocalTensor<T>& gradTensor,
                             const LocalTensor<T>& srcTensor, const SoftMaxTiling& tiling,
                             const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftmaxGradFront: the NZ data format is not emulated (ND only)");
  trex_emu::Grad("SoftmaxGradFront", dstTensor, gradTensor, srcTensor, nullptr, tiling, true, softmaxShapeInfo);
}

template <typename T, bool isReuseSource = false, bool isDataFormatNZ = false>
inline void LogSoftMax(const LocalTensor<T>& dst, const LocalTensor<T>& sumTensor, const LocalTensor<T>& maxTensor,
                       const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                       const LogSoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "LogSoftMax: the NZ data format is not emulated (ND only)");
  trex_emu::LogSm(dst, sumTensor, maxTensor, src, &sharedTmpBuffer, tiling, softmaxShapeInfo);
}
template <typename T, typename U, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftmaxFlashV3(const LocalTensor<T>& dstTensor, const LocalTensor<U>& meanTensor,
                           const LocalTensor<U>& expSumTensor, const LocalTensor<U>& maxTensor,
                           const LocalTensor<T>& srcTensor, const LocalTensor<T>& expMaxTensor,
                           const LocalTensor<U>& inMeanTensor, const LocalTensor<U>& inExpSumTensor,
                           const LocalTensor<U>& inMaxTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                           const SoftMaxTiling& tiling, const SoftMaxParams& params) {
  static_assert(std::is_same<T, half>::value && std::is_same<U, float>::value,
                "Failed to check dtype in SoftmaxFlashV3, Current api support dtype combination is T : half, U : float");
  static_assert(!isDataFormatNZ, "SoftmaxFlashV3: the NZ data format is not emulated (ND only)");
  trex_emu::FlashV3<isUpdate>(dstTensor, meanTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor, inMeanTensor,
                              inExpSumTensor, inMaxTensor, sharedTmpBuffer, tiling, params);
}
template <typename T, typename U, bool isUpdate = false, bool isReuseSource = false, bool isBasicBlock = false,
          bool isDataFormatNZ = false, const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftmaxFlashV3(const LocalTensor<T>& dstTensor, const LocalTensor<U>& meanTensor,
                           const LocalTensor<U>& expSumTensor, const LocalTensor<U>& maxTensor,
                           const LocalTensor<T>& srcTensor, const LocalTensor<T>& expMaxTensor,
                           const LocalTensor<U>& inMeanTensor, const LocalTensor<U>& inExpSumTensor,
                           const LocalTensor<U>& inMaxTensor, const SoftMaxTiling& tiling,
                           const SoftMaxParams& params) {
  static_assert(std::is_same<T, half>::value && std::is_same<U, float>::value,
                "Failed to check dtype in SoftmaxFlashV3, Current api support dtype combination is T : half, U : float");
  static_assert(!isDataFormatNZ, "SoftmaxFlashV3: the NZ data format is not emulated (ND only)");
  LocalTensor<uint8_t> stack;
  PopStackBuffer<uint8_t, TPosition::LCM>(stack);
  trex_emu::FlashV3<isUpdate>(dstTensor, meanTensor, expSumTensor, maxTensor, srcTensor, expMaxTensor, inMeanTensor,
                              inExpSumTensor, inMaxTensor, stack, tiling, params);
}
}  // namespace AscendC
