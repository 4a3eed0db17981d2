// tiling_topk.h: the TopK advanced API's tiling struct and shape/mode types, shared by the host (tiling_api.h:
// TopKTilingFunc fills it, SaveToBuffer) and the kernel (kernel_tiling.h / kernel_operator.h: TopK reads it), so
// the bytes the host saves are the layout the kernel reads.
//   TopkTiling: asc-devkit include/adv_api/sort/topk_tilingdata.h — 24 int32/uint32 fields, then 8 uint16 (112 B).
//     optiling::TopkTiling (TILING_DATA_FIELD_DEF_STRUCT in an op's tiling data) and AscendC::tiling::TopkTiling
//     (the second TopKTilingFunc overload) are this one type.
//   TopKMode / TopKAlgo / TopKOrder / TopKConfig (topk_utils_constants.h), TopKInfo (topk_utils.h).
//   trex_emu::TopkTilingA2: the values TopKTilingFunc computes on Atlas A2/A3 (impl/adv_api/tiling/sort/
//     topk_tiling_impl.cpp, SetTopkNormalVal / SetTopkNSmallVal / GetVreduceMask); the kernel compares the tiling it
//     is given against them, since the dav_c220 implementation addresses its tmp buffer through these fields.
#pragma once
#include <cstdint>

#include "register/tilingdata_base.h"

#ifndef TREX_EMU_TOPK_TYPES
#define TREX_EMU_TOPK_TYPES
namespace AscendC {
enum class TopKMode { TOPK_NORMAL, TOPK_NSMALL };
enum class TopKAlgo { RADIX_SELECT, MERGE_SORT };
enum class TopKOrder { UNSET, LARGEST, SMALLEST };
struct TopKConfig {
  TopKAlgo algo = TopKAlgo::MERGE_SORT;
  TopKOrder order = TopKOrder::UNSET;
  bool sorted = true;
};
struct TopKInfo {
  int32_t outter = 1;
  int32_t inner;  // n rounded up to a multiple of 32
  int32_t n;      // the row's actual length
};
}  // namespace AscendC
#endif

BEGIN_TILING_DATA_DEF(TopkTiling)
  TILING_DATA_FIELD_DEF(int32_t, tmpLocalSize);
  TILING_DATA_FIELD_DEF(int32_t, allDataSize);
  TILING_DATA_FIELD_DEF(int32_t, innerDataSize);
  TILING_DATA_FIELD_DEF(uint32_t, sortRepeat);
  TILING_DATA_FIELD_DEF(int32_t, mrgSortRepeat);
  TILING_DATA_FIELD_DEF(int32_t, kAlignFourBytes);
  TILING_DATA_FIELD_DEF(int32_t, kAlignTwoBytes);
  TILING_DATA_FIELD_DEF(int32_t, maskOffset);
  TILING_DATA_FIELD_DEF(int32_t, maskVreducev2FourBytes);
  TILING_DATA_FIELD_DEF(int32_t, maskVreducev2TwoBytes);
  TILING_DATA_FIELD_DEF(int32_t, mrgSortSrc1offset);
  TILING_DATA_FIELD_DEF(int32_t, mrgSortSrc2offset);
  TILING_DATA_FIELD_DEF(int32_t, mrgSortSrc3offset);
  TILING_DATA_FIELD_DEF(int32_t, mrgSortTwoQueueSrc1Offset);
  TILING_DATA_FIELD_DEF(int32_t, mrgFourQueueTailPara1);
  TILING_DATA_FIELD_DEF(int32_t, mrgFourQueueTailPara2);
  TILING_DATA_FIELD_DEF(int32_t, srcIndexOffset);
  TILING_DATA_FIELD_DEF(uint32_t, copyUbToUbBlockCount);
  TILING_DATA_FIELD_DEF(int32_t, topkMrgSrc1MaskSizeOffset);
  TILING_DATA_FIELD_DEF(int32_t, topkNSmallSrcIndexOffset);
  TILING_DATA_FIELD_DEF(uint32_t, vreduceValMask0);
  TILING_DATA_FIELD_DEF(uint32_t, vreduceValMask1);
  TILING_DATA_FIELD_DEF(uint32_t, vreduceIdxMask0);
  TILING_DATA_FIELD_DEF(uint32_t, vreduceIdxMask1);
  TILING_DATA_FIELD_DEF(uint16_t, vreducehalfValMask0);
  TILING_DATA_FIELD_DEF(uint16_t, vreducehalfValMask1);
  TILING_DATA_FIELD_DEF(uint16_t, vreducehalfValMask2);
  TILING_DATA_FIELD_DEF(uint16_t, vreducehalfValMask3);
  TILING_DATA_FIELD_DEF(uint16_t, vreducehalfValMask4);
  TILING_DATA_FIELD_DEF(uint16_t, vreducehalfValMask5);
  TILING_DATA_FIELD_DEF(uint16_t, vreducehalfValMask6);
  TILING_DATA_FIELD_DEF(uint16_t, vreducehalfValMask7);
END_TILING_DATA_DEF;

namespace optiling {
using ::TopkTiling;
}  // namespace optiling
namespace AscendC {
namespace tiling {
using ::TopkTiling;
}  // namespace tiling
}  // namespace AscendC

namespace trex_emu {
// GatherMask patterns of the Small mode: k pairs "01" (values, float), "10" (indices), k nibbles "0001" (half values).
inline uint32_t TopkPattern2(int32_t k, uint32_t unit) {
  uint32_t m = 0;
  for (int32_t i = 0; i < k; ++i) m |= unit << (2 * i);
  return m;
}
inline uint16_t TopkPattern4(int32_t k) {
  uint16_t m = 0;
  for (int32_t i = 0; i < k; ++i) m = static_cast<uint16_t>(m | (1u << (4 * i)));
  return m;
}

// TopKTilingFunc on Atlas A2/A3 (DAV_2201), as topk_tiling_impl.cpp computes it. Sizes and offsets are elements
// of the value type (typeSize 2: half, 4: float).
inline TopkTiling TopkTilingA2(int32_t inner, int32_t outter, int32_t k, uint32_t typeSize, bool isInitIndex,
                               AscendC::TopKMode mode, bool isLargest) {
  TopkTiling t{};
  if (typeSize == 0) return t;
  t.allDataSize = inner * outter;
  const int32_t ka4 = (k + 7) / 8 * 8, ka2 = (k + 15) / 16 * 16;
  t.kAlignFourBytes = ka4;
  if (mode == AscendC::TopKMode::TOPK_NORMAL) {
    t.tmpLocalSize = 4 * inner;
    t.innerDataSize = 2 * inner;
    t.copyUbToUbBlockCount = static_cast<uint32_t>(inner * 2 * 4 / 32);
    t.sortRepeat = static_cast<uint32_t>(inner / 32);
    t.mrgSortRepeat = inner / 4;
    t.kAlignTwoBytes = ka2;
    t.maskOffset = outter * ka4;
    t.maskVreducev2FourBytes = 2 * k;
    t.maskVreducev2TwoBytes = 4 * k;
    t.mrgSortSrc1offset = 2;
    t.mrgSortSrc2offset = 4;
    t.mrgSortSrc3offset = 6;
    t.mrgSortTwoQueueSrc1Offset = 2;
    t.mrgFourQueueTailPara1 = inner * 2;
    t.mrgFourQueueTailPara2 = static_cast<int32_t>(4 / typeSize);
    if (typeSize == 2) {
      t.tmpLocalSize = 8 * inner;
      t.maskOffset = outter * ka2;
      t.innerDataSize = 4 * inner;
      t.mrgSortSrc1offset = 4;
      t.mrgSortSrc2offset = 8;
      t.mrgSortSrc3offset = 12;
      t.mrgSortTwoQueueSrc1Offset = 4;
    }
    if (!isInitIndex) {
      t.tmpLocalSize = typeSize == 2 ? 8 * inner + 2 * inner : 4 * inner + inner;
      t.srcIndexOffset = typeSize == 2 ? 8 * inner : 4 * inner;
    }
    return t;
  }
  const int32_t innerDataSize = inner * outter * static_cast<int32_t>(8 / typeSize);
  t.innerDataSize = innerDataSize;
  t.maskOffset = outter * k;
  const int32_t mrgSrc1MaskSizeOffset = innerDataSize + (isLargest ? 0 : inner * outter);
  t.topkMrgSrc1MaskSizeOffset = mrgSrc1MaskSizeOffset;
  t.tmpLocalSize = mrgSrc1MaskSizeOffset + static_cast<int32_t>(64 / typeSize);
  if (!isInitIndex) {
    const int32_t idx = mrgSrc1MaskSizeOffset + static_cast<int32_t>(64 / typeSize);
    t.tmpLocalSize = idx + inner * outter * static_cast<int32_t>(4 / typeSize);
    t.topkNSmallSrcIndexOffset = idx;
  }
  // GetVreduceMask
  if (k < 17) t.vreduceIdxMask0 = TopkPattern2(k, 2u);
  if (k >= 17 && k <= 32) {
    t.vreduceIdxMask0 = 2863311530u;  // 0b1010...10
    t.vreduceIdxMask1 = TopkPattern2(k - 16, 2u);
  }
  if (typeSize == 4) {
    if (k < 17) t.vreduceValMask0 = TopkPattern2(k, 1u);
    if (k >= 17 && k <= 32) {
      t.vreduceValMask0 = TopkPattern2(16, 1u);
      t.vreduceValMask1 = TopkPattern2(k - 16, 1u);
    }
  } else {
    uint16_t* hm[8] = {&t.vreducehalfValMask0, &t.vreducehalfValMask1, &t.vreducehalfValMask2,
                       &t.vreducehalfValMask3, &t.vreducehalfValMask4, &t.vreducehalfValMask5,
                       &t.vreducehalfValMask6, &t.vreducehalfValMask7};
    for (int32_t w = 0; w < 8; ++w) {
      const int32_t left = k - 4 * w;
      *hm[w] = left <= 0 ? uint16_t{0} : TopkPattern4(left >= 4 ? 4 : left);
    }
  }
  return t;
}
}  // namespace trex_emu
