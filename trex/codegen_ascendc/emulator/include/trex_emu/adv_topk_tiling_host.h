// adv_topk_tiling_host.h: the TopK advanced API's host tiling helpers (asc-devkit include/adv_api/sort/topk_tiling.h,
// impl/adv_api/tiling/sort/topk_tiling_impl.cpp) for the emulated chip, Atlas A2/A3 (DAV_2201):
//   GetTopKMaxMinTmpSize(platform, inner, outter, isReuseSource, isInitIndex, mode, isLargest, typeSize, max, min):
//     bytes of tmpLocal, max == min — Normal: 16 * inner (+ 4 * inner without isInitIndex); Small: 8 * inner * outter
//     + 64 (+ 4 * inner * outter when !isLargest) (+ 4 * inner * outter without isInitIndex).
//   TopKTilingFunc(platform, inner, outter, k, typeSize, isInitIndex, mode, isLargest, tiling): trex_emu::TopkTilingA2
//     (tiling_topk.h); the optiling:: and AscendC::tiling:: overloads are one here (one struct).
//   GetTopKMaxMinTmpSize(inner, outter, k, ..., dataType, config, max, min), the radix-select sizes: 950 only; on
//     A2/A3 it logs "Unsupported NpuArch of Topk radix select API." and returns false, outputs untouched.
// Their argument checks (CheckTopKHostCommon) are CANN's ASCENDC_HOST_ASSERTs: a message on stderr, then the
// function carries on and returns true, as the library does.
#pragma once
#include <cstdint>
#include <cstdio>

#include "trex_emu/tiling_topk.h"
#if __has_include("trex_host/ge_types.h")
#include "tiling/platform/platform_ascendc.h"
#define TREX_EMU_TOPK_HOST_PLATFORM 1
#endif

namespace trex_emu {
template <class Platform>
inline void TopkHostCheck(const char* fn, const Platform& platform, int32_t inner, int32_t outter, AscendC::TopKMode mode,
                          uint32_t typeSize) {
  auto err = [fn](const char* msg) { std::fprintf(stderr, "[ERROR] [TopK][%s] %s\n", fn, msg); };
  if (inner <= 0) return err("The length of the inner axis must be greater than 0!");
  if (inner % 32 != 0) return err("The length of the inner axis must be a multiple of 32!");
  if (mode == AscendC::TopKMode::TOPK_NSMALL && inner != 32)
    return err("In Small mode, the length of the inner axis must be 32!");
  if (outter <= 0) return err("The length of the outter axis must be greater than 0!");
#ifdef TREX_EMU_TOPK_HOST_PLATFORM  // (a kernel-side compile of a host header has no platform query)
  uint64_t ub = 0;
  platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
  const uint64_t bytes = uint64_t(uint32_t(inner * outter)) * typeSize;
  if (bytes > ub) {
    std::fprintf(stderr, "[ERROR] [TopK][%s] The size of srcShape is %luB, should be less than UB size.\n", fn,
                 static_cast<unsigned long>(bytes));
    return;
  }
#else
  (void)platform;
#endif
  if (typeSize != 2 && typeSize != 4) {
    std::fprintf(stderr, "[ERROR] [TopK][%s] Type size %u is unsupported!\n", fn, typeSize);
    return;
  }
}
}  // namespace trex_emu

namespace AscendC {
template <class Platform>
inline bool GetTopKMaxMinTmpSize(const Platform& ascendcPlatform, const int32_t inner, const int32_t outter,
                                 const bool /*isReuseSource*/, const bool isInitIndex, enum TopKMode mode,
                                 const bool isLargest, const uint32_t dataTypeSize, uint32_t& maxValue,
                                 uint32_t& minValue) {
  trex_emu::TopkHostCheck("GetTopKMaxMinTmpSize", ascendcPlatform, inner, outter, mode, dataTypeSize);
  const uint32_t in = static_cast<uint32_t>(inner), io = static_cast<uint32_t>(inner * outter);
  if (mode == TopKMode::TOPK_NORMAL) {
    minValue = maxValue = isInitIndex ? 16 * in : (16 + 4) * in;
  } else {
    minValue = maxValue = io * 8 + 64 + (isLargest ? 0 : io * 4) + (isInitIndex ? 0 : io * 4);
  }
  return true;
}

template <class DataType>
inline bool GetTopKMaxMinTmpSize(const int32_t, const int32_t, const int32_t, const bool, const bool, enum TopKMode,
                                 const bool, DataType, const TopKConfig&, uint32_t&, uint32_t&) {
  std::fprintf(stderr, "[ERROR] [TopK][GetTopKMaxMinTmpSize] Unsupported NpuArch of Topk radix select API. (Atlas "
                       "A2/A3: returns false, the outputs are not written)\n");
  return false;
}

template <class Platform>
inline bool TopKTilingFunc(const Platform& ascendcPlatform, const int32_t inner, const int32_t outter, const int32_t k,
                           const uint32_t dataTypeSize, const bool isInitIndex, enum TopKMode mode,
                           const bool isLargest, TopkTiling& topKTiling) {
  trex_emu::TopkHostCheck("TopKTilingFunc", ascendcPlatform, inner, outter, mode, dataTypeSize);
  if (!(k >= 1 && k <= inner))
    std::fprintf(stderr, "[ERROR] [TopK][TopKTilingFunc] The range of value k is [1, %d]!\n", inner);
  if (dataTypeSize == 0) return false;
  // Like the library's set_ calls, only the fields this arch computes are written; the others keep their values.
  const TopkTiling v = trex_emu::TopkTilingA2(inner, outter, k, dataTypeSize, isInitIndex, mode, isLargest);
  topKTiling.allDataSize = v.allDataSize;
  topKTiling.kAlignFourBytes = v.kAlignFourBytes;
  topKTiling.tmpLocalSize = v.tmpLocalSize;
  topKTiling.innerDataSize = v.innerDataSize;
  topKTiling.maskOffset = v.maskOffset;
  if (mode == TopKMode::TOPK_NORMAL) {
    topKTiling.copyUbToUbBlockCount = v.copyUbToUbBlockCount;
    topKTiling.sortRepeat = v.sortRepeat;
    topKTiling.mrgSortRepeat = v.mrgSortRepeat;
    topKTiling.kAlignTwoBytes = v.kAlignTwoBytes;
    topKTiling.maskVreducev2FourBytes = v.maskVreducev2FourBytes;
    topKTiling.maskVreducev2TwoBytes = v.maskVreducev2TwoBytes;
    topKTiling.mrgSortSrc1offset = v.mrgSortSrc1offset;
    topKTiling.mrgSortSrc2offset = v.mrgSortSrc2offset;
    topKTiling.mrgSortSrc3offset = v.mrgSortSrc3offset;
    topKTiling.mrgSortTwoQueueSrc1Offset = v.mrgSortTwoQueueSrc1Offset;
    topKTiling.mrgFourQueueTailPara1 = v.mrgFourQueueTailPara1;
    topKTiling.mrgFourQueueTailPara2 = v.mrgFourQueueTailPara2;
    if (!isInitIndex) topKTiling.srcIndexOffset = v.srcIndexOffset;
  } else {
    topKTiling.topkMrgSrc1MaskSizeOffset = v.topkMrgSrc1MaskSizeOffset;
    if (!isInitIndex) topKTiling.topkNSmallSrcIndexOffset = v.topkNSmallSrcIndexOffset;
    if (k < 17) topKTiling.vreduceIdxMask0 = v.vreduceIdxMask0;
    if (k >= 17 && k <= 32) {
      topKTiling.vreduceIdxMask0 = v.vreduceIdxMask0;
      topKTiling.vreduceIdxMask1 = v.vreduceIdxMask1;
    }
    if (dataTypeSize == 4) {
      if (k < 17) topKTiling.vreduceValMask0 = v.vreduceValMask0;
      if (k >= 17 && k <= 32) {
        topKTiling.vreduceValMask0 = v.vreduceValMask0;
        topKTiling.vreduceValMask1 = v.vreduceValMask1;
      }
    } else {
      topKTiling.vreducehalfValMask0 = v.vreducehalfValMask0;
      topKTiling.vreducehalfValMask1 = v.vreducehalfValMask1;
      topKTiling.vreducehalfValMask2 = v.vreducehalfValMask2;
      topKTiling.vreducehalfValMask3 = v.vreducehalfValMask3;
      topKTiling.vreducehalfValMask4 = v.vreducehalfValMask4;
      topKTiling.vreducehalfValMask5 = v.vreducehalfValMask5;
      topKTiling.vreducehalfValMask6 = v.vreducehalfValMask6;
      topKTiling.vreducehalfValMask7 = v.vreducehalfValMask7;
    }
  }
  return true;
}
}  // namespace AscendC
