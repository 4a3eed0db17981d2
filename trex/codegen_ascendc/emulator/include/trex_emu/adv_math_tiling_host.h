// Host tiling helpers (namespace AscendC, asc-devkit's tiling_api.h) of the elementwise math advanced APIs of
// adv_math.h and Exp, with the sizes impl/adv_api/tiling/math/<api>_tiling*.cpp computes for Atlas A2/A3:
// min / max temporary bytes (max grows with the element count n of the shape) and the TmpBufferFactorSize pairs.
// Templates on the shape so both ge::Shape models (kernel side and include_host) take them.
#pragma once
#include <algorithm>
#include <cstdint>

namespace AscendC {
namespace trex_tiling {
template <class Shape>
inline uint32_t N(const Shape& s) {
  uint64_t n = 1;
  for (size_t i = 0; i < s.GetDimNum(); ++i) n *= static_cast<uint64_t>(s.GetDim(i));
  return static_cast<uint32_t>(n);
}
inline uint32_t Fac(uint32_t typeSize, uint32_t halfFac, uint32_t floatFac) { return typeSize == 4 ? floatFac : halfFac; }
}  // namespace trex_tiling

// Ceil / Floor / Trunc: fac (2 half, 1 float) * max(n * typeSize, 256); min fac * 256.
#define TREX_EMU_ROUND_TILING(NAME)                                                                               \
  template <class Shape>                                                                                          \
  inline void Get##NAME##MaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool, uint32_t& maxValue, \
                                       uint32_t& minValue) {                                                      \
    const uint32_t f = trex_tiling::Fac(typeSize, 2, 1);                                                          \
    minValue = f * 256;                                                                                           \
    maxValue = f * std::max<uint32_t>(trex_tiling::N(srcShape) * typeSize, 256);                                  \
  }                                                                                                               \
  inline void Get##NAME##TmpBufferFactorSize(const uint32_t typeSize, uint32_t& maxLiveNodeCount, uint32_t& extraBuf) { \
    extraBuf = 0;                                                                                                 \
    maxLiveNodeCount = trex_tiling::Fac(typeSize, 2, 1);                                                          \
  }
TREX_EMU_ROUND_TILING(Ceil)
TREX_EMU_ROUND_TILING(Floor)
TREX_EMU_ROUND_TILING(Trunc)
#undef TREX_EMU_ROUND_TILING

// Acosh: max max(fac * n, 256) * typeSize, min fac * 256 (fac 2 half, 1 float; as acosh_tiling.cpp, the min is
// not scaled by typeSize). Asinh: fac 3; Atanh: fac 4 half, 1 float; both max fac * max(n * typeSize, 256), min fac * 256.
template <class Shape>
inline void GetAcoshMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                  uint32_t& minValue) {
  const uint32_t f = trex_tiling::Fac(typeSize, 2, 1);
  minValue = f * 256;
  maxValue = std::max<uint32_t>(f * trex_tiling::N(srcShape), 256) * typeSize;
}
inline void GetAcoshTmpBufferFactorSize(const uint32_t typeSize, uint32_t& maxLiveNodeCount, uint32_t& extraBuf) {
  extraBuf = 0;
  maxLiveNodeCount = trex_tiling::Fac(typeSize, 2, 1);
}
#define TREX_EMU_ARC_TILING(NAME, HALF_FAC, FLOAT_FAC)                                                             \
  template <class Shape>                                                                                          \
  inline void Get##NAME##MaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool, uint32_t& maxValue, \
                                       uint32_t& minValue) {                                                      \
    const uint32_t f = trex_tiling::Fac(typeSize, HALF_FAC, FLOAT_FAC);                                           \
    minValue = f * 256;                                                                                           \
    maxValue = f * std::max<uint32_t>(trex_tiling::N(srcShape) * typeSize, 256);                                  \
  }                                                                                                               \
  inline void Get##NAME##TmpBufferFactorSize(const uint32_t typeSize, uint32_t& maxLiveNodeCount, uint32_t& extraBuf) { \
    extraBuf = 0;                                                                                                 \
    maxLiveNodeCount = trex_tiling::Fac(typeSize, HALF_FAC, FLOAT_FAC);                                           \
  }
TREX_EMU_ARC_TILING(Asinh, 3, 3)
TREX_EMU_ARC_TILING(Atanh, 4, 1)
#undef TREX_EMU_ARC_TILING

// Frac: fac 4 (half) / 0 (float).
template <class Shape>
inline void GetFracMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                 uint32_t& minValue) {
  const uint32_t f = trex_tiling::Fac(typeSize, 4, 0);
  minValue = f * 256;
  maxValue = f * std::max<uint32_t>(trex_tiling::N(srcShape) * typeSize, 256);
}
inline void GetFracTmpBufferFactorSize(const uint32_t typeSize, uint32_t& maxLiveNodeCount, uint32_t& extraBuf) {
  extraBuf = 0;
  maxLiveNodeCount = trex_tiling::Fac(typeSize, 4, 0);
}

// Clamp (ClampMin / ClampMax): min 64 (float) / 128 (half) bytes, max max(n, min).
template <class Shape>
inline void GetClampMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                  uint32_t& minValue) {
  minValue = typeSize == 4 ? 64 : 128;
  maxValue = std::max<uint32_t>(trex_tiling::N(srcShape), minValue);
}
inline void GetClampTmpBufferFactorSize(const uint32_t, uint32_t& maxLiveNodeCount, uint32_t& extraBuf) {
  extraBuf = 0;
  maxLiveNodeCount = 1;
}

// Fmod: Trunc's factor plus 6 (half) / 0 (float), over max(n * typeSize, 256).
template <class Shape>
inline void GetFmodMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                 uint32_t& minValue) {
  const uint32_t f = trex_tiling::Fac(typeSize, 2, 1) + (typeSize == 4 ? 0 : 6);
  minValue = f * 256;
  maxValue = f * std::max<uint32_t>(trex_tiling::N(srcShape) * typeSize, 256);
}
inline void GetFmodTmpBufferFactorSize(const uint32_t typeSize, uint32_t& maxLiveNodeCount, uint32_t& extraBuf) {
  extraBuf = 0;
  maxLiveNodeCount = trex_tiling::Fac(typeSize, 2, 1) + (typeSize == 4 ? 0 : 6);
}

// Axpy: float 0 / 0; half min 4 * 256, max 4 * n * typeSize when above 256 B.
template <class Shape>
inline void GetAxpyMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                 uint32_t& minValue) {
  if (typeSize == 4) {
    minValue = maxValue = 0;
    return;
  }
  const uint32_t n = trex_tiling::N(srcShape);
  minValue = 4 * 256;
  maxValue = n * typeSize > 256 ? 4 * n * typeSize : 4 * 256;
}
inline void GetAxpyTmpBufferFactorSize(const uint32_t typeSize, uint32_t& maxLiveNodeCount, uint32_t& extraBuf) {
  extraBuf = 0;
  maxLiveNodeCount = trex_tiling::Fac(typeSize, 4, 1);
}

// Xor: min 256, max max(n * typeSize, 256).
template <class Shape>
inline void GetXorMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                uint32_t& minValue) {
  minValue = 256;
  maxValue = std::max<uint32_t>(trex_tiling::N(srcShape) * typeSize, 256);
}
inline void GetXorTmpBufferFactorSize(const uint32_t, uint32_t& maxLiveNodeCount, uint32_t& extraBuffer) {
  extraBuffer = 0;
  maxLiveNodeCount = 1;
}

// Log: none; Log2 / Log10: half min 256 (LOG2_TMP_SIZE), max max(n * 4, 256); float none.
template <class Shape>
inline void GetLogMaxMinTmpSize(const Shape&, const uint32_t, const bool, uint32_t& maxValue, uint32_t& minValue) {
  maxValue = minValue = 0;
}
template <class Shape>
inline void GetLog2MaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                 uint32_t& minValue) {
  minValue = typeSize == 2 ? 256 : 0;
  maxValue = typeSize == 2 ? std::max<uint32_t>(trex_tiling::N(srcShape) * 4, 256) : 0;
}
template <class Shape>
inline void GetLog10MaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool r, uint32_t& maxValue,
                                  uint32_t& minValue) {
  GetLog2MaxMinTmpSize(srcShape, typeSize, r, maxValue, minValue);
}

// Exp (taylorExpandLevel form): 4 (half) / 3 (float) / 2 (float, isReuseSource) float buffers of
// max(n * 4, 256) bytes; min the same count of 256 B.
template <class Shape>
inline bool GetExpMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                uint32_t& maxValue, uint32_t& minValue) {
  const uint32_t k = typeSize == 4 ? (isReuseSource ? 2 : 3) : 4;
  minValue = k * 256;
  maxValue = k * std::max<uint32_t>(trex_tiling::N(srcShape) * 4, 256);
  return true;
}

// Power (v220): which form follows from the shapes ([1] is the scalar); k as the kernel side
// (tensor-tensor 4 float / 14 half / 6 int, tensor-scalar 5 / 14 / 7); half halves the 256-byte unit.
template <class Shape>
inline void GetPowerMaxMinTmpSize(const Shape& srcShape1, const Shape& srcShape2, const bool typeIsInt,
                                  const uint32_t typeSize, const bool, uint32_t& maxValue, uint32_t& minValue) {
  auto is_tensor = [](const Shape& s) { return !(s.GetDimNum() == 1 && s.GetDim(0) == 1); };
  const bool t1 = is_tensor(srcShape1), t2 = is_tensor(srcShape2), tt = t1 && t2;
  const uint32_t kInt = tt ? 6 : 7, kFloat = tt ? 4 : 5, kHalf = 14;
  if (typeIsInt) minValue = 256 * kInt;
  else if (typeSize == 4) minValue = 256 * kFloat + 256;
  else minValue = 256 * kHalf / 2 + 256;
  const uint32_t n = t1 ? trex_tiling::N(srcShape1) : trex_tiling::N(srcShape2);
  const uint32_t unit = typeSize == 4 ? std::max<uint32_t>(n * typeSize, 256) : std::max<uint32_t>(n * typeSize, 128);
  if (typeIsInt) maxValue = unit * kInt;
  else if (typeSize == 4) maxValue = unit * kFloat + 256;
  else maxValue = unit * kHalf + 256;
}
}  // namespace AscendC

// Activations (impl/adv_api/tiling/activation/): Gelu min 3 * 256, max max(min, 3 * n * 4); GeGLU fac 4 (half) /
// 0 (float) * max(n * typeSize, 256); SwiGLU fac 6 / 0 likewise; Silu / Swish none.
namespace AscendC {
template <class Shape>
inline uint32_t GetGeluMinTmpSize(const Shape&, const uint32_t) { return 3 * 256; }
template <class Shape>
inline uint32_t GetGeluMaxTmpSize(const Shape& srcShape, const uint32_t typeSize) {
  return std::max<uint32_t>(GetGeluMinTmpSize(srcShape, typeSize), 3 * trex_tiling::N(srcShape) * 4);
}
template <class Shape>
inline void GetGeluMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, uint32_t& maxValue, uint32_t& minValue) {
  maxValue = GetGeluMaxTmpSize(srcShape, typeSize);
  minValue = GetGeluMinTmpSize(srcShape, typeSize);
}
template <class Shape>
inline void GetGeGLUMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool, uint32_t& maxValue,
                                  uint32_t& minValue) {
  const uint32_t f = trex_tiling::Fac(typeSize, 4, 0);
  minValue = f * 256;
  maxValue = f * std::max<uint32_t>(trex_tiling::N(srcShape) * typeSize, 256);
}
inline void GetGeGLUTmpBufferFactorSize(const uint32_t typeSize, uint32_t& maxLiveNodeCount, uint32_t& extraBuf) {
  extraBuf = 0;
  maxLiveNodeCount = trex_tiling::Fac(typeSize, 4, 0);
}
template <class Shape>
inline void GetSwiGLUMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                   uint32_t& minValue, const bool) {
  const uint32_t f = trex_tiling::Fac(typeSize, 6, 0);
  minValue = f * 256;
  maxValue = f * std::max<uint32_t>(trex_tiling::N(srcShape) * typeSize, 256);
}
inline void GetSwiGLUTmpBufferFactorSize(const uint32_t typeSize, uint32_t& maxLiveNodeCount, uint32_t& extraBuffer) {
  extraBuffer = 0;
  maxLiveNodeCount = trex_tiling::Fac(typeSize, 6, 0);
}
template <class Shape>
inline void GetSiluTmpSize(const Shape&, const uint32_t, const bool, uint32_t& maxValue, uint32_t& minValue) {
  maxValue = minValue = 0;
}
template <class Shape>
inline void GetSwishTmpSize(const Shape&, const uint32_t, const bool, uint32_t& maxValue, uint32_t& minValue) {
  maxValue = minValue = 0;
}
}  // namespace AscendC

// Sum (impl/adv_api/tiling/reduce/sum_tiling.cpp): ceil(repeats / elements-per-block) blocks, repeats of 256 B.
namespace AscendC {
inline void GetSumMaxMinTmpSize(const uint32_t n, const uint32_t typeSize, const bool, uint32_t& maxSize,
                                uint32_t& minSize) {
  if (typeSize == 0 || n == 0) return;
  const uint32_t per_blk = 32 / typeSize, per_rep = 256 / typeSize;
  const uint32_t repeats = (n + per_rep - 1) / per_rep;
  maxSize = minSize = (repeats + per_blk - 1) / per_blk * per_blk * typeSize;
}
}  // namespace AscendC
