// Host tiling helpers of ReduceMax / ReduceMin (impl/adv_api/tiling/reduce/reduce_tiling.cpp, A2/A3 branch) and the
// ReducePattern enum they take. dataType: ge::DataType (AscendC::TensorDataType) DT_FLOAT or DT_FLOAT16 (the only ones
// on A2/A3; others leave the sizes untouched). isReuseSource: 0 / 0. AR [first, last]: last <= one block: 0;
// last < one repeat: first * one block; else first * one repeat (bytes). RA: k * align32(last * size) with k the
// largest power of two <= first, halved when first is itself a power of two above 1.
#pragma once
#include <cstdint>

namespace AscendC {
#ifndef TREX_EMU_REDUCE_PATTERN
#define TREX_EMU_REDUCE_PATTERN
enum class ReducePattern : uint32_t { AR = 0, RA = 1, R, ARA, ARAR, ARARA, ARARAR, ARARARA };
#endif
namespace trex_reduce {
inline uint32_t FindK(uint32_t n) {
  uint32_t r = 1;
  while (n > 1) {
    r <<= 1;
    n >>= 1;
  }
  return r;
}
template <class Shape, class DT>
inline void MaxMinTmp(const Shape& s, DT dataType, ReducePattern pattern, bool isReuseSource, uint32_t& maxValue,
                      uint32_t& minValue) {
  const int dt = static_cast<int>(dataType);
  if ((dt != 0 && dt != 1) || s.GetDimNum() != 2) return;  // ge::DT_FLOAT = 0, DT_FLOAT16 = 1
  const uint32_t size = dt == 0 ? 4 : 2;
  const uint32_t first = static_cast<uint32_t>(s.GetDim(0)), last = static_cast<uint32_t>(s.GetDim(1));
  if (isReuseSource) {
    maxValue = minValue = 0;
    return;
  }
  if (pattern == ReducePattern::AR) {
    const uint32_t blk = 32 / size, rep = 256 / size;
    maxValue = minValue = last <= blk ? 0 : (last < rep ? first * blk * size : first * rep * size);
    return;
  }
  uint32_t k = FindK(first);
  if (k == first && first > 1) k >>= 1;
  maxValue = minValue = k * ((last * size + 31) / 32 * 32);
}
}  // namespace trex_reduce
template <class Shape, class DT>
inline void GetReduceMaxMaxMinTmpSize(const Shape& srcShape, const DT dataType, ReducePattern pattern, bool isSrcInnerPad,
                                      bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
  (void)isSrcInnerPad;
  trex_reduce::MaxMinTmp(srcShape, dataType, pattern, isReuseSource, maxValue, minValue);
}
template <class Shape, class DT>
inline void GetReduceMinMaxMinTmpSize(const Shape& srcShape, const DT dataType, ReducePattern pattern, bool isSrcInnerPad,
                                      bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
  (void)isSrcInnerPad;
  trex_reduce::MaxMinTmp(srcShape, dataType, pattern, isReuseSource, maxValue, minValue);
}
}  // namespace AscendC
