// trex AscendC emulator: ReduceMax / ReduceMin advanced APIs with a reduce pattern (asc-devkit 高阶API/归约操作/ReduceMax,
// ReduceMin; include/adv_api/reduce/reduce.h) for Atlas A2/A3, 2-D: Pattern::Reduce::AR: src [first, last] -> dst
// [first] (the max / min of each row); RA: src [first, last] -> dst [last] (of each column). Rows lie
// align32(last) elements apart when srcInnerPad (the tile is padded), last apart otherwise. Max/Min are exact in any
// order; NaN propagates (the emulator's Max/Min). T half or float. A sharedTmpBuffer smaller than
// GetReduceMaxMaxMinTmpSize's size (adv_reduce_tiling_host.h; isReuseSource: none) is an error naming the API.
#pragma once
#include <cstdint>

#include "trex_emu/adv_math.h"
#include "trex_emu/adv_reduce_tiling_host.h"

namespace AscendC {
namespace Pattern {
namespace Reduce {
struct AR {};
struct RA {};
}  // namespace Reduce
}  // namespace Pattern
}  // namespace AscendC

namespace trex_emu {
template <class T, class P, bool isReuseSource, bool kMax>
inline void ReducePatternAdv(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                             const AscendC::LocalTensor<uint8_t>* tmp, const uint32_t* shape, bool srcInnerPad) {
  static_assert(kFloatTypes<T>, "ReduceMax/ReduceMin: T must be half or float on Atlas A2/A3");
  static_assert(std::is_same<P, AscendC::Pattern::Reduce::AR>::value || std::is_same<P, AscendC::Pattern::Reduce::RA>::value,
                "ReduceMax/ReduceMin: the emulator takes Pattern::Reduce::AR or RA");
  const char* api = kMax ? "ReduceMax" : "ReduceMin";
  constexpr bool ar = std::is_same<P, AscendC::Pattern::Reduce::AR>::value;
  const uint32_t first = shape[0], last = shape[1];
  if (first == 0 || last == 0) Fail(api, ": srcShape {", first, ", ", last, "} must be positive");
  const uint32_t blk = 32 / sizeof(T);
  const uint32_t stride = srcInnerPad ? (last + blk - 1) / blk * blk : last;
  const uint32_t out = ar ? first : last;
  AdvOperand(api, "src", src, uint64_t{first - 1} * stride + last);
  AdvOperand(api, "dst", dst, out);
  CheckOverlap(api, "src", dst.addr_, out, src.addr_, uint64_t{first} * stride);
  if (tmp != nullptr && !isReuseSource) {
    uint32_t need = 0;
    {
      const uint32_t size = sizeof(T);
      if (ar) {
        const uint32_t rep = 256 / size;
        need = last <= blk ? 0 : (last < rep ? first * blk * size : first * rep * size);
      } else {
        uint32_t k = AscendC::trex_reduce::FindK(first);
        if (k == first && first > 1) k >>= 1;
        need = k * ((last * size + 31) / 32 * 32);
      }
    }
    if (tmp->GetSize() < need)
      Fail(api, ": sharedTmpBuffer holds ", tmp->GetSize(), " B; the implementation needs ", need, " B (Get", api,
           "MaxMinTmpSize gives the size)");
    if (need) AdvTmpCheck(api, tmp, 1, 1, 0, dst.addr_, uint64_t{out} * sizeof(T), src.addr_, uint64_t{first} * stride * sizeof(T));
  }
  auto pick = [](float a, float b) { return (a != a || b != b) ? NAN : (kMax ? std::fmax(a, b) : std::fmin(a, b)); };
  for (uint32_t o = 0; o < out; ++o) {
    float acc = ar ? ToF(src.addr_[uint64_t{o} * stride]) : ToF(src.addr_[o]);
    const uint32_t len = ar ? last : first;
    for (uint32_t i = 1; i < len; ++i)
      acc = pick(acc, ToF(ar ? src.addr_[uint64_t{o} * stride + i] : src.addr_[uint64_t{i} * stride + o]));
    dst.addr_[o] = Down<T>(acc);
  }
  EndAdvancedApi(api, tmp, CountFormRepeats(uint64_t{first} * last, sizeof(T)));
}
}  // namespace trex_emu

namespace AscendC {
template <class T, class pattern, bool isReuseSource = false>
inline void ReduceMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t srcShape[], bool srcInnerPad) {
  trex_emu::ReducePatternAdv<T, pattern, isReuseSource, true>(dstTensor, srcTensor, &sharedTmpBuffer, srcShape, srcInnerPad);
}
template <class T, class pattern, bool isReuseSource = false>
inline void ReduceMax(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t srcShape[],
                      bool srcInnerPad) {
  trex_emu::ReducePatternAdv<T, pattern, isReuseSource, true>(dstTensor, srcTensor, nullptr, srcShape, srcInnerPad);
}
template <class T, class pattern, bool isReuseSource = false>
inline void ReduceMin(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const uint32_t srcShape[], bool srcInnerPad) {
  trex_emu::ReducePatternAdv<T, pattern, isReuseSource, false>(dstTensor, srcTensor, &sharedTmpBuffer, srcShape, srcInnerPad);
}
template <class T, class pattern, bool isReuseSource = false>
inline void ReduceMin(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const uint32_t srcShape[],
                      bool srcInnerPad) {
  trex_emu::ReducePatternAdv<T, pattern, isReuseSource, false>(dstTensor, srcTensor, nullptr, srcShape, srcInnerPad);
}
}  // namespace AscendC
