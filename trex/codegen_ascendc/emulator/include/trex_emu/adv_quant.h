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
//  * AscendAntiQuant<InputDataType, OutputDataType, isTranspose = false>(dst, src int8_t [K, N], offset, scale,
//    [tmp], K[, AntiQuantShapeInfo]) (detail/quantization/antiquant/, arch 2201): per channel, element [r, c] =
//    (src + offset[c]) * scale[c]; half dst in half as the implementation (h = half(src); h = h + offset;
//    h = h * scale, each rounded to half); bfloat16_t dst in float (half(src) -> float, + float(offset),
//    * float(scale), Cast CAST_RINT). Scalar offset/scale: the same with the scalars. Scale only (no offset
//    tensor): groups of K / groupCount rows take scale row [group, N] (groupCount/N from AntiQuantShapeInfo's
//    scaleHeight/scaleWidth, else the scale tensor's ShapeInfo shape[0]/[1]). N = src.GetSize() / K.
//    Checks: K > 0 dividing src's size, offset/scale holding N (or groupCount * N), operands in UB; bfloat16_t
//    needs tmp of >= 8 B a channel (its loop size tmp / 2 / 4 > 0). isTranspose and int4b_t are not emulated.
// Host: GetAscendQuantMaxMinTmpSize, GetAscendDequantMaxMinTmpSize, GetAscendAntiQuantMaxMinTmpSize (A2 formulas of
// impl/adv_api/tiling/quantization/: 0 for a half output; bf16: per channel K-major 2 * N * 4 + 64 * K * 4 (both),
// transposed per channel 80 * N * 4, per tensor max srcSize * 4, min 1024).
#pragma once
#include <cstdint>
#include <type_traits>

#include "trex_emu/adv_math.h"
#include "trex_emu/adv_rmsnorm.h"  // PopStackBuffer

namespace AscendC {
struct DequantParams {
  uint32_t m;
  uint32_t n;
  uint32_t calCount;
};
enum class DeQuantMode { DEQUANT_WITH_SINGLE_ROW = 0, DEQUANT_WITH_MULTI_ROW };
struct AntiQuantShapeInfo {
  uint32_t offsetHeight{0};
  uint32_t offsetWidth{0};
  uint32_t scaleHeight{0};
  uint32_t scaleWidth{0};
};

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
template <class Shape, class DT>
inline void GetAscendAntiQuantMaxMinTmpSize(const Shape& srcShape, const Shape& scaleShape, bool isTranspose,
                                            DT inputDataType, DT outputDataType, uint32_t& maxValue,
                                            uint32_t& minValue) {
  (void)inputDataType;
  auto size = [](const Shape& s) {
    uint64_t n = 1;
    for (size_t i = 0; i < s.GetDimNum(); ++i) n *= static_cast<uint64_t>(s.GetDim(i));
    return static_cast<uint32_t>(n);
  };
  if (static_cast<int>(outputDataType) == 1) {  // ge::DT_FLOAT16: the half path needs no temporary space
    maxValue = minValue = 0;
    return;
  }
  const uint32_t scale = size(scaleShape), src = size(srcShape);
  const bool perChannel = scale != 1;
  const uint32_t k = srcShape.GetDimNum() ? static_cast<uint32_t>(srcShape.GetDim(0)) : 0;
  if (isTranspose && perChannel) maxValue = minValue = 80 * scale * 4;
  else if (perChannel) maxValue = minValue = scale * 2 * 4 + 64 * k * 4;
  else {
    maxValue = src * 4;
    minValue = 1024;
  }
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

namespace trex_emu {
// AscendAntiQuant, non-transposed: off/scl give the offset and scale of (row, column); hasOff false: no offset.
template <class D, class S, class F>
inline void AntiQuantRun(const AscendC::LocalTensor<D>& dst, const AscendC::LocalTensor<S>& src,
                         const AscendC::LocalTensor<uint8_t>* tmp, uint32_t K, uint32_t N, bool hasOff, F at) {
  const char* api = "AscendAntiQuant";
  AdvOperand(api, "dst", dst, K * N);
  AdvOperand(api, "src", src, K * N);
  if (dst.GetSize() < uint64_t{K} * N) Fail(api, ": dst holds ", dst.GetSize(), " elements; src has ", K * N);
  if constexpr (std::is_same<D, bfloat16_t>::value) {
    if (tmp == nullptr || tmp->GetSize() / 2 / 4 == 0)
      Fail(api, ": a bfloat16_t result goes through float in sharedTmpBuffer, which holds ",
           tmp ? tmp->GetSize() : 0, " B (GetAscendAntiQuantMaxMinTmpSize gives the sizes)");
    AdvTmpCheck(api, tmp, 1, 1, 0, dst.addr_, uint64_t{K} * N * sizeof(D), src.addr_, uint64_t{K} * N);
  }
  for (uint32_t r = 0; r < K; ++r)
    for (uint32_t c = 0; c < N; ++c) {
      float o, s;
      at(r, c, o, s);
      const uint64_t i = uint64_t{r} * N + c;
      const half h0 = Down<half>(static_cast<float>(src.addr_[i]));
      if constexpr (std::is_same<D, half>::value) {
        half h = h0;
        if (hasOff) h = Down<half>(ToF(h) + o);
        dst.addr_[i] = Down<half>(ToF(h) * s);
      } else {
        float f = ToF(h0);
        if (hasOff) f = f + o;
        f = f * s;
        dst.addr_[i] = CastValue<bfloat16_t>(f, AscendC::RoundMode::CAST_RINT);
      }
    }
  EndAdvancedApi(api, tmp, CountFormRepeats(uint64_t{K} * N, sizeof(float)) * 3);
}
template <class S, class D, bool isTranspose>
inline uint32_t AntiQuantN(const AscendC::LocalTensor<S>& src, uint32_t K) {
  static_assert(std::is_same<S, int8_t>::value, "AscendAntiQuant: only int8_t input is emulated (int4b_t is not)");
  static_assert(kOneOf<D, half, bfloat16_t>, "AscendAntiQuant: the output must be half or bfloat16_t");
  static_assert(!isTranspose, "AscendAntiQuant: isTranspose = true is not emulated");
  if (K == 0 || src.GetSize() % K != 0)
    Fail("AscendAntiQuant: K ", K, " must be positive and divide src's ", src.GetSize(), " elements");
  return src.GetSize() / K;
}
}  // namespace trex_emu

namespace AscendC {
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const LocalTensor<OutputDataType>& offset, const LocalTensor<OutputDataType>& scale,
                            const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t k,
                            const AntiQuantShapeInfo& shapeInfo = {}) {
  (void)shapeInfo;
  const uint32_t n = trex_emu::AntiQuantN<InputDataType, OutputDataType, isTranspose>(src, k);
  if (offset.GetSize() < n || scale.GetSize() < n)
    trex_emu::Fail("AscendAntiQuant: offset / scale hold ", offset.GetSize(), " / ", scale.GetSize(),
                   " elements; N is ", n);
  trex_emu::AdvOperand("AscendAntiQuant", "offset", offset, n);
  trex_emu::AdvOperand("AscendAntiQuant", "scale", scale, n);
  trex_emu::AntiQuantRun(dst, src, &sharedTmpBuffer, k, n, true, [&](uint32_t, uint32_t c, float& o, float& s) {
    o = trex_emu::ToF(offset.addr_[c]);
    s = trex_emu::ToF(scale.addr_[c]);
  });
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const LocalTensor<OutputDataType>& offset, const LocalTensor<OutputDataType>& scale,
                            const uint32_t k, const AntiQuantShapeInfo& shapeInfo = {}) {
  LocalTensor<uint8_t> stack;
  PopStackBuffer<uint8_t, TPosition::LCM>(stack);
  AscendAntiQuant<InputDataType, OutputDataType, isTranspose>(dst, src, offset, scale, stack, k, shapeInfo);
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const LocalTensor<OutputDataType>& scale, const LocalTensor<uint8_t>& sharedTmpBuffer,
                            const uint32_t k, const AntiQuantShapeInfo& shapeInfo = {}) {
  trex_emu::AntiQuantN<InputDataType, OutputDataType, isTranspose>(src, k);
  const ShapeInfo si = scale.GetShapeInfo();
  const uint32_t groups = shapeInfo.scaleHeight ? shapeInfo.scaleHeight : (si.shapeDim ? si.shape[0] : 0);
  const uint32_t n = shapeInfo.scaleWidth ? shapeInfo.scaleWidth : (si.shapeDim > 1 ? si.shape[1] : 0);
  if (groups == 0 || n == 0 || k % groups != 0 || src.GetSize() != uint64_t{k} * n)
    trex_emu::Fail("AscendAntiQuant: the scale's [groupCount, N] = [", groups, ", ", n,
                   "] (AntiQuantShapeInfo scaleHeight/scaleWidth or the scale's SetShapeInfo) must fit src's ",
                   src.GetSize(), " elements of K = ", k, " rows");
  if (scale.GetSize() < uint64_t{groups} * n)
    trex_emu::Fail("AscendAntiQuant: scale holds ", scale.GetSize(), " elements; [", groups, ", ", n, "] needed");
  const uint32_t gs = k / groups;
  trex_emu::AntiQuantRun(dst, src, &sharedTmpBuffer, k, n, false, [&](uint32_t r, uint32_t c, float& o, float& s) {
    o = 0;
    s = trex_emu::ToF(scale.addr_[uint64_t{r / gs} * n + c]);
  });
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const OutputDataType offset, const OutputDataType scale,
                            const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t k,
                            const AntiQuantShapeInfo& shapeInfo = {}) {
  (void)shapeInfo;
  const uint32_t n = trex_emu::AntiQuantN<InputDataType, OutputDataType, isTranspose>(src, k);
  const float o = trex_emu::ToF(offset), s = trex_emu::ToF(scale);
  trex_emu::AntiQuantRun(dst, src, &sharedTmpBuffer, k, n, true, [&](uint32_t, uint32_t, float& oo, float& ss) {
    oo = o;
    ss = s;
  });
}
template <typename InputDataType, typename OutputDataType, bool isTranspose>
inline void AscendAntiQuant(const LocalTensor<OutputDataType>& dst, const LocalTensor<InputDataType>& src,
                            const OutputDataType offset, const OutputDataType scale, const uint32_t k,
                            const AntiQuantShapeInfo& shapeInfo = {}) {
  LocalTensor<uint8_t> stack;
  PopStackBuffer<uint8_t, TPosition::LCM>(stack);
  AscendAntiQuant<InputDataType, OutputDataType, isTranspose>(dst, src, offset, scale, stack, k, shapeInfo);
}
}  // namespace AscendC
