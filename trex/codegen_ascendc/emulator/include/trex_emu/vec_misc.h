// trex AscendC emulator: Cast, Duplicate, Brcb, Copy, reductions, Compare/Select.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "trex_emu/vec.h"

namespace trex_emu {

using AscendC::RoundMode;

// ---- Cast ----
// Supported (src, dst, mode) combinations on Atlas A2 (and A3, whose table is the same for these
// types): the table of asc-devkit docs/zh/api/SIMD-API/基础API/Memory矢量计算/类型转换/Cast.md,
// "Atlas A2 训练系列产品/Atlas A2 推理系列产品支持的数据类型组合情况", row for row, except int4b_t (no
// emulated 4-bit type) and int32_t -> half (needs SetDeqScale, not emulated). Integer results
// saturate; NaN -> integer gives 0 (undocumented). Not listed: bf16 <-> half (go through float).
struct CastRule {
  const char* src;
  const char* dst;
  uint32_t modes;  // bit per RoundMode
};
constexpr uint32_t Bit(RoundMode m) { return 1u << static_cast<unsigned>(m); }
constexpr uint32_t kDirected = Bit(RoundMode::CAST_RINT) | Bit(RoundMode::CAST_FLOOR) | Bit(RoundMode::CAST_CEIL) |
                               Bit(RoundMode::CAST_ROUND) | Bit(RoundMode::CAST_TRUNC);
constexpr uint32_t kNone = Bit(RoundMode::CAST_NONE);
constexpr CastRule kCastRules[] = {
    {"int8_t", "half", kNone},
    {"uint8_t", "half", kNone},
    {"int16_t", "half", kDirected | kNone},
    {"int16_t", "float", kNone},
    {"half", "int8_t", kDirected | kNone},
    {"half", "uint8_t", kDirected | kNone},
    {"half", "int16_t", kDirected},
    {"half", "int32_t", kDirected},
    {"half", "float", kNone},
    {"bfloat16_t", "int32_t", kDirected},
    {"bfloat16_t", "float", kNone},
    {"int32_t", "int16_t", kNone},
    {"int32_t", "float", kDirected | kNone},
    {"int32_t", "int64_t", kNone},
    {"float", "int16_t", kDirected},
    {"float", "half", kDirected | Bit(RoundMode::CAST_ODD) | kNone},
    {"float", "bfloat16_t", kDirected},  // CAST_NONE is NOT supported for float -> bf16 on A2
    {"float", "int32_t", kDirected},
    {"float", "float", kDirected},       // round to an integral value
    {"float", "int64_t", kDirected},
    {"int64_t", "int32_t", kNone},
    {"int64_t", "float", kDirected},
};

template <class TD, class TS>
inline void CheckCastSupported(RoundMode mode) {
  const char* s = TypeName<TS>();
  const char* d = TypeName<TD>();
  for (const auto& r : kCastRules) {
    if (std::strcmp(r.src, s) == 0 && std::strcmp(r.dst, d) == 0) {
      if (r.modes & Bit(mode)) return;
      std::string allowed;
      for (unsigned m = 0; m < 8; ++m)
        if (r.modes & (1u << m)) allowed += std::string(allowed.empty() ? "" : ", ") + RoundModeName(static_cast<RoundMode>(m));
      Fail("Cast ", s, " -> ", d, " with RoundMode::", RoundModeName(mode),
           " is not supported on Atlas A2/A3 (supported modes: ", allowed, ")");
    }
  }
  Fail("Cast ", s, " -> ", d, " is not a supported conversion on Atlas A2/A3 (e.g. there is no direct bf16 <-> half; "
       "go through float)");
}

template <class T>
inline double ToDouble(T v) {
  if constexpr (kIsFloatLike<T>) return static_cast<double>(ToF(v));
  else return static_cast<double>(v);
}

template <class TD, class TS>
inline TD CastValue(TS v, RoundMode mode) {
  const double x = ToDouble(v);
  if constexpr (std::is_same<TD, half>::value) {
    if constexpr (std::is_same<TS, float>::value) return half::FromBits(FloatToHalfBits(v, mode));
    else return half::FromBits(static_cast<uint16_t>(RoundToBits<10, 5>(x, mode)));
  } else if constexpr (std::is_same<TD, bfloat16_t>::value) {
    if constexpr (std::is_same<TS, float>::value) return bfloat16_t::FromBits(FloatToBf16Bits(v, mode));
    else return bfloat16_t::FromBits(static_cast<uint16_t>(RoundToBits<7, 8>(x, mode)));
  } else if constexpr (std::is_same<TD, float>::value) {
    if constexpr (std::is_same<TS, float>::value) return std::isfinite(v) ? static_cast<float>(RoundIntegral(x, mode)) : v;
    else if constexpr (kIsFloatLike<TS>) return static_cast<float>(x);  // widening: exact
    else return BitsFloat(RoundToBits<23, 8>(x, mode));
  } else {
    return RoundToInt<TD>(x, mode);
  }
}

// ---- reductions ----
// Binary-tree sum of n values (adjacent pairs first, as the asc-devkit ReduceRepeat/ReduceDataBlock
// pages describe), each partial rounded to T. n is a power of two; inactive lanes hold 0.
template <class T>
inline T TreeSum(T* v, int n) {
  for (int width = n; width > 1; width /= 2)
    for (int i = 0; i < width / 2; ++i) v[i] = Down<T>(Up(v[2 * i]) + Up(v[2 * i + 1]));
  return v[0];
}

}  // namespace trex_emu

namespace AscendC {

template <class TD, class TS>
inline void Cast(const LocalTensor<TD>& dst, const LocalTensor<TS>& src, const RoundMode& roundMode, const uint32_t count) {
  trex_emu::CheckCastSupported<TD, TS>(roundMode);
  const RoundMode m = roundMode;
  trex_emu::UnaryCount("Cast", dst, src, count, [m](TS s, TD) { return trex_emu::CastValue<TD>(s, m); });
}
}  // namespace AscendC
namespace trex_emu {
// Cast<int4b_t, half>, repeat form (Memory矢量计算/Cast: half -> int4b_t on A2/A3): a repeat is 128 half in,
// 128 int4 out (64 B = 2 data blocks of 64 elements); each value rounded by the mode and saturated to [-8, 7],
// element 2k into the low nibble of byte k (asc-devkit's cast example packs its golden so). Inactive lanes
// leave their nibble.
template <class TS, class M>
inline void CastToInt4(const AscendC::LocalTensor<AscendC::int4b_t>& dst, const AscendC::LocalTensor<TS>& src,
                       AscendC::RoundMode mode, const M& msk, int repeat, const AscendC::UnaryRepeatParams& p) {
  static_assert(std::is_same<TS, half>::value, "Cast to int4b_t: Atlas A2/A3 convert from half only");
  const char* api = "Cast";
  CheckRepeat(api, repeat);
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src", src.addr_);
  const Opnd<TS> os = MakeOpnd(src, p.srcBlkStride, p.srcRepStride, "src");
  uint8_t* base = reinterpret_cast<uint8_t*>(dst.addr_);
  for (int r = 0; r < repeat; ++r) {
    int8_t v[128];
    for (int i = 0; i < 128; ++i)
      if (msk.Active(r, i)) {
        const int32_t x = CastValue<int32_t>(*Checked(api, os, r, i), mode);
        v[i] = static_cast<int8_t>(x < -8 ? -8 : (x > 7 ? 7 : x));
      }
    for (int i = 0; i < 128; ++i)
      if (msk.Active(r, i)) {
        uint8_t* byte = base + (int64_t{r} * p.dstRepStride + int64_t{i / 64} * p.dstBlkStride) * 32 + (i % 64) / 2;
        CheckUbRange(api, "dst", dst.buf_, byte, byte + 1);
        const uint8_t nib = static_cast<uint8_t>(v[i]) & 0xF;
        *byte = (i % 2) ? static_cast<uint8_t>((*byte & 0x0F) | (nib << 4)) : static_cast<uint8_t>((*byte & 0xF0) | nib);
      }
  }
  CountRepeats(api, static_cast<uint64_t>(repeat));
}
}  // namespace trex_emu
namespace AscendC {
template <class TD, class TS, bool isSetMask = true>
inline void Cast(const LocalTensor<TD>& dst, const LocalTensor<TS>& src, const RoundMode& roundMode, uint64_t mask,
                 const int32_t repeatTimes, const UnaryRepeatParams& p) {
  if constexpr (std::is_same<TD, int4b_t>::value) {
    int repeat = repeatTimes;
    const auto msk = trex_emu::ResolveMask<isSetMask>("Cast", mask, 128, repeat);
    trex_emu::CastToInt4(dst, src, roundMode, msk, repeat, p);
    return;
  } else {
  trex_emu::CheckCastSupported<TD, TS>(roundMode);
  const int per = 256 / int(sizeof(TD) > sizeof(TS) ? sizeof(TD) : sizeof(TS));
  int repeat = repeatTimes;
  const auto msk = trex_emu::ResolveMask<isSetMask>("Cast", mask, per, repeat);
  const RoundMode m = roundMode;
  trex_emu::UnaryRepeat("Cast", dst, src, msk, repeat, p.dstBlkStride, p.srcBlkStride, p.dstRepStride, p.srcRepStride,
                        [m](TS s, TD) { return trex_emu::CastValue<TD>(s, m); });
  }
}
template <class TD, class TS, bool isSetMask = true>
inline void Cast(const LocalTensor<TD>& dst, const LocalTensor<TS>& src, const RoundMode& roundMode,
                 const uint64_t mask[], const int32_t repeatTimes, const UnaryRepeatParams& p) {
  trex_emu::CheckCastSupported<TD, TS>(roundMode);
  const int per = 256 / int(sizeof(TD) > sizeof(TS) ? sizeof(TD) : sizeof(TS));
  int repeat = repeatTimes;
  const auto msk = trex_emu::ResolveMask<isSetMask>("Cast", mask, per, repeat);
  const RoundMode m = roundMode;
  trex_emu::UnaryRepeat("Cast", dst, src, msk, repeat, p.dstBlkStride, p.srcBlkStride, p.dstRepStride, p.srcRepStride,
                        [m](TS s, TD) { return trex_emu::CastValue<TD>(s, m); });
}

// Scalar conversions (ToFloat/ToBfloat16 before CANN 8.5; scalar Cast after).
inline float ToFloat(const bfloat16_t& v) { return static_cast<float>(v); }
inline float ToFloat(const half& v) { return static_cast<float>(v); }
inline bfloat16_t ToBfloat16(const float& v) { return bfloat16_t::FromBits(trex_emu::FloatToBf16Bits(v, RoundMode::CAST_RINT)); }

// ---- Duplicate ----
template <class T>
inline void Duplicate(const LocalTensor<T>& dst, const typename trex_emu::Identity<T>::type& scalarValue,
                      const int32_t& count) {
  static_assert(trex_emu::kFillTypes<T>, "Duplicate: element type not supported on Atlas A2/A3");
  const T v = scalarValue;
  trex_emu::CheckCount("Duplicate", count);
  trex_emu::CheckUbAlign("Duplicate", "dst", dst.addr_);
  trex_emu::CheckUbRange("Duplicate", "dst", dst.buf_, dst.addr_, dst.addr_ + count);
  for (int32_t i = 0; i < count; ++i) dst.addr_[i] = v;
  trex_emu::CountRepeats("Duplicate", trex_emu::CountFormRepeats(static_cast<uint64_t>(count), sizeof(T)));
}
template <class T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const typename trex_emu::Identity<T>::type& scalarValue, uint64_t mask,
                      const int32_t repeatTimes, const uint16_t dstBlockStride, const uint8_t dstRepeatStride) {
  static_assert(trex_emu::kFillTypes<T>, "Duplicate: element type not supported on Atlas A2/A3");
  int repeat = repeatTimes;
  const auto m = trex_emu::ResolveMask<isSetMask>("Duplicate", mask, int(256 / sizeof(T)), repeat);
  const T v = scalarValue;
  trex_emu::UnaryRepeat("Duplicate", dst, dst, m, repeat, dstBlockStride, dstBlockStride, dstRepeatStride,
                        dstRepeatStride, [v](T, T) { return v; }, "dst");
}
template <class T, bool isSetMask = true>
inline void Duplicate(const LocalTensor<T>& dst, const typename trex_emu::Identity<T>::type& scalarValue,
                      const uint64_t mask[], const int32_t repeatTimes, const uint16_t dstBlockStride,
                      const uint8_t dstRepeatStride) {
  static_assert(trex_emu::kFillTypes<T>, "Duplicate: element type not supported on Atlas A2/A3");
  int repeat = repeatTimes;
  const auto m = trex_emu::ResolveMask<isSetMask>("Duplicate", mask, int(256 / sizeof(T)), repeat);
  const T v = scalarValue;
  trex_emu::UnaryRepeat("Duplicate", dst, dst, m, repeat, dstBlockStride, dstBlockStride, dstRepeatStride,
                        dstRepeatStride, [v](T, T) { return v; }, "dst");
}

// dst[i] = firstValue + i
template <class T>
inline void CreateVecIndex(const LocalTensor<T>& dst, const T& firstValue, uint32_t count) {
  const float first = trex_emu::ToF(firstValue);
  trex_emu::CheckUbAlign("CreateVecIndex", "dst", dst.addr_);
  trex_emu::CheckUbRange("CreateVecIndex", "dst", dst.buf_, dst.addr_, dst.addr_ + count);
  for (uint32_t i = 0; i < count; ++i) dst.addr_[i] = static_cast<T>(first + static_cast<float>(i));
  trex_emu::CountRepeats("CreateVecIndex", trex_emu::CountFormRepeats(count, sizeof(T)));
}

// ---- Copy (UB -> UB, repeat form); strides in 32-byte blocks ----
// Counter mode differs from the other vector instructions (Copy's API page, 约束说明): the count set by
// SetVectorMask<T, MaskMode::COUNTER>(n) is the number of elements of EACH repeat and repeatTime stays in
// effect; a repeat covers ceil(n * sizeof(T) / 32) data blocks (more than 8 when n exceeds 256 B), each
// srcStride/dstStride blocks after the previous one.
}  // namespace AscendC
namespace trex_emu {
template <class T>
inline void CopyCounterMode(const LocalTensor<T>& dst, const LocalTensor<T>& src, int repeat,
                            const AscendC::CopyRepeatParams& p) {
  CheckRepeat("Copy", repeat);
  CheckUbAlign("Copy", "dst", dst.addr_);
  CheckUbAlign("Copy", "src", src.addr_);
  const int64_t n = static_cast<int64_t>(RT().mask_count);
  const Opnd<T> od = MakeOpnd(dst, p.dstStride, p.dstRepeatSize, "dst");
  const Opnd<T> os = MakeOpnd(src, p.srcStride, p.srcRepeatSize, "src");
  std::vector<T> v(static_cast<size_t>(n));
  for (int r = 0; r < repeat; ++r) {
    for (int64_t i = 0; i < n; ++i) v[i] = *Checked("Copy", os, r, static_cast<int>(i));
    for (int64_t i = 0; i < n; ++i) *Checked("Copy", od, r, static_cast<int>(i)) = v[i];
  }
  CountRepeats("Copy", static_cast<uint64_t>(repeat));
}
}  // namespace trex_emu
namespace AscendC {
template <class T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask, const int32_t repeatTimes,
                 const CopyRepeatParams& p) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Copy: 16- or 32-bit element types only");
  if (!isSetMask && trex_emu::RT().mask_counter_mode) return trex_emu::CopyCounterMode(dst, src, repeatTimes, p);
  int repeat = repeatTimes;
  const auto m = trex_emu::ResolveMask<isSetMask>("Copy", mask, int(256 / sizeof(T)), repeat);
  trex_emu::UnaryRepeat("Copy", dst, src, m, repeat, p.dstStride, p.srcStride, p.dstRepeatSize, p.srcRepeatSize,
                        [](T s, T) { return s; });
}
template <class T, bool isSetMask = true>
inline void Copy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[], const int32_t repeatTimes,
                 const CopyRepeatParams& p) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4, "Copy: 16- or 32-bit element types only");
  if (!isSetMask && trex_emu::RT().mask_counter_mode) return trex_emu::CopyCounterMode(dst, src, repeatTimes, p);
  int repeat = repeatTimes;
  const auto m = trex_emu::ResolveMask<isSetMask>("Copy", mask, int(256 / sizeof(T)), repeat);
  trex_emu::UnaryRepeat("Copy", dst, src, m, repeat, p.dstStride, p.srcStride, p.dstRepeatSize, p.srcRepeatSize,
                        [](T s, T) { return s; });
}

// ---- Brcb: each repeat reads 8 consecutive src elements; element k fills dst data block k ----
template <class T>
inline void Brcb(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                 const BrcbRepeatParams& p) {
  static_assert(trex_emu::kFillTypes<T>, "Brcb: element type not supported on Atlas A2/A3");
  const char* api = "Brcb";
  trex_emu::CheckRepeat(api, repeatTime);
  trex_emu::CheckUbAlign(api, "dst", dst.addr_);
  trex_emu::CheckUbAlign(api, "src", src.addr_);
  constexpr int epb = 32 / sizeof(T);
  trex_emu::CheckUbRange(api, "src", src.buf_, src.addr_, src.addr_ + repeatTime * 8);
  if (repeatTime > 0 && dst.addr_ < src.addr_ + repeatTime * 8 && src.addr_ < dst.addr_ + repeatTime * 8 * epb)
    trex_emu::Fail(api, ": src and dst overlap (not allowed for Brcb)");
  for (int r = 0; r < repeatTime; ++r)
    for (int k = 0; k < 8; ++k) {
      const T v = src.addr_[r * 8 + k];
      T* blk = dst.addr_ + int64_t(r) * p.dstRepStride * epb + int64_t(k) * p.dstBlkStride * epb;
      trex_emu::CheckUbRange(api, "dst", dst.buf_, blk, blk + epb);
      for (int j = 0; j < epb; ++j) blk[j] = v;
    }
  trex_emu::CountRepeats(api, static_cast<uint64_t>(repeatTime));
}

}  // namespace AscendC

namespace trex_emu {

// One reduction per repeat (WholeReduceSum/Max/Min = ReduceRepeat).
template <AscendC::ReduceType RT_, class T>
inline void ReduceRepeatImpl(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const RepeatMask& m,
                             int repeat, int dstRepStride, int srcBlkStride, int srcRepStride, AscendC::ReduceOrder order) {
  static_assert(kFloatTypes<T>, "reductions support half and float only on Atlas A2/A3");
  CheckRepeat(api, repeat);
  CheckUbAlign(api, "src", src.addr_);
  if (!m.Any() || repeat == 0) return;  // documented NOP
  const int per = static_cast<int>(kRepeatBytes / sizeof(T));
  const Opnd<T> os = MakeOpnd(src, srcBlkStride, srcRepStride, "src");
  using IndexT = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
  // MAX_MIN_CNT after ReduceRepeat<MAX/MIN> (WholeReduceMax/Min) holds the extremum over ALL repeats and the
  // index of its first occurrence counted from src's start, r * per + i (asc-devkit GetReduceRepeatMaxMinSpr
  // page: "所有repeat内的最值及其索引"; asc_get_reduce_max_cnt page: 256 halves in 2 repeats give index 255).
  // The page supports only the continuous case (srcRepStride 8, srcBlkStride 1), where r * per + i is the
  // element offset; the same rule serves the counter mode cann-ops' i?amax read it after.
  [[maybe_unused]] T overall{};
  [[maybe_unused]] int64_t overall_at = -1;
  for (int r = 0; r < repeat; ++r) {
    T v[128];
    int best = -1;
    for (int i = 0; i < per; ++i) {
      const bool on = m.Active(r, i);
      if constexpr (RT_ == AscendC::ReduceType::SUM) {
        v[i] = on ? *Checked(api, os, r, i) : T(0);
      } else if (on) {
        const T x = *Checked(api, os, r, i);
        const float fx = ToF(x);
        // Ties keep the smallest index (documented); NaN wins (propagates).
        const bool better = best < 0 || fx != fx ||
                            (RT_ == AscendC::ReduceType::MAX ? fx > ToF(v[0]) : fx < ToF(v[0]));
        if (better && !(best >= 0 && ToF(v[0]) != ToF(v[0]))) {
          v[0] = x;
          best = i;
        }
      }
    }
    if constexpr (RT_ == AscendC::ReduceType::SUM) {
      T s = TreeSum(v, per);
      T* d = dst.addr_ + int64_t(r) * dstRepStride;
      CheckUbRange(api, "dst", dst.buf_, d, d + 1);
      *d = s;
    } else {
      if (best < 0) continue;  // a repeat with no active element writes nothing
      IndexT idx = static_cast<IndexT>(best);
      const float fv = ToF(v[0]), fo = ToF(overall);
      const bool beats = overall_at < 0 ||
                         (fo == fo && (fv != fv || (RT_ == AscendC::ReduceType::MAX ? fv > fo : fv < fo)));
      if (beats) {
        overall = v[0];
        overall_at = int64_t(r) * per + best;
      }
      T idx_as_t;
      std::memcpy(&idx_as_t, &idx, sizeof(T));
      using AscendC::ReduceOrder;
      if (order == ReduceOrder::ORDER_ONLY_VALUE) {
        T* d = dst.addr_ + int64_t(r) * dstRepStride;
        CheckUbRange(api, "dst", dst.buf_, d, d + 1);
        *d = v[0];
      } else if (order == ReduceOrder::ORDER_ONLY_INDEX) {
        uint32_t* d = reinterpret_cast<uint32_t*>(dst.addr_) + int64_t(r) * dstRepStride;
        CheckUbRange(api, "dst", dst.buf_, d, d + 1);
        *d = static_cast<uint32_t>(best);
      } else {
        T* d = dst.addr_ + int64_t(r) * dstRepStride * 2;
        CheckUbRange(api, "dst", dst.buf_, d, d + 2);
        d[order == ReduceOrder::ORDER_VALUE_INDEX ? 0 : 1] = v[0];
        d[order == ReduceOrder::ORDER_VALUE_INDEX ? 1 : 0] = idx_as_t;
      }
    }
  }
  if constexpr (RT_ != AscendC::ReduceType::SUM)
    if (overall_at >= 0) SetMaxMinCnt(overall, static_cast<uint32_t>(overall_at));
  CountRepeats(api, static_cast<uint64_t>(repeat));
}

// One reduction per 32-byte block (BlockReduceSum/Max/Min = ReduceDataBlock): 8 results per repeat.
template <AscendC::ReduceType RT_, class T>
inline void ReduceBlockImpl(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const RepeatMask& m,
                            int repeat, int dstRepStride, int srcBlkStride, int srcRepStride) {
  static_assert(kFloatTypes<T>, "reductions support half and float only on Atlas A2/A3");
  CheckRepeat(api, repeat);
  CheckUbAlign(api, "src", src.addr_);
  CheckUbAlign(api, "dst", dst.addr_, sizeof(T) == 2 ? 16 : 32);
  if (!m.Any() || repeat == 0) return;
  constexpr int epb = 32 / sizeof(T);
  const Opnd<T> os = MakeOpnd(src, srcBlkStride, srcRepStride, "src");
  for (int r = 0; r < repeat; ++r) {
    for (int b = 0; b < 8; ++b) {
      T v[16];
      bool any = false;
      for (int j = 0; j < epb; ++j) {
        const int i = b * epb + j;
        const bool on = m.Active(r, i);
        any = any || on;
        if constexpr (RT_ == AscendC::ReduceType::SUM) v[j] = on ? *Checked(api, os, r, i) : T(0);
        else v[j] = on ? *Checked(api, os, r, i)
                       : T(RT_ == AscendC::ReduceType::MAX ? -std::numeric_limits<float>::infinity()
                                                           : std::numeric_limits<float>::infinity());
      }
      if (!any) continue;  // documented: a block with no active element leaves dst untouched
      T res;
      if constexpr (RT_ == AscendC::ReduceType::SUM) {
        res = TreeSum(v, epb);
      } else {
        float acc = ToF(v[0]);
        for (int j = 1; j < epb; ++j)
          acc = RT_ == AscendC::ReduceType::MAX ? NanMax(acc, ToF(v[j])) : NanMin(acc, ToF(v[j]));
        res = FromF<T>(acc);
      }
      T* d = dst.addr_ + int64_t(r) * dstRepStride * 8 + b;
      CheckUbRange(api, "dst", dst.buf_, d, d + 1);
      *d = res;
    }
  }
  CountRepeats(api, static_cast<uint64_t>(repeat));
}


// PairReduceSum (asc-devkit 基础API 归约计算 PairReduceSum): per repeat, the sum of each adjacent (even, odd)
// pair of the repeat's 256 bytes, 128 bytes of results; dstRepStride counts 128-byte units. An inactive
// element adds 0; a pair with no active element leaves its dst element untouched (as BlockReduceSum does a
// block with none).
template <class T>
inline void PairReduceImpl(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const RepeatMask& m,
                           int repeat, int dstRepStride, int srcBlkStride, int srcRepStride) {
  static_assert(kFloatTypes<T>, "PairReduceSum supports half and float only on Atlas A2/A3");
  CheckRepeat(api, repeat);
  CheckUbAlign(api, "src", src.addr_);
  CheckUbAlign(api, "dst", dst.addr_);
  if (!m.Any() || repeat == 0) return;
  const int per = static_cast<int>(kRepeatBytes / sizeof(T));
  const Opnd<T> os = MakeOpnd(src, srcBlkStride, srcRepStride, "src");
  for (int r = 0; r < repeat; ++r)
    for (int k = 0; k < per / 2; ++k) {
      const bool on0 = m.Active(r, 2 * k), on1 = m.Active(r, 2 * k + 1);
      if (!on0 && !on1) continue;
      const float a = on0 ? ToF(*Checked(api, os, r, 2 * k)) : 0.0f;
      const float b = on1 ? ToF(*Checked(api, os, r, 2 * k + 1)) : 0.0f;
      T* d = dst.addr_ + int64_t(r) * dstRepStride * (per / 2) + k;
      CheckUbRange(api, "dst", dst.buf_, d, d + 1);
      *d = FromF<T>(a + b);
    }
  CountRepeats(api, static_cast<uint64_t>(repeat));
}
}  // namespace trex_emu

namespace AscendC {

#define TREX_EMU_WHOLE_REDUCE(NAME, KIND, ORDER_PARAM, ORDER_ARG)                                                  \
  template <class T, bool isSetMask = true>                                                                        \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t mask, const int32_t repeatTime, \
                   const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride ORDER_PARAM) { \
    int repeat = repeatTime;                                                                                       \
    const auto m = trex_emu::ResolveMask<isSetMask>(#NAME, static_cast<uint64_t>(mask), int(256 / sizeof(T)), repeat); \
    trex_emu::ReduceRepeatImpl<KIND>(#NAME, dst, src, m, repeat, dstRepStride, srcBlkStride, srcRepStride, ORDER_ARG); \
  }                                                                                                                \
  template <class T, bool isSetMask = true>                                                                        \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],                    \
                   const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,               \
                   const int32_t srcRepStride ORDER_PARAM) {                                                       \
    int repeat = repeatTime;                                                                                       \
    const auto m = trex_emu::ResolveMask<isSetMask>(#NAME, mask, int(256 / sizeof(T)), repeat);                    \
    trex_emu::ReduceRepeatImpl<KIND>(#NAME, dst, src, m, repeat, dstRepStride, srcBlkStride, srcRepStride, ORDER_ARG); \
  }

#define TREX_EMU_COMMA ,
TREX_EMU_WHOLE_REDUCE(WholeReduceSum, ReduceType::SUM, , ReduceOrder::ORDER_ONLY_VALUE)
TREX_EMU_WHOLE_REDUCE(WholeReduceMax, ReduceType::MAX, TREX_EMU_COMMA ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, order)
TREX_EMU_WHOLE_REDUCE(WholeReduceMin, ReduceType::MIN, TREX_EMU_COMMA ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX, order)
#undef TREX_EMU_WHOLE_REDUCE
#undef TREX_EMU_COMMA

// 9.1 names
template <ReduceType KIND, class T, class U = T, bool isSetMask = true>
inline void ReduceRepeat(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask, const int32_t repeatTime,
                         const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride,
                         ReduceOrder order = ReduceOrder::ORDER_VALUE_INDEX) {
  static_assert(std::is_same<T, U>::value, "ReduceRepeat: dst and src types must match on Atlas A2/A3");
  int repeat = repeatTime;
  const auto m = trex_emu::ResolveMask<isSetMask>("ReduceRepeat", static_cast<uint64_t>(mask), int(256 / sizeof(T)), repeat);
  trex_emu::ReduceRepeatImpl<KIND>("ReduceRepeat", dst, src, m, repeat, dstRepStride, srcBlkStride, srcRepStride, order);
}

#define TREX_EMU_BLOCK_REDUCE(NAME, KIND)                                                                          \
  template <class T, bool isSetMask = true>                                                                        \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime, const int32_t mask, \
                   const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride) {           \
    int repeat = repeatTime;                                                                                       \
    const auto m = trex_emu::ResolveMask<isSetMask>(#NAME, static_cast<uint64_t>(mask), int(256 / sizeof(T)), repeat); \
    trex_emu::ReduceBlockImpl<KIND>(#NAME, dst, src, m, repeat, dstRepStride, srcBlkStride, srcRepStride);         \
  }                                                                                                                \
  template <class T, bool isSetMask = true>                                                                        \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,                 \
                   const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,                  \
                   const int32_t srcRepStride) {                                                                   \
    int repeat = repeatTime;                                                                                       \
    const auto m = trex_emu::ResolveMask<isSetMask>(#NAME, mask, int(256 / sizeof(T)), repeat);                    \
    trex_emu::ReduceBlockImpl<KIND>(#NAME, dst, src, m, repeat, dstRepStride, srcBlkStride, srcRepStride);         \
  }
TREX_EMU_BLOCK_REDUCE(BlockReduceSum, ReduceType::SUM)
TREX_EMU_BLOCK_REDUCE(BlockReduceMax, ReduceType::MAX)
TREX_EMU_BLOCK_REDUCE(BlockReduceMin, ReduceType::MIN)
#undef TREX_EMU_BLOCK_REDUCE

template <class T, bool isSetMask = true>
inline void PairReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                          const int32_t mask, const int32_t dstRepStride, const int32_t srcBlkStride,
                          const int32_t srcRepStride) {
  int repeat = repeatTime;
  const auto m = trex_emu::ResolveMask<isSetMask>("PairReduceSum", static_cast<uint64_t>(mask), int(256 / sizeof(T)), repeat);
  trex_emu::PairReduceImpl("PairReduceSum", dst, src, m, repeat, dstRepStride, srcBlkStride, srcRepStride);
}
template <class T, bool isSetMask = true>
inline void PairReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t repeatTime,
                          const uint64_t mask[], const int32_t dstRepStride, const int32_t srcBlkStride,
                          const int32_t srcRepStride) {
  int repeat = repeatTime;
  const auto m = trex_emu::ResolveMask<isSetMask>("PairReduceSum", mask, int(256 / sizeof(T)), repeat);
  trex_emu::PairReduceImpl("PairReduceSum", dst, src, m, repeat, dstRepStride, srcBlkStride, srcRepStride);
}

// 9.1 name; note the (mask, repeat) order differs from BlockReduceSum's (repeat, mask).
template <ReduceType KIND, class T, class U = T, bool isSetMask = true>
inline void ReduceDataBlock(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask,
                            const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                            const int32_t srcRepStride) {
  int repeat = repeatTime;
  const auto m = trex_emu::ResolveMask<isSetMask>("ReduceDataBlock", static_cast<uint64_t>(mask), int(256 / sizeof(T)), repeat);
  trex_emu::ReduceBlockImpl<KIND>("ReduceDataBlock", dst, src, m, repeat, dstRepStride, srcBlkStride, srcRepStride);
}

// Whole-tensor reductions (software-emulated on the NPU). Result in dst[0] (ReduceMax/Min with
// calIndex also write the index, as the bits of an integer, to dst[1]). The sum is computed as
// the NPU library does it level by level: a binary tree per 256-byte repeat, then the same over
// the per-repeat sums, until one value is left. Repeats counted like every count-form instruction,
// ceil(count * sizeof(T) / 256), which is what the cost model charges (the few repeats of the
// second level are not counted).
template <class T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t count) {
  static_assert(trex_emu::kFloatTypes<T>, "ReduceSum supports half and float only on Atlas A2/A3");
  const char* api = "ReduceSum";
  (void)sharedTmpBuffer;
  trex_emu::CheckCount(api, count);
  trex_emu::CheckUbAlign(api, "src", src.addr_);
  trex_emu::CheckUbRange(api, "src", src.buf_, src.addr_, src.addr_ + count);
  trex_emu::CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + 1);
  const int per = static_cast<int>(256 / sizeof(T));
  std::vector<T> level(src.addr_, src.addr_ + count);
  if (level.empty()) level.push_back(T(0));
  do {
    const size_t n = level.size();
    const size_t groups = (n + per - 1) / per;
    std::vector<T> next(groups);
    for (size_t g = 0; g < groups; ++g) {
      T v[128];
      for (int i = 0; i < per; ++i) v[i] = g * per + i < n ? level[g * per + i] : T(0);
      next[g] = trex_emu::TreeSum(v, per);
    }
    level.swap(next);
  } while (level.size() > 1);
  dst.addr_[0] = level[0];
  // the impl (dav_c220 ReduceSumImpl) reads the sum from ACC_VAL into dst[0]; GetReduceRepeatSumSpr reads it again
  trex_emu::RT().acc_val = 0;
  std::memcpy(&trex_emu::RT().acc_val, &level[0], sizeof(T));
  trex_emu::RT().acc_set = true;
  trex_emu::CountRepeats(api, trex_emu::CountFormRepeats(static_cast<uint64_t>(count), sizeof(T)));
}

template <class T, bool kMax>
inline void ReduceExtremum(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t count,
                           bool calIndex) {
  static_assert(trex_emu::kFloatTypes<T>, "ReduceMax/ReduceMin support half and float only on Atlas A2/A3");
  trex_emu::CheckCount(api, count);
  trex_emu::CheckUbAlign(api, "src", src.addr_);
  trex_emu::CheckUbRange(api, "src", src.buf_, src.addr_, src.addr_ + count);
  trex_emu::CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + (calIndex ? 2 : 1));
  if (count == 0) return;
  float best = trex_emu::ToF(src.addr_[0]);
  uint32_t at = 0;
  for (int32_t i = 1; i < count && best == best; ++i) {
    const float x = trex_emu::ToF(src.addr_[i]);
    if (x != x || (kMax ? x > best : x < best)) {
      best = x;
      at = static_cast<uint32_t>(i);
    }
  }
  dst.addr_[0] = src.addr_[at];
  trex_emu::SetMaxMinCnt(src.addr_[at], at);
  if (calIndex) {
    using IndexT = std::conditional_t<sizeof(T) == 2, uint16_t, uint32_t>;
    const IndexT idx = static_cast<IndexT>(at);
    std::memcpy(&dst.addr_[1], &idx, sizeof(T));
  }
  trex_emu::CountRepeats(api, trex_emu::CountFormRepeats(count, sizeof(T)));
}
template <class T>
inline void ReduceMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t count, bool calIndex = false) {
  (void)sharedTmpBuffer;
  ReduceExtremum<T, true>("ReduceMax", dst, src, count, calIndex);
}
template <class T>
inline void ReduceMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t count, bool calIndex = false) {
  (void)sharedTmpBuffer;
  ReduceExtremum<T, false>("ReduceMin", dst, src, count, calIndex);
}

}  // namespace AscendC

namespace trex_emu {

template <class T>
inline bool CompareValues(AscendC::CMPMODE mode, T a, T b) {
  const auto x = Up(a);
  const auto y = Up(b);
  switch (mode) {
    case AscendC::CMPMODE::LT: return x < y;
    case AscendC::CMPMODE::GT: return x > y;
    case AscendC::CMPMODE::EQ: return x == y;
    case AscendC::CMPMODE::LE: return x <= y;
    case AscendC::CMPMODE::GE: return x >= y;
    case AscendC::CMPMODE::NE: return x != y;
  }
  return false;
}

template <class T>
inline void CheckCompareTypes(AscendC::CMPMODE mode) {
  static_assert(kOneOf<T, half, float, int32_t>, "Compare: element type must be half, float or int32_t");
  if (std::is_same<T, int32_t>::value && mode != AscendC::CMPMODE::EQ)
    Fail("Compare on int32_t supports CMPMODE::EQ only on Atlas A2/A3");
}

// Count-form compare: bit i of the mask bytes = cmp(src0[i], src1_or_scalar(i)).
template <class U, class T, class G>
inline void CompareCount(const char* api, const LocalTensor<U>& dst, const LocalTensor<T>& src0, uint32_t count, G rhs,
                         AscendC::CMPMODE mode, const BufferInfo* rhs_buf, const T* rhs_addr) {
  CheckCompareTypes<T>(mode);
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src0", src0.addr_);
  if ((uint64_t{count} * sizeof(T)) % kRepeatBytes != 0)
    Fail(api, ": count*sizeof(", TypeName<T>(), ") = ", uint64_t{count} * sizeof(T),
         " bytes is not a multiple of 256 (the count form of Compare works on whole repeats; round count up to a "
         "multiple of ", kRepeatBytes / sizeof(T), " and size the buffers for it)");
  CheckUbRange(api, "src0", src0.buf_, src0.addr_, src0.addr_ + count);
  if (rhs_addr != nullptr) {
    CheckUbAlign(api, "src1", rhs_addr);
    CheckUbRange(api, "src1", rhs_buf, rhs_addr, rhs_addr + count);
  }
  uint8_t* out = reinterpret_cast<uint8_t*>(dst.addr_);
  CheckUbRange(api, "dst", dst.buf_, out, out + count / 8);
  for (uint32_t byte = 0; byte < count / 8; ++byte) {
    uint8_t v = 0;
    for (int k = 0; k < 8; ++k)
      if (CompareValues(mode, src0.addr_[byte * 8 + k], rhs(byte * 8 + k))) v |= static_cast<uint8_t>(1u << k);
    out[byte] = v;
  }
  CountRepeats(api, CountFormRepeats(count, sizeof(T)));
}

inline bool MaskBit(const uint8_t* bits, uint64_t i) { return (bits[i >> 3] >> (i & 7)) & 1u; }

}  // namespace trex_emu

namespace AscendC {

template <class T, class U>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    uint32_t count) {
  const T* b = src1.addr_;
  trex_emu::CompareCount("Compare", dst, src0, count, [b](uint32_t i) { return b[i]; }, cmpMode, src1.buf_, src1.addr_);
}
template <class T, class U>
inline void Compares(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const typename trex_emu::Identity<T>::type src1Scalar,
                     CMPMODE cmpMode, uint32_t count) {
  const T s = src1Scalar;
  trex_emu::CompareCount("Compares", dst, src0, count, [s](uint32_t) { return s; }, cmpMode, nullptr, static_cast<const T*>(nullptr));
}
template <class T, class U>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0,
                          const typename trex_emu::Identity<T>::type src1Scalar, CMPMODE cmpMode, uint32_t count) {
  const T s = src1Scalar;
  trex_emu::CompareCount("CompareScalar", dst, src0, count, [s](uint32_t) { return s; }, cmpMode, nullptr, static_cast<const T*>(nullptr));
}

// Repeat form with a destination: each repeat writes 256/sizeof(T) bits, repeats packed contiguously.
template <class T, class U, bool isSetMask = true>
inline void Compare(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode,
                    uint64_t mask, const int32_t repeatTimes, const BinaryRepeatParams& p) {
  const char* api = "Compare";
  trex_emu::CheckCompareTypes<T>(cmpMode);
  trex_emu::CheckRepeat(api, repeatTimes);
  trex_emu::CheckUbAlign(api, "dst", dst.addr_);
  int repeat = repeatTimes;
  const int per = int(256 / sizeof(T));
  const auto m = trex_emu::ResolveMask<isSetMask>(api, mask, per, repeat);
  const auto oa = trex_emu::MakeOpnd(src0, p.src0BlkStride, p.src0RepStride, "src0");
  const auto ob = trex_emu::MakeOpnd(src1, p.src1BlkStride, p.src1RepStride, "src1");
  uint8_t* out = reinterpret_cast<uint8_t*>(dst.addr_);
  trex_emu::CheckUbRange(api, "dst", dst.buf_, out, out + int64_t(repeat) * per / 8);
  for (int r = 0; r < repeat; ++r)
    for (int i = 0; i < per; ++i) {
      uint8_t& byte = out[(int64_t(r) * per + i) / 8];
      const uint8_t bit = static_cast<uint8_t>(1u << (i & 7));
      if (m.Active(r, i) && trex_emu::CompareValues(cmpMode, *trex_emu::Checked(api, oa, r, i), *trex_emu::Checked(api, ob, r, i)))
        byte |= bit;
      else
        byte &= static_cast<uint8_t>(~bit);
    }
  trex_emu::CountRepeats(api, static_cast<uint64_t>(repeat));
}

// CompareScalar, tensor-scalar repeat form (asc-devkit Compare/CompareScalar page, 高维切分计算: mask as a count
// or as mask[2] bits, repeatTimes, UnaryRepeatParams for the source strides): like Compare's repeat form, each
// repeat writes 256/sizeof(T) bits, repeats packed contiguously; inactive elements' bits are 0.
template <class T, class U, bool isSetMask, class Mask>
inline void CompareScalarRepeat(const LocalTensor<U>& dst, const LocalTensor<T>& src0, const T scalar, CMPMODE cmpMode,
                                const Mask& mask, const int32_t repeatTimes, const UnaryRepeatParams& p) {
  const char* api = "CompareScalar";
  trex_emu::CheckCompareTypes<T>(cmpMode);
  trex_emu::CheckRepeat(api, repeatTimes);
  trex_emu::CheckUbAlign(api, "dst", dst.addr_);
  int repeat = repeatTimes;
  const int per = int(256 / sizeof(T));
  const auto m = trex_emu::ResolveMask<isSetMask>(api, mask, per, repeat);
  const auto oa = trex_emu::MakeOpnd(src0, p.srcBlkStride, p.srcRepStride, "src0");
  uint8_t* out = reinterpret_cast<uint8_t*>(dst.addr_);
  trex_emu::CheckUbRange(api, "dst", dst.buf_, out, out + int64_t(repeat) * per / 8);
  for (int r = 0; r < repeat; ++r)
    for (int i = 0; i < per; ++i) {
      uint8_t& byte = out[(int64_t(r) * per + i) / 8];
      const uint8_t bit = static_cast<uint8_t>(1u << (i & 7));
      if (m.Active(r, i) && trex_emu::CompareValues(cmpMode, *trex_emu::Checked(api, oa, r, i), scalar))
        byte |= bit;
      else
        byte &= static_cast<uint8_t>(~bit);
    }
  trex_emu::CountRepeats(api, static_cast<uint64_t>(repeat));
}
template <class T, class U, bool isSetMask = true>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0,
                          const typename trex_emu::Identity<T>::type src1Scalar, CMPMODE cmpMode, const uint64_t mask[],
                          const int32_t repeatTimes, const UnaryRepeatParams& repeatParams) {
  CompareScalarRepeat<T, U, isSetMask>(dst, src0, T(src1Scalar), cmpMode, mask, repeatTimes, repeatParams);
}
template <class T, class U, bool isSetMask = true>
inline void CompareScalar(const LocalTensor<U>& dst, const LocalTensor<T>& src0,
                          const typename trex_emu::Identity<T>::type src1Scalar, CMPMODE cmpMode, const uint64_t mask,
                          const int32_t repeatTimes, const UnaryRepeatParams& repeatParams) {
  CompareScalarRepeat<T, U, isSetMask>(dst, src0, T(src1Scalar), cmpMode, mask, repeatTimes, repeatParams);
}

// Register form: one repeat, result bits go to the CMPMASK register (used by Select mode 0 / GetCmpMask).
template <class T, bool isSetMask = true>
inline void Compare(const LocalTensor<T>& src0, const LocalTensor<T>& src1, CMPMODE cmpMode, uint64_t mask,
                    const BinaryRepeatParams& p) {
  const char* api = "Compare";
  trex_emu::CheckCompareTypes<T>(cmpMode);
  int repeat = 1;
  const int per = int(256 / sizeof(T));
  const auto m = trex_emu::ResolveMask<isSetMask>(api, mask, per, repeat);
  const auto oa = trex_emu::MakeOpnd(src0, p.src0BlkStride, p.src0RepStride, "src0");
  const auto ob = trex_emu::MakeOpnd(src1, p.src1BlkStride, p.src1RepStride, "src1");
  uint8_t* reg = trex_emu::RT().cmp_mask;
  std::memset(reg, 0, 16);
  for (int i = 0; i < per; ++i)
    if (m.Active(0, i) && trex_emu::CompareValues(cmpMode, *trex_emu::Checked(api, oa, 0, i), *trex_emu::Checked(api, ob, 0, i)))
      reg[i / 8] |= static_cast<uint8_t>(1u << (i & 7));
  trex_emu::CountRepeats(api, 1);
}
template <class T>
inline void GetCmpMask(const LocalTensor<T>& dst) {
  trex_emu::CheckUbRange("GetCmpMask", "dst", dst.buf_, dst.addr_, reinterpret_cast<uint8_t*>(dst.addr_) + 16);
  std::memcpy(dst.addr_, trex_emu::RT().cmp_mask, 16);
}
template <class T>
inline void SetCmpMask(const LocalTensor<T>& src) {
  trex_emu::CheckUbRange("SetCmpMask", "src", src.buf_, src.addr_, reinterpret_cast<uint8_t*>(src.addr_) + 16);
  std::memcpy(trex_emu::RT().cmp_mask, src.addr_, 16);
}

// Select: dst[i] = bit(i) ? src0[i] : src1[i] (or the scalar). Bit source per mode:
//   VSEL_CMPMASK_SPR        : the first 256/sizeof(T) bits of selMask, reused for every repeat;
//   VSEL_TENSOR_TENSOR_MODE : bit i of selMask (consecutive over the whole count);
//   VSEL_TENSOR_SCALAR_MODE : bit i of selMask, src1 is a scalar.
template <class T, class U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint32_t count) {
  static_assert(trex_emu::kFloatTypes<T>, "Select supports half and float only on Atlas A2/A3");
  const char* api = "Select";
  if (selMode == SELMODE::VSEL_TENSOR_SCALAR_MODE)
    trex_emu::Fail(api, ": SELMODE::VSEL_TENSOR_SCALAR_MODE takes a scalar src1, but a tensor was passed");
  const int per = int(256 / sizeof(T));
  const uint8_t* bits = reinterpret_cast<const uint8_t*>(selMask.addr_);
  const uint64_t mask_bits = selMode == SELMODE::VSEL_CMPMASK_SPR ? uint64_t(per) : uint64_t(count);
  trex_emu::CheckUbAlign(api, "selMask", bits);
  trex_emu::CheckUbRange(api, "selMask", selMask.buf_, bits, bits + (mask_bits + 7) / 8);
  trex_emu::CheckUbAlign(api, "src1", src1.addr_);
  trex_emu::CheckUbRange(api, "src1", src1.buf_, src1.addr_, src1.addr_ + count);
  trex_emu::CheckCount(api, count);
  trex_emu::CheckUbAlign(api, "dst", dst.addr_);
  trex_emu::CheckUbAlign(api, "src0", src0.addr_);
  trex_emu::CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + count);
  trex_emu::CheckUbRange(api, "src0", src0.buf_, src0.addr_, src0.addr_ + count);
  const bool spr = selMode == SELMODE::VSEL_CMPMASK_SPR;
  T* d = dst.addr_;
  const T* a = src0.addr_;
  const T* b = src1.addr_;
  for (uint32_t i = 0; i < count; ++i) d[i] = trex_emu::MaskBit(bits, spr ? i % per : i) ? a[i] : b[i];
  trex_emu::CountRepeats(api, trex_emu::CountFormRepeats(count, sizeof(T)));
}
template <class T, class U>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const typename trex_emu::Identity<T>::type src1, SELMODE selMode, uint32_t count) {
  static_assert(trex_emu::kFloatTypes<T>, "Select supports half and float only on Atlas A2/A3");
  const char* api = "Select";
  if (selMode != SELMODE::VSEL_TENSOR_SCALAR_MODE)
    trex_emu::Fail(api, ": a scalar src1 needs SELMODE::VSEL_TENSOR_SCALAR_MODE");
  const uint8_t* bits = reinterpret_cast<const uint8_t*>(selMask.addr_);
  trex_emu::CheckUbAlign(api, "selMask", bits);
  trex_emu::CheckUbRange(api, "selMask", selMask.buf_, bits, bits + (uint64_t(count) + 7) / 8);
  const T s = src1;
  trex_emu::CheckCount(api, count);
  trex_emu::CheckUbAlign(api, "dst", dst.addr_);
  trex_emu::CheckUbAlign(api, "src0", src0.addr_);
  trex_emu::CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + count);
  trex_emu::CheckUbRange(api, "src0", src0.buf_, src0.addr_, src0.addr_ + count);
  T* d = dst.addr_;
  const T* a = src0.addr_;
  for (uint32_t i = 0; i < count; ++i) d[i] = trex_emu::MaskBit(bits, i) ? a[i] : s;
  trex_emu::CountRepeats(api, trex_emu::CountFormRepeats(count, sizeof(T)));
}

// Repeat form, tensor-tensor modes.
template <class T, class U, bool isSetMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<U>& selMask, const LocalTensor<T>& src0,
                   const LocalTensor<T>& src1, SELMODE selMode, uint64_t mask, const int32_t repeatTimes,
                   const BinaryRepeatParams& p) {
  static_assert(trex_emu::kFloatTypes<T>, "Select supports half and float only on Atlas A2/A3");
  const char* api = "Select";
  int repeat = repeatTimes;
  const int per = int(256 / sizeof(T));
  const auto m = trex_emu::ResolveMask<isSetMask>(api, mask, per, repeat);
  const uint8_t* bits = reinterpret_cast<const uint8_t*>(selMask.addr_);
  const bool spr = selMode == SELMODE::VSEL_CMPMASK_SPR;
  if (selMode == SELMODE::VSEL_TENSOR_SCALAR_MODE)
    trex_emu::Fail(api, ": SELMODE::VSEL_TENSOR_SCALAR_MODE takes a scalar src1, but a tensor was passed");
  trex_emu::CheckUbRange(api, "selMask", selMask.buf_, bits, bits + (spr ? per : int64_t(repeat) * per) / 8);
  // Select lanes first (the mask is read before dst is written), then run the engine.
  std::vector<uint8_t> lane(size_t(repeat) * per);
  for (int r = 0; r < repeat; ++r)
    for (int i = 0; i < per; ++i) lane[size_t(r) * per + i] = trex_emu::MaskBit(bits, spr ? i : uint64_t(r) * per + i);
  const auto od = trex_emu::MakeOpnd(dst, p.dstBlkStride, p.dstRepStride, "dst");
  const auto oa = trex_emu::MakeOpnd(src0, p.src0BlkStride, p.src0RepStride, "src0");
  const auto ob = trex_emu::MakeOpnd(src1, p.src1BlkStride, p.src1RepStride, "src1");
  trex_emu::CheckRepeat(api, repeat);
  for (int r = 0; r < repeat; ++r) {
    T out[128];
    for (int i = 0; i < per; ++i)
      if (m.Active(r, i)) out[i] = lane[size_t(r) * per + i] ? *trex_emu::Checked(api, oa, r, i) : *trex_emu::Checked(api, ob, r, i);
    for (int i = 0; i < per; ++i)
      if (m.Active(r, i)) *trex_emu::Checked(api, od, r, i) = out[i];
  }
  trex_emu::CountRepeats(api, static_cast<uint64_t>(repeat));
}

}  // namespace AscendC
