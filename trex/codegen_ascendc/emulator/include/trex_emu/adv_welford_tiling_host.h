// adv_welford_tiling_host.h: host tiling helpers of the Welford APIs (namespace AscendC; asc-devkit
// include/adv_api/normalization/layernorm_tiling.h and welfordfinalize_tiling.h), with the sizes
// impl/adv_api/tiling/normalization/layernorm_tiling_impl.cpp and welfordfinalize_tiling_impl.cpp compute on
// Atlas A2/A3:
//   GetWelfordUpdateMaxMinTmpSize(shape [rnLength, abLength], sizeof(T), sizeof(U), isReuseSource, isInplace, max, min):
//     min = k * 256 B (k: 3 for a 2-byte T, 1 with isReuseSource, else 2); max = ceil(rn * ab / 64) * min.
//   GetWelfordFinalizeMaxMinTmpSize(shape [abLength], typeSize, isReuseSource, max, min): min = 64 * 4 * 4 = 1024 B;
//     max = min for abLength <= 64, else (128 + 2 * abLength) * 4.
// A shape of the wrong rank (or, for Finalize, an abLength that is 0 or not a multiple of 8) is the impl's
// ASCENDC_HOST_ASSERT: logged to stderr, the outputs left unwritten.
// Templates on the shape so both ge::Shape models (kernel side and include_host) take them.
#pragma once
#include <cstdint>
#include <cstdio>

namespace AscendC {
template <class Shape>
inline void GetWelfordUpdateMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSizeT, const uint32_t typeSizeU,
                                          const bool isReuseSource, const bool isInplace, uint32_t& maxValue,
                                          uint32_t& minValue) {
  (void)typeSizeU;
  (void)isInplace;
  if (srcShape.GetDimNum() != 2) {
    std::fprintf(stderr, "[ERROR] GetWelfordUpdateMaxMinTmpSize: srcShape dims must be 2.\n");
    return;
  }
  const uint64_t n = static_cast<uint64_t>(srcShape.GetDim(0)) * static_cast<uint64_t>(srcShape.GetDim(1));
  minValue = (typeSizeT == 2 ? 3u : (isReuseSource ? 1u : 2u)) * 256u;
  maxValue = static_cast<uint32_t>((n + 63) / 64 * minValue);
}

template <class Shape>
inline void GetWelfordFinalizeMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                            uint32_t& maxValue, uint32_t& minValue) {
  (void)typeSize;
  (void)isReuseSource;
  if (srcShape.GetDimNum() != 1) {
    std::fprintf(stderr, "[ERROR] GetWelfordFinalizeMaxMinTmpSize: srcShape dims must be 1.\n");
    return;
  }
  const uint32_t abLength = static_cast<uint32_t>(srcShape.GetDim(0));
  if (abLength == 0 || abLength % 8 != 0) {
    std::fprintf(stderr, "[ERROR] GetWelfordFinalizeMaxMinTmpSize: abLength must be aligned to 32Bytes.\n");
    return;
  }
  minValue = 64 * 4 * 4;
  maxValue = abLength <= 64 ? minValue : (64 * 2 + abLength * 2) * 4;
}
}  // namespace AscendC
