// trex AscendC emulator: AscendQuant / AscendDequant (asc-devkit 高阶API/量化反量化/) for Atlas A2/A3.
//  * AscendQuant<T>(dst int8, src T, [tmp], scale, offset, calCount) (impl/adv_api/detail/quantization/quant/
//    ascend_quant_pre_impl.h, AscendQuantIntrinsicsImpl): in half, as the implementation: h = half(src) (float
//    src: Cast CAST_NONE), h = h * half(scale), h = h + half(offset), dst = Cast<int8_t>(h, CAST_NONE) (the emulator's
//    Cast semantics: round to nearest, saturated). Per channel (scaleTensor[, offsetTensor / offset], scaleCount):
//    element i takes scale[i % scaleCount]; calCount % scaleCount == 0 (the CPU-debug check).
//    tmp: bytes / 2 / 32 * 32 half elements > 0 (splitSize).
//  * AscendDequant<dstT, scaleT>(dst, src int32 [m, n], deqScale, [tmp], DequantParams{m, n, calCount}): for each
//    row r and j < calCount, dst[r * alignN + j] = dstT(float(src[r * n + j]) * scale[j]) (scale tensor) or * scale
//    (scalar), alignN = n rounded up to 32 bytes of dstT, float -> half CAST_NONE, -> bfloat16_t CAST_RINT;
//    columns >= calCount are not written. Checks (ascend_dequant_common_impl.h): calCount in (0, n], m * n <= src
//    size, m * alignN <= dst size, calCount <= deqScale size; tmp (float) must hold align8(calCount) + n floats.
//    scaleT float / bfloat16_t (uint64_t deqScale is not emulated). With m == 1, n a multiple of calCount and
//    calCount block-aligned, {1, n, c} is {n / c, c, c} (UpdateDequantParams).
// Host: GetAscendQuantMaxMinTmpSize, GetAscendDequantMaxMinTmpSize (impl/adv_api/tiling/quantization/).
#pragma once
#include <cstdint>
#include <type_traits>

#include "trex_emu/adv_math.h"

namespace AscendC {
struct DequantParams {
  uint32_t m;
  uint32_t n;
  uint32_t calCount;
};
enum class DeQuantMode { DEQUANT_WITH_SINGLE_ROW = 0, DEQUANT_WITH_MULTI_ROW };

template <class Shape>
inline void GetAscendQuantMaxMinTmpSize(const Shape& srcShape, const uint32_t, uint32_t& maxValue, uint32_t& minValue) {
  uint64_t n = 1;
  for (size_t i = 0; i < srcShape.GetDimNum(); ++i) n *= static_cast<uint64_t>(srcShape.GetDim(i));
  const uint32_t v = std::max<uint32_t>(static_cast<uint32_t>(n) * 2, 2 * 256);
  maxValue = (v + 31) / 32 * 32;
  minValue = 2 * 256;
}
inline void GetAscendQuantTmpBufferFactorSize(uint32_t& maxLiveNodeCount, uint32_t& extraBuf) {
  extraBuf = 0;
  maxLiveNodeCount = 2;
}
template <class Shape>
inline void GetAscendDequantMaxMinTmpSize(const Shape& srcShape, const uint32_t, uint32_t& maxValue,
                                          uint32_t& minValue) {
  uint32_t outer = 1, inner = 0;
  if (srcShape.GetDimNum() == 2) {
    outer = static_cast<uint32_t>(srcShape.GetDim(0));
    inner = static_cast<uint32_t>(srcShape.GetDim(1));
  } else if (srcShape.GetDimNum() == 1) {
    inner = static_cast<uint32_t>(srcShape.GetDim(0));
  } else {
    return;
  }
  const uint32_t scale = inner + 8;
  maxValue = (64 + outer * inner + scale) * 4;
  minValue = (64 + inner + scale) * 4;
}
}  // namespace AscendC

namespace trex_emu {
template <class T>
inline void QuantAdv(const AscendC::LocalTensor<int8_t>& dst, const AscendC::LocalTensor<T>& src,
                     const AscendC::LocalTensor<uint8_t>* tmp, const T* scale_t, uint32_t scaleCount, float scale,
                     const T* offset_t, float offset, uint32_t count) {
  static_assert(kFloatTypes<T>, "AscendQuant: src must be half or float (Atlas A2/A3)");
  const char* api = "AscendQuant";
  AdvOperand(api, "dst", dst, count);
  AdvOperand(api, "src", src, count);
  if (count > src.GetSize()) Fail(api, ": calCount ", count, " exceeds the source's ", src.GetSize(), " elements");
  if (scale_t && (scaleCount == 0 || count % scaleCount != 0))
    Fail(api, ": calCount ", count, " must be a positive multiple of scaleCount ", scaleCount);
  AdvTmpCheck(api, tmp, 2, 1, 0, dst.addr_, count, src.addr_, uint64_t{count} * sizeof(T));
  const half hs = Down<half>(scale), ho = Down<half>(offset);
  for (uint32_t i = 0; i < count; ++i) {
    const half s = scale_t ? Down<half>(ToF(scale_t[i % scaleCount])) : hs;
    const half o = offset_t ? Down<half>(ToF(offset_t[i % scaleCount])) : ho;
    half h = Down<half>(ToF(src.addr_[i]));
    h = Down<half>(ToF(h) * ToF(s));
    h = Down<half>(ToF(h) + ToF(o));
    dst.addr_[i] = CastValue<int8_t>(h, AscendC::RoundMode::CAST_NONE);
  }
  EndAdvancedApi(api, tmp, CountFormRepeats(count, sizeof(half)));
}

template <class D, class S>
inline void DequantAdv(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<int32_t>& src,
                       const AscendC::LocalTensor<S>* scale_t, float scale, const AscendC::LocalTensor<uint8_t>* tmp,
                       AscendC::DequantParams p) {
  static_assert(kOneOf<D, half, float, bfloat16_t>, "AscendDequant: dstT must be half, float or bfloat16_t");
  static_assert(kOneOf<S, float, bfloat16_t>, "AscendDequant: deqScale float or bfloat16_t (uint64_t is not emulated)");
  const char* api = "AscendDequant";
  const uint32_t blk = 32 / sizeof(D);
  if (p.m == 1 && p.calCount && p.calCount % blk == 0 && p.n % p.calCount == 0) {
    p.m = p.n / p.calCount;
    p.n = p.calCount;
  }
  const uint32_t align_n = (p.n + blk - 1) / blk * blk;
  if (p.calCount == 0 || p.calCount > p.n)
    Fail(api, ": params.calCount is ", p.calCount, ", which should be in range (0, params.n ", p.n, "]");
  if (uint64_t{p.m} * p.n > src.GetSize())
    Fail(api, ": params.m * params.n = ", uint64_t{p.m} * p.n, " exceeds srcTensor's ", src.GetSize(), " elements");
  if (uint64_t{p.m} * align_n > dst.GetSize())
    Fail(api, ": dstTensor element num should be not less than ", uint64_t{p.m} * align_n);
  if (scale_t && p.calCount > scale_t->GetSize())
    Fail(api, ": params.calCount ", p.calCount, " exceeds deqScale's ", scale_t->GetSize(), " elements");
  AdvOperand(api, "src", src, p.m * p.n);
  AdvOperand(api, "dst", dst, p.m * align_n);
  if (tmp != nullptr) {
    const uint32_t floats = tmp->GetSize() / 4, sc = (p.calCount + 7) / 8 * 8;
    if (floats < sc + p.n)
      Fail(api, ": sharedTmpBuffer holds ", tmp->GetSize(), " B; the implementation needs at least ", (sc + p.n) * 4,
           " B (stackBuffer size is not large enough; GetAscendDequantMaxMinTmpSize gives the sizes)");
    AdvTmpCheck(api, tmp, 1, 1, 0, dst.addr_, uint64_t{p.m} * align_n * sizeof(D), src.addr_, uint64_t{p.m} * p.n * 4);
  }
  const AscendC::RoundMode mode =
      std::is_same<D, bfloat16_t>::value ? AscendC::RoundMode::CAST_RINT : AscendC::RoundMode::CAST_NONE;
  for (uint32_t r = 0; r < p.m; ++r)
    for (uint32_t j = 0; j < p.calCount; ++j) {
      const float x = CastValue<float>(src.addr_[uint64_t{r} * p.n + j], AscendC::RoundMode::CAST_NONE);
      const float s = scale_t ? ToF(scale_t->addr_[j]) : scale;
      const float y = x * s;
      if constexpr (std::is_same<D, float>::value) dst.addr_[uint64_t{r} * align_n + j] = y;
      else dst.addr_[uint64_t{r} * align_n + j] = CastValue<D>(y, mode);
    }
  EndAdvancedApi(api, tmp, CountFormRepeats(uint64_t{p.m} * p.n, 4));
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, bool isReuseSource = false>
inline void AscendQuant(const LocalTensor<int8_t>& dst, const LocalTensor<T>& src,
                        const LocalTensor<uint8_t>& sharedTmpBuffer, const float scale, const float offset,
                        const uint32_t calCount) {
  trex_emu::QuantAdv<T>(dst, src, &sharedTmpBuffer, nullptr, 0, scale, nullptr, offset, calCount);
}
template <typename T, bool isReuseSource = false>
inline void AscendQuant(const LocalTensor<int8_t>& dst, const LocalTensor<T>& src, const float scale,
                        const float offset, const uint32_t calCount) {
  trex_emu::QuantAdv<T>(dst, src, nullptr, nullptr, 0, scale, nullptr, offset, calCount);
}
template <typename T, bool isReuseSource = false>
inline void AscendQuant(const LocalTensor<int8_t>& dst, const LocalTensor<T>& src, const float scale,
                        const float offset) {
  trex_emu::QuantAdv<T>(dst, src, nullptr, nullptr, 0, scale, nullptr, offset, src.GetSize());
}
template <typename T, bool isReuseSource = false>
inline void AscendQuant(const LocalTensor<int8_t>& dst, const LocalTensor<T>& src,
                        const LocalTensor<uint8_t>& sharedTmpBuffer, const LocalTensor<T>& scaleTensor, const T offset,
                        const uint32_t scaleCount, const uint32_t calCount) {
  trex_emu::QuantAdv<T>(dst, src, &sharedTmpBuffer, scaleTensor.addr_, scaleCount, 0, nullptr, trex_emu::ToF(offset),
                        calCount);
}
template <typename T, bool isReuseSource = false>
inline void AscendQuant(const LocalTensor<int8_t>& dst, const LocalTensor<T>& src, const LocalTensor<T>& scaleTensor,
                        const T offset, const uint32_t scaleCount, const uint32_t calCount) {
  trex_emu::QuantAdv<T>(dst, src, nullptr, scaleTensor.addr_, scaleCount, 0, nullptr, trex_emu::ToF(offset), calCount);
}
template <typename T, bool isReuseSource = false>
inline void AscendQuant(const LocalTensor<int8_t>& dst, const LocalTensor<T>& src,
                        const LocalTensor<uint8_t>& sharedTmpBuffer, const LocalTensor<T>& scaleTensor,
                        const LocalTensor<T>& offsetTensor, const uint32_t scaleCount, const uint32_t offsetCount,
                        const uint32_t calCount) {
  if (scaleCount != offsetCount) trex_emu::Fail("AscendQuant: scaleCount ", scaleCount, " != offsetCount ", offsetCount);
  trex_emu::QuantAdv<T>(dst, src, &sharedTmpBuffer, scaleTensor.addr_, scaleCount, 0, offsetTensor.addr_, 0, calCount);
}
template <typename T, bool isReuseSource = false>
inline void AscendQuant(const LocalTensor<int8_t>& dst, const LocalTensor<T>& src, const LocalTensor<T>& scaleTensor,
                        const LocalTensor<T>& offsetTensor, const uint32_t scaleCount, const uint32_t offsetCount,
                        const uint32_t calCount) {
  if (scaleCount != offsetCount) trex_emu::Fail("AscendQuant: scaleCount ", scaleCount, " != offsetCount ", offsetCount);
  trex_emu::QuantAdv<T>(dst, src, nullptr, scaleTensor.addr_, scaleCount, 0, offsetTensor.addr_, 0, calCount);
}

template <typename dstT, typename scaleT, DeQuantMode mode = DeQuantMode::DEQUANT_WITH_SINGLE_ROW>
inline void AscendDequant(const LocalTensor<dstT>& dst, const LocalTensor<int32_t>& src, const LocalTensor<scaleT>& deqScale,
                          const LocalTensor<uint8_t>& sharedTmpBuffer, DequantParams params) {
  trex_emu::DequantAdv<dstT, scaleT>(dst, src, &deqScale, 0, &sharedTmpBuffer, params);
}
template <typename dstT, typename scaleT, DeQuantMode mode = DeQuantMode::DEQUANT_WITH_SINGLE_ROW>
inline void AscendDequant(const LocalTensor<dstT>& dst, const LocalTensor<int32_t>& src, const LocalTensor<scaleT>& deqScale,
                          DequantParams params) {
  trex_emu::DequantAdv<dstT, scaleT>(dst, src, &deqScale, 0, nullptr, params);
}
template <typename dstT, typename scaleT, DeQuantMode mode = DeQuantMode::DEQUANT_WITH_SINGLE_ROW>
inline void AscendDequant(const LocalTensor<dstT>& dst, const LocalTensor<int32_t>& src, const scaleT deqScale,
                          const LocalTensor<uint8_t>& sharedTmpBuffer, DequantParams params) {
  trex_emu::DequantAdv<dstT, scaleT>(dst, src, nullptr, trex_emu::ToF(deqScale), &sharedTmpBuffer, params);
}
template <typename dstT, typename scaleT, DeQuantMode mode = DeQuantMode::DEQUANT_WITH_SINGLE_ROW>
inline void AscendDequant(const LocalTensor<dstT>& dst, const LocalTensor<int32_t>& src, const scaleT deqScale,
                          DequantParams params) {
  trex_emu::DequantAdv<dstT, scaleT>(dst, src, nullptr, trex_emu::ToF(deqScale), nullptr, params);
}
}  // namespace AscendC
