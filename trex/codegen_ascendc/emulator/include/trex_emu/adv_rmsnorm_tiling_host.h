// adv_rmsnorm_tiling_host.h: host tiling helpers of RmsNorm (namespace AscendC, CANN's tiling_api.h), as
// asc-devkit impl/adv_api/tiling/normalization/rmsnorm_tiling_impl.cpp computes them (shape [b, s, h]):
//  * GetRmsNormMaxMinTmpSize(srcShape, typeSize, max, min, isBasicBlock): max = (b*s*h * (half ? 2 : 1) +
//    align(b*s, 32 B of typeSize)) * 4 B, min = (h * (half ? 2 : 1) + 8) * 4 B; false (outputs unwritten) when
//    isBasicBlock and h % 64 != 0, b*s % 8 != 0 or h >= 2048.
//  * GetRmsNormTilingInfo(srcShape, originSrcShape, stackBufferByteSize, typeSize, tiling, isBasicBlock): false
//    for a shape that is not 3-D, b/s differing from the original's, h < original h, original h 0, h not 32-byte
//    aligned, the basic-block shape rule, or a stack buffer below the minimum; else the rows per round
//    (mainBsLength: as many as the buffer holds with their 32-byte-aligned reduce slots, at most b*s, a multiple
//    of 8 for basic blocks, at most 255 otherwise), loopRound and the tail.
#pragma once
#include <cstdint>
#include <vector>

#include "trex_emu/tiling_rmsnorm.h"

namespace AscendC {
namespace trex_rmsnorm {
inline uint32_t AlignToBlock(uint32_t v, uint32_t typeSize) {
  const uint32_t unit = 32 / typeSize;
  return (v + unit - 1) / unit * unit;
}
template <class Shape>
inline bool Dims(const Shape& s, uint32_t& b, uint32_t& sl, uint32_t& h) {
  if (s.GetDimNum() != 3) return false;
  b = static_cast<uint32_t>(s.GetDim(0));
  sl = static_cast<uint32_t>(s.GetDim(1));
  h = static_cast<uint32_t>(s.GetDim(2));
  return true;
}
inline bool BadBasicBlock(uint32_t b, uint32_t s, uint32_t h) { return h % 64 != 0 || b * s % 8 != 0 || h >= 2048; }
inline uint32_t MinTmp(uint32_t h, uint32_t typeSize) { return (h * (typeSize == 2 ? 2 : 1) + 8) * 4; }
}  // namespace trex_rmsnorm

template <class Shape>
inline bool GetRmsNormMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                    uint32_t& minValue, const bool isBasicBlock = false) {
  uint32_t b = 0, s = 0, h = 0;
  if (!trex_rmsnorm::Dims(srcShape, b, s, h) || typeSize == 0) return false;
  if (isBasicBlock && trex_rmsnorm::BadBasicBlock(b, s, h)) return false;
  const uint32_t bs = trex_rmsnorm::AlignToBlock(b * s, typeSize);
  maxValue = (b * s * h * (typeSize == 2 ? 2 : 1) + bs) * 4;
  minValue = trex_rmsnorm::MinTmp(h, typeSize);
  return true;
}

template <class Shape>
inline bool GetRmsNormTilingInfo(const Shape& srcShape, const Shape& originSrcShape, const uint32_t stackBufferByteSize,
                                 const uint32_t typeSize, optiling::RmsNormTiling& tiling,
                                 const bool isBasicBlock = false) {
  uint32_t b = 0, s = 0, h = 0, ob = 0, os = 0, oh = 0;
  if (!trex_rmsnorm::Dims(srcShape, b, s, h) || !trex_rmsnorm::Dims(originSrcShape, ob, os, oh)) return false;
  if (b != ob || s != os || h < oh || oh == 0 || h * typeSize % 32 != 0) return false;
  if (isBasicBlock && trex_rmsnorm::BadBasicBlock(b, s, h)) return false;
  if (stackBufferByteSize < trex_rmsnorm::MinTmp(h, typeSize)) return false;
  tiling.set_bLength(b);
  tiling.set_sLength(s);
  tiling.set_hLength(h);
  tiling.set_originalHLength(oh);
  tiling.set_reciprocalOfHLength(static_cast<float>(1.0 / static_cast<float>(oh)));
  const uint32_t total = stackBufferByteSize / 4;
  const uint32_t coeff = typeSize == 4 ? 1 : 2;
  uint32_t bs = 1;
  while (total >= (bs + 1) * h * coeff + (bs + 1 + 7) / 8 * 8) ++bs;
  uint32_t one = bs * h;
  const uint32_t input = b * s * h;
  if (one > input) one = input;
  bs = one / h;
  if (isBasicBlock) bs = bs < 8 ? bs : bs / 8 * 8;
  else if (bs > 255) bs = 255;
  one = bs * h;
  tiling.set_mainBshLength(one);
  tiling.set_mainBsLength(bs);
  tiling.set_mainBsLengthAlign(trex_rmsnorm::AlignToBlock(bs, 4));
  tiling.set_loopRound(one ? input / one : 0);
  const uint32_t tail = one ? input % one : 0;
  tiling.set_tailBshLength(tail);
  tiling.set_inputTailPos(input - tail);
  tiling.set_tailBsLength(tail / h);
  return true;
}
}  // namespace AscendC
