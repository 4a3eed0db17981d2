// Host tiling helpers of the Erf / Erfc (and Tanh, below) advanced APIs (namespace AscendC, CANN's tiling_api.h), with the
// sizes asc-devkit computes (impl/adv_api/tiling/math/erf_tiling_impl.cpp, erfc_tiling_impl.cpp):
// min = k * 256 B, max = k * max(n * typeSize, 256 B), maxLiveNodeCount = k, extraBuffer = 0, with
// k = Erf 8 (half) / 3 (float), Erfc 16 / 7. Templated on the shape (ge::Shape on both sides).
#pragma once
#include <algorithm>
#include <cstdint>

namespace AscendC {
namespace trex_erf {
template <class Shape>
inline uint64_t Elements(const Shape& s) {
  uint64_t n = 1;
  for (size_t i = 0; i < s.GetDimNum(); ++i) n *= static_cast<uint64_t>(s.GetDim(i));
  return n;
}
inline void Sizes(uint64_t n, uint32_t typeSize, uint32_t k, uint32_t& maxValue, uint32_t& minValue) {
  minValue = k * 256u;
  maxValue = static_cast<uint32_t>(k * std::max<uint64_t>(n * typeSize, 256u));
}
}  // namespace trex_erf
template <class Shape>
inline void GetErfMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                uint32_t& minValue) {
  trex_erf::Sizes(trex_erf::Elements(srcShape), typeSize, typeSize == 4 ? 3u : 8u, maxValue, minValue);
}
inline void GetErfTmpBufferFactorSize(const uint32_t typeSize, uint32_t& maxLiveNodeCount, uint32_t& extraBuffer) {
  extraBuffer = 0;
  maxLiveNodeCount = typeSize == 4 ? 3u : 8u;
}
template <class Shape>
inline void GetErfcMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                 uint32_t& minValue) {
  trex_erf::Sizes(trex_erf::Elements(srcShape), typeSize, typeSize == 4 ? 7u : 16u, maxValue, minValue);
}
inline void GetErfcTmpBufferFactorSize(const uint32_t typeSize, uint32_t& maxLiveNodeCount, uint32_t& extraBuffer) {
  extraBuffer = 0;
  maxLiveNodeCount = typeSize == 4 ? 7u : 16u;
}
// Tanh (impl/adv_api/tiling/math/tanh_tiling_impl.cpp): the same form with k = 4 (half) / 1 (float).
template <class Shape>
inline void GetTanhMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                 uint32_t& minValue) {
  trex_erf::Sizes(trex_erf::Elements(srcShape), typeSize, typeSize == 4 ? 1u : 4u, maxValue, minValue);
}
inline void GetTanhTmpBufferFactorSize(const uint32_t typeSize, uint32_t& maxLiveNodeCount, uint32_t& extraBuffer) {
  extraBuffer = 0;
  maxLiveNodeCount = typeSize == 4 ? 1u : 4u;
}
}  // namespace AscendC
