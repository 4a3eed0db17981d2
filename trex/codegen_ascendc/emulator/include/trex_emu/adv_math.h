// trex AscendC emulator: elementwise math advanced APIs (asc-devkit docs/zh/api/SIMD-API/高阶API/数学计算/) for
// Atlas A2/A3 (arch 2201): Ceil, Floor, Trunc, Frac, ClampMin/ClampMax, Fmod, Axpy (with sharedTmpBuffer), Power,
// Xor, Log/Log2/Log10, Acosh/Asinh/Atanh; and the no-count / sharedTmpBuffer forms of Sigmoid the basic header lacks.
//
// Results as impl/adv_api/detail/math/<api>/<api>_common_impl.h computes them, each step one IEEE float op:
//   Ceil/Floor/Trunc: Cast float->float CAST_CEIL/FLOOR/TRUNC; half through float (CAST_NONE both ways).
//   Frac: x - trunc(x) (half through float).         ClampMin: Maxs(src, s); ClampMax: Mins(src, s).
//   Fmod: d = a / b; d = trunc(d); d = d * b; a - d (half through float, CAST_NONE back).
//   Axpy: dst = dst + float(src) * float(scalar) (half dst: through float, CAST_NONE back; float dst, half src: mixed).
//   Xor (int16/uint16): a ^ b.  Log: ln x; Log2 = ln x * (1/ln 2); Log10 = ln x * (1/ln 10) (half through float).
//   Acosh: t = x*x; t += -1; t = sqrt(t); t = x + t; t = t * (t / t); ln t (so x*x overflowing gives NaN).
//   Asinh: ln(sqrt(|x|*|x| + 1) + |x|) * (x*2^62 / (|x*2^62| + 2^-62)).  Atanh: 0.5 * ln((x + 1) / (-x + 1)).
//   Power: float pow (std::pow on the float operands; half through float, CAST_NONE back); int32: exact integer
//     power with wrap-around, negative exponents giving 0 except for bases 1 / -1. The NPU composes pow from its
//     Ln/Exp units, so float results may differ from these in the last bits.
// The sharedTmpBuffer contract is each implementation's: it splits the buffer into k tensors of a 32-element
// multiple (after a fixed reserve for Power) and stops with "Insufficient temporary space" when that count is 0;
// here that stop is an error naming the API and the bytes it needs. The buffer must lie in UB, 32-byte aligned, and
// not overlap the operands; its bytes are the UB fill byte afterwards.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "trex_emu/vec.h"
#include "trex_emu/vec_misc.h"
#include "trex_emu/vec_extra.h"

namespace trex_emu {
// The implementations' split: units = (bytes - reserve) / unit_bytes / k / 32 * 32 must be > 0.
inline void AdvTmpCheck(const char* api, const AscendC::LocalTensor<uint8_t>* tmp, uint32_t unit_bytes, uint32_t k,
                        uint32_t reserve, const void* a, uint64_t a_bytes, const void* b = nullptr, uint64_t b_bytes = 0,
                        const void* c = nullptr, uint64_t c_bytes = 0) {
  if (tmp == nullptr) return;
  const uint32_t bytes = tmp->GetSize();
  const uint32_t units = bytes > reserve ? (bytes - reserve) / unit_bytes / (k ? k : 1) / 32 * 32 : 0;
  if (units == 0)
    Fail(api, ": sharedTmpBuffer holds ", bytes, " B; the implementation needs at least ",
         reserve + (k ? k : 1) * 32 * unit_bytes, " B (Insufficient temporary space; Get", api,
         "MaxMinTmpSize gives the sizes)");
  CheckUbAlign(api, "sharedTmpBuffer", tmp->addr_);
  CheckUbRange(api, "sharedTmpBuffer", tmp->buf_, tmp->addr_, tmp->addr_ + bytes);
  const uint8_t* tb = tmp->addr_;
  auto hits = [&](const void* p, uint64_t n) {
    const uint8_t* q = static_cast<const uint8_t*>(p);
    return p != nullptr && n && bytes && tb < q + n && q < tb + bytes;
  };
  if (hits(a, a_bytes) || hits(b, b_bytes) || hits(c, c_bytes))
    Fail(api, ": sharedTmpBuffer UB bytes [", RT().UbOffset(tb), ", ", RT().UbOffset(tb + bytes),
         ") overlap an operand; give it its own buffer");
}

template <class T>
inline void AdvOperand(const char* api, const char* name, const AscendC::LocalTensor<T>& t, uint32_t count) {
  CheckUbAlign(api, name, t.addr_);
  CheckUbRange(api, name, t.buf_, t.addr_, t.addr_ + count);
}

// FromF (float16.h): float -> T, round to nearest even for half (the Cast CAST_NONE these implementations use).

// dst[i] = f(float(src[i])) for half/float.
template <class T, class F>
inline void AdvUnaryF(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                      const AscendC::LocalTensor<uint8_t>* tmp, uint32_t count, uint32_t unit, uint32_t k, F f) {
  static_assert(kFloatTypes<T>, "this advanced API takes half or float (Atlas A2/A3)");
  AdvOperand(api, "dst", dst, count);
  AdvOperand(api, "src", src, count);
  CheckOverlap(api, "src", dst.addr_, count, src.addr_, count);
  AdvTmpCheck(api, tmp, unit, k, 0, dst.addr_, uint64_t{count} * sizeof(T), src.addr_, uint64_t{count} * sizeof(T));
  for (uint32_t i = 0; i < count; ++i) dst.addr_[i] = FromF<T>(f(ToF(src.addr_[i])));
  EndAdvancedApi(api, tmp, CountFormRepeats(count, sizeof(float)));
}

// Acosh / Asinh / Atanh (acosh|asinh|atanh_common_impl.h), each line one float vector instruction of the impl.
inline float AcoshF(float x) {
  float t = x * x;
  t = t + -1.0f;
  t = std::sqrt(t);
  t = x + t;
  const float one = t / t;  // the impl's Div(t, t) then Mul: inf / NaN sums give NaN
  t = t * one;
  return std::log(t);
}
inline float AsinhF(float x) {
  const float a = std::fabs(x);
  float t = a * a;
  t = t + 1.0f;
  t = std::sqrt(t);
  t = t + a;
  t = std::log(t);
  float s = x * 4611686018427387904.0f;                  // AsinhGetSign: x * 2^62 / (|x * 2^62| + 2^-62)
  const float den = std::fabs(s) + 2.168404344971009e-19f;
  s = s / den;
  return t * s;
}
inline float AtanhF(float x) {
  const float num = x + 1.0f;
  float d = x * -1.0f;
  d = d + 1.0f;
  d = num / d;
  d = std::log(d);
  return d * 0.5f;
}
inline float TruncF(float x) { return std::isfinite(x) ? std::trunc(x) : x; }
inline float FmodF(float a, float b) {
  float d = a / b;
  d = TruncF(d);
  d = d * b;
  return a - d;
}
inline int32_t IPow(int32_t b, int32_t e) {
  if (e < 0) return b == 1 ? 1 : (b == -1 ? ((e & 1) ? -1 : 1) : 0);
  uint32_t r = 1, x = static_cast<uint32_t>(b);
  while (e) {
    if (e & 1) r *= x;
    x *= x;
    e >>= 1;
  }
  return static_cast<int32_t>(r);
}
}  // namespace trex_emu

namespace AscendC {
// ------------------------------------------------------------------ Ceil / Floor / Trunc / Frac
// tmp: Ceil/Floor/Trunc split bytes / sizeof(T) / (2 half, 1 float) / 32 * 32; Frac bytes / 4 / (2 half, 1 float).
#define TREX_EMU_ADV_UNARY(NAME, UNIT_HALF, UNIT_FLOAT, K_HALF, K_FLOAT, EXPR)                                       \
  template <typename T, bool isReuseSource = false>                                                                \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, \
                   const uint32_t calCount) {                                                                      \
    trex_emu::AdvUnaryF(#NAME, dst, src, &sharedTmpBuffer, calCount, sizeof(T) == 2 ? UNIT_HALF : UNIT_FLOAT,       \
                        sizeof(T) == 2 ? K_HALF : K_FLOAT, [](float x) { return EXPR; });                           \
  }                                                                                                                \
  template <typename T, bool isReuseSource = false>                                                                \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer) { \
    NAME<T, isReuseSource>(dst, src, sharedTmpBuffer, src.GetSize());                                              \
  }                                                                                                                \
  template <typename T, bool isReuseSource = false>                                                                \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount) {                \
    trex_emu::AdvUnaryF(#NAME, dst, src, nullptr, calCount, 1, 1, [](float x) { return EXPR; });                   \
  }                                                                                                                \
  template <typename T, bool isReuseSource = false>                                                                \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src) {                                         \
    NAME<T, isReuseSource>(dst, src, src.GetSize());                                                               \
  }
TREX_EMU_ADV_UNARY(Ceil, 2, 4, 2, 1, std::ceil(x))
TREX_EMU_ADV_UNARY(Floor, 2, 4, 2, 1, std::floor(x))
TREX_EMU_ADV_UNARY(Trunc, 2, 4, 2, 1, trex_emu::TruncF(x))
TREX_EMU_ADV_UNARY(Frac, 4, 4, 2, 1, x - trex_emu::TruncF(x))
// Acosh: ln(x + sqrt(x*x - 1)) (NaN below 1); tmp bytes / 4 / (2 half, 1 float). Asinh: sign(x) * ln(|x| +
// sqrt(x*x + 1)), bytes / 4 / 3. Atanh: 0.5 * ln((1 + x) / (1 - x)), bytes / sizeof(T) / (4 half, 1 float).
TREX_EMU_ADV_UNARY(Acosh, 4, 4, 2, 1, trex_emu::AcoshF(x))
TREX_EMU_ADV_UNARY(Asinh, 4, 4, 3, 3, trex_emu::AsinhF(x))
TREX_EMU_ADV_UNARY(Atanh, 2, 4, 4, 1, trex_emu::AtanhF(x))
#undef TREX_EMU_ADV_UNARY

// ------------------------------------------------------------------ Log / Log2 / Log10 (log_common_impl.h)
// Log is Ln; Log2 / Log10 multiply by the reciprocal of ln 2 / ln 10 (half: through float, tmp bytes / 4 / 1).
template <typename T, bool isReuseSource = false>
inline void Log(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount) {
  trex_emu::AdvUnaryF("Log", dst, src, nullptr, calCount, 4, 1, [](float x) { return std::log(x); });
}
template <typename T, bool isReuseSource = false>
inline void Log(const LocalTensor<T>& dst, const LocalTensor<T>& src) {
  Log<T, isReuseSource>(dst, src, src.GetSize());
}
template <typename T, bool isReuseSource = false>
inline void Log(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>&, const uint32_t calCount) {
  Log<T, isReuseSource>(dst, src, calCount);
}
#define TREX_EMU_ADV_LOGB(NAME, RECIP)                                                                               \
  template <typename T, bool isReuseSource = false>                                                                \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, \
                   const uint32_t calCount) {                                                                      \
    trex_emu::AdvUnaryF(#NAME, dst, src, sizeof(T) == 2 ? &sharedTmpBuffer : nullptr, calCount, 4, 1,               \
                        [](float x) { return std::log(x) * (RECIP); });                                            \
  }                                                                                                                \
  template <typename T, bool isReuseSource = false>                                                                \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount) {                \
    trex_emu::AdvUnaryF(#NAME, dst, src, nullptr, calCount, 4, 1, [](float x) { return std::log(x) * (RECIP); });   \
  }                                                                                                                \
  template <typename T, bool isReuseSource = false>                                                                \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src) {                                         \
    NAME<T, isReuseSource>(dst, src, src.GetSize());                                                               \
  }
TREX_EMU_ADV_LOGB(Log2, 1.0f / 0.69314718055994530942f)
TREX_EMU_ADV_LOGB(Log10, 1.0f / 2.30258509299404568402f)
#undef TREX_EMU_ADV_LOGB

// ------------------------------------------------------------------ ClampMin / ClampMax (clamp_common_impl.h)
template <typename T, bool isReuseSource = false>
inline void ClampMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                     const T scalar, const uint32_t calCount) {
  (void)sharedTmpBuffer;
  Maxs(dst, src, scalar, calCount);
}
template <typename T, bool isReuseSource = false>
inline void ClampMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                     const T scalar, const uint32_t calCount) {
  (void)sharedTmpBuffer;
  Mins(dst, src, scalar, calCount);
}
template <typename T, bool isReuseSource = false>
inline void ClampMin(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T scalar, const uint32_t calCount) {
  Maxs(dst, src, scalar, calCount);
}
template <typename T, bool isReuseSource = false>
inline void ClampMax(const LocalTensor<T>& dst, const LocalTensor<T>& src, const T scalar, const uint32_t calCount) {
  Mins(dst, src, scalar, calCount);
}

// ------------------------------------------------------------------ Fmod (fmod_common_impl.h)
// tmp: float needs none of its own beyond Trunc's (bytes / 4 > 0); half splits bytes / 2 / 8 / 32 * 32.
enum class FmodAlgo { NORMAL = 0, ITERATION_COMPENSATION = 1 };
constexpr uint32_t FMOD_ITERATION_NUM_MAX = 11;
struct FmodConfig {
  FmodAlgo algo = FmodAlgo::NORMAL;
  uint32_t iterationNum = FMOD_ITERATION_NUM_MAX;
};
constexpr FmodConfig DEFAULT_FMOD_CONFIG = {FmodAlgo::NORMAL, FMOD_ITERATION_NUM_MAX};
}  // namespace AscendC

namespace trex_emu {
template <class T>
inline void FmodAdv(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a, const AscendC::LocalTensor<T>& b,
                    const AscendC::LocalTensor<uint8_t>* tmp, uint32_t count) {
  static_assert(kFloatTypes<T>, "Fmod: element type must be half or float (Atlas A2/A3)");
  const char* api = "Fmod";
  AdvOperand(api, "dst", dst, count);
  AdvOperand(api, "src0", a, count);
  AdvOperand(api, "src1", b, count);
  CheckOverlap(api, "src0", dst.addr_, count, a.addr_, count);
  CheckOverlap(api, "src1", dst.addr_, count, b.addr_, count);
  const uint64_t nb = uint64_t{count} * sizeof(T);
  AdvTmpCheck(api, tmp, sizeof(T), sizeof(T) == 2 ? 8 : 1, 0, dst.addr_, nb, a.addr_, nb, b.addr_, nb);
  for (uint32_t i = 0; i < count; ++i) dst.addr_[i] = FromF<T>(FmodF(ToF(a.addr_[i]), ToF(b.addr_[i])));
  EndAdvancedApi(api, tmp, CountFormRepeats(count, sizeof(float)));
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
inline void Fmod(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                 const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount) {
  trex_emu::FmodAdv(dst, src0, src1, &sharedTmpBuffer, calCount);
}
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
inline void Fmod(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                 const LocalTensor<uint8_t>& sharedTmpBuffer) {
  trex_emu::FmodAdv(dst, src0, src1, &sharedTmpBuffer, src0.GetSize());
}
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
inline void Fmod(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const uint32_t calCount) {
  trex_emu::FmodAdv(dst, src0, src1, nullptr, calCount);
}
template <typename T, bool isReuseSource = false, const FmodConfig& config = DEFAULT_FMOD_CONFIG>
inline void Fmod(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1) {
  trex_emu::FmodAdv(dst, src0, src1, nullptr, src0.GetSize());
}

// ------------------------------------------------------------------ Axpy with sharedTmpBuffer (axpy_common_impl.h)
// T/U: half/half, float/float, float/half (dst float, src half). tmp (as float) splits / (2 half dst, 1 float dst).
template <typename T, typename U, bool isReuseSource = false>
inline void Axpy(const LocalTensor<T>& dst, const LocalTensor<U>& src, const U scalarValue,
                 const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount) {
  static_assert((std::is_same<T, half>::value && std::is_same<U, half>::value) ||
                    (std::is_same<T, float>::value && std::is_same<U, float>::value) ||
                    (std::is_same<T, float>::value && std::is_same<U, half>::value),
                "Axpy: the supported types are T half / U half, T float / U float, T float / U half");
  const char* api = "Axpy";
  trex_emu::AdvOperand(api, "dst", dst, calCount);
  trex_emu::AdvOperand(api, "src", src, calCount);
  trex_emu::CheckOverlap(api, "src", dst.addr_, calCount, src.addr_, calCount);
  trex_emu::AdvTmpCheck(api, &sharedTmpBuffer, 4, sizeof(T) == 2 ? 2 : 1, 0, dst.addr_, uint64_t{calCount} * sizeof(T),
                        src.addr_, uint64_t{calCount} * sizeof(U));
  const float s = trex_emu::ToF(scalarValue);
  for (uint32_t i = 0; i < calCount; ++i) {
    const float p = trex_emu::ToF(src.addr_[i]) * s;
    dst.addr_[i] = trex_emu::FromF<T>(p + trex_emu::ToF(dst.addr_[i]));
  }
  trex_emu::EndAdvancedApi(api, &sharedTmpBuffer, trex_emu::CountFormRepeats(calCount, sizeof(float)));
}

// ------------------------------------------------------------------ Xor (xor_common_impl.h)
// int16_t / uint16_t; tmp: bytes / sizeof(T) / 32 * 32 > 0.
}  // namespace AscendC

namespace trex_emu {
template <class T>
inline void XorAdv(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& a, const AscendC::LocalTensor<T>& b,
                   const AscendC::LocalTensor<uint8_t>* tmp, uint32_t count) {
  static_assert(std::is_same<T, int16_t>::value || std::is_same<T, uint16_t>::value,
                "Xor: element type must be int16_t or uint16_t");
  const char* api = "Xor";
  AdvOperand(api, "dst", dst, count);
  AdvOperand(api, "src0", a, count);
  AdvOperand(api, "src1", b, count);
  const uint64_t nb = uint64_t{count} * sizeof(T);
  AdvTmpCheck(api, tmp, sizeof(T), 1, 0, dst.addr_, nb, a.addr_, nb, b.addr_, nb);
  for (uint32_t i = 0; i < count; ++i) dst.addr_[i] = static_cast<T>(a.addr_[i] ^ b.addr_[i]);
  EndAdvancedApi(api, tmp, CountFormRepeats(count, sizeof(T)));
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, bool isReuseSource = false>
inline void Xor(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount) {
  trex_emu::XorAdv(dst, src0, src1, &sharedTmpBuffer, calCount);
}
template <typename T, bool isReuseSource = false>
inline void Xor(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                const LocalTensor<uint8_t>& sharedTmpBuffer) {
  trex_emu::XorAdv(dst, src0, src1, &sharedTmpBuffer, src0.GetSize());
}
template <typename T, bool isReuseSource = false>
inline void Xor(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const uint32_t calCount) {
  trex_emu::XorAdv(dst, src0, src1, nullptr, calCount);
}
template <typename T, bool isReuseSource = false>
inline void Xor(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1) {
  trex_emu::XorAdv(dst, src0, src1, nullptr, src0.GetSize());
}

// ------------------------------------------------------------------ Power (power_common_impl.h, v220)
// tmp: bytes > 256 (one repeat kept for the scalar), then (bytes - 256) / 4 / k / 32 * 32 > 0 with k = tensor-tensor
// 4 float / 7 half / 6 int32, tensor-scalar 5 / 7 / 7.
enum class PowerAlgo { INTRINSIC = 0, DOUBLE_FLOAT_TECH };
struct PowerConfig {
  PowerAlgo algo = PowerAlgo::INTRINSIC;
};
constexpr PowerConfig defaultPowerConfig = {PowerAlgo::INTRINSIC};
}  // namespace AscendC

namespace trex_emu {
template <class T>
inline T PowValue(T b, T e) {
  if constexpr (std::is_same<T, int32_t>::value) return IPow(b, e);
  else return FromF<T>(std::pow(ToF(b), ToF(e)));
}
template <class T>
inline void PowerAdv(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>* base, T base_s,
                     const AscendC::LocalTensor<T>* exp, T exp_s, const AscendC::LocalTensor<uint8_t>* tmp,
                     uint32_t count) {
  static_assert(kOneOf<T, half, float, int32_t>, "Power: element type must be half, float or int32_t");
  const char* api = "Power";
  AdvOperand(api, "dst", dst, count);
  if (base) AdvOperand(api, "src0", *base, count);
  if (exp) AdvOperand(api, "src1", *exp, count);
  const bool tt = base && exp;
  const uint32_t k = std::is_same<T, float>::value ? (tt ? 4 : 5) : std::is_same<T, half>::value ? 7 : (tt ? 6 : 7);
  const uint64_t nb = uint64_t{count} * sizeof(T);
  if (tmp != nullptr && tmp->GetSize() <= 256)
    Fail(api, ": sharedTmpBuffer holds ", tmp->GetSize(), " B; the implementation keeps 256 B for the scalar and "
         "needs at least ", 256 + k * 32 * 4, " B (GetPowerMaxMinTmpSize gives the sizes)");
  AdvTmpCheck(api, tmp, 4, k, 256, dst.addr_, nb, base ? base->addr_ : nullptr, nb, exp ? exp->addr_ : nullptr, nb);
  for (uint32_t i = 0; i < count; ++i)
    dst.addr_[i] = PowValue<T>(base ? base->addr_[i] : base_s, exp ? exp->addr_[i] : exp_s);
  EndAdvancedApi(api, tmp, CountFormRepeats(count, sizeof(float)));
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount) {
  trex_emu::PowerAdv<T>(dst, &src0, T(), &src1, T(), &sharedTmpBuffer, calCount);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                  const LocalTensor<uint8_t>& sharedTmpBuffer) {
  trex_emu::PowerAdv<T>(dst, &src0, T(), &src1, T(), &sharedTmpBuffer, src0.GetSize());
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, const uint32_t calCount) {
  trex_emu::PowerAdv<T>(dst, &src0, T(), &src1, T(), nullptr, calCount);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1) {
  trex_emu::PowerAdv<T>(dst, &src0, T(), &src1, T(), nullptr, src0.GetSize());
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const T& src1Scalar,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount) {
  trex_emu::PowerAdv<T>(dst, &src0, T(), nullptr, src1Scalar, &sharedTmpBuffer, calCount);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const T& src1Scalar,
                  const LocalTensor<uint8_t>& sharedTmpBuffer) {
  trex_emu::PowerAdv<T>(dst, &src0, T(), nullptr, src1Scalar, &sharedTmpBuffer, src0.GetSize());
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
inline void Power(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const T& src1Scalar, const uint32_t calCount) {
  trex_emu::PowerAdv<T>(dst, &src0, T(), nullptr, src1Scalar, nullptr, calCount);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
inline void Power(const LocalTensor<T>& dst, const T& src0Scalar, const LocalTensor<T>& src1,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount) {
  trex_emu::PowerAdv<T>(dst, nullptr, src0Scalar, &src1, T(), &sharedTmpBuffer, calCount);
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
inline void Power(const LocalTensor<T>& dst, const T& src0Scalar, const LocalTensor<T>& src1,
                  const LocalTensor<uint8_t>& sharedTmpBuffer) {
  trex_emu::PowerAdv<T>(dst, nullptr, src0Scalar, &src1, T(), &sharedTmpBuffer, src1.GetSize());
}
template <typename T, bool isReuseSource = false, const PowerConfig& config = defaultPowerConfig>
inline void Power(const LocalTensor<T>& dst, const T& src0Scalar, const LocalTensor<T>& src1, const uint32_t calCount) {
  trex_emu::PowerAdv<T>(dst, nullptr, src0Scalar, &src1, T(), nullptr, calCount);
}

// ------------------------------------------------------------------ Sigmoid: the forms vec_extra.h lacks
template <typename T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src) {
  Sigmoid<T, isReuseSource>(dst, src, src.GetSize());
}
template <typename T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer) {
  Sigmoid<T, isReuseSource>(dst, src, sharedTmpBuffer, src.GetSize());
}
}  // namespace AscendC
