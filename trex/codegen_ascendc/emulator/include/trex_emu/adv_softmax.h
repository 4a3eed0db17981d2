// trex AscendC emulator: the SoftMax advanced API (ND format), as asc-devkit's SoftMax page defines it:
// per row of the [m, k] view, max = rowmax(x), dst = exp(x - max) / rowsum(exp(x - max)); max and sum
// are also written, each row's value repeated over one 32-byte data block ([m, 32/sizeof(U)]).
#pragma once
#include <cmath>
#include <vector>

#include "trex_emu/softmax_tiling.h"
#include "trex_emu/vec.h"

namespace AscendC {

struct SoftMaxShapeInfo {
  uint32_t srcM = 0, srcK = 0;        // rows and row length (stride) in UB
  uint32_t oriSrcM = 0, oriSrcK = 0;  // the valid rows / columns
};

struct SoftmaxConfig {
  bool isCheckTiling = true;
  uint32_t oriSrcM = 0, oriSrcK = 0;
  uint32_t mode = 0;
};
constexpr SoftmaxConfig SOFTMAX_DEFAULT_CFG = {};

}  // namespace AscendC

namespace trex_emu {

// Computes in float, rounds dst, max and sum to their types once. Rows: srcM (of the shape info, else
// of the tiling) with stride srcK; columns: oriSrcK (else srcK). Columns from oriSrcK to srcK are not
// written. dst may be src (isReuseSource or not: every row is read before it is written).
// kStats false: the prototypes without sumTensor/maxTensor (sum and max are then dst, never touched).
template <class T, class U, bool kStats = true>
inline void SoftMaxImpl(const LocalTensor<T>& dst, const LocalTensor<U>& sum, const LocalTensor<U>& max,
                        const LocalTensor<T>& src, const SoftMaxTiling& tiling, const AscendC::SoftMaxShapeInfo& info) {
  static_assert(kFloatTypes<T> && kFloatTypes<U>, "SoftMax: element types half/float only on Atlas A2/A3");
  const char* api = "SoftMax";
  const uint32_t m = info.srcM ? info.srcM : tiling.srcM;
  const uint32_t k = info.srcK ? info.srcK : tiling.srcK;
  const uint32_t valid_k = info.oriSrcK ? info.oriSrcK : k;
  if (m == 0 || k == 0)
    Fail(api, ": the shape is [", m, ", ", k, "]; pass SoftMaxShapeInfo{srcM, srcK, oriSrcM, oriSrcK} or a tiling "
         "from SoftMaxTilingFunc");
  if (valid_k > k) Fail(api, ": oriSrcK=", valid_k, " exceeds srcK=", k);
  for (const void* p : {static_cast<const void*>(dst.addr_), static_cast<const void*>(src.addr_),
                        static_cast<const void*>(sum.addr_), static_cast<const void*>(max.addr_)})
    CheckUbAlign(api, "operand", p);
  const uint32_t per_blk = 32 / sizeof(U);
  CheckUbRange(api, "src", src.buf_, src.addr_, src.addr_ + uint64_t{m} * k);
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + uint64_t{m} * k);
  if (kStats) {
    CheckUbRange(api, "sumTensor", sum.buf_, sum.addr_, sum.addr_ + uint64_t{m} * per_blk);
    CheckUbRange(api, "maxTensor", max.buf_, max.addr_, max.addr_ + uint64_t{m} * per_blk);
  }
  std::vector<float> row(valid_k);
  for (uint32_t r = 0; r < m; ++r) {
    const T* s = src.addr_ + uint64_t{r} * k;
    float mx = -INFINITY;
    for (uint32_t j = 0; j < valid_k; ++j) {
      row[j] = ToF(s[j]);
      mx = std::fmax(mx, row[j]);
      if (row[j] != row[j]) mx = row[j];
    }
    float total = 0;
    for (uint32_t j = 0; j < valid_k; ++j) {
      row[j] = std::exp(row[j] - mx);
      total += row[j];
    }
    T* d = dst.addr_ + uint64_t{r} * k;
    for (uint32_t j = 0; j < valid_k; ++j) d[j] = static_cast<T>(row[j] / total);
    for (uint32_t j = 0; kStats && j < per_blk; ++j) {
      max.addr_[uint64_t{r} * per_blk + j] = static_cast<U>(mx);
      sum.addr_[uint64_t{r} * per_blk + j] = static_cast<U>(total);
    }
  }
  CountRepeats(api, CountFormRepeats(uint64_t{m} * k, sizeof(float)));
}

}  // namespace trex_emu

namespace AscendC {

template <class T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& sumTensor, const LocalTensor<T>& maxTensor,
                    const LocalTensor<T>& srcTensor, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftMax: the NZ data format is not emulated (ND only)");
  trex_emu::SoftMaxImpl(dstTensor, sumTensor, maxTensor, srcTensor, tiling, softmaxShapeInfo);
}
// half data, float max/sum
template <class T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<half>& dstTensor, const LocalTensor<float>& sumTensor,
                    const LocalTensor<float>& maxTensor, const LocalTensor<half>& srcTensor, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftMax: the NZ data format is not emulated (ND only)");
  trex_emu::SoftMaxImpl(dstTensor, sumTensor, maxTensor, srcTensor, tiling, softmaxShapeInfo);
}
// with a caller-provided temporary buffer (not needed by the emulation; it must be a UB tensor)
template <class T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& sumTensor, const LocalTensor<T>& maxTensor,
                    const LocalTensor<T>& srcTensor, const LocalTensor<uint8_t>& sharedTmpBuffer,
                    const SoftMaxTiling& tiling, const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftMax: the NZ data format is not emulated (ND only)");
  trex_emu::CheckUbAlign("SoftMax", "sharedTmpBuffer", sharedTmpBuffer.addr_);
  trex_emu::SoftMaxImpl(dstTensor, sumTensor, maxTensor, srcTensor, tiling, softmaxShapeInfo);
}
template <class T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<half>& dstTensor, const LocalTensor<float>& sumTensor,
                    const LocalTensor<float>& maxTensor, const LocalTensor<half>& srcTensor,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftMax: the NZ data format is not emulated (ND only)");
  trex_emu::CheckUbAlign("SoftMax", "sharedTmpBuffer", sharedTmpBuffer.addr_);
  trex_emu::SoftMaxImpl(dstTensor, sumTensor, maxTensor, srcTensor, tiling, softmaxShapeInfo);
}

// without sumTensor/maxTensor (asc-devkit include/adv_api/activation/softmax.h: SoftMax(dst, src, tiling,
// shapeInfo) and SoftMax(dst, src, sharedTmpBuffer, tiling, shapeInfo)): dst only.
template <class T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftMax: the NZ data format is not emulated (ND only)");
  trex_emu::SoftMaxImpl<T, T, false>(dstTensor, dstTensor, dstTensor, srcTensor, tiling, softmaxShapeInfo);
}
template <class T, bool isReuseSource = false, bool isBasicBlock = false, bool isDataFormatNZ = false,
          const SoftmaxConfig& config = SOFTMAX_DEFAULT_CFG>
inline void SoftMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const SoftMaxTiling& tiling,
                    const SoftMaxShapeInfo& softmaxShapeInfo = {}) {
  static_assert(!isDataFormatNZ, "SoftMax: the NZ data format is not emulated (ND only)");
  trex_emu::CheckUbAlign("SoftMax", "sharedTmpBuffer", sharedTmpBuffer.addr_);
  trex_emu::SoftMaxImpl<T, T, false>(dstTensor, dstTensor, dstTensor, srcTensor, tiling, softmaxShapeInfo);
}

}  // namespace AscendC

// Kernels of mixed AIC/AIV builds branch on the core type; the emulator runs vector (AIV) blocks.
#define ASCEND_IS_AIV (true)
#define ASCEND_IS_AIC (false)
