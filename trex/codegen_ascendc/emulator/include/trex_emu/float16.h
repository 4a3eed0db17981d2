// trex AscendC emulator: 16-bit float types and bit-exact conversions for every RoundMode.
//
// `half` (IEEE binary16) and `bfloat16_t` (bfloat16) are stored as raw bits; arithmetic goes
// through float, and every conversion INTO a narrower format goes through RoundToBits(), which
// rounds the exact (double) value once in the requested mode. Doing the rounding on the exact
// value (never float->half via an intermediate) is what makes the conversions bit-exact.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace AscendC {
// Order as in asc-devkit's Cast documentation. CAST_NONE = "rint when lossy, exact otherwise".
enum class RoundMode : uint8_t {
  CAST_NONE = 0,
  CAST_RINT,   // round to nearest, ties to even
  CAST_FLOOR,  // toward -inf
  CAST_CEIL,   // toward +inf
  CAST_ROUND,  // to nearest, ties away from zero
  CAST_TRUNC,  // toward zero
  CAST_ODD,    // von Neumann rounding: truncate, then set the last bit if the result is inexact
  CAST_HYBRID,
};
}  // namespace AscendC

namespace trex_emu {

using AscendC::RoundMode;

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
inline float BitsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Rounds x to the binary format with MANT stored fraction bits and EXPBITS exponent bits and
// returns its bit pattern (sign included). NaN becomes the positive canonical quiet NaN (what
// torch produces for bf16; the sign of a NaN is not specified by the AscendC docs).
// x must be exactly representable in double, which holds for every float and every int32.
template <int MANT, int EXPBITS>
inline uint32_t RoundToBits(double x, RoundMode mode) {
  constexpr uint32_t kExpAllOnes = (1u << EXPBITS) - 1u;
  constexpr int kBias = (1 << (EXPBITS - 1)) - 1;
  constexpr int kEmin = 1 - kBias;
  constexpr uint32_t kSignBit = 1u << (MANT + EXPBITS);
  constexpr uint32_t kInf = kExpAllOnes << MANT;
  constexpr uint32_t kMaxFinite = kInf - 1u;
  if (std::isnan(x)) return kInf | (1u << (MANT - 1));
  const bool negative = std::signbit(x);
  const uint32_t sign = negative ? kSignBit : 0u;
  if (std::isinf(x)) return sign | kInf;
  const double a = std::fabs(x);
  if (a == 0.0) return sign;
  int e;
  std::frexp(a, &e);
  e -= 1;  // a in [2^e, 2^(e+1))
  if (e < kEmin) e = kEmin;  // subnormal range: fixed quantum 2^(emin-MANT)
  const double q = std::ldexp(a, MANT - e);  // value in units of the target's last place (exact)
  const double n = std::floor(q);
  const double frac = q - n;
  const bool inexact = frac != 0.0;
  uint64_t count = static_cast<uint64_t>(n);
  bool up = false;
  switch (mode) {
    case RoundMode::CAST_NONE:
    case RoundMode::CAST_RINT:
    case RoundMode::CAST_HYBRID:
      up = frac > 0.5 || (frac == 0.5 && (count & 1u));
      break;
    case RoundMode::CAST_ROUND: up = frac >= 0.5; break;
    case RoundMode::CAST_TRUNC: up = false; break;
    case RoundMode::CAST_FLOOR: up = inexact && negative; break;
    case RoundMode::CAST_CEIL: up = inexact && !negative; break;
    case RoundMode::CAST_ODD: up = false; break;
  }
  count += up ? 1u : 0u;
  if (mode == RoundMode::CAST_ODD && inexact) count |= 1u;
  if (count >= (uint64_t{1} << (MANT + 1))) {  // rounding carried into the next binade
    count >>= 1;
    e += 1;
  }
  uint64_t bits;
  if (count < (uint64_t{1} << MANT)) {
    bits = count;  // subnormal (or rounded to zero)
  } else {
    const int biased = e + kBias;
    if (biased >= static_cast<int>(kExpAllOnes)) {  // overflow: the mode decides inf or max finite
      bool to_inf = false;
      switch (mode) {
        case RoundMode::CAST_NONE:
        case RoundMode::CAST_RINT:
        case RoundMode::CAST_HYBRID:
        case RoundMode::CAST_ROUND: to_inf = true; break;
        case RoundMode::CAST_FLOOR: to_inf = negative; break;
        case RoundMode::CAST_CEIL: to_inf = !negative; break;
        case RoundMode::CAST_TRUNC:
        case RoundMode::CAST_ODD: to_inf = false; break;
      }
      return sign | (to_inf ? kInf : kMaxFinite);
    }
    bits = (static_cast<uint64_t>(biased) << MANT) | (count - (uint64_t{1} << MANT));
  }
  return sign | static_cast<uint32_t>(bits);
}

template <int MANT, int EXPBITS>
inline double BitsToDouble(uint32_t bits) {
  constexpr uint32_t kExpAllOnes = (1u << EXPBITS) - 1u;
  constexpr int kBias = (1 << (EXPBITS - 1)) - 1;
  const bool negative = (bits >> (MANT + EXPBITS)) & 1u;
  const uint32_t exp = (bits >> MANT) & kExpAllOnes;
  const uint32_t frac = bits & ((1u << MANT) - 1u);
  double v;
  if (exp == kExpAllOnes) {
    v = frac ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    v = std::ldexp(static_cast<double>(frac), 1 - kBias - MANT);
  } else {
    v = std::ldexp(static_cast<double>(frac | (1u << MANT)), static_cast<int>(exp) - kBias - MANT);
  }
  return negative ? -v : v;
}

// float -> bfloat16 bits. RINT has a fast exact bit trick; other modes use the generic path.
inline uint16_t FloatToBf16Bits(float f, RoundMode mode) {
  if (mode == RoundMode::CAST_RINT || mode == RoundMode::CAST_NONE) {
    uint32_t u = FloatBits(f);
    if (std::isnan(f)) return 0x7FC0u;
    u += 0x7FFFu + ((u >> 16) & 1u);
    return static_cast<uint16_t>(u >> 16);
  }
  return static_cast<uint16_t>(RoundToBits<7, 8>(static_cast<double>(f), mode));
}
inline float Bf16BitsToFloat(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }
// float -> half bits. RINT/NONE take an exact bit-level fast path (every half arithmetic result goes
// through it); the other modes use the generic path. Both are checked against a brute-force reference.
inline uint16_t FloatToHalfBits(float f, RoundMode mode) {
  if (mode != RoundMode::CAST_RINT && mode != RoundMode::CAST_NONE)
    return static_cast<uint16_t>(RoundToBits<10, 5>(static_cast<double>(f), mode));
  uint32_t x = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  x &= 0x7FFFFFFFu;
  if (x > 0x7F800000u) return 0x7E00u;                  // NaN -> canonical quiet NaN
  if (x >= 0x477FF000u) return sign | 0x7C00u;           // >= 65520 rounds to inf (and inf itself)
  if (x < 0x38800000u) {                                 // below 2^-14: half subnormal (or zero)
    const float scaled = BitsFloat(x) * 16777216.0f;     // in units of 2^-24, exact
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));  // ties to even; 1024 = min normal
  }
  x += 0xC8000FFFu + ((x >> 13) & 1u);                   // rebias exponent (-112) and round to nearest even
  return sign | static_cast<uint16_t>(x >> 13);
}
inline float HalfBitsToFloat(uint16_t b) {
  const uint32_t sign = static_cast<uint32_t>(b & 0x8000u) << 16;
  const uint32_t exp = (b >> 10) & 0x1Fu, mant = b & 0x3FFu;
  if (exp == 0) {
    const float v = static_cast<float>(mant) * 5.9604644775390625e-08f;  // mant * 2^-24, exact
    return BitsFloat(FloatBits(v) | sign);
  }
  if (exp == 31) return BitsFloat(sign | 0x7F800000u | (mant << 13));
  return BitsFloat(sign | ((exp + 112u) << 23) | (mant << 13));
}

// A 16-bit float stored as bits. Arithmetic promotes to float (operator float); constructing
// from any arithmetic value rounds to nearest even, from the exact value.
template <int MANT, int EXPBITS>
inline uint16_t ToF16Bits(double v) {
  if constexpr (MANT == 10) {
    if (static_cast<double>(static_cast<float>(v)) == v) return FloatToHalfBits(static_cast<float>(v), RoundMode::CAST_RINT);
  } else {
    if (static_cast<double>(static_cast<float>(v)) == v) return FloatToBf16Bits(static_cast<float>(v), RoundMode::CAST_RINT);
  }
  return static_cast<uint16_t>(RoundToBits<MANT, EXPBITS>(v, RoundMode::CAST_RINT));  // not a float: round once
}

// The same nearest-even rounding as a constant expression (no libm, no bit casts), for constants such as
// `constexpr half HALF_ONE = 1.0;` at namespace scope (CANN's half is a literal type). Only used during
// constant evaluation; tested equal to ToF16Bits.
template <int MANT, int EXPBITS>
constexpr uint16_t ConstF16Bits(double x) {
  constexpr uint32_t kExpAllOnes = (1u << EXPBITS) - 1u;
  constexpr int kBias = (1 << (EXPBITS - 1)) - 1;
  constexpr int kEmin = 1 - kBias;
  constexpr uint32_t kSignBit = 1u << (MANT + EXPBITS);
  constexpr uint32_t kInf = kExpAllOnes << MANT;
  if (x != x) return static_cast<uint16_t>(kInf | (1u << (MANT - 1)));
  const uint32_t sign = __builtin_signbit(x) ? kSignBit : 0u;
  double a = x < 0 ? -x : x;
  if (a > 1.7976931348623157e308) return static_cast<uint16_t>(sign | kInf);
  if (a == 0.0) return static_cast<uint16_t>(sign);
  int e = 0;
  for (double m = a; m >= 2.0; m /= 2.0) ++e;
  for (double m = a; m < 1.0; m *= 2.0) --e;
  if (e < kEmin) e = kEmin;
  for (int k = 0; k < MANT - e; ++k) a *= 2.0;  // exact: powers of two
  for (int k = 0; k < e - MANT; ++k) a /= 2.0;
  uint64_t count = static_cast<uint64_t>(a);
  const double frac = a - static_cast<double>(count);
  if (frac > 0.5 || (frac == 0.5 && (count & 1u))) ++count;
  if (count >= (uint64_t{1} << (MANT + 1))) {
    count >>= 1;
    e += 1;
  }
  if (count < (uint64_t{1} << MANT)) return static_cast<uint16_t>(sign | count);
  const int biased = e + kBias;
  if (biased >= static_cast<int>(kExpAllOnes)) return static_cast<uint16_t>(sign | kInf);
  return static_cast<uint16_t>(sign | (static_cast<uint64_t>(biased) << MANT) | (count - (uint64_t{1} << MANT)));
}

template <int MANT, int EXPBITS>
struct Float16 {
  uint16_t bits_;

  Float16() = default;
  template <class U, class = std::enable_if_t<std::is_arithmetic<U>::value>>
  constexpr Float16(U v)  // NOLINT(google-explicit-constructor): kernels write `half x = 1.0f;`
      : bits_(__builtin_is_constant_evaluated() ? ConstF16Bits<MANT, EXPBITS>(static_cast<double>(v))
                                                : ToF16Bits<MANT, EXPBITS>(static_cast<double>(v))) {}
  operator float() const;
  static constexpr Float16 FromBits(uint16_t b) {
    Float16 r{};
    r.bits_ = b;
    return r;
  }
  constexpr uint16_t Bits() const { return bits_; }
  Float16& operator+=(float o) { return *this = Float16(float(*this) + o); }
  Float16& operator-=(float o) { return *this = Float16(float(*this) - o); }
  Float16& operator*=(float o) { return *this = Float16(float(*this) * o); }
  Float16& operator/=(float o) { return *this = Float16(float(*this) / o); }
  Float16 operator-() const { return FromBits(static_cast<uint16_t>(bits_ ^ 0x8000u)); }
};

template <>
inline Float16<10, 5>::operator float() const { return HalfBitsToFloat(bits_); }
template <>
inline Float16<7, 8>::operator float() const { return Bf16BitsToFloat(bits_); }

// Round a float to a Float16 in a given mode (used by Cast).
template <class F16>
inline F16 FloatToF16(float f, RoundMode mode);

}  // namespace trex_emu

using half = trex_emu::Float16<10, 5>;
using bfloat16_t = trex_emu::Float16<7, 8>;
// float16_t: the name CANN's headers also give half (asc-devkit include/adv_api/matmul/matmul_config.h
// writes "A is float16_t"); kernels test std::is_same_v<T, float16_t> for the half path.
using float16_t = half;
// float32_t: float (CANN's graph types name it ge::float32_t, asc-devkit include/utils/context/context_builder_impl.h;
// cann-ops kernels write it next to float16_t).
using float32_t = float;

namespace trex_emu {
template <>
inline half FloatToF16<half>(float f, RoundMode mode) { return half::FromBits(FloatToHalfBits(f, mode)); }
template <>
inline bfloat16_t FloatToF16<bfloat16_t>(float f, RoundMode mode) {
  return bfloat16_t::FromBits(FloatToBf16Bits(f, mode));
}

// Float-like element types (computed through float) vs integer ones.
template <class T>
struct IsF16 : std::false_type {};
template <int M, int E>
struct IsF16<Float16<M, E>> : std::true_type {};
template <class T>
constexpr bool kIsFloatLike = std::is_same<T, float>::value || IsF16<T>::value;

template <class T>
inline float ToF(T v) { return static_cast<float>(v); }
template <class T>
inline T FromF(float v) { return static_cast<T>(v); }  // half/bf16: RINT; float: identity

inline const char* RoundModeName(RoundMode m) {
  static const char* const kNames[] = {"CAST_NONE", "CAST_RINT", "CAST_FLOOR", "CAST_CEIL",
                                       "CAST_ROUND", "CAST_TRUNC", "CAST_ODD", "CAST_HYBRID"};
  const unsigned i = static_cast<unsigned>(m);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "RoundMode(?)";
}

// Rounds a float to an integral float in a mode (Cast float->float, and the first step of float->int).
inline double RoundIntegral(double v, RoundMode mode) {
  switch (mode) {
    case RoundMode::CAST_FLOOR: return std::floor(v);
    case RoundMode::CAST_CEIL: return std::ceil(v);
    case RoundMode::CAST_ROUND: return std::round(v);
    case RoundMode::CAST_TRUNC: return std::trunc(v);
    default: return std::nearbyint(v);  // default FP environment: ties to even
  }
}

// float/half -> integer: round in the mode, saturate to the integer range, NaN -> 0 (the NPU's
// saturation behaviour is not documented in the sources we have; this is the documented choice).
template <class I>
inline I RoundToInt(double v, RoundMode mode) {
  if (std::isnan(v)) return 0;
  const double r = RoundIntegral(v, mode);
  if (r <= static_cast<double>(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (r >= static_cast<double>(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return static_cast<I>(r);
}

}  // namespace trex_emu
