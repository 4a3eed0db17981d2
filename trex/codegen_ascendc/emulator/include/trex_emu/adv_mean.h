// trex AscendC emulator: the Mean advanced API (asc-devkit 高阶API/归约操作/Mean; impl/adv_api/detail/reduce/mean/
// mean_common_impl.h) for Atlas A2/A3: dst[r] = mean of the first n of row r's inner elements, r < outter.
//
// As the implementation: the sum is taken level by level, each 256-byte repeat summed by the binary tree of
// RepeatReduceSum (adjacent pairs first, every partial rounded to the accumulation type), then the per-repeat sums
// the same way until one is left; the mean is that sum times 1/n (the scalar 1/n computed in float and rounded to
// the type, one Muls). T = half with accType = float (MeanCast) accumulates in float: src cast up (CAST_NONE), 64
// floats per repeat, times 1/n in float, cast back to half (CAST_NONE). accType = T otherwise.
// Checks (the page's 参数说明 / 约束说明 and the CPU-debug check): inner * sizeof(T) a multiple of 32, 1 <= n <= inner,
// outter >= 1, src and dst inside their buffers and not overlapping, sharedTmpBuffer at least the implementation's
// finalWorkSize (GetMeanMaxMinTmpSize gives it) and overlapping neither. The temporary buffer is scratch: its bytes are
// the UB fill byte afterwards. The vector mask is left in normal mode, all bits set.
#pragma once
#include <cstring>
#include <vector>

#include "trex_emu/vec.h"
#include "trex_emu/vec_misc.h"

namespace AscendC {
struct MeanParams {
  uint32_t outter = 1;  // rows
  uint32_t inner;       // row length in elements, n rounded up to 32 bytes
  uint32_t n;           // elements of a row that are averaged
};
}  // namespace AscendC

namespace trex_emu {

// Sum of vals by the level-by-level tree of RepeatReduceSum, `per` values per repeat, in type A.
template <class A>
inline A RepeatTreeSum(std::vector<A> level, int per) {
  do {
    const size_t n = level.size(), groups = (n + per - 1) / per;
    std::vector<A> next(groups);
    for (size_t g = 0; g < groups; ++g) {
      A v[128];
      for (int i = 0; i < per; ++i) v[i] = g * per + i < n ? level[g * per + i] : A(0);
      next[g] = TreeSum(v, per);
    }
    level.swap(next);
  } while (level.size() > 1);
  return level[0];
}

inline bool UbOverlap(const void* a, uint64_t an, const void* b, uint64_t bn) {
  const uint8_t* x = static_cast<const uint8_t*>(a);
  const uint8_t* y = static_cast<const uint8_t*>(b);
  return an && bn && x < y + bn && y < x + an;
}

template <class T, class Acc>
inline void MeanImpl(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                     const AscendC::LocalTensor<uint8_t>* tmp, const AscendC::MeanParams& p) {
  static_assert(kFloatTypes<T>, "Mean: element type must be half or float (Atlas A2/A3)");
  static_assert(std::is_same<Acc, T>::value || (std::is_same<T, half>::value && std::is_same<Acc, float>::value),
                "Mean: accType must be T, or float for half");
  const char* api = "Mean";
  constexpr bool kCast = !std::is_same<Acc, T>::value;
  if (p.outter == 0) Fail(api, ": MeanParams.outter is 0; it counts the rows (at least 1)");
  if (uint64_t{p.inner} * sizeof(T) % 32 != 0)
    Fail(api, ": MeanParams.inner = ", p.inner, " elements is ", uint64_t{p.inner} * sizeof(T),
         " B, not a multiple of 32 B; inner = (n * sizeof(T) + 31) / 32 * 32 / sizeof(T)");
  if (p.n < 1 || p.n > p.inner)
    Fail(api, ": MeanParams.n = ", p.n, " must be in [1, inner = ", p.inner, "]");
  const uint64_t src_n = uint64_t{p.outter} * p.inner;
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src", src.addr_);
  CheckUbRange(api, "src", src.buf_, src.addr_, src.addr_ + src_n);
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + p.outter);
  if (UbOverlap(dst.addr_, p.outter * sizeof(T), src.addr_, src_n * sizeof(T)))
    Fail(api, ": dst overlaps src (the API page: source and destination must not overlap); use a separate buffer");
  const int per = static_cast<int>(256 / sizeof(Acc));
  const uint64_t repeats = (p.n + per - 1) / per;
  const uint64_t work = (kCast ? uint64_t{p.inner} * sizeof(float) : 0) + (repeats + 31) / 32 * 32;
  if (tmp != nullptr) {
    const uint64_t bytes = tmp->GetSize();
    if (bytes < work)
      Fail(api, ": sharedTmpBuffer holds ", bytes, " B; the implementation needs ", work, " B for n = ", p.n,
           " (GetMeanMaxMinTmpSize gives the size)");
    CheckUbAlign(api, "sharedTmpBuffer", tmp->addr_);
    CheckUbRange(api, "sharedTmpBuffer", tmp->buf_, tmp->addr_, tmp->addr_ + bytes);
    if (UbOverlap(tmp->addr_, bytes, src.addr_, src_n * sizeof(T)) ||
        UbOverlap(tmp->addr_, bytes, dst.addr_, p.outter * sizeof(T)))
      Fail(api, ": sharedTmpBuffer overlaps src or dst; give it its own buffer");
  }
  const Acc scale = static_cast<Acc>(1.0f / static_cast<float>(static_cast<int32_t>(p.n)));
  for (uint32_t r = 0; r < p.outter; ++r) {
    std::vector<Acc> row(p.n);
    for (uint32_t i = 0; i < p.n; ++i) {
      const T v = src.addr_[uint64_t{r} * p.inner + i];
      if constexpr (kCast) row[i] = CastValue<float>(v, AscendC::RoundMode::CAST_NONE);
      else row[i] = v;
    }
    const Acc mean = Down<Acc>(Up(RepeatTreeSum(std::move(row), per)) * Up(scale));
    if constexpr (kCast) dst.addr_[r] = CastValue<half>(mean, AscendC::RoundMode::CAST_NONE);
    else dst.addr_[r] = mean;
  }
  EndAdvancedApi(api, tmp, uint64_t{p.outter} * repeats);
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, typename accType = T, bool isReuseSource = false, bool isBasicBlock = false, int32_t reduceDim = -1>
inline void Mean(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                 const LocalTensor<uint8_t>& sharedTmpBuffer, const MeanParams& meanParams) {
  trex_emu::MeanImpl<T, accType>(dstTensor, srcTensor, &sharedTmpBuffer, meanParams);
}
template <typename T, typename accType = T, bool isReuseSource = false, bool isBasicBlock = false, int32_t reduceDim = -1>
inline void Mean(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const MeanParams& meanParams) {
  trex_emu::MeanImpl<T, accType>(dstTensor, srcTensor, nullptr, meanParams);
}
}  // namespace AscendC
