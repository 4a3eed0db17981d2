// trex AscendC emulator: DataCopy with SliceInfo (asc-devkit 基础API/数据搬运/切片数据搬运, "DataCopy(dst, src,
// dstSliceInfo[], srcSliceInfo[], dimValue)"), GM -> VECIN and VECOUT -> GM.
//
// As asc-devkit's impl/basic_api/kernel_operator_data_copy_intf_impl.h does it: every dimension i > 0 adds
// ceil-count (end - start + 1 + stride) / (1 + stride) slices at (1 + stride) * prod(shape[< i]) elements apart
// (DataCopyGetOffsetList); the start is sum start[i] * prod(shape[< i]) (DataCopyGetPhyStartIndex). Each slice is
// one strided copy: blockCount = (end0 - start0 + 1 + stride0) / (burstLen0 * 32 / sizeof(T) + stride0) bursts of
// burstLen0 32-byte blocks, the GM-side gap stride0 elements. When the GM-side gap is a whole number of 32-byte
// blocks it is a DataCopy with DataCopyParams; otherwise (dav_c220's DataCopySliceGm2UBImpl/UB2GMImpl) a
// DataCopyPad with the GM gap in bytes. The UB-side gap is the UB slice's stride0 in 32-byte blocks.
// Checks (the page's): dimValue in [1, 8], burstLen 1 beyond the first dimension, shapeValue given (a zero
// shapeValue means "take the tensor's ShapeInfo", which the emulator's tensors do not carry).
#pragma once

#include <cstdint>

#include "trex_emu/copy.h"
#include "trex_emu/runtime.h"
#include "trex_emu/tensor.h"

namespace AscendC {

// impl/basic_api/utils/kernel_utils_constants.h: the most dimensions a SliceInfo array describes.
const int32_t K_MAX_DIM = 8;

struct SliceInfo {
  SliceInfo() = default;
  SliceInfo(const uint32_t startIndexIn, const uint32_t endIndexIn, const uint32_t strideIn, const uint32_t burstLenIn,
            const uint32_t shapeValueIn = 0)
      : startIndex(startIndexIn), endIndex(endIndexIn), stride(strideIn), burstLen(burstLenIn), shapeValue(shapeValueIn) {}
  uint32_t startIndex = 0;
  uint32_t endIndex = 32 - 1;
  uint32_t stride = 0;    // elements between two slices
  uint32_t burstLen = 32;  // first dimension only: 32-byte blocks per slice
  uint32_t shapeValue = 0;  // the dimension's length in elements
};

}  // namespace AscendC

namespace trex_emu {

constexpr uint32_t kMaxSliceDims = 8;  // K_MAX_SHAPE_DIM

// Element offsets of every slice, relative to the start index (DataCopyGetOffsetList).
inline std::vector<uint64_t> SliceOffsets(const char* api, const char* side, const AscendC::SliceInfo* info,
                                          uint32_t dims) {
  std::vector<uint64_t> offsets{0};
  uint64_t slice_size = 1;
  for (uint32_t i = 1; i < dims; ++i) {
    const AscendC::SliceInfo& s = info[i];
    if (s.burstLen != 1)
      Fail(api, ": ", side, "SliceInfo[", i, "].burstLen = ", s.burstLen, "; beyond the first dimension it must be 1");
    if (s.endIndex < s.startIndex)
      Fail(api, ": ", side, "SliceInfo[", i, "] has endIndex ", s.endIndex, " < startIndex ", s.startIndex);
    slice_size *= info[i - 1].shapeValue;
    const uint64_t count = (uint64_t{s.endIndex} - s.startIndex + 1 + s.stride) / (1 + uint64_t{s.stride});
    const size_t previous = offsets.size();
    for (uint64_t it = 1; it < count; ++it)
      for (size_t k = 0; k < previous; ++k) offsets.push_back(offsets[k] + it * (1 + uint64_t{s.stride}) * slice_size);
  }
  return offsets;
}

inline uint64_t SliceStart(const AscendC::SliceInfo* info, uint32_t dims) {
  uint64_t start = info[0].startIndex, slice_size = 1;
  for (uint32_t i = 1; i < dims; ++i) {
    slice_size *= info[i - 1].shapeValue;
    start += slice_size * info[i].startIndex;
  }
  return start;
}

template <class T>
inline void CheckSliceArgs(const char* api, const AscendC::SliceInfo* dst, const AscendC::SliceInfo* src, uint32_t dims) {
  static_assert(std::is_same<T, int8_t>::value || std::is_same<T, uint8_t>::value || std::is_same<T, int16_t>::value ||
                    std::is_same<T, uint16_t>::value || std::is_same<T, int32_t>::value ||
                    std::is_same<T, uint32_t>::value || std::is_same<T, half>::value ||
                    std::is_same<T, bfloat16_t>::value || std::is_same<T, float>::value,
                "DataCopy with SliceInfo supports int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, half, "
                "bfloat16_t and float");
  if (dims < 1 || dims > kMaxSliceDims) Fail(api, ": dimValue = ", dims, " must be in [1, ", kMaxSliceDims, "]");
  if (src[0].shapeValue == 0)
    Fail(api, ": srcSliceInfo[0].shapeValue is 0, which takes the shapes from the tensors' ShapeInfo; the emulator's "
              "tensors carry none: give every SliceInfo its shapeValue");
  for (uint32_t i = 0; i < dims; ++i)
    if (dst[i].shapeValue == 0 || src[i].shapeValue == 0)
      Fail(api, ": SliceInfo[", i, "].shapeValue is 0 in ", dst[i].shapeValue == 0 ? "dst" : "src",
           "; give every dimension its length");
  if (src[0].burstLen == 0) Fail(api, ": srcSliceInfo[0].burstLen is 0; it counts 32-byte blocks per slice");
  if (src[0].endIndex < src[0].startIndex)
    Fail(api, ": srcSliceInfo[0] has endIndex ", src[0].endIndex, " < startIndex ", src[0].startIndex);
}

// The bursts per slice (from the source's first dimension, as the impl).
template <class T>
inline uint16_t SliceBursts(const AscendC::SliceInfo& s0) {
  const uint64_t one = uint64_t{s0.burstLen} * (32u / sizeof(T)) + s0.stride;
  return static_cast<uint16_t>((uint64_t{s0.endIndex} - s0.startIndex + 1 + s0.stride) / one);
}

// What both directions of the slice copy derive from their SliceInfo arrays: the pieces' element offsets,
// the slices' start elements, and the bursts of dimension 0 (the arguments checked first).
struct SlicePlan {
  std::vector<uint64_t> src_off, dst_off;
  uint64_t src_start, dst_start;
  uint16_t bursts, burst_blocks;
};

template <class T>
inline SlicePlan PlanSlices(const char* api, const AscendC::SliceInfo dstSliceInfo[],
                            const AscendC::SliceInfo srcSliceInfo[], uint32_t dimValue) {
  CheckSliceArgs<T>(api, dstSliceInfo, srcSliceInfo, dimValue);
  SlicePlan plan{SliceOffsets(api, "src", srcSliceInfo, dimValue), SliceOffsets(api, "dst", dstSliceInfo, dimValue),
                 SliceStart(srcSliceInfo, dimValue), SliceStart(dstSliceInfo, dimValue),
                 SliceBursts<T>(srcSliceInfo[0]), static_cast<uint16_t>(srcSliceInfo[0].burstLen)};
  if (plan.dst_off.size() < plan.src_off.size())
    Fail(api, ": the src slices give ", plan.src_off.size(), " pieces but the dst slices only ", plan.dst_off.size());
  return plan;
}

}  // namespace trex_emu

namespace AscendC {

template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const SliceInfo dstSliceInfo[],
                     const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1) {
  using namespace trex_emu;
  const char* api = "DataCopy(GM->UB, SliceInfo)";
  const SlicePlan plan = PlanSlices<T>(api, dstSliceInfo, srcSliceInfo, dimValue);
  const std::vector<uint64_t>&src_off = plan.src_off, &dst_off = plan.dst_off;
  const uint64_t src_start = plan.src_start, dst_start = plan.dst_start;
  const uint16_t bursts = plan.bursts, burst_blocks = plan.burst_blocks;
  const uint64_t src_gap_bytes = uint64_t{srcSliceInfo[0].stride} * sizeof(T);
  const uint16_t dst_gap_blocks = static_cast<uint16_t>(uint64_t{dstSliceInfo[0].stride} * sizeof(T) / 32u);
  for (size_t i = 0; i < src_off.size(); ++i) {
    const LocalTensor<T> d(dst.addr_ + dst_start + dst_off[i], 0, dst.buf_);
    const GlobalTensor<T> s = src[src_start + src_off[i]];
    if (src_gap_bytes % 32u == 0)
      DataCopy(d, s, DataCopyParams(bursts, burst_blocks, static_cast<uint16_t>(src_gap_bytes / 32u), dst_gap_blocks));
    else
      DataCopyPad(d, s, DataCopyExtParams(bursts, uint32_t{burst_blocks} * 32u, static_cast<uint32_t>(src_gap_bytes),
                                          dst_gap_blocks, 0),
                  DataCopyPadExtParams<T>(false, 0, 0, T(0)));
  }
}

template <class T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const SliceInfo dstSliceInfo[],
                     const SliceInfo srcSliceInfo[], const uint32_t dimValue = 1) {
  using namespace trex_emu;
  const char* api = "DataCopy(UB->GM, SliceInfo)";
  const SlicePlan plan = PlanSlices<T>(api, dstSliceInfo, srcSliceInfo, dimValue);
  const std::vector<uint64_t>&src_off = plan.src_off, &dst_off = plan.dst_off;
  const uint64_t src_start = plan.src_start, dst_start = plan.dst_start;
  const uint16_t bursts = plan.bursts, burst_blocks = plan.burst_blocks;
  const uint16_t src_gap_blocks = static_cast<uint16_t>(uint64_t{srcSliceInfo[0].stride} * sizeof(T) / 32u);
  const uint64_t dst_gap_bytes = uint64_t{dstSliceInfo[0].stride} * sizeof(T);
  for (size_t i = 0; i < src_off.size(); ++i) {
    const GlobalTensor<T> d = dst[dst_start + dst_off[i]];
    const LocalTensor<T> s(src.addr_ + src_start + src_off[i], 0, src.buf_);
    if (dst_gap_bytes % 32u == 0)
      DataCopy(d, s, DataCopyParams(bursts, burst_blocks, src_gap_blocks, static_cast<uint16_t>(dst_gap_bytes / 32u)));
    else
      DataCopyPad(d, s, DataCopyExtParams(bursts, uint32_t{burst_blocks} * 32u, src_gap_blocks,
                                          static_cast<uint32_t>(dst_gap_bytes), 0));
  }
}

}  // namespace AscendC
