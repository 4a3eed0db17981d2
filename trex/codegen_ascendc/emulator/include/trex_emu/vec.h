// trex AscendC emulator: vector instructions (UB -> UB), in count form and mask/repeat form.
//
// Semantics follow asc-devkit's "Memory矢量计算" pages for Atlas A2/A3:
//  * one repeat = 256 bytes = 8 data blocks of 32 B; block strides and repeat strides are in 32 B blocks;
//  * when source and destination widths differ (Cast), a repeat holds 256 / sizeof(wider type) elements;
//  * repeat-form instructions execute repeat by repeat: all inputs of repeat r are read before its
//    outputs are written, and repeat r+1 sees repeat r's writes (this is what the documented
//    accumulate trick `Add(work, src, work, ..., {dstRep 0, src1Rep 0})` relies on);
//  * half arithmetic is computed in float and rounded to half once (exact IEEE half results for
//    + - * / sqrt); transcendental functions use the host libm in float, not the NPU's units;
//  * Max/Min/Relu propagate NaN (not documented for the NPU; chosen to match torch).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "trex_emu/float16.h"
#include "trex_emu/runtime.h"
#include "trex_emu/tensor.h"

namespace AscendC {

struct BinaryRepeatParams {
  BinaryRepeatParams() = default;
  BinaryRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t src0BlkStrideIn, const uint8_t src1BlkStrideIn,
                     const uint8_t dstRepStrideIn, const uint8_t src0RepStrideIn, const uint8_t src1RepStrideIn)
      : dstBlkStride(dstBlkStrideIn), src0BlkStride(src0BlkStrideIn), src1BlkStride(src1BlkStrideIn),
        dstRepStride(dstRepStrideIn), src0RepStride(src0RepStrideIn), src1RepStride(src1RepStrideIn) {}
  uint32_t blockNumber = 8;
  uint8_t dstBlkStride = 1, src0BlkStride = 1, src1BlkStride = 1;
  uint8_t dstRepStride = 8, src0RepStride = 8, src1RepStride = 8;
  bool repeatStrideMode = false, strideSizeMode = false;
};

struct UnaryRepeatParams {
  UnaryRepeatParams() = default;
  UnaryRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t srcBlkStrideIn, const uint8_t dstRepStrideIn,
                    const uint8_t srcRepStrideIn)
      : dstBlkStride(dstBlkStrideIn), srcBlkStride(srcBlkStrideIn), dstRepStride(dstRepStrideIn),
        srcRepStride(srcRepStrideIn) {}
  uint32_t blockNumber = 8;
  uint16_t dstBlkStride = 1, srcBlkStride = 1;
  uint8_t dstRepStride = 8, srcRepStride = 8;
  bool repeatStrideMode = false, strideSizeMode = false;
};

struct BrcbRepeatParams {
  BrcbRepeatParams() = default;
  BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
      : dstBlkStride(dstBlkStrideIn), dstRepStride(dstRepStrideIn) {}
  uint32_t blockNumber = 8;
  uint16_t dstBlkStride = 1, dstRepStride = 8;
};

struct CopyRepeatParams {
  CopyRepeatParams() = default;
  CopyRepeatParams(const uint16_t dstStrideIn, const uint16_t srcStrideIn, uint16_t dstRepeatSizeIn, uint16_t srcRepeatSizeIn)
      : dstStride(dstStrideIn), srcStride(srcStrideIn), dstRepeatSize(dstRepeatSizeIn), srcRepeatSize(srcRepeatSizeIn) {}
  uint16_t dstStride = 1, srcStride = 1;
  uint16_t dstRepeatSize = 8, srcRepeatSize = 8;
};

enum class CMPMODE : uint8_t { LT = 0, GT, EQ, LE, GE, NE };
enum class SELMODE : uint8_t { VSEL_CMPMASK_SPR = 0, VSEL_TENSOR_SCALAR_MODE, VSEL_TENSOR_TENSOR_MODE };
enum class ReduceOrder : uint8_t { ORDER_VALUE_INDEX = 0, ORDER_INDEX_VALUE, ORDER_ONLY_VALUE, ORDER_ONLY_INDEX };
enum class ReduceType : uint8_t { SUM = 0, MAX, MIN };
enum class MaskMode : uint8_t { NORMAL = 0, COUNTER };

constexpr uint64_t MASK_PLACEHOLDER = 0;

// ---- vector mask register (for isSetMask = false calls) ----
inline void SetMaskCount() { trex_emu::RT().mask_counter_mode = true; }
inline void SetMaskNorm() { trex_emu::RT().mask_counter_mode = false; }
template <class T, MaskMode MODE = MaskMode::NORMAL>
inline void SetVectorMask(const uint64_t maskHigh, const uint64_t maskLow) {
  auto& rt = trex_emu::RT();
  if (MODE == MaskMode::COUNTER || rt.mask_counter_mode) {
    rt.mask_count = maskLow;
  } else {
    rt.mask_bits[0] = maskLow;
    rt.mask_bits[1] = maskHigh;
  }
}
template <class T, MaskMode MODE = MaskMode::NORMAL>
inline void SetVectorMask(int32_t len) {
  auto& rt = trex_emu::RT();
  if (MODE == MaskMode::COUNTER || rt.mask_counter_mode) {
    rt.mask_count = static_cast<uint64_t>(len);
    return;
  }
  const int n = len < 0 ? 0 : (len > 128 ? 128 : len);
  rt.mask_bits[0] = n >= 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1);
  rt.mask_bits[1] = n <= 64 ? 0 : (n >= 128 ? ~uint64_t{0} : ((uint64_t{1} << (n - 64)) - 1));
}
inline void ResetMask() {
  auto& rt = trex_emu::RT();
  rt.mask_bits[0] = rt.mask_bits[1] = ~uint64_t{0};
}

}  // namespace AscendC

namespace trex_emu {

using AscendC::LocalTensor;

// The state an advanced API (Exp, Erf, Mean, Select, BroadCast) leaves on the NPU: its shared tmp buffer
// holds garbage (scribbled, so a kernel that reads it afterwards is caught), the vector mask is back in
// normal mode with every lane on, and its vector work counts as `repeats` of `api`.
inline void EndAdvancedApi(const char* api, uint8_t* scratch, size_t scratch_bytes, uint64_t repeats) {
  if (scratch != nullptr && scratch_bytes) std::memset(scratch, RT().ub_fill, scratch_bytes);
  Runtime& rt = RT();
  rt.mask_counter_mode = false;
  rt.mask_bits[0] = rt.mask_bits[1] = ~uint64_t{0};
  CountRepeats(api, repeats);
}
inline void EndAdvancedApi(const char* api, const LocalTensor<uint8_t>* tmp, uint64_t repeats) {
  EndAdvancedApi(api, tmp != nullptr ? tmp->addr_ : nullptr, tmp != nullptr ? tmp->GetSize() : 0, repeats);
}

template <class T>
struct Identity {
  using type = T;
};

// Element-type support sets of the A2/A3 vector unit (asc-devkit API tables).
template <class T, class... Us>
constexpr bool kOneOf = (std::is_same<T, Us>::value || ...);
template <class T>
constexpr bool kArithTypes = kOneOf<T, int16_t, half, int32_t, float>;  // Add/Sub/Mul/Max/Min, Adds/Muls/Maxs/Mins
template <class T>
constexpr bool kFloatTypes = kOneOf<T, half, float>;  // Div, Exp, Ln, Sqrt, Rsqrt, Reciprocal, Abs, reductions
template <class T>
constexpr bool kReluTypes = kOneOf<T, half, int32_t, float>;
template <class T>
constexpr bool kLogicTypes = kOneOf<T, int16_t, uint16_t>;
template <class T>
constexpr bool kShiftTypes = kOneOf<T, int16_t, uint16_t, int32_t, uint32_t>;  // ShiftLeft/ShiftRight
template <class T>
constexpr bool kFillTypes = kOneOf<T, int16_t, uint16_t, half, bfloat16_t, int32_t, uint32_t, float>;  // Duplicate/Brcb
template <class T>
constexpr bool kAnyTypes = true;

// Which elements of a repeat take part: a 128-bit mask, or (counter mode) the first `count` elements overall.
struct RepeatMask {
  uint64_t bits[2] = {0, 0};
  bool counter = false;
  uint64_t count = 0;
  int per = 0;
  bool Active(int r, int i) const {
    if (counter) return uint64_t(r) * per + i < count;
    return (bits[i >> 6] >> (i & 63)) & 1u;
  }
  bool Any() const { return counter ? count > 0 : (bits[0] | bits[1]) != 0; }
};

template <class T>
inline const char* TypeName();

inline RepeatMask ContinuousMask(const char* api, uint64_t mask, int per) {
  if (mask > static_cast<uint64_t>(per))
    Fail(api, ": continuous mask=", mask, " exceeds the ", per, " elements of one repeat for this data type");
  RepeatMask m;
  m.per = per;
  const int n = static_cast<int>(mask);
  m.bits[0] = n >= 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1);
  m.bits[1] = n <= 64 ? 0 : (n >= 128 ? ~uint64_t{0} : ((uint64_t{1} << (n - 64)) - 1));
  return m;
}
inline RepeatMask BitMask(const char* api, const uint64_t mask[], int per) {
  RepeatMask m;
  m.per = per;
  m.bits[0] = mask[0];
  m.bits[1] = per > 64 ? mask[1] : 0;
  if (per <= 64 && mask[1] != 0)
    Fail(api, ": bit mask high word must be 0 for 32-bit types (one repeat holds only 64 elements)");
  return m;
}
// isSetMask=false: the mask comes from SetVectorMask; in counter mode the repeat count follows from it.
inline RepeatMask RegisterMask(int per, int& repeat) {
  const Runtime& rt = RT();
  RepeatMask m;
  m.per = per;
  if (rt.mask_counter_mode) {
    m.counter = true;
    m.count = rt.mask_count;
    repeat = static_cast<int>((rt.mask_count + per - 1) / per);
  } else {
    m.bits[0] = rt.mask_bits[0];
    m.bits[1] = per > 64 ? rt.mask_bits[1] : 0;
  }
  return m;
}
template <bool isSetMask>
inline RepeatMask ResolveMask(const char* api, uint64_t mask, int per, int& repeat) {
  if (!isSetMask) return RegisterMask(per, repeat);
  return ContinuousMask(api, mask, per);
}
template <bool isSetMask>
inline RepeatMask ResolveMask(const char* api, const uint64_t mask[], int per, int& repeat) {
  if (!isSetMask) return RegisterMask(per, repeat);
  return BitMask(api, mask, per);
}

// One operand of a repeat-form instruction.
template <class T>
struct Opnd {
  T* base;
  int64_t blk, rep;  // in 32-byte blocks
  const BufferInfo* buf;
  const char* name;
  T* At(int r, int i) const {
    constexpr int64_t epb = 32 / static_cast<int64_t>(sizeof(T));
    return base + r * rep * epb + (i / epb) * blk * epb + (i % epb);
  }
};
template <class T>
inline Opnd<T> MakeOpnd(const LocalTensor<T>& t, int64_t blk, int64_t rep, const char* name) {
  return Opnd<T>{t.addr_, blk, rep, t.buf_, name};
}
template <class T>
inline T* Checked(const char* api, const Opnd<T>& o, int r, int i) {
  T* p = o.At(r, i);
  CheckUbRange(api, o.name, o.buf, p, p + 1);
  return p;
}

// Computation in float for float-like types and in int64 for integers, then converted back.
template <class T>
using Calc = std::conditional_t<kIsFloatLike<T>, float, int64_t>;
template <class T>
inline Calc<T> Up(T v) {
  if constexpr (kIsFloatLike<T>) return ToF(v);
  else return static_cast<int64_t>(v);
}
template <class T, class V>
inline T Down(V v) {
  if constexpr (kIsFloatLike<T>) return FromF<T>(static_cast<float>(v));
  else return static_cast<T>(static_cast<uint64_t>(static_cast<int64_t>(v)));
}

// AscendC's general address-overlap rule for vector instructions: a source may alias the destination
// only if both start at the same address (100% overlap); a shifted overlap makes repeat N read what
// repeat N-1 wrote, which the NPU does not define. (Widening Cast is checked separately: the
// documented in-place trick keeps the 16-bit source in the upper half of the float destination.)
template <class TD, class TS>
inline void CheckOverlap(const char* api, const char* operand, const TD* d, int64_t nd, const TS* s, int64_t ns) {
  const uint8_t* db = reinterpret_cast<const uint8_t*>(d);
  const uint8_t* de = reinterpret_cast<const uint8_t*>(d + nd);
  const uint8_t* sb = reinterpret_cast<const uint8_t*>(s);
  const uint8_t* se = reinterpret_cast<const uint8_t*>(s + ns);
  if (db == sb || de <= sb || se <= db) return;
  Fail(api, ": dst UB bytes [", RT().UbOffset(db), ", ", RT().UbOffset(de), ") partially overlap ", operand, " [",
       RT().UbOffset(sb), ", ", RT().UbOffset(se), "); AscendC allows aliasing only when both start at the same "
       "address. Use a separate buffer");
}

// ---- generic engines ----
// Count form, elementwise: dst[i] = f(src0[i], src1[i], dst[i]).
template <class T, class F>
inline void BinaryCount(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& s0, const LocalTensor<T>& s1,
                        int64_t count, F f) {
  CheckCount(api, count);
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src0", s0.addr_);
  CheckUbAlign(api, "src1", s1.addr_);
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + count);
  CheckUbRange(api, "src0", s0.buf_, s0.addr_, s0.addr_ + count);
  CheckUbRange(api, "src1", s1.buf_, s1.addr_, s1.addr_ + count);
  CheckOverlap(api, "src0", dst.addr_, count, s0.addr_, count);
  CheckOverlap(api, "src1", dst.addr_, count, s1.addr_, count);
  T* d = dst.addr_;
  const T* a = s0.addr_;
  const T* b = s1.addr_;
  for (int64_t i = 0; i < count; ++i) d[i] = Down<T>(f(Up(a[i]), Up(b[i]), Up(d[i])));
  CountRepeats(api, CountFormRepeats(count, sizeof(T)));
}

template <class T, class F>
inline void BinaryRepeat(const char* api, const LocalTensor<T>& dst, const LocalTensor<T>& s0, const LocalTensor<T>& s1,
                         const RepeatMask& m, int repeat, const AscendC::BinaryRepeatParams& p, F f) {
  CheckRepeat(api, repeat);
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src0", s0.addr_);
  CheckUbAlign(api, "src1", s1.addr_);
  const int per = static_cast<int>(kRepeatBytes / sizeof(T));
  const Opnd<T> od = MakeOpnd(dst, p.dstBlkStride, p.dstRepStride, "dst");
  const Opnd<T> oa = MakeOpnd(s0, p.src0BlkStride, p.src0RepStride, "src0");
  const Opnd<T> ob = MakeOpnd(s1, p.src1BlkStride, p.src1RepStride, "src1");
  Calc<T> va[128], vb[128], vd[128];
  for (int r = 0; r < repeat; ++r) {
    for (int i = 0; i < per; ++i)
      if (m.Active(r, i)) {
        va[i] = Up(*Checked(api, oa, r, i));
        vb[i] = Up(*Checked(api, ob, r, i));
        vd[i] = Up(*Checked(api, od, r, i));
      }
    for (int i = 0; i < per; ++i)
      if (m.Active(r, i)) *od.At(r, i) = Down<T>(f(va[i], vb[i], vd[i]));
  }
  CountRepeats(api, static_cast<uint64_t>(repeat));
}

// Count form unary with possibly different types: dst[i] = f(src[i]) (f maps TS -> TD value).
template <class TD, class TS, class F>
inline void UnaryCount(const char* api, const LocalTensor<TD>& dst, const LocalTensor<TS>& src, int64_t count, F f) {
  CheckCount(api, count);
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src", src.addr_);
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + count);
  CheckUbRange(api, "src", src.buf_, src.addr_, src.addr_ + count);
  if (sizeof(TD) <= sizeof(TS)) CheckOverlap(api, "src", dst.addr_, count, src.addr_, count);
  else if (reinterpret_cast<const uint8_t*>(src.addr_) < reinterpret_cast<const uint8_t*>(dst.addr_ + count) &&
           reinterpret_cast<const uint8_t*>(dst.addr_) < reinterpret_cast<const uint8_t*>(src.addr_ + count) &&
           reinterpret_cast<const uint8_t*>(src.addr_) < reinterpret_cast<const uint8_t*>(dst.addr_) +
                                                             (reinterpret_cast<const uint8_t*>(src.addr_ + count) -
                                                              reinterpret_cast<const uint8_t*>(src.addr_)))
    // widening in place: safe only while every source element is read before it is overwritten, i.e.
    // the source starts at least count*sizeof(TS) bytes into the destination (upper-half layout).
    Fail(api, ": widening in place needs the ", sizeof(TS) * 8, "-bit source to start at least ",
         uint64_t(count) * sizeof(TS), " bytes after the destination (the documented upper-half layout)");
  TD* d = dst.addr_;
  const TS* s = src.addr_;
  // Ascending order: keeps the documented in-place widening Cast (16-bit input in the upper half of
  // the float buffer) correct, as on the NPU.
  for (int64_t i = 0; i < count; ++i) d[i] = f(s[i], d[i]);
  CountRepeats(api, CountFormRepeats(count, sizeof(TD) > sizeof(TS) ? sizeof(TD) : sizeof(TS)));
}

template <class TD, class TS, class F>
inline void UnaryRepeat(const char* api, const LocalTensor<TD>& dst, const LocalTensor<TS>& src, const RepeatMask& m,
                        int repeat, int64_t dstBlk, int64_t srcBlk, int64_t dstRep, int64_t srcRep, F f,
                        const char* src_name = "src") {  // "dst" when the source is the destination itself
  CheckRepeat(api, repeat);
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src", src.addr_);
  const int per = static_cast<int>(kRepeatBytes / (sizeof(TD) > sizeof(TS) ? sizeof(TD) : sizeof(TS)));
  const Opnd<TD> od = MakeOpnd(dst, dstBlk, dstRep, "dst");
  const Opnd<TS> os = MakeOpnd(src, srcBlk, srcRep, src_name);
  TS vs[128];
  TD vd[128];
  for (int r = 0; r < repeat; ++r) {
    for (int i = 0; i < per; ++i)
      if (m.Active(r, i)) {
        vs[i] = *Checked(api, os, r, i);
        vd[i] = *Checked(api, od, r, i);
      }
    for (int i = 0; i < per; ++i)
      if (m.Active(r, i)) *od.At(r, i) = f(vs[i], vd[i]);
  }
  CountRepeats(api, static_cast<uint64_t>(repeat));
}

// Same-type unary through Calc: dst = g(src).
template <class T, class G>
inline auto SameType(G g) {
  return [g](T s, T d) { return Down<T>(g(Up(s), Up(d))); };
}

template <class V>
inline V NanMax(V a, V b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}
template <class V>
inline V NanMin(V a, V b) {
  if (a != a) return a;
  if (b != b) return b;
  return a < b ? a : b;
}

}  // namespace trex_emu

// Defines the count form, the continuous-mask repeat form and the bit-mask repeat form of a binary op.
// EXPR uses a, b (inputs) and d (current dst value, for ops that accumulate into dst).
#define TREX_EMU_BINARY(NAME, TYPES, EXPR)                                                                        \
  template <class T>                                                                                               \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,              \
                   const int32_t& count) {                                                                         \
    static_assert(trex_emu::TYPES<T>, #NAME ": element type not supported by this instruction on Atlas A2/A3 "    \
                                            "(bfloat16_t must be Cast to float first)");                           \
    trex_emu::BinaryCount(#NAME, dst, src0, src1, count, [](auto a, auto b, auto d) { (void)d; return EXPR; });   \
  }                                                                                                                \
  template <class T, bool isSetMask = true>                                                                        \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,              \
                   uint64_t mask, const int32_t repeatTimes, const BinaryRepeatParams& repeatParams) {             \
    static_assert(trex_emu::TYPES<T>, #NAME ": element type not supported by this instruction on Atlas A2/A3");    \
    int repeat = repeatTimes;                                                                                      \
    const auto m = trex_emu::ResolveMask<isSetMask>(#NAME, mask, int(256 / sizeof(T)), repeat);                    \
    trex_emu::BinaryRepeat(#NAME, dst, src0, src1, m, repeat, repeatParams,                                        \
                           [](auto a, auto b, auto d) { (void)d; return EXPR; });                                  \
  }                                                                                                                \
  template <class T, bool isSetMask = true>                                                                        \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,              \
                   const uint64_t mask[], const int32_t repeatTimes, const BinaryRepeatParams& repeatParams) {     \
    static_assert(trex_emu::TYPES<T>, #NAME ": element type not supported by this instruction on Atlas A2/A3");    \
    int repeat = repeatTimes;                                                                                      \
    const auto m = trex_emu::ResolveMask<isSetMask>(#NAME, mask, int(256 / sizeof(T)), repeat);                    \
    trex_emu::BinaryRepeat(#NAME, dst, src0, src1, m, repeat, repeatParams,                                        \
                           [](auto a, auto b, auto d) { (void)d; return EXPR; });                                  \
  }

// Unary op (same type). EXPR uses a (input, Calc type).
#define TREX_EMU_UNARY(NAME, TYPES, EXPR)                                                                         \
  template <class T>                                                                                               \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const int32_t& count) {                   \
    static_assert(trex_emu::TYPES<T>, #NAME ": element type not supported by this instruction on Atlas A2/A3 "    \
                                            "(bfloat16_t must be Cast to float first)");                           \
    trex_emu::UnaryCount(#NAME, dst, src, count, trex_emu::SameType<T>([](auto a, auto) { return EXPR; }));        \
  }                                                                                                                \
  template <class T, bool isSetMask = true>                                                                        \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint64_t mask, const int32_t repeatTimes, \
                   const UnaryRepeatParams& p) {                                                                   \
    static_assert(trex_emu::TYPES<T>, #NAME ": element type not supported by this instruction on Atlas A2/A3");    \
    int repeat = repeatTimes;                                                                                      \
    const auto m = trex_emu::ResolveMask<isSetMask>(#NAME, mask, int(256 / sizeof(T)), repeat);                    \
    trex_emu::UnaryRepeat(#NAME, dst, src, m, repeat, p.dstBlkStride, p.srcBlkStride, p.dstRepStride,              \
                          p.srcRepStride, trex_emu::SameType<T>([](auto a, auto) { return EXPR; }));               \
  }                                                                                                                \
  template <class T, bool isSetMask = true>                                                                        \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint64_t mask[],                    \
                   const int32_t repeatTimes, const UnaryRepeatParams& p) {                                        \
    static_assert(trex_emu::TYPES<T>, #NAME ": element type not supported by this instruction on Atlas A2/A3");    \
    int repeat = repeatTimes;                                                                                      \
    const auto m = trex_emu::ResolveMask<isSetMask>(#NAME, mask, int(256 / sizeof(T)), repeat);                    \
    trex_emu::UnaryRepeat(#NAME, dst, src, m, repeat, p.dstBlkStride, p.srcBlkStride, p.dstRepStride,              \
                          p.srcRepStride, trex_emu::SameType<T>([](auto a, auto) { return EXPR; }));               \
  }

// Tensor-scalar op. EXPR uses a (input), s (scalar, already rounded to T) and d (current dst).
#define TREX_EMU_SCALAR(NAME, TYPES, EXPR)                                                                        \
  template <class T>                                                                                               \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,                                           \
                   const typename trex_emu::Identity<T>::type& scalarValue, const int32_t& count) {                \
    static_assert(trex_emu::TYPES<T>, #NAME ": element type not supported by this instruction on Atlas A2/A3 "    \
                                            "(bfloat16_t must be Cast to float first)");                           \
    const auto s = trex_emu::Up<T>(scalarValue);                                                                   \
    trex_emu::UnaryCount(#NAME, dst, src, count, trex_emu::SameType<T>([s](auto a, auto d) {                       \
                           (void)d;                                                                                \
                           return EXPR;                                                                            \
                         }));                                                                                      \
  }                                                                                                                \
  template <class T, bool isSetMask = true>                                                                        \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,                                           \
                   const typename trex_emu::Identity<T>::type& scalarValue, uint64_t mask,                         \
                   const int32_t repeatTimes, const UnaryRepeatParams& p) {                                        \
    static_assert(trex_emu::TYPES<T>, #NAME ": element type not supported by this instruction on Atlas A2/A3");    \
    int repeat = repeatTimes;                                                                                      \
    const auto m = trex_emu::ResolveMask<isSetMask>(#NAME, mask, int(256 / sizeof(T)), repeat);                    \
    const auto s = trex_emu::Up<T>(scalarValue);                                                                   \
    trex_emu::UnaryRepeat(#NAME, dst, src, m, repeat, p.dstBlkStride, p.srcBlkStride, p.dstRepStride,              \
                          p.srcRepStride, trex_emu::SameType<T>([s](auto a, auto d) {                              \
                            (void)d;                                                                               \
                            return EXPR;                                                                           \
                          }));                                                                                     \
  }                                                                                                                \
  template <class T, bool isSetMask = true>                                                                        \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src,                                           \
                   const typename trex_emu::Identity<T>::type& scalarValue, const uint64_t mask[],                 \
                   const int32_t repeatTimes, const UnaryRepeatParams& p) {                                        \
    static_assert(trex_emu::TYPES<T>, #NAME ": element type not supported by this instruction on Atlas A2/A3");    \
    int repeat = repeatTimes;                                                                                      \
    const auto m = trex_emu::ResolveMask<isSetMask>(#NAME, mask, int(256 / sizeof(T)), repeat);                    \
    const auto s = trex_emu::Up<T>(scalarValue);                                                                   \
    trex_emu::UnaryRepeat(#NAME, dst, src, m, repeat, p.dstBlkStride, p.srcBlkStride, p.dstRepStride,              \
                          p.srcRepStride, trex_emu::SameType<T>([s](auto a, auto d) {                              \
                            (void)d;                                                                               \
                            return EXPR;                                                                           \
                          }));                                                                                     \
  }

namespace AscendC {

// ---- binary ----
TREX_EMU_BINARY(Add, kArithTypes, a + b)
TREX_EMU_BINARY(Sub, kArithTypes, a - b)
TREX_EMU_BINARY(Mul, kArithTypes, a * b)
TREX_EMU_BINARY(Div, kFloatTypes, a / b)
TREX_EMU_BINARY(Max, kArithTypes, trex_emu::NanMax(a, b))
TREX_EMU_BINARY(Min, kArithTypes, trex_emu::NanMin(a, b))
TREX_EMU_BINARY(And, kLogicTypes, a & b)
TREX_EMU_BINARY(Or, kLogicTypes, a | b)
TREX_EMU_BINARY(AddRelu, kArithTypes, trex_emu::NanMax(a + b, decltype(a)(0)))
TREX_EMU_BINARY(SubRelu, kArithTypes, trex_emu::NanMax(a - b, decltype(a)(0)))
// FusedMulAdd: dst = src0 * dst + src1;  MulAddDst: dst = src0 * src1 + dst (each op rounded separately).
TREX_EMU_BINARY(FusedMulAdd, kFloatTypes, decltype(a)(trex_emu::Down<T>(a * d)) + b)
TREX_EMU_BINARY(MulAddDst, kFloatTypes, decltype(a)(trex_emu::Down<T>(a * b)) + d)

// ---- unary ----
TREX_EMU_UNARY(Exp, kFloatTypes, std::exp(a))
TREX_EMU_UNARY(Ln, kFloatTypes, std::log(a))
TREX_EMU_UNARY(Abs, kFloatTypes, std::fabs(a))
TREX_EMU_UNARY(Sqrt, kFloatTypes, std::sqrt(a))
TREX_EMU_UNARY(Rsqrt, kFloatTypes, 1.0f / std::sqrt(a))
TREX_EMU_UNARY(Reciprocal, kFloatTypes, 1.0f / a)
TREX_EMU_UNARY(Relu, kReluTypes, trex_emu::NanMax(a, decltype(a)(0)))
TREX_EMU_UNARY(Not, kLogicTypes, ~a)

// ---- tensor-scalar ----
TREX_EMU_SCALAR(Adds, kArithTypes, a + s)
TREX_EMU_SCALAR(Muls, kArithTypes, a * s)
TREX_EMU_SCALAR(Maxs, kArithTypes, trex_emu::NanMax(a, s))
TREX_EMU_SCALAR(Mins, kArithTypes, trex_emu::NanMin(a, s))
TREX_EMU_SCALAR(LeakyRelu, kFloatTypes, (a >= 0 || a != a) ? a : a * s)
// Axpy: dst = src * scalar + dst
TREX_EMU_SCALAR(Axpy, kFloatTypes, decltype(a)(trex_emu::Down<T>(a * s)) + d)
// Axpy<T, U>(dst, src, scalar, count) (Memory矢量计算/Axpy): the page's A2/A3 combinations are src/scalar/dst
// half/half/half, float/float/float and half/half/float; the mixed one computes in float and forbids any
// overlap of src and dst (the page). The same-type forms are the ones above.
template <class T, class U>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U& scalarValue, const int32_t& count) {
  static_assert((std::is_same<T, U>::value && trex_emu::kFloatTypes<T>) ||
                    (std::is_same<T, float>::value && std::is_same<U, half>::value),
                "Axpy: Atlas A2/A3 support src/scalar/dst half/half/half, float/float/float, half/half/float");
  if constexpr (std::is_same<T, U>::value) {
    const auto s = trex_emu::Up<T>(scalarValue);  // as the one-type form
    trex_emu::UnaryCount("Axpy", dst, src, count, trex_emu::SameType<T>([s](auto a, auto d) {
                           return decltype(a)(trex_emu::Down<T>(a * s)) + d;
                         }));
  } else {
    const uint8_t* d0 = reinterpret_cast<const uint8_t*>(dst.addr_);
    const uint8_t* s0 = reinterpret_cast<const uint8_t*>(src.addr_);
    if (count > 0 && d0 < s0 + int64_t{count} * sizeof(U) && s0 < d0 + int64_t{count} * sizeof(T))
      trex_emu::Fail("Axpy: the half src overlaps the float dst; the page forbids address overlap for half -> float");
    const float s = trex_emu::ToF(scalarValue);
    trex_emu::UnaryCount("Axpy", dst, src, count, [s](U a, T d) { return d + trex_emu::ToF(a) * s; });
  }
}
// Shifts by a scalar bit count (ShiftRight of a signed type is arithmetic: the sign bit is kept).
// A count >= the type's width gives 0 (or -1 for a negative value shifted right), not C++'s UB.
TREX_EMU_SCALAR(ShiftLeft, kShiftTypes, static_cast<T>(s >= T(sizeof(T) * 8) || s < T(0) ? T(0) : T(a << s)))
TREX_EMU_SCALAR(ShiftRight, kShiftTypes,
                static_cast<T>(s >= T(sizeof(T) * 8) || s < T(0) ? T(a < T(0) ? T(-1) : T(0)) : T(a >> s)))

}  // namespace AscendC

#undef TREX_EMU_BINARY
#undef TREX_EMU_UNARY
#undef TREX_EMU_SCALAR
