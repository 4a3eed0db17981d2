// trex AscendC emulator: Gather, GatherMask, and the mask/repeat form of ReduceMax/ReduceMin.
// Semantics from asc-devkit's pages (docs/api/context/GatherMask.md, Gather; docs/zh/api/SIMD-API/
// 基础API/Memory矢量计算/归约计算/ReduceMin.md) for Atlas A2/A3.
#pragma once
#include <limits>
#include <algorithm>
#include <cstring>
#include <vector>

#include "trex_emu/vec.h"

namespace AscendC {

struct GatherMaskParams {
  uint8_t src0BlockStride = 1;
  uint16_t repeatTimes = 0;
  uint16_t src0RepeatStride = 0;
  uint8_t src1RepeatStride = 0;
};

enum class GatherMaskMode : uint8_t { VERSION_V1 = 0, VERSION_V2 = 1 };
constexpr GatherMaskMode defaultGatherMaskMode = GatherMaskMode::VERSION_V1;
constexpr GatherMaskMode defaultGahterMaskMode = defaultGatherMaskMode;  // the docs' older spelling

}  // namespace AscendC

namespace trex_emu {

template <class T>
constexpr bool kGatherTypes = kOneOf<T, half, bfloat16_t, uint16_t, int16_t, float, uint32_t, int32_t>;

// GatherMask: the selected elements of each repeat are written to dst one after another (across
// repeats too); rsvdCnt = how many. `bit(r, i)` says whether element i of repeat r is selected.
// Normal mode (reduceMode=false): a repeat is 256 B of src0, mask ignored. Counter mode, the A2/A3
// form ("配置方式一"): each repeat processes `mask` elements. src0 element i of repeat r is at
// r*src0RepeatStride + (i/epb)*src0BlockStride blocks + i%epb.
template <class T, class Bit>
inline void GatherMaskImpl(const LocalTensor<T>& dst, const LocalTensor<T>& src0, bool reduceMode, uint32_t mask,
                           const AscendC::GatherMaskParams& p, uint64_t& rsvdCnt, Bit bit) {
  static_assert(kGatherTypes<T>, "GatherMask: element type not supported on Atlas A2/A3 "
                                 "(half, bfloat16_t, uint16_t, int16_t, float, uint32_t, int32_t)");
  const char* api = "GatherMask";
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src0", src0.addr_);
  const int per = reduceMode ? static_cast<int>(mask) : static_cast<int>(kRepeatBytes / sizeof(T));
  if (reduceMode && mask == 0) Fail(api, ": Counter mode (reduceMode=true) needs mask in [1, 2^32-1], got 0");
  const Opnd<T> os = MakeOpnd(src0, p.src0BlockStride, p.src0RepeatStride, "src0");
  std::vector<T> picked;
  for (int r = 0; r < p.repeatTimes; ++r)
    for (int i = 0; i < per; ++i)
      if (bit(r, i)) picked.push_back(*Checked(api, os, r, i));
  if (!picked.empty()) {
    CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + picked.size());
    std::memcpy(dst.addr_, picked.data(), picked.size() * sizeof(T));
  }
  rsvdCnt = picked.size();
  CountRepeats(api, p.repeatTimes);
}

// The built-in patterns 1..7 (bit i of a repeat, the same for every repeat).
inline bool BuiltinGatherBit(uint8_t pattern, int i) {
  switch (pattern) {
    case 1: return i % 2 == 0;
    case 2: return i % 2 == 1;
    case 3: case 4: case 5: case 6: return i % 4 == pattern - 3;
    default: return true;  // 7
  }
}

}  // namespace trex_emu

namespace AscendC {

template <class T, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const uint8_t src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                       uint64_t& rsvdCnt) {
  if (src1Pattern < 1 || src1Pattern > 7)
    trex_emu::Fail("GatherMask: built-in src1Pattern=", int(src1Pattern), " is outside [1, 7]");
  trex_emu::GatherMaskImpl(dst, src0, reduceMode, mask, gatherMaskParams, rsvdCnt,
                           [&](int, int i) { return trex_emu::BuiltinGatherBit(src1Pattern, i); });
}

// User pattern: a LocalTensor of uint16_t (16-bit T) or uint32_t (32-bit T) bits, consumed
// continuously within a repeat; repeat r starts src1RepeatStride*r data blocks in.
template <class T, class U, GatherMaskMode mode = defaultGatherMaskMode>
inline void GatherMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<U>& src1Pattern,
                       const bool reduceMode, const uint32_t mask, const GatherMaskParams& gatherMaskParams,
                       uint64_t& rsvdCnt) {
  static_assert(sizeof(U) == sizeof(T) && (std::is_same_v<U, uint16_t> || std::is_same_v<U, uint32_t>),
                "GatherMask: src1Pattern must be uint16_t for 16-bit and uint32_t for 32-bit element types");
  trex_emu::CheckUbAlign("GatherMask", "src1Pattern", src1Pattern.addr_);
  constexpr int kBits = 8 * sizeof(U);
  const uint8_t* base = reinterpret_cast<const uint8_t*>(src1Pattern.addr_);
  trex_emu::GatherMaskImpl(dst, src0, reduceMode, mask, gatherMaskParams, rsvdCnt, [&](int r, int i) {
    const U* word = reinterpret_cast<const U*>(base + int64_t(r) * gatherMaskParams.src1RepeatStride * 32) + i / kBits;
    trex_emu::CheckUbRange("GatherMask", "src1Pattern", src1Pattern.buf_, word, word + 1);
    return ((*word >> (i % kBits)) & 1u) != 0;
  });
}

// Gather: dst[i] = the element of src at byte offset srcBaseAddr + srcOffset[i] (bytes, relative to
// src's start; must be a multiple of sizeof(T) and stay inside src's buffer). All offsets are read
// before dst is written, so dst may be src.
template <class T>
inline void Gather(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& srcOffset,
                   const uint32_t srcBaseAddr, const uint32_t count) {
  static_assert(trex_emu::kGatherTypes<T>, "Gather: element type not supported on Atlas A2/A3 "
                                           "(int16_t, uint16_t, int32_t, uint32_t, float, half, bfloat16_t)");
  const char* api = "Gather";
  trex_emu::CheckUbAlign(api, "dst", dst.addr_);
  trex_emu::CheckUbAlign(api, "src", src.addr_);
  trex_emu::CheckUbAlign(api, "srcOffset", srcOffset.addr_);
  trex_emu::CheckUbRange(api, "srcOffset", srcOffset.buf_, srcOffset.addr_, srcOffset.addr_ + count);
  trex_emu::CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + count);
  const uint8_t* base = reinterpret_cast<const uint8_t*>(src.addr_);
  std::vector<T> got(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint64_t off = uint64_t{srcBaseAddr} + srcOffset.addr_[i];
    if (off % sizeof(T) != 0)
      trex_emu::Fail(api, ": srcBaseAddr + srcOffset[", i, "] = ", off, " B is not a multiple of sizeof(",
                     trex_emu::TypeName<T>(), ") = ", sizeof(T), " (offsets are in bytes)");
    const T* p = reinterpret_cast<const T*>(base + off);
    trex_emu::CheckUbRange(api, "src (at srcOffset)", src.buf_, p, p + 1);
    got[i] = *p;
  }
  std::memcpy(dst.addr_, got.data(), count * sizeof(T));
  trex_emu::CountRepeats(api, trex_emu::CountFormRepeats(count, sizeof(T)));
}

// Gatherb (Memory矢量计算/Gatherb(ISASI)): repeat i, block j copies the 32 bytes of src at byte offset
// offset[i*8 + j] to dst block i*dstRepStride + j*dstBlkStride (dstBlkStride 0 counts as 1). A2/A3 types:
// uint16_t, uint32_t. Raises as the page's constraints say: an offset that is not 32-byte aligned or leaves
// src's buffer, repeatTime outside [0, 255], dst and src at the same address. All blocks are read first.
struct GatherRepeatParams {
  GatherRepeatParams() {}
  GatherRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t dstRepStrideIn)
      : dstBlkStride(dstBlkStrideIn), dstRepStride(dstRepStrideIn) {}
  uint32_t blockNumber = 8;
  uint16_t dstRepStride = 8;
  uint8_t dstBlkStride = 1;
  uint8_t src0BlkStride = 1;
  uint8_t src1BlkStride = 1;
  uint8_t src0RepStride = 8;
  uint8_t src1RepStride = 8;
  bool repeatStrideMode = false;
  bool strideSizeMode = false;
};
template <class T>
inline void Gatherb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint32_t>& offset,
                    const uint8_t repeatTime, const GatherRepeatParams& repeatParams) {
  static_assert(std::is_same<T, uint16_t>::value || std::is_same<T, uint32_t>::value,
                "Gatherb: Atlas A2/A3 support uint16_t and uint32_t only");
  const char* api = "Gatherb";
  trex_emu::CheckRepeat(api, repeatTime);
  trex_emu::CheckUbAlign(api, "dst", dst.addr_);
  trex_emu::CheckUbAlign(api, "src", src.addr_);
  trex_emu::CheckUbAlign(api, "offset", offset.addr_);
  if (repeatTime == 0) return;
  if (dst.addr_ == src.addr_) trex_emu::Fail(api, ": dst and src are the same UB address (the page forbids it)");
  const uint32_t blocks = uint32_t{repeatTime} * 8;
  trex_emu::CheckUbRange(api, "offset", offset.buf_, offset.addr_, offset.addr_ + blocks);
  const int64_t blk = repeatParams.dstBlkStride == 0 ? 1 : repeatParams.dstBlkStride;
  const uint8_t* base = reinterpret_cast<const uint8_t*>(src.addr_);
  std::vector<uint8_t> got(size_t{blocks} * 32);
  for (uint32_t k = 0; k < blocks; ++k) {
    const uint32_t off = offset.addr_[k];
    if (off % 32 != 0)
      trex_emu::Fail(api, ": offset[", k, "] = ", off, " B is not 32-byte aligned (offsets are in bytes, one per "
                     "32-byte data block)");
    trex_emu::CheckUbRange(api, "src (at offset)", src.buf_, base + off, base + off + 32);
    std::memcpy(&got[size_t{k} * 32], base + off, 32);
  }
  uint8_t* out = reinterpret_cast<uint8_t*>(dst.addr_);
  for (uint32_t i = 0; i < repeatTime; ++i)
    for (uint32_t j = 0; j < 8; ++j) {
      uint8_t* d = out + (int64_t{i} * repeatParams.dstRepStride + int64_t{j} * blk) * 32;
      trex_emu::CheckUbRange(api, "dst", dst.buf_, d, d + 32);
      std::memcpy(d, &got[(size_t{i} * 8 + j) * 32], 32);
    }
  trex_emu::CountRepeats(api, repeatTime);
}

}  // namespace AscendC

namespace trex_emu {

// ReduceMax/ReduceMin, mask/repeat form: the extremum over every active element of repeatTime
// repeats (repeat r starts srcRepStride*r data blocks in, blocks within a repeat contiguous). dst[0] =
// value; with calIndex dst[1] = the index as the bits of an integer: r * (256/sizeof(T)) + the index
// inside the repeat (the page: "根据迭代位置和repeat内部索引推导"; for srcRepStride 8 this is the element
// offset). Ties keep the smallest index; NaN wins. repeatTime 0 is a NOP.
template <class T, bool kMax>
inline void ReduceExtremumRepeat(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src,
                                 const RepeatMask& m, int32_t repeat, int32_t srcRepStride, bool calIndex) {
  static_assert(kFloatTypes<T>, "ReduceMax/ReduceMin support half and float only on Atlas A2/A3");
  if (repeat < 0) Fail(api, ": repeatTime=", repeat, " is negative");
  if (srcRepStride < 0 || srcRepStride > 65535) Fail(api, ": srcRepStride=", srcRepStride, " is outside [0, 65535]");
  CheckUbAlign(api, "src", src.addr_);
  if (repeat == 0 || !m.Any()) return;
  const int per = static_cast<int>(kRepeatBytes / sizeof(T));
  const Opnd<T> os = MakeOpnd(src, 1, srcRepStride, "src");
  float best = 0;
  int64_t at = -1;
  for (int r = 0; r < repeat; ++r)
    for (int i = 0; i < per; ++i) {
      if (!m.Active(r, i)) continue;
      const float x = ToF(*Checked(api, os, r, i));
      if (at >= 0 && best != best) continue;
      if (at < 0 || x != x || (kMax ? x > best : x < best)) {
        best = x;
        at = int64_t(r) * per + i;
      }
    }
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + (calIndex ? 2 : 1));
  const int r = static_cast<int>(at / per), i = static_cast<int>(at % per);
  dst.addr_[0] = *os.At(r, i);
  SetMaxMinCnt(*os.At(r, i), static_cast<uint32_t>(at));
  if (calIndex) {
    using IndexT = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
    const IndexT idx = static_cast<IndexT>(at);
    std::memcpy(&dst.addr_[1], &idx, sizeof(T));
  }
  CountRepeats(api, static_cast<uint64_t>(repeat));
}

}  // namespace trex_emu

namespace AscendC {

#define TREX_EMU_REDUCE_REPEAT(NAME, IS_MAX)                                                                         \
  template <class T>                                                                                                 \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,     \
                   const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride, bool calIndex = 0) { \
    (void)sharedTmpBuffer;                                                                                           \
    const auto m = trex_emu::BitMask(#NAME, mask, int(256 / sizeof(T)));                                              \
    trex_emu::ReduceExtremumRepeat<T, IS_MAX>(#NAME, dst, src, m, repeatTime, srcRepStride, calIndex);               \
  }                                                                                                                  \
  template <class T>                                                                                                 \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,     \
                   const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride, bool calIndex = 0) {   \
    (void)sharedTmpBuffer;                                                                                           \
    if (mask < 0) trex_emu::Fail(#NAME, ": mask=", mask, " is negative");                                           \
    const auto m = trex_emu::ContinuousMask(#NAME, static_cast<uint64_t>(mask), int(256 / sizeof(T)));              \
    trex_emu::ReduceExtremumRepeat<T, IS_MAX>(#NAME, dst, src, m, repeatTime, srcRepStride, calIndex);               \
  }
TREX_EMU_REDUCE_REPEAT(ReduceMax, true)
TREX_EMU_REDUCE_REPEAT(ReduceMin, false)
#undef TREX_EMU_REDUCE_REPEAT

// Sort32 (asc-devkit 基础API 排序组合 Sort32): per repeat, 32 scores of src0 sorted descending with their
// uint32 indices from src1, written as 8-byte (score, index) structures — score in the low 4 B (float) or low
// 2 B (half, the next 2 B reserved: written 0 here), index in the high 4 B; repeat r reads 32 elements from
// 32*r of each source and writes 256 B from dst's 256*r bytes. Equal scores keep the lower position first (the
// page); NaN sorts as the largest; repeatTime 0 is a NOP. Alignment: the page also asks 128/64 B (src0), 128 B
// (src1) and 256 B (dst) per iteration, but cann-ops' own moe_soft_max_topk (a published, NPU-tested op) sorts into
// a dst at UB offset 3200, so only the general 32-byte operand alignment is enforced here.
template <class T>
inline void Sort32(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<uint32_t>& src1,
                   const int32_t repeatTime) {
  static_assert(trex_emu::kFloatTypes<T>, "Sort32 supports half and float only on Atlas A2/A3");
  const char* api = "Sort32";
  trex_emu::CheckRepeat(api, repeatTime);
  trex_emu::CheckUbAlign(api, "src0", src0.addr_);
  trex_emu::CheckUbAlign(api, "src1", src1.addr_);
  trex_emu::CheckUbAlign(api, "dst", dst.addr_);
  if (repeatTime == 0) return;
  const int64_t n = int64_t(repeatTime) * 32;
  trex_emu::CheckUbRange(api, "src0", src0.buf_, src0.addr_, src0.addr_ + n);
  trex_emu::CheckUbRange(api, "src1", src1.buf_, src1.addr_, src1.addr_ + n);
  uint8_t* out = reinterpret_cast<uint8_t*>(dst.addr_);
  trex_emu::CheckUbRange(api, "dst", dst.buf_, out, out + n * 8);
  std::vector<T> score(src0.addr_, src0.addr_ + n);  // dst may alias a source: read everything first
  std::vector<uint32_t> index(src1.addr_, src1.addr_ + n);
  for (int r = 0; r < repeatTime; ++r) {
    int order[32];
    for (int i = 0; i < 32; ++i) order[i] = i;
    auto key = [&](int i) {
      const float x = trex_emu::ToF(score[r * 32 + i]);
      return x != x ? std::numeric_limits<float>::infinity() : x;
    };
    std::stable_sort(order, order + 32, [&](int a, int b) { return key(a) > key(b); });
    for (int k = 0; k < 32; ++k) {
      uint8_t* slot = out + (int64_t(r) * 32 + k) * 8;
      std::memset(slot, 0, 4);
      std::memcpy(slot, &score[r * 32 + order[k]], sizeof(T));
      std::memcpy(slot + 4, &index[r * 32 + order[k]], 4);
    }
  }
  trex_emu::CountRepeats(api, static_cast<uint64_t>(repeatTime));
}

// GetReduceMaxMinCount (asc-devkit 基础API 归约计算 GetReduceMaxMinCount(ISASI); impl
// impl/basic_api/dav_c220/kernel_operator_vec_reduce_impl.h GetReduceMaxMinCountImpl): reads the MAX_MIN_CNT
// register the last ReduceMax/ReduceMin/WholeReduceMax/WholeReduceMin of this block set — the extremum and its
// index, the index's integer bits stored in a T (read them back with reinterpret_cast<uint16_t/uint32_t*>).
// The emulator's model: ReduceMax/ReduceMin (count and mask/repeat forms) set the overall extremum with the
// index they write to dst[1]; WholeReduceMax/Min set the extremum over all their repeats with its first
// index counted from src's start (GetReduceRepeatMaxMinSpr page; see ReduceRepeatImpl in vec_misc.h). The value-only prototype is not supported on
// Atlas A2/A3 (the page; the impl reports it), so it raises; so does a read before any such reduction.
}  // namespace AscendC
namespace trex_emu {
inline uint64_t ReadMaxMinCnt(const char* api) {
  if (!RT().max_min_set)
    Fail(api, ": no ReduceMax/ReduceMin/WholeReduceMax/WholeReduceMin ran in this block before it, so the "
              "MAX_MIN_CNT register holds nothing; run the reduction first");
  return RT().max_min_cnt;
}
}  // namespace trex_emu
namespace AscendC {

template <class T>
inline void GetReduceMaxMinCount(T& maxMinValue, T& maxMinIndex) {
  static_assert(trex_emu::kFloatTypes<T>, "GetReduceMaxMinCount supports half and float (the reduction's type)");
  const uint64_t cnt = trex_emu::ReadMaxMinCnt("GetReduceMaxMinCount");
  const uint32_t value = static_cast<uint32_t>(cnt & (sizeof(T) == 2 ? 0xffffu : 0xffffffffu));
  const uint32_t index = static_cast<uint32_t>(cnt >> 32);
  std::memcpy(&maxMinValue, &value, sizeof(T));
  std::memcpy(&maxMinIndex, &index, sizeof(T));
}
template <class T>
inline void GetReduceMaxMinCount(uint32_t& maxMinValue, uint32_t& maxMinIndex) {
  static_assert(trex_emu::kFloatTypes<T>, "GetReduceMaxMinCount supports half and float (the reduction's type)");
  const uint64_t cnt = trex_emu::ReadMaxMinCnt("GetReduceMaxMinCount");
  maxMinValue = static_cast<uint32_t>(cnt & (sizeof(T) == 2 ? 0xffffu : 0xffffffffu));
  maxMinIndex = static_cast<uint32_t>(cnt >> 32);
}
template <class T>
inline void GetReduceMaxMinCount(T& maxMinValue) {
  (void)maxMinValue;
  trex_emu::Fail("GetReduceMaxMinCount(value): the value-only prototype is not supported on Atlas A2/A3 "
                 "(asc-devkit GetReduceMaxMinCount page); call GetReduceMaxMinCount<T>(value, index)");
}
// The 9.1 name (asc-devkit 归约计算辅助配置接口/GetReduceRepeatMaxMinSpr(ISASI); impl
// kernel_operator_vec_reduce_intf_impl.h: "GetReduceMaxMinCount has been updated, please use
// GetReduceRepeatMaxMinSpr instead"): the same register, the same A2/A3 prototypes.
template <class T>
inline void GetReduceRepeatMaxMinSpr(T& maxMinValue, T& maxMinIndex) {
  GetReduceMaxMinCount<T>(maxMinValue, maxMinIndex);
}
template <class T>
inline void GetReduceRepeatMaxMinSpr(T& maxMinValue) {
  (void)maxMinValue;
  trex_emu::Fail("GetReduceRepeatMaxMinSpr(value): the value-only prototype is not supported on Atlas A2/A3 "
                 "(asc-devkit GetReduceRepeatMaxMinSpr page); call GetReduceRepeatMaxMinSpr<T>(value, index)");
}

}  // namespace AscendC
