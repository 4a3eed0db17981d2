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
}  // namespace AscendC
