// trex AscendC emulator: RmsNorm (asc-devkit docs/zh/api/SIMD-API/高阶API/归一化操作/RmsNorm) for Atlas A2/A3, and
// PopStackBuffer (基础API/资源管理/PopStackBuffer), which its form without sharedTmpBuffer takes the buffer from.
//  * RmsNorm<T, isBasicBlock>(dst, src, gamma, [sharedTmpBuffer], epsilon, tiling), T half/float, src/dst
//    [b*s, h] rows (h = tiling.hLength), gamma [h]. Per row, as impl/adv_api/detail/normalization/rmsnorm/
//    rmsnorm_common_impl.h computes it, each step one float op: x = float(src) (half: Cast CAST_NONE),
//    q = x * x, s = sum of q over the first originalHLength columns (RepeatReduceSum level by level: 64-float
//    repeats, each a pairwise tree, until one value is left; isBasicBlock: the 64-column chunks added lane-wise
//    into the first over all h columns, then one tree), m = s * reciprocalOfHLength, m = m + float(epsilon),
//    r = exp(ln(m) * -0.5) (the implementation's high-precision rsqrt), y = x * r, y = y * float(gamma[j]);
//    half dst = half(y) (CAST_NONE). All h columns of a row are written. Rows go in the tiling's rounds:
//    loopRound rounds of mainBsLength rows, then tailBsLength rows at inputTailPos.
//    Checks: the tiling filled (hLength, mainBsLength > 0); src/dst hold the rows, gamma h elements, all in UB,
//    32-byte aligned; sharedTmpBuffer holds (mainBsLengthAlign + mainBshLength * (half ? 2 : 1)) floats (the
//    implementation's reduce / square / cast areas) and overlaps no operand. With originalHLength 1 the row sum is
//    q[0] (the implementation's reduce loop does not run then).
//  * PopStackBuffer<T, pos>(LocalTensor<T>&): the UB from the TPipe's last buffer to the UB's last 64 bytes (the
//    arch-2201 KFC message area), a tensor of that many T; a UB already used up is an error.
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "trex_emu/adv_math.h"
#include "trex_emu/pipe.h"
#include "trex_emu/tiling_rmsnorm.h"
#include "trex_emu/vec_misc.h"

#ifndef TREX_EMU_POP_STACK_BUFFER
#define TREX_EMU_POP_STACK_BUFFER 1
namespace AscendC {
template <typename T, TPosition pos>
inline bool PopStackBuffer(LocalTensor<T>& pop) {
  trex_emu::Runtime& rt = trex_emu::RT();
  if (rt.current_pipe == nullptr) trex_emu::Fail("PopStackBuffer: GetTPipePtr is nullptr (no TPipe in this block)");
  const uint64_t start = rt.current_pipe->UsedBytes();
  const uint64_t end = rt.ub_bytes > 64 ? rt.ub_bytes - 64 : 0;
  if (end <= start)
    trex_emu::Fail("PopStackBuffer failed, local memory has used ", start,
                   " bytes, there is no enough memory to pop");
  pop = LocalTensor<T>(pos, static_cast<uint32_t>(start), static_cast<uint32_t>((end - start) / sizeof(T)));
  return true;
}
}  // namespace AscendC
#endif

namespace trex_emu {
// One RepeatReduceSum pass over n floats: each 64-float repeat (zero-padded) summed by the pairwise tree.
inline float RmsRepeatSum(std::vector<float> v) {
  if (v.size() <= 1) return v.empty() ? 0.0f : v[0];
  while (v.size() > 1) {
    std::vector<float> next((v.size() + 63) / 64);
    for (size_t r = 0; r < next.size(); ++r) {
      float lane[64] = {0};
      for (size_t l = 0; l < 64 && r * 64 + l < v.size(); ++l) lane[l] = v[r * 64 + l];
      next[r] = TreeSum(lane, 64);
    }
    v.swap(next);
  }
  return v[0];
}

template <class T, bool isBasicBlock>
inline void RmsNormRun(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                       const AscendC::LocalTensor<T>& gamma, const AscendC::LocalTensor<uint8_t>& tmp, const T epsilon,
                       const RmsNormTiling& t) {
  static_assert(kFloatTypes<T>, "RmsNorm only support data type: float/half");
  const char* api = "RmsNorm";
  const uint32_t h = t.hLength;
  if (h == 0 || t.mainBsLength == 0 || t.mainBshLength != t.mainBsLength * h)
    Fail(api, ": the tiling is not filled (hLength ", h, ", mainBsLength ", t.mainBsLength, ", mainBshLength ",
         t.mainBshLength, "); compute it with GetRmsNormTilingInfo");
  if (t.originalHLength == 0 || t.originalHLength > h)
    Fail(api, ": tiling.originalHLength ", t.originalHLength, " must be in [1, hLength ", h, "]");
  if (t.tailBshLength != t.tailBsLength * h)
    Fail(api, ": tiling.tailBshLength ", t.tailBshLength, " != tailBsLength ", t.tailBsLength, " * hLength ", h);
  const uint64_t rows_main = uint64_t{t.loopRound} * t.mainBsLength;
  if (t.tailBsLength && t.inputTailPos != rows_main * h)
    Fail(api, ": tiling.inputTailPos ", t.inputTailPos, " != loopRound * mainBshLength ", rows_main * h);
  const uint64_t rows = rows_main + t.tailBsLength;
  AdvOperand(api, "srcLocal", src, static_cast<uint32_t>(rows * h));
  AdvOperand(api, "dstLocal", dst, static_cast<uint32_t>(rows * h));
  AdvOperand(api, "gammaLocal", gamma, h);
  if (src.GetSize() < rows * h || dst.GetSize() < rows * h)
    Fail(api, ": srcLocal / dstLocal hold ", src.GetSize(), " / ", dst.GetSize(), " elements; the tiling covers ",
         rows * h);
  if (gamma.GetSize() < h) Fail(api, ": gammaLocal holds ", gamma.GetSize(), " elements; hLength is ", h);
  const uint64_t need = (uint64_t{t.mainBsLengthAlign} + uint64_t{t.mainBshLength} * (sizeof(T) == 2 ? 2 : 1)) * 4;
  if (t.mainBsLengthAlign < t.mainBsLength)
    Fail(api, ": tiling.mainBsLengthAlign ", t.mainBsLengthAlign, " < mainBsLength ", t.mainBsLength);
  if (tmp.GetSize() < need)
    Fail(api, ": sharedTmpBuffer holds ", tmp.GetSize(), " B; the tiling (", t.mainBsLength, " rows of ", h,
         ") needs ", need, " B (GetRmsNormMaxMinTmpSize / GetRmsNormTilingInfo give the sizes)");
  AdvTmpCheck(api, &tmp, 1, 1, 0, dst.addr_, rows * h * sizeof(T), src.addr_, rows * h * sizeof(T), gamma.addr_,
              uint64_t{h} * sizeof(T));
  const float eps = ToF(epsilon);
  std::vector<float> x(h), q(h);
  for (uint64_t r = 0; r < rows; ++r) {
    const T* s = src.addr_ + r * h;
    for (uint32_t j = 0; j < h; ++j) {
      x[j] = ToF(s[j]);
      q[j] = x[j] * x[j];
    }
    float sum;
    if constexpr (isBasicBlock) {
      float lane[64];
      for (uint32_t l = 0; l < 64; ++l) lane[l] = l < h ? q[l] : 0.0f;
      for (uint32_t c = 64; c + 64 <= h; c += 64)
        for (uint32_t l = 0; l < 64; ++l) lane[l] = lane[l] + q[c + l];
      sum = TreeSum(lane, 64);
    } else {
      sum = RmsRepeatSum(std::vector<float>(q.begin(), q.begin() + t.originalHLength));
    }
    float m = sum * t.reciprocalOfHLength;
    m = m + eps;
    m = std::log(m);
    m = m * -0.5f;
    m = std::exp(m);
    T* d = dst.addr_ + r * h;
    for (uint32_t j = 0; j < h; ++j) {
      float y = x[j] * m;
      y = y * ToF(gamma.addr_[j]);
      d[j] = Down<T>(y);
    }
  }
  EndAdvancedApi(api, &tmp, CountFormRepeats(rows * h, sizeof(float)) * 6);
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, bool isBasicBlock = false>
inline void RmsNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<T>& gammaLocal,
                    const LocalTensor<uint8_t>& sharedTmpBuffer, const T epsilon, const RmsNormTiling& tiling) {
  trex_emu::RmsNormRun<T, isBasicBlock>(dstLocal, srcLocal, gammaLocal, sharedTmpBuffer, epsilon, tiling);
}
template <typename T, bool isBasicBlock = false>
inline void RmsNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const LocalTensor<T>& gammaLocal,
                    const T epsilon, const RmsNormTiling& tiling) {
  LocalTensor<uint8_t> stack;
  PopStackBuffer<uint8_t, TPosition::LCM>(stack);
  trex_emu::RmsNormRun<T, isBasicBlock>(dstLocal, srcLocal, gammaLocal, stack, epsilon, tiling);
}
}  // namespace AscendC
