// trex AscendC emulator: the Erf / Erfc advanced APIs (asc-devkit docs/zh/api/SIMD-API/高阶API/数学计算/
// Erf接口/Erf.md, Erfc接口/Erfc.md) for Atlas A2/A3.
//
// The results follow the A2/A3 implementation asc-devkit ships (impl/adv_api/detail/math/erf/
// erf_common_impl.h, erfc/erfc_common_impl.h) step by step, each step one IEEE float vector op as the
// emulator's Mul/Adds/Div are:
//   Erf:  x clipped to [-3.92, 3.92], erf = x*P(x^2) / Q(x^2) (a Pade approximation, coefficients below);
//   Erfc: c = x clipped to [-10, 10], a = |c| + 2^-62, s = c / a, E = exp(-a^2) * R(a) / S(a),
//         erfc = s*E + (1 - s).
// half computes in float (CAST_NONE up) and rounds back with CAST_ROUND (arch 2201). So Erf is the NPU's
// result if its float unit is IEEE; Erfc also goes through Exp, whose last bits are the host libm's.
// Their accuracy against the true erf/erfc is the approximation's (tests: float Erf within 2e-7 absolute
// of torch.erf; Erfc within 2e-6 relative where erfc > 1e-30).
// The temporary buffer (sharedTmpBuffer, or the framework's when omitted) is scratch: the implementation
// needs calSize = bytes / sizeof(T) / k / 32 * 32 > 0 (k = Erf 8 (half) / 3 (float), Erfc 12 / 5), and
// its contents afterwards are garbage (written with the UB fill byte here). src and dst must not overlap
// (documented); the vector mask is left in normal mode, all bits set (the implementation's
// SetMaskNorm + ResetMask).
#pragma once
#include <cmath>
#include <cstring>

#include "trex_emu/vec.h"
#include "trex_emu/vec_misc.h"

namespace trex_emu {
struct ErfMath {
  static float Erf(float x) {
    if (std::isnan(x)) return x;  // Mins/Maxs propagate NaN here
    x = std::fmax(std::fmin(x, 3.92f), -3.92f);
    const float x2 = x * x;
    float p = x2 * 0.053443748819f;
    p = p + 0.75517016694e1f;
    p = x2 * p;
    p = p + 0.10162808918e3f;
    p = x2 * p;
    p = p + 0.13938061484e4f;
    p = x2 * p;
    p = p + 0.50637915060e4f;
    p = x2 * p;
    p = p + 0.29639384698e5f;
    p = x * p;
    float q = x2 + 0.31212858877e2f;
    q = x2 * q;
    q = q + 0.39856963806e3f;
    q = x2 * q;
    q = q + 0.30231248150e4f;
    q = x2 * q;
    q = q + 0.13243365831e5f;
    q = x2 * q;
    q = q + 0.26267224157e5f;
    return p / q;
  }
  static float Erfc(float x) {
    if (std::isnan(x)) return x;
    const float c = std::fmax(std::fmin(x, 10.0f), -10.0f);
    const float a = std::fabs(c) + 2.168404344971009e-19f;  // 2^-62
    const float s = c / a;
    static const float kR[] = {0.1735313680e-7f, -0.9856738394e-6f, 0.2517003236e-4f, -0.3848015171e-3f, 0.5681528564e0f,
                               0.5245623129e1f,  0.2107740710e2f,   0.4212761755e2f,  0.4380524149e2f};
    float r = a * kR[0];
    for (int i = 1; i < 9; ++i) {
      r = r + kR[i];
      if (i < 8) r = a * r;
    }
    static const float kS[] = {0.9349684299e1f, 0.3756930664e2f, 0.8058268949e2f, 0.9155653738e2f, 0.4380524152e2f};
    float sp = a + kS[0];
    for (int i = 1; i < 5; ++i) {
      sp = a * sp;
      sp = sp + kS[i];
    }
    float e = r / sp;
    float ex = a * a;
    ex = ex * -1.0f;
    ex = std::exp(ex);
    e = ex * e;
    const float one_minus_s = s * -1.0f + 1.0f;
    return e * s + one_minus_s;
  }
};

// Tanh (asc-devkit 高阶API/数学计算/Tanh接口/Tanh.md; impl/adv_api/detail/math/tanh/tanh_common_impl.h,
// TanhFormulaImpl, the default INTRINSIC algorithm): x clipped to [-8.8, 8.8], e = exp(2x),
// tanh = (e - 1) / (e + 1), each step one float op; half via float (CAST_NONE both ways, TanhCompute).
struct TanhMath {
  static float Tanh(float x) {
    if (std::isnan(x)) return x;
    float c = std::fmin(x, 8.8f);
    c = std::fmax(c, -8.8f);
    c = c * 2.0f;
    c = std::exp(c);
    const float num = c + -1.0f;
    const float den = c + 1.0f;
    return num / den;
  }
};

template <class T, class F>
inline void ErfFamily(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                      const AscendC::LocalTensor<uint8_t>* tmp, uint32_t count, uint32_t procedures_half,
                      uint32_t procedures_float, F f,
                      AscendC::RoundMode half_round = AscendC::RoundMode::CAST_ROUND) {
  static_assert(kFloatTypes<T>, "Erf/Erfc: element type must be half or float (Atlas A2/A3)");
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src", src.addr_);
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + count);
  CheckUbRange(api, "src", src.buf_, src.addr_, src.addr_ + count);
  const uint8_t* db = reinterpret_cast<const uint8_t*>(dst.addr_);
  const uint8_t* sb = reinterpret_cast<const uint8_t*>(src.addr_);
  if (count && db < sb + count * sizeof(T) && sb < db + count * sizeof(T))
    Fail(api, ": dst UB bytes [", RT().UbOffset(db), ", ", RT().UbOffset(db + count * sizeof(T)), ") overlap src [",
         RT().UbOffset(sb), ", ", RT().UbOffset(sb + count * sizeof(T)),
         ") (the API page: source and destination must not overlap); use a separate buffer");
  if (tmp != nullptr) {
    const uint32_t bytes = tmp->GetSize();
    const uint32_t k = sizeof(T) == 2 ? procedures_half : procedures_float;
    if (bytes / sizeof(T) / k / 32 * 32 == 0)
      Fail(api, ": sharedTmpBuffer holds ", bytes, " B; the implementation needs at least ", k * 32 * sizeof(T),
           " B for ", TypeName<T>(), " (Get", api, "MaxMinTmpSize gives the sizes)");
    CheckUbAlign(api, "sharedTmpBuffer", tmp->addr_);
    CheckUbRange(api, "sharedTmpBuffer", tmp->buf_, tmp->addr_, tmp->addr_ + bytes);
    const uint8_t* tb = tmp->addr_;
    if ((tb < db + count * sizeof(T) && db < tb + bytes) || (tb < sb + count * sizeof(T) && sb < tb + bytes))
      Fail(api, ": sharedTmpBuffer UB bytes [", RT().UbOffset(tb), ", ", RT().UbOffset(tb + bytes),
           ") overlap src or dst; give it its own buffer");
  }
  for (uint32_t i = 0; i < count; ++i) {
    const float y = f(static_cast<float>(src.addr_[i]));
    if constexpr (std::is_same<T, half>::value) dst.addr_[i] = CastValue<half>(y, half_round);
    else dst.addr_[i] = y;
  }
  EndAdvancedApi(api, tmp, CountFormRepeats(count, sizeof(float)));
}
}  // namespace trex_emu

namespace AscendC {
#define TREX_EMU_ERF_FAMILY(NAME, HALF_K, FLOAT_K)                                                                 \
  template <typename T, bool isReuseSource = false>                                                              \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, \
                   const uint32_t calCount) {                                                                    \
    trex_emu::ErfFamily(#NAME, dst, src, &sharedTmpBuffer, calCount, HALF_K, FLOAT_K, trex_emu::ErfMath::NAME);   \
  }                                                                                                              \
  template <typename T, bool isReuseSource = false>                                                              \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer) { \
    NAME<T, isReuseSource>(dst, src, sharedTmpBuffer, src.GetSize());                                            \
  }                                                                                                              \
  template <typename T, bool isReuseSource = false>                                                              \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount) {              \
    trex_emu::ErfFamily(#NAME, dst, src, nullptr, calCount, HALF_K, FLOAT_K, trex_emu::ErfMath::NAME);            \
  }                                                                                                              \
  template <typename T, bool isReuseSource = false>                                                              \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src) {                                       \
    NAME<T, isReuseSource>(dst, src, src.GetSize());                                                             \
  }
TREX_EMU_ERF_FAMILY(Erf, 8, 3)
TREX_EMU_ERF_FAMILY(Erfc, 12, 5)
#undef TREX_EMU_ERF_FAMILY

// Tanh: the same checks (src/dst/sharedTmpBuffer must not overlap: the page's 约束说明, and the CPU-debug
// check's TensorReuseVerifyingParameters(dst, src, sharedTmpBuffer)); its scratch is float, stackSize =
// bytes / 4 / (2 half, 1 float) / 32 * 32 > 0 (TanhFormulasTmpCalc), i.e. k = 4 (half) / 1 (float) below.
template <typename T, bool isReuseSource = false>
inline void Tanh(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                 const uint32_t calCount) {
  trex_emu::ErfFamily("Tanh", dst, src, &sharedTmpBuffer, calCount, 4, 1, trex_emu::TanhMath::Tanh,
                      RoundMode::CAST_NONE);
}
template <typename T, bool isReuseSource = false>
inline void Tanh(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer) {
  Tanh<T, isReuseSource>(dst, src, sharedTmpBuffer, src.GetSize());
}
template <typename T, bool isReuseSource = false>
inline void Tanh(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t calCount) {
  trex_emu::ErfFamily("Tanh", dst, src, nullptr, calCount, 4, 1, trex_emu::TanhMath::Tanh, RoundMode::CAST_NONE);
}
template <typename T, bool isReuseSource = false>
inline void Tanh(const LocalTensor<T>& dst, const LocalTensor<T>& src) {
  Tanh<T, isReuseSource>(dst, src, src.GetSize());
}
}  // namespace AscendC
