// trex AscendC emulator: activation advanced APIs (asc-devkit docs/zh/api/SIMD-API/高阶API/激活函数/) for Atlas A2/A3:
// Gelu, FasterGelu, FasterGeluV2, Silu, Swish, GeGLU, SwiGLU.
//
// Each result is the implementation's sequence of vector ops (impl/adv_api/detail/activation/<api>/), one op a step,
// every step rounded to the type the implementation computes in (T itself: half steps round to half, as the
// emulator's half vector ops do; GeGLU / SwiGLU half and Gelu<half, highPrecision> compute in float, CAST_NONE up
// and down):
//   Gelu:  a = 1.5957691216057308 * (x + 0.044715 * x^3) (as Mul, Mul, Muls, Add, Muls);
//          y = x / (1 + exp(-|a|)) * exp(min(a, 0))       (highPerformance: x * Reciprocal(1 + exp(-|a|)))
//   FasterGelu: y = x / (1 + exp(-1.702 x));   FasterGeluV2: the clip polynomial of FastGeluV2CalcSimplified.
//   Silu:  y = x / (1 + exp(-x));  Swish: y = x / (1 + exp(-beta x)) (-beta rounded to T first).
//   GeGLU: y = src0 * (src1 / (1 + exp(-0.0713548162726 * src1 * (src1^2 + 22.363860002236))))
//   SwiGLU: y = src0 * (src1 / (1 + exp(-beta * src1)))
// Exp is the host's expf (the emulator's basic Exp), so results match the NPU to its Exp unit's last bits.
// sharedTmpBuffer contracts (an error naming the API when not met): Gelu family bytes / sizeof(compute type) /
// (2 buffers, +1 for highPrecision half; FasterGelu 1) / 32 * 32 > 0; GeGLU half bytes / 8 elements, 32-byte
// multiple, > 0 (float needs none); SwiGLU half bytes / 4 / 3 elements, 32-byte multiple, > 0 (float needs none).
// dst may not overlap a source (the implementations write dst, then read the sources again); the buffers must not
// overlap the operands.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "trex_emu/adv_math.h"

namespace trex_emu {
template <class T>
inline float Rt(float v) {
  if constexpr (std::is_same<T, float>::value) return v;
  else return ToF(Down<T>(v));
}

// The operands of a one- or two-source activation: aligned, in range, dst not overlapping any source.
template <class T>
inline void ActOperands(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                        const AscendC::LocalTensor<T>* s1, uint32_t count) {
  static_assert(kFloatTypes<T>, "this activation takes half or float (Atlas A2/A3)");
  AdvOperand(api, "dst", dst, count);
  AdvOperand(api, "src0", s0, count);
  if (s1) AdvOperand(api, "src1", *s1, count);
  const uint64_t nb = uint64_t{count} * sizeof(T);
  auto over = [&](const void* p) {
    const uint8_t* d = reinterpret_cast<const uint8_t*>(dst.addr_);
    const uint8_t* q = static_cast<const uint8_t*>(p);
    return count && d < q + nb && q < d + nb;
  };
  if (over(s0.addr_) || (s1 && over(s1->addr_)))
    Fail(api, ": dst overlaps a source; the implementation writes dst and then reads the sources again, so use a "
         "separate dst buffer");
}

template <class C, bool highPerformance>
inline float GeluStep(float x) {  // C: the compute type
  float a = Rt<C>(x * x);
  float b = Rt<C>(x * a);
  a = Rt<C>(b * Rt<C>(0.044715f));
  b = Rt<C>(x + a);
  a = Rt<C>(b * Rt<C>(1.5957691216057308f));
  b = Rt<C>(std::exp(std::fmin(a, 0.0f)));
  a = Rt<C>(std::exp(Rt<C>(-std::fabs(a))));
  a = Rt<C>(a + 1.0f);
  if (highPerformance) a = Rt<C>(x * Rt<C>(1.0f / a));
  else a = Rt<C>(x / a);
  return Rt<C>(a * b);
}
template <class C, bool highPerformance>
inline float FasterGeluStep(float x) {
  float s = Rt<C>(x * Rt<C>(-1.702f));
  s = Rt<C>(std::exp(s));
  s = Rt<C>(s + 1.0f);
  if (highPerformance) return Rt<C>(x * Rt<C>(1.0f / s));
  return Rt<C>(x / s);
}
template <class C, bool highPerformance>
inline float FasterGeluV2Step(float x) {
  float a = Rt<C>(x * Rt<C>(0.7071f));
  a = std::fabs(a);
  a = std::fmin(a, Rt<C>(1.769f));
  a = Rt<C>(a + Rt<C>(-1.769f));
  a = Rt<C>(a * a);
  a = Rt<C>(a * Rt<C>(-0.1444f));
  a = Rt<C>(a + 0.5f);
  float b = Rt<C>(x + Rt<C>(0.000000000001f));
  const float c = std::fabs(b);
  if (highPerformance) b = Rt<C>(b * Rt<C>(1.0f / c));
  else b = Rt<C>(b / c);
  a = Rt<C>(a * b);
  a = Rt<C>(a + 0.5f);
  return Rt<C>(x * a);
}

template <class T, bool highPrecision, class F>
inline void GeluFamily(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                       const AscendC::LocalTensor<uint8_t>* tmp, uint32_t count, uint32_t buffers, F step) {
  ActOperands<T>(api, dst, src, nullptr, count);
  constexpr bool up = highPrecision && std::is_same<T, half>::value;
  AdvTmpCheck(api, tmp, up ? 4 : sizeof(T), buffers + (up ? 1 : 0), 0, dst.addr_, uint64_t{count} * sizeof(T),
              src.addr_, uint64_t{count} * sizeof(T));
  for (uint32_t i = 0; i < count; ++i) dst.addr_[i] = Down<T>(step(ToF(src.addr_[i])));
  EndAdvancedApi(api, tmp, CountFormRepeats(count, up ? 4 : sizeof(T)));
}
}  // namespace trex_emu

namespace AscendC {
// ------------------------------------------------------------------ Gelu / FasterGelu / FasterGeluV2
#define TREX_EMU_GELU(NAME, STEP, BUFFERS)                                                                         \
  template <typename T, bool highPrecision = false, bool highPerformance = false>                                \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer, \
                   const uint32_t dataSize) {                                                                    \
    using C = std::conditional_t<highPrecision, float, T>;                                                       \
    trex_emu::GeluFamily<T, highPrecision>(#NAME, dst, src, &sharedTmpBuffer, dataSize, BUFFERS,                  \
                                           trex_emu::STEP<C, highPerformance>);                                  \
  }                                                                                                              \
  template <typename T, bool highPrecision = false, bool highPerformance = false>                                \
  inline void NAME(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t dataSize) {              \
    using C = std::conditional_t<highPrecision, float, T>;                                                       \
    trex_emu::GeluFamily<T, highPrecision>(#NAME, dst, src, nullptr, dataSize, BUFFERS,                           \
                                           trex_emu::STEP<C, highPerformance>);                                  \
  }
TREX_EMU_GELU(Gelu, GeluStep, 2)
TREX_EMU_GELU(FasterGelu, FasterGeluStep, 1)
TREX_EMU_GELU(FasterGeluV2, FasterGeluV2Step, 3)
#undef TREX_EMU_GELU

// ------------------------------------------------------------------ Silu / Swish (no temporary buffer)
template <typename T, bool isReuseSource = false>
inline void Silu(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t dataSize) {
  trex_emu::ActOperands<T>("Silu", dst, src, nullptr, dataSize);
  for (uint32_t i = 0; i < dataSize; ++i) {
    const float x = trex_emu::ToF(src.addr_[i]);
    float d = trex_emu::Rt<T>(x * -1.0f);
    d = trex_emu::Rt<T>(std::exp(d));
    d = trex_emu::Rt<T>(d + 1.0f);
    dst.addr_[i] = trex_emu::Down<T>(x / d);
  }
  trex_emu::EndAdvancedApi("Silu", nullptr, trex_emu::CountFormRepeats(dataSize, sizeof(T)));
}
template <typename T, bool isReuseSource = false>
inline void Swish(const LocalTensor<T>& dst, const LocalTensor<T>& src, uint32_t dataSize, const T scalarValue) {
  trex_emu::ActOperands<T>("Swish", dst, src, nullptr, dataSize);
  const float s = trex_emu::Rt<T>(-1.0f * trex_emu::ToF(scalarValue));
  for (uint32_t i = 0; i < dataSize; ++i) {
    const float x = trex_emu::ToF(src.addr_[i]);
    float d = trex_emu::Rt<T>(x * s);
    d = trex_emu::Rt<T>(std::exp(d));
    d = trex_emu::Rt<T>(d + 1.0f);
    dst.addr_[i] = trex_emu::Down<T>(x / d);
  }
  trex_emu::EndAdvancedApi("Swish", nullptr, trex_emu::CountFormRepeats(dataSize, sizeof(T)));
}
}  // namespace AscendC

namespace trex_emu {
template <class T>
inline void GeGLUAdv(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                     const AscendC::LocalTensor<T>& s1, const AscendC::LocalTensor<uint8_t>* tmp, uint32_t count) {
  const char* api = "GeGLU";
  ActOperands<T>(api, dst, s0, &s1, count);
  if (s0.GetSize() != s1.GetSize())
    Fail(api, ": size of src0 (", s0.GetSize(), ") is not equal to size of src1 (", s1.GetSize(), ")");
  if (std::is_same<T, half>::value && tmp != nullptr) {  // bytes / 8 half elements, a 32-byte multiple
    if (tmp->GetSize() / 8 * 2 / 32 * 32 == 0)
      Fail(api, ": sharedTmpBuffer holds ", tmp->GetSize(), " B; half needs 2 float scratch values per element and "
           "at least 16 elements, 128 B (GetGeGLUMaxMinTmpSize gives the sizes)");
    AdvTmpCheck(api, tmp, 1, 1, 0, dst.addr_, uint64_t{count} * 2, s0.addr_, uint64_t{count} * 2, s1.addr_,
                uint64_t{count} * 2);
  }
  for (uint32_t i = 0; i < count; ++i) {
    const float b = ToF(s1.addr_[i]);
    float d = b * b;  // float for both types (half: Cast up, the float steps, Cast down)
    d = d + 2.2363860002236e1f;
    d = d * b;
    d = d * -0.0713548162726f;
    d = std::exp(d);
    d = d + 1.0f;
    d = b / d;
    dst.addr_[i] = Down<T>(ToF(s0.addr_[i]) * d);
  }
  EndAdvancedApi(api, tmp, CountFormRepeats(count, 4));
}
template <class T>
inline void SwiGLUAdv(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& s0,
                      const AscendC::LocalTensor<T>& s1, float beta, const AscendC::LocalTensor<uint8_t>* tmp,
                      uint32_t count) {
  const char* api = "SwiGLU";
  ActOperands<T>(api, dst, s0, &s1, count);
  if (s0.GetSize() != s1.GetSize()) Fail(api, ": src0 and src1 must have the same size (", s0.GetSize(), " vs ", s1.GetSize(), ")");
  if (std::is_same<T, half>::value && tmp != nullptr) {  // 3 float tensors of bytes / 4 / 3 elements, 32-byte multiple
    if (tmp->GetSize() / 4 / 3 * 2 / 32 * 32 == 0)
      Fail(api, ": sharedTmpBuffer holds ", tmp->GetSize(), " B; half needs 3 float scratch tensors of at least 16 "
           "elements, 192 B (GetSwiGLUMaxMinTmpSize gives the sizes)");
    AdvTmpCheck(api, tmp, 1, 1, 0, dst.addr_, uint64_t{count} * 2, s0.addr_, uint64_t{count} * 2, s1.addr_,
                uint64_t{count} * 2);
  }
  const float s = -1.0f * beta;
  for (uint32_t i = 0; i < count; ++i) {
    const float b = ToF(s1.addr_[i]);
    float d = b * s;
    d = std::exp(d);
    d = d + 1.0f;
    d = b / d;
    dst.addr_[i] = Down<T>(ToF(s0.addr_[i]) * d);
  }
  EndAdvancedApi(api, tmp, CountFormRepeats(count, 4));
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                  const LocalTensor<uint8_t>& sharedTmpBuffer, uint32_t calCount) {
  trex_emu::GeGLUAdv(dst, src0, src1, &sharedTmpBuffer, calCount);
}
template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                  const LocalTensor<uint8_t>& sharedTmpBuffer) {
  trex_emu::GeGLUAdv(dst, src0, src1, &sharedTmpBuffer, src0.GetSize());
}
template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1, uint32_t calCount) {
  trex_emu::GeGLUAdv(dst, src0, src1, nullptr, calCount);
}
template <typename T, bool isReuseSource = false>
inline void GeGLU(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1) {
  trex_emu::GeGLUAdv(dst, src0, src1, nullptr, src0.GetSize());
}
template <typename T, bool isReuseSource = false>
inline void SwiGLU(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                   const float& scalarValue, const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t calCount) {
  trex_emu::SwiGLUAdv(dst, src0, src1, scalarValue, &sharedTmpBuffer, calCount);
}
template <typename T, bool isReuseSource = false>
inline void SwiGLU(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                   const float& scalarValue, const LocalTensor<uint8_t>& sharedTmpBuffer) {
  trex_emu::SwiGLUAdv(dst, src0, src1, scalarValue, &sharedTmpBuffer, src0.GetSize());
}
template <typename T, bool isReuseSource = false>
inline void SwiGLU(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                   const float& scalarValue, const uint32_t calCount) {
  trex_emu::SwiGLUAdv(dst, src0, src1, scalarValue, nullptr, calCount);
}
template <typename T, bool isReuseSource = false>
inline void SwiGLU(const LocalTensor<T>& dst, const LocalTensor<T>& src0, const LocalTensor<T>& src1,
                   const float& scalarValue) {
  trex_emu::SwiGLUAdv(dst, src0, src1, scalarValue, nullptr, src0.GetSize());
}
}  // namespace AscendC
