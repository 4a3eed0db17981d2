// Host tiling helpers of further advanced APIs (namespace AscendC, CANN's tiling_api.h), with the sizes
// asc-devkit computes; the kernel-side APIs need no temporary buffer here, these only size what op_host code
// reserves.
//  * GetSigmoidMaxMinTmpSize (impl/adv_api/tiling/activation/sigmoid_tiling_impl.cpp): min 256 B, max
//    max(n * typeSize, 256 B).
//  * GetMeanMaxMinTmpSize / GetMeanTmpBufferFactorSize (impl/adv_api/tiling/reduce/mean_tiling.cpp): one 32-byte
//    aligned slot per 256-byte repeat of the source (of the float accumulator for half -> float, plus the
//    32-byte aligned source length in float); min = max; factor 1, extra 0.
#pragma once
#include <algorithm>
#include <cstdint>

namespace AscendC {
template <class Shape>
inline void GetSigmoidMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, bool, uint32_t& maxValue,
                                    uint32_t& minValue) {
  uint64_t n = 1;
  for (size_t i = 0; i < srcShape.GetDimNum(); ++i) n *= static_cast<uint64_t>(srcShape.GetDim(i));
  minValue = 256;
  maxValue = static_cast<uint32_t>(std::max<uint64_t>(n * typeSize, 256));
}
inline void GetMeanMaxMinTmpSize(const uint32_t n, const uint32_t srcTypeSize, const uint32_t accTypeSize, const bool,
                                 uint32_t& maxSize, uint32_t& minSize) {
  if (srcTypeSize == 0) return;
  uint32_t perRepeat = 256 / srcTypeSize;
  uint32_t repeats = (n + perRepeat - 1) / perRepeat;
  uint32_t work = (repeats + 31) / 32 * 32;
  const uint32_t inner = (n * srcTypeSize + 31) / 32 * 32 / srcTypeSize;
  if (srcTypeSize == 2 && accTypeSize == 4) {
    perRepeat = 256 / 4;
    repeats = (n + perRepeat - 1) / perRepeat;
    work = (repeats + 31) / 32 * 32 + inner * 4;
  }
  maxSize = minSize = work;
}
inline void GetMeanTmpBufferFactorSize(const uint32_t, uint32_t& maxLiveNodeCount, uint32_t& extraBuffer) {
  extraBuffer = 0;
  maxLiveNodeCount = 1;
}
}  // namespace AscendC
