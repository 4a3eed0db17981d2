// Host tiling helpers of SoftmaxFlashV2, SoftmaxGrad, LogSoftMax and Select (namespace AscendC, CANN's tiling_api.h).
//  * GetSoftMaxGradMinTmpSize: asc-devkit impl/adv_api/tiling/activation/softmax_tiling.cpp's A2/A3 formula, in floats:
//    half 8 * 2 + 3 * k + 64; float isFront ? 8 + k + 64 : 16 + k + 64 (k the last axis; 8 = floats per block).
//  * GetSoftMaxFlashV2Min/MaxTmpSize, GetSoftMaxGradMaxTmpSize, GetLogSoftMaxMin/MaxTmpSize and the TilingFuncs:
//    the emulator's sizing of softmax_tiling_host.h (one row / all rows in float plus two blocks a row; one split of
//    as many rows as the workspace holds). The emulated kernels do not read the split fields.
//  * GetSoftMaxFlashV3MaxMinTmpSize / SoftMaxFlashV3TilingFunc (softmax_tiling.cpp, A2/A3): per row
//    8 * 5 + 2 * k + 64 floats; min = one row, max = m rows (bytes); the tiling splits m into rows the
//    workspace holds (a multiple of 8 when that is more than 8 and less than m). dataTypeSize1 must be 2 and
//    dataTypeSize2 4 (else the outputs are left as they are).
//  * GetSelectMaxMinTmpSize (tiling/select/select_tiling.cpp): max(1024, pad32(n) * 2 + 512) bytes, n capped at 4096
//    for the minimum, plus pad32(n * maskTypeSize) when the mask's last axis differs from the source's (> 1) and
//    the mask is not reused.
#pragma once
#include <algorithm>
#include <cstdint>

#include "trex_emu/softmax_tiling_host.h"
#include "trex_emu/logsoftmax_tiling.h"

namespace AscendC {
template <class Shape>
inline uint32_t GetSoftMaxFlashV2MinTmpSize(const Shape& srcShape, const uint32_t dataTypeSize1, const uint32_t,
                                            const bool, const bool, const bool = false) {
  return GetSoftMaxMinTmpSize(srcShape, dataTypeSize1, false);
}
template <class Shape>
inline uint32_t GetSoftMaxFlashV2MaxTmpSize(const Shape& srcShape, const uint32_t dataTypeSize1, const uint32_t,
                                            const bool, const bool, const bool = false) {
  return GetSoftMaxMaxTmpSize(srcShape, dataTypeSize1, false);
}
template <class Shape>
inline void SoftMaxFlashV2TilingFunc(const Shape& srcShape, const uint32_t dataTypeSize1, const uint32_t,
                                     const uint32_t localWorkSpaceSize, optiling::SoftMaxTiling& softmaxFlashTiling,
                                     const bool = false, const bool = false, const bool = false) {
  SoftMaxTilingFunc(srcShape, dataTypeSize1, localWorkSpaceSize, softmaxFlashTiling);
}
template <class Shape>
inline void GetSoftMaxFlashV3MaxMinTmpSize(const Shape& srcShape, const uint32_t dataTypeSize1,
                                           const uint32_t dataTypeSize2, uint32_t& maxValue, uint32_t& minValue,
                                           const bool, const bool = false) {
  if (dataTypeSize1 != 2 || dataTypeSize2 != 4) return;
  uint32_t m = 0, k = 0;
  trex_softmax::RowsCols(srcShape, m, k);
  minValue = ((32 / dataTypeSize2) * 5 + 2 * k + 64) * 4;
  maxValue = m * minValue;
}
template <class Shape>
inline void SoftMaxFlashV3TilingFunc(const Shape& srcShape, const uint32_t dataTypeSize1, const uint32_t dataTypeSize2,
                                     const uint32_t localWorkSpaceSize, optiling::SoftMaxTiling& t, const bool,
                                     const bool = false) {
  if (dataTypeSize1 != 2 || dataTypeSize2 != 4) return;
  uint32_t m = 0, k = 0;
  trex_softmax::RowsCols(srcShape, m, k);
  const uint32_t per = 32 / dataTypeSize2;
  uint32_t baseM = localWorkSpaceSize / 4 / (per * 5 + 2 * k + 64);
  baseM = std::min(baseM, m);
  if (baseM < m && baseM > 8) baseM = baseM / 8 * 8;
  t.srcM = m; t.srcK = k; t.srcSize = m * k;
  t.outMaxM = m; t.outMaxK = per; t.outMaxSize = m * per;
  t.splitM = baseM; t.splitK = k; t.splitSize = baseM * k;
  t.reduceM = baseM; t.reduceK = per; t.reduceSize = baseM * per;
  if (baseM != 0) {
    const uint32_t tail = m % baseM;
    t.rangeM = m / baseM; t.tailM = tail; t.tailSplitSize = tail * k; t.tailReduceSize = tail * per;
  }
}
template <class Shape>
inline uint32_t GetSoftMaxGradMinTmpSize(const Shape& srcShape, const uint32_t dataTypeSize, const bool isFront,
                                         const bool) {
  uint32_t m = 0, k = 0;
  trex_softmax::RowsCols(srcShape, m, k);
  const uint32_t per = dataTypeSize ? 32 / dataTypeSize : 8;
  const uint32_t need = dataTypeSize == 2 ? per * 2 + k * 3 + 64 : (isFront ? per + k + 64 : per * 2 + k + 64);
  return need * 4;
}
template <class Shape>
inline uint32_t GetSoftMaxGradMaxTmpSize(const Shape& srcShape, const uint32_t dataTypeSize, const bool isFront,
                                         const bool isReuseSource) {
  uint32_t m = 0, k = 0;
  trex_softmax::RowsCols(srcShape, m, k);
  return GetSoftMaxGradMinTmpSize(srcShape, dataTypeSize, isFront, isReuseSource) * std::max<uint32_t>(m, 1);
}
template <class Shape>
inline void SoftMaxGradTilingFunc(const Shape& srcShape, const uint32_t dataTypeSize, const uint32_t localWorkSpaceSize,
                                  optiling::SoftMaxTiling& softmaxGradTiling, const bool = false) {
  SoftMaxTilingFunc(srcShape, dataTypeSize, localWorkSpaceSize, softmaxGradTiling);
}
template <class Shape>
inline uint32_t GetLogSoftMaxMinTmpSize(const Shape& srcShape, const uint32_t dataTypeSize, const bool) {
  return GetSoftMaxMinTmpSize(srcShape, dataTypeSize, false);
}
template <class Shape>
inline uint32_t GetLogSoftMaxMaxTmpSize(const Shape& srcShape, const uint32_t dataTypeSize, const bool) {
  return GetSoftMaxMaxTmpSize(srcShape, dataTypeSize, false);
}
template <class Shape>
inline void LogSoftMaxTilingFunc(const Shape& srcShape, const uint32_t dataTypeSize, const uint32_t localWorkSpaceSize,
                                 optiling::LogSoftMaxTiling& t) {
  optiling::SoftMaxTiling s;
  SoftMaxTilingFunc(srcShape, dataTypeSize, localWorkSpaceSize, s);
  t.srcM = s.srcM; t.srcK = s.srcK; t.srcSize = s.srcSize; t.outMaxM = s.outMaxM; t.outMaxK = s.outMaxK;
  t.outMaxSize = s.outMaxSize; t.splitM = s.splitM; t.splitK = s.splitK; t.splitSize = s.splitSize;
  t.reduceM = s.reduceM; t.reduceK = s.reduceK; t.reduceSize = s.reduceSize; t.rangeM = s.rangeM; t.tailM = s.tailM;
  t.tailSplitSize = s.tailSplitSize; t.tailReduceSize = s.tailReduceSize;
}

namespace trex_select {
template <class Shape>
inline uint32_t Size(const Shape& s) {
  uint64_t n = 1;
  for (size_t i = 0; i < s.GetDimNum(); ++i) n *= static_cast<uint64_t>(s.GetDim(i));
  return static_cast<uint32_t>(n);
}
template <class Shape>
inline uint32_t Buffer(const Shape& src0, const Shape& src1, const Shape& mask, uint32_t maskTypeSize, bool reuseMask,
                       bool isMin) {
  auto pad = [](uint32_t a, uint32_t b) { return (a + b - 1) / b * b; };
  const bool s0_scalar = src0.GetDimNum() == 0 || Size(src0) == 1;
  const uint32_t n = s0_scalar ? Size(src1) : Size(src0);
  const Shape& src = s0_scalar ? src1 : src0;
  const int64_t mask_last = mask.GetDimNum() ? mask.GetDim(mask.GetDimNum() - 1) : 0;
  const int64_t src_last = src.GetDimNum() ? src.GetDim(src.GetDimNum() - 1) : 0;
  const uint32_t cal = (isMin && n > 4096) ? 4096 : n;
  uint32_t need = std::max<uint32_t>(1024, pad(cal, 32) * 2 + 512);
  if (mask_last != src_last && !reuseMask && mask_last > 1) need += pad(n * maskTypeSize, 32);
  return need;
}
}  // namespace trex_select
template <class Shape>
inline void GetSelectMaxMinTmpSize(const Shape& src0Shape, const Shape& src1Shape, const uint32_t,
                                   const Shape& maskShape, const uint32_t maskTypeSize, const bool isReuseMask,
                                   uint32_t& maxValue, uint32_t& minValue) {
  maxValue = trex_select::Buffer(src0Shape, src1Shape, maskShape, maskTypeSize, isReuseMask, false);
  minValue = trex_select::Buffer(src0Shape, src1Shape, maskShape, maskTypeSize, isReuseMask, true);
}
template <class Shape>
inline void GetSelectWithBytesMaskMaxMinTmpSize(const Shape& src0Shape, const Shape& src1Shape, const uint32_t t,
                                                const Shape& maskShape, const uint32_t maskTypeSize,
                                                const bool isReuseMask, uint32_t& maxValue, uint32_t& minValue) {
  GetSelectMaxMinTmpSize(src0Shape, src1Shape, t, maskShape, maskTypeSize, isReuseMask, maxValue, minValue);
}
}  // namespace AscendC
