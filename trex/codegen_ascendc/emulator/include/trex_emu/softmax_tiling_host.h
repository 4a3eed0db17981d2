// Host tiling helpers of the SoftMax advanced API (namespace AscendC, as CANN's tiling_api.h has them).
// SoftMaxTilingFunc fills SoftMaxTiling for a [m, k] source (m = the product of the leading dims):
// srcM/srcK/srcSize as given, max/sum outputs [m, 32 B], one split of as many rows as
// localWorkSpaceSize holds in float (at least one). The split values are the emulator's own choice
// (CANN's exact rule is not documented); the emulated SoftMax does not depend on them.
// GetSoftMaxMinTmpSize / GetSoftMaxMaxTmpSize: bytes for one row / all rows in float, plus a data
// block per row for the max and the sum (likewise the emulator's own sizing, documented in
// docs/emulator.md; the emulated SoftMax needs no temporary space).
// Shared by op_host code (ge::Shape of include_host/trex_host/ge_types.h) and by kernel compiles that
// include an op_host tiling header calling them (tiling/tiling_api.h's ge::Shape); templates on the shape.
#pragma once
#include <algorithm>
#include <cstdint>

#include "trex_emu/softmax_tiling.h"

namespace AscendC {
namespace trex_softmax {
template <class Shape>
inline void RowsCols(const Shape& s, uint32_t& m, uint32_t& k) {
  const size_t n = s.GetDimNum();
  k = n ? static_cast<uint32_t>(s.GetDim(n - 1)) : 0;
  uint64_t rows = 1;
  for (size_t i = 0; i + 1 < n; ++i) rows *= static_cast<uint64_t>(s.GetDim(i));
  m = n ? static_cast<uint32_t>(rows) : 0;
}
inline uint32_t RowBytes(uint32_t k) { return (k * 4u + 31u) / 32u * 32u + 2u * 32u; }
}  // namespace trex_softmax

template <class Shape>
inline uint32_t GetSoftMaxMinTmpSize(const Shape& srcShape, const uint32_t dataTypeSize, const bool isReuseSource) {
  (void)dataTypeSize;
  (void)isReuseSource;
  uint32_t m = 0, k = 0;
  trex_softmax::RowsCols(srcShape, m, k);
  return trex_softmax::RowBytes(k);
}
template <class Shape>
inline uint32_t GetSoftMaxMaxTmpSize(const Shape& srcShape, const uint32_t dataTypeSize, const bool isReuseSource) {
  (void)dataTypeSize;
  (void)isReuseSource;
  uint32_t m = 0, k = 0;
  trex_softmax::RowsCols(srcShape, m, k);
  return trex_softmax::RowBytes(k) * std::max<uint32_t>(m, 1);
}
template <class Shape>
inline void SoftMaxTilingFunc(const Shape& srcShape, const uint32_t dataTypeSize, const uint32_t localWorkSpaceSize,
                              optiling::SoftMaxTiling& softmaxTiling) {
  uint32_t m = 0, k = 0;
  trex_softmax::RowsCols(srcShape, m, k);
  const uint32_t per_blk = dataTypeSize ? 32u / dataTypeSize : 8u;
  const uint32_t split = std::max<uint32_t>(1, std::min<uint32_t>(m, localWorkSpaceSize / trex_softmax::RowBytes(k)));
  softmaxTiling.srcM = m;
  softmaxTiling.srcK = k;
  softmaxTiling.srcSize = m * k;
  softmaxTiling.outMaxM = m;
  softmaxTiling.outMaxK = per_blk;
  softmaxTiling.outMaxSize = m * per_blk;
  softmaxTiling.splitM = split;
  softmaxTiling.splitK = k;
  softmaxTiling.splitSize = split * k;
  softmaxTiling.reduceM = split;
  softmaxTiling.reduceK = per_blk;
  softmaxTiling.reduceSize = split * per_blk;
  softmaxTiling.rangeM = m / split;
  softmaxTiling.tailM = m % split;
  softmaxTiling.tailSplitSize = (m % split) * k;
  softmaxTiling.tailReduceSize = (m % split) * per_blk;
}
}  // namespace AscendC
