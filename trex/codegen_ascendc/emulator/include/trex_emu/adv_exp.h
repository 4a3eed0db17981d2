// trex AscendC emulator: the Exp advanced API (asc-devkit 高阶API/数学计算/Exp; impl/adv_api/detail/math/exp/
// exp_common_impl.h): Exp<T, taylorExpandLevel, isReuseSource>(dst, src[, sharedTmpBuffer], calCount) for Atlas A2/A3.
//
// Step by step as the implementation, each step one float vector op: x = float(src) (half: CAST_NONE), i = floor(x)
// (Cast CAST_FLOOR float -> float on arch 2201), d = x - i, E = exp(i) (the basic Exp: the host expf), then the Taylor
// sum res = 1 + d + d^2/2! + ... + d^level/level! built as p = d * p; p = p * (1/k); res = res + p for k = 2..level, and
// dst = res * E (half: cast back CAST_NONE). taylorExpandLevel 0 is the basic Exp. The temporary buffer must give
// each of the implementation's 4 (half) / 3 (float) / 2 (float, isReuseSource) float scratch tensors at least one
// 32-byte block (CheckTmpBufferSize); its bytes are the UB fill byte afterwards. dst and src may be the same tensor
// (the general aliasing rule: not a shifted overlap). The vector mask is left in normal mode, all bits set.
#pragma once
#include <cmath>
#include <cstring>

#include "trex_emu/vec.h"
#include "trex_emu/vec_misc.h"

namespace trex_emu {
inline float TaylorExp(float x, int level) {
  const float i = std::isfinite(x) ? std::floor(x) : x;
  const float d = x - i;
  const float e = std::exp(i);
  float p = d, res = d;
  res = res + 1.0f;
  for (int k = 2; k < level + 1; ++k) {
    p = d * p;
    p = p * (1.0f / static_cast<float>(k));
    res = res + p;
  }
  return res * e;
}

template <class T, uint8_t level, bool isReuseSource>
inline void ExpAdv(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                   const AscendC::LocalTensor<uint8_t>* tmp, uint32_t count) {
  static_assert(kFloatTypes<T>, "Exp (adv): element type must be half or float (Atlas A2/A3)");
  const char* api = "Exp(taylorExpandLevel)";
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src", src.addr_);
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + count);
  CheckUbRange(api, "src", src.buf_, src.addr_, src.addr_ + count);
  CheckOverlap(api, "src", dst.addr_, count, src.addr_, count);
  if (tmp != nullptr) {
    const uint32_t bytes = tmp->GetSize();
    const uint32_t scratch = std::is_same<T, half>::value ? 4 : (isReuseSource ? 2 : 3);
    const uint32_t align = 32 / sizeof(T);
    if (level != 0 && bytes / 4 / scratch / align * align == 0)
      Fail(api, ": sharedTmpBuffer holds ", bytes, " B; the implementation splits it into ", scratch,
           " float tensors of at least ", align, " elements, so it needs ", scratch * align * 4, " B");
    CheckUbAlign(api, "sharedTmpBuffer", tmp->addr_);
    CheckUbRange(api, "sharedTmpBuffer", tmp->buf_, tmp->addr_, tmp->addr_ + bytes);
    const uint8_t* tb = tmp->addr_;
    auto hits = [&](const void* p) {
      const uint8_t* b = static_cast<const uint8_t*>(p);
      return count && bytes && tb < b + uint64_t{count} * sizeof(T) && b < tb + bytes;
    };
    if (hits(dst.addr_) || hits(src.addr_)) Fail(api, ": sharedTmpBuffer overlaps src or dst; give it its own buffer");
  }
  for (uint32_t k = 0; k < count; ++k) {
    const float x = ToF(src.addr_[k]);
    const float y = level == 0 ? std::exp(x) : TaylorExp(x, level);
    if constexpr (std::is_same<T, half>::value) dst.addr_[k] = CastValue<half>(y, AscendC::RoundMode::CAST_NONE);
    else dst.addr_[k] = y;
  }
  EndAdvancedApi(api, tmp, CountFormRepeats(count, sizeof(float)));
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, uint8_t taylorExpandLevel, bool isReuseSource = false>
inline void Exp(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<uint8_t>& sharedTmpBuffer,
                const uint32_t calCount) {
  trex_emu::ExpAdv<T, taylorExpandLevel, isReuseSource>(dstLocal, srcLocal, &sharedTmpBuffer, calCount);
}
template <typename T, uint8_t taylorExpandLevel, bool isReuseSource = false>
inline void Exp(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t calCount) {
  trex_emu::ExpAdv<T, taylorExpandLevel, isReuseSource>(dstLocal, srcLocal, nullptr, calCount);
}
}  // namespace AscendC
