// trex AscendC emulator: the DropOut advanced API (asc-devkit 高阶API/数据过滤/DropOut; impl/adv_api/detail/filter/
// dropout/) for Atlas A2/A3, ND [firstAxis, srcLastAxis]: dst = (mask keeps x ? x : 0) * T(1 / keepProb) (Muls in T).
// The mode follows the shapes as DropOutImpl infers it (dropOutMode 0) or the template argument:
//   srcLastAxis < maskLastAxis: byte mode, each mask row maskLastAxis bytes of which the first srcLastAxis count (1);
//   srcLastAxis == maskLastAxis: byte mode, dense (2);  srcLastAxis == 8 * maskLastAxis: bit mode, dense (3);
//   otherwise: bit mode, each mask row maskLastAxis bytes of which the first srcLastAxis bits count (4).
// Byte mode keeps where the byte is non-zero; bit mode where bit k (LSB first) of byte j is set, element 8j + k.
// sharedTmpBuffer (an error naming DropOut): byte mode half bytes / 2, float bytes / 6, rounded down to 32 elements,
// > 0; bit mode at least 256 B (the compare-mask reset). keepProb must be in (0, 1). Host: GetDropOutMaxMinTmpSize.
#pragma once
#include <cstdint>

#include "trex_emu/adv_math.h"

namespace AscendC {
struct DropOutShapeInfo {
  DropOutShapeInfo() {}
  uint32_t firstAxis = 0;
  uint32_t srcLastAxis = 0;
  uint32_t maskLastAxis = 0;
};
template <class Shape>
inline void GetDropOutMaxMinTmpSize(const Shape& srcShape, const uint32_t, const bool, uint32_t& maxValue,
                                    uint32_t& minValue) {
  uint64_t n = 1;
  for (size_t i = 0; i < srcShape.GetDimNum(); ++i) n *= static_cast<uint64_t>(srcShape.GetDim(i));
  minValue = 2 * 256;
  maxValue = std::max<uint32_t>(minValue, static_cast<uint32_t>(2 * n * 4));
}
}  // namespace AscendC

namespace trex_emu {
template <class T, uint32_t dropOutMode>
inline void DropOutAdv(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                       const AscendC::LocalTensor<uint8_t>& mask, const AscendC::LocalTensor<uint8_t>* tmp,
                       float keepProb, const AscendC::DropOutShapeInfo& info) {
  static_assert(kOneOf<T, half, float>, "DropOut: element type must be half or float (Atlas A2/A3)");
  static_assert(dropOutMode <= 4, "dropOutMode should be 0 / 1 / 2 / 3 / 4");
  const char* api = "DropOut";
  const uint32_t rows = info.firstAxis, sl = info.srcLastAxis, ml = info.maskLastAxis;
  if (rows == 0 || sl == 0 || ml == 0)
    Fail(api, ": DropOutShapeInfo {firstAxis ", rows, ", srcLastAxis ", sl, ", maskLastAxis ", ml, "} must be positive");
  if (!(keepProb > 0.0f && keepProb < 1.0f)) Fail(api, ": keepProb = ", keepProb, " must lie in (0, 1)");
  uint32_t mode = dropOutMode;
  if (mode == 0) mode = sl < ml ? 1 : sl == ml ? 2 : sl == ml * 8 ? 3 : 4;
  const bool bit = mode >= 3;
  if (bit && uint64_t{ml} * 8 < sl) Fail(api, ": maskLastAxis ", ml, " bytes hold fewer than srcLastAxis ", sl, " bits");
  if (!bit && ml < sl) Fail(api, ": maskLastAxis ", ml, " is shorter than srcLastAxis ", sl, " for the byte mode");
  const uint64_t n = uint64_t{rows} * sl;
  AdvOperand(api, "dst", dst, n);
  AdvOperand(api, "src", src, n);
  AdvOperand(api, "mask", mask, uint64_t{rows} * ml);
  CheckOverlap(api, "src", dst.addr_, n, src.addr_, n);
  if (tmp != nullptr) {
    const uint32_t bytes = tmp->GetSize();
    if (bit ? bytes < 256 : (bytes / (sizeof(T) == 2 ? 2 : 6) / 32 * 32 == 0))
      Fail(api, ": sharedTmpBuffer holds ", bytes, " B; the implementation needs at least ",
           bit ? 256 : (sizeof(T) == 2 ? 64 : 192), " B (GetDropOutMaxMinTmpSize gives the sizes)");
    AdvTmpCheck(api, tmp, 1, 1, 0, dst.addr_, n * sizeof(T), src.addr_, n * sizeof(T), mask.addr_, uint64_t{rows} * ml);
  }
  const T scale = Down<T>(1.0f / keepProb);
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t j = 0; j < sl; ++j) {
      const uint8_t* m = mask.addr_ + uint64_t{r} * (bit && mode == 3 ? sl / 8 : ml);
      const bool keep = bit ? ((m[j / 8] >> (j % 8)) & 1) : m[j] != 0;
      const float x = keep ? ToF(src.addr_[uint64_t{r} * sl + j]) : 0.0f;
      dst.addr_[uint64_t{r} * sl + j] = Down<T>(x * ToF(scale));
    }
  EndAdvancedApi(api, tmp, CountFormRepeats(n, sizeof(T)));
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, bool isInitBitMode = false, uint32_t dropOutMode = 0>
inline void DropOut(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<uint8_t>& maskLocal,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const float keepProb, const DropOutShapeInfo& info) {
  trex_emu::DropOutAdv<T, dropOutMode>(dstLocal, srcLocal, maskLocal, &sharedTmpBuffer, keepProb, info);
}
template <typename T, bool isInitBitMode = false, uint32_t dropOutMode = 0>
inline void DropOut(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<uint8_t>& maskLocal,
                    const float keepProb, const DropOutShapeInfo& info) {
  trex_emu::DropOutAdv<T, dropOutMode>(dstLocal, srcLocal, maskLocal, nullptr, keepProb, info);
}
}  // namespace AscendC
