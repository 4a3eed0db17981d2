// adv_deepnorm_tiling_host.h: host tiling helpers of DeepNorm (namespace AscendC, CANN's tiling_api.h), as asc-devkit
// impl/adv_api/tiling/normalization/deepnorm_tiling_impl.cpp computes them (shape [b, s, h], all tmp tensors float):
//  * GetDeepNormMaxMinTmpSize(srcShape, typeSize, isReuseSource, isBasicBlock, max, min): with k = 2 for a float
//    input with isReuseSource (the source stands in for one tmp tensor), else 3:
//      max = k * align32(b*s*h * 4) + 2 * align32(b*s * 4),  min = k * align32(h * 4) + 2 * align32(b*s * 4) bytes;
//    false (outputs unwritten) for isBasicBlock with h % 64 != 0 or b*s % 8 != 0.
//  * GetDeepNormTilingInfo(srcShape, originSrcShape, stackBufferSize, typeSize, isReuseSource, isBasicBlock, tiling):
//    false (tiling unwritten) for the basic-block rule, a stack buffer below the minimum, b/s differing from the
//    original's, h not 32-byte aligned, original h outside (0, h], isBasicBlock with original h != h, h > 2040
//    (255 * 8), or no room for one row per tmp tensor; else the 26 fields: half keeps float mean / variance in the
//    tmp buffer (two align8(b*s) slots first), the rest is split into numberOfTmpBuf tensors of oneTmpSize floats
//    (whole rows, at most b*s*h; for isBasicBlock a multiple of 8 rows when 8 rows fit), loopRound rounds of
//    oneTmpSize elements and a tail.
// Argument checks (CheckDeepNormHostCommon / CheckDeepNormTilingInfo) are CANN's ASCENDC_HOST_ASSERTs: a message on
// stderr, then the function carries on, as the library does (a shape of fewer than 3 dims reads the missing dims
// as 0 here, where the library indexes past its dims vector). One struct serves the optiling:: and
// AscendC::tiling:: overloads; the library's AscendC::tiling one also writes the struct (zeros) when it refuses.
// Templates on the shape so both ge::Shape models (kernel side and include_host) take them.
#pragma once
#include <cstdint>
#include <cstdio>

#include "trex_emu/tiling_deepnorm.h"

namespace AscendC {
namespace trex_deepnorm {
inline uint32_t Align(uint32_t v, uint32_t unit) { return (v + unit - 1) / unit * unit; }
inline void HostErr(const char* fn, const char* msg) { std::fprintf(stderr, "[ERROR] [DeepNorm][%s] %s\n", fn, msg); }
template <class Shape>
inline void HostCommonCheck(const char* fn, const Shape& s, uint32_t typeSize, bool isBasicBlock) {
  if (s.GetShapeSize() <= 0) return HostErr(fn, "Input Shape size must be greater than 0.");
  if (typeSize != 2 && typeSize != 4) {
    std::fprintf(stderr, "[ERROR] [DeepNorm][%s] Type size %u is unsupported!\n", fn, typeSize);
    return;
  }
  if (s.GetDimNum() != 3) {
    std::fprintf(stderr, "[ERROR] [DeepNorm][%s] The dims of srcShape is %zu, should be 3 (e.g. [B, S, H])!\n", fn,
                 static_cast<size_t>(s.GetDimNum()));
    return;
  }
  const uint32_t bs = static_cast<uint32_t>(s.GetDim(0) * s.GetDim(1)), h = static_cast<uint32_t>(s.GetDim(2));
  if (h == 0) return HostErr(fn, "The last axis H must be greater than 0!");
  if (bs == 0) return HostErr(fn, "The non-last axis B*S must be greater than 0!");
  if (h * typeSize % 32 != 0) return HostErr(fn, "The last axis H must be 32B aligned!");
  if (h > 2040) return HostErr(fn, "The value of last axis can not be greater than 2040!");
  if (isBasicBlock) {
    if (h % 64 != 0) return HostErr(fn, "The last axis H must be 64 aligned!");
    if (bs % 8 != 0) return HostErr(fn, "The non-last axis B*S must be 8 aligned!");
  }
}
inline uint32_t TmpTensors(uint32_t typeSize, bool isReuseSource) { return isReuseSource && typeSize == 4 ? 2 : 3; }
}  // namespace trex_deepnorm

template <class Shape>
inline bool GetDeepNormMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                     const bool isBasicBlock, uint32_t& maxValue, uint32_t& minValue) {
  trex_deepnorm::HostCommonCheck("GetDeepNormMaxMinTmpSize", srcShape, typeSize, isBasicBlock);
  const uint32_t b = static_cast<uint32_t>(srcShape.GetDim(0)), s = static_cast<uint32_t>(srcShape.GetDim(1)),
                 h = static_cast<uint32_t>(srcShape.GetDim(2));
  if (isBasicBlock && !(h % 64 == 0 && h > 0 && b * s % 8 == 0)) return false;
  const uint32_t k = trex_deepnorm::TmpTensors(typeSize, isReuseSource);
  const uint32_t bsBytes = trex_deepnorm::Align(b * s * 4, 32);
  maxValue = k * trex_deepnorm::Align(b * s * h * 4, 32) + 2 * bsBytes;
  minValue = k * trex_deepnorm::Align(h * 4, 32) + 2 * bsBytes;
  return true;
}

template <class Shape>
inline bool GetDeepNormTilingInfo(const Shape& srcShape, const Shape& originSrcShape, const uint32_t stackBufferSize,
                                  const uint32_t typeSize, const bool isReuseSource, const bool isBasicBlock,
                                  optiling::DeepNormTiling& tiling) {
  const char* fn = "GetDeepNormTilingInfo";
  trex_deepnorm::HostCommonCheck(fn, srcShape, typeSize, isBasicBlock);
  const uint32_t b = static_cast<uint32_t>(srcShape.GetDim(0)), s = static_cast<uint32_t>(srcShape.GetDim(1)),
                 h = static_cast<uint32_t>(srcShape.GetDim(2));
  const uint32_t ob = static_cast<uint32_t>(originSrcShape.GetDim(0)),
                 os = static_cast<uint32_t>(originSrcShape.GetDim(1)),
                 oh = static_cast<uint32_t>(originSrcShape.GetDim(2));
  if (!(oh > 0 && oh <= h))
    std::fprintf(stderr, "[ERROR] [DeepNorm][%s] The range of originH is %u, must be (0, %u]!\n", fn, oh, h);
  else if (isBasicBlock && oh != h)
    std::fprintf(stderr,
                 "[ERROR] [DeepNorm][%s] When isBasicBlock is true, originH is %u, H is %u, originH must be equal "
                 "to H!\n", fn, oh, h);
  uint32_t maxSize = 0, minSize = 0;
  if (!GetDeepNormMaxMinTmpSize(srcShape, typeSize, isReuseSource, isBasicBlock, maxSize, minSize) ||
      stackBufferSize < minSize)
    return false;
  const bool ok = b == ob && s == os && h * typeSize % 32 == 0 && oh > 0 && oh <= h && !(isBasicBlock && oh != h) &&
                  h <= 255 * 8;  // one Add's uint8 repeat stride is h / 8
  if (!ok) return false;
  const uint32_t inputXSize = b * s * h, meanVarSize = b * s;
  const uint32_t numberOfTmpBuf = trex_deepnorm::TmpTensors(typeSize, isReuseSource);
  const uint32_t meanTmpTensorSize = trex_deepnorm::Align(meanVarSize, 8);
  const uint32_t meanVarTotalSize = typeSize == 4 ? 0 : 2 * meanTmpTensorSize;
  const uint32_t tmpBufSize = stackBufferSize / 4;
  uint32_t oneTmpSize = (tmpBufSize - meanVarTotalSize) / numberOfTmpBuf;
  oneTmpSize = oneTmpSize / h * h;
  if (oneTmpSize > inputXSize) oneTmpSize = inputXSize;
  if (isBasicBlock && oneTmpSize / (8 * h) > 0) oneTmpSize = oneTmpSize / (8 * h) * (8 * h);
  if (oneTmpSize == 0) return false;
  const uint32_t inputTailSize = inputXSize % oneTmpSize;
  tiling.set_bLength(b);
  tiling.set_sLength(s);
  tiling.set_hLength(h);
  tiling.set_originalHLength(oh);
  tiling.set_inputXSize(inputXSize);
  tiling.set_meanVarSize(meanVarSize);
  tiling.set_numberOfTmpBuf(numberOfTmpBuf);
  tiling.set_meanTmpTensorPos(0);
  tiling.set_meanTmpTensorSize(meanTmpTensorSize);
  tiling.set_varianceTmpTensorPos(meanTmpTensorSize);
  tiling.set_varianceTmpTensorSize(meanTmpTensorSize);
  tiling.set_tmpBufSize(tmpBufSize);
  tiling.set_oneTmpSize(oneTmpSize);
  tiling.set_firstTmpStartPos(meanVarTotalSize);
  tiling.set_secondTmpStartPos(meanVarTotalSize + oneTmpSize);
  tiling.set_thirdTmpStartPos(meanVarTotalSize + 2 * oneTmpSize);
  tiling.set_loopRound(inputXSize / oneTmpSize);
  tiling.set_inputRoundSize(oneTmpSize);
  tiling.set_inputTailSize(inputTailSize);
  tiling.set_inputTailPos(inputXSize - inputTailSize);
  tiling.set_meanVarRoundSize(oneTmpSize / h);
  tiling.set_meanVarTailSize(inputTailSize / h);
  tiling.set_meanVarTailPos(meanVarSize - inputTailSize / h);
  tiling.set_bshCurLength(oneTmpSize);
  tiling.set_bsCurLength(oneTmpSize / h);
  tiling.set_lastDimValueBack(1.0f / static_cast<float>(oh));
  return true;
}
}  // namespace AscendC
