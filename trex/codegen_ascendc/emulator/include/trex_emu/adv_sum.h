// trex AscendC emulator: the Sum advanced API (asc-devkit 高阶API/归约操作/Sum; impl/adv_api/detail/reduce/sum/
// sum_common_impl.h) for Atlas A2/A3: dst[r] = sum of the first n of row r's inner elements, r < outter, in T.
// As the implementation: each 256-byte repeat summed by RepeatReduceSum's binary tree, then the per-repeat sums the
// same way until one is left (Mean's RepeatTreeSum without the 1/n). Checks as Mean's: inner * sizeof(T) a multiple
// of 32 B, 1 <= n <= inner, outter >= 1, operands in their buffers and not overlapping; a sharedTmpBuffer smaller than
// the implementation's finalWorkSize (ceil(repeats / elements-per-block) blocks; none for one repeat: GetSumMaxMinTmpSize)
// is an error naming Sum. Host: GetSumMaxMinTmpSize in adv_math_tiling_host.h.
#pragma once
#include <vector>

#include "trex_emu/adv_mean.h"

namespace AscendC {
struct SumParams {
  uint32_t outter = 1;
  uint32_t inner;  // n rounded up to 32 bytes, in elements
  uint32_t n;      // elements of a row that are summed
};
}  // namespace AscendC

namespace trex_emu {
template <class T>
inline void SumImpl(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                    const AscendC::LocalTensor<uint8_t>* tmp, const AscendC::SumParams& p) {
  static_assert(kFloatTypes<T>, "Sum: element type must be half or float (Atlas A2/A3)");
  const char* api = "Sum";
  if (p.outter == 0) Fail(api, ": SumParams.outter is 0; it counts the rows (at least 1)");
  if (uint64_t{p.inner} * sizeof(T) % 32 != 0)
    Fail(api, ": SumParams.inner = ", p.inner, " elements is ", uint64_t{p.inner} * sizeof(T),
         " B, not a multiple of 32 B; inner = (n * sizeof(T) + 31) / 32 * 32 / sizeof(T)");
  if (p.n < 1 || p.n > p.inner) Fail(api, ": SumParams.n = ", p.n, " must be in [1, inner = ", p.inner, "]");
  const uint64_t src_n = uint64_t{p.outter} * p.inner;
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src", src.addr_);
  CheckUbRange(api, "src", src.buf_, src.addr_, src.addr_ + src_n);
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + p.outter);
  if (UbOverlap(dst.addr_, p.outter * sizeof(T), src.addr_, src_n * sizeof(T)))
    Fail(api, ": dst overlaps src; use a separate buffer");
  const int per = static_cast<int>(256 / sizeof(T));
  const uint64_t repeats = (p.n + per - 1) / per;
  const uint32_t per_blk = 32 / sizeof(T);
  const uint64_t work = repeats == 1 ? 0 : (repeats + per_blk - 1) / per_blk * per_blk * sizeof(T);
  if (tmp != nullptr && tmp->addr_ != nullptr) {
    const uint64_t bytes = tmp->GetSize();
    if (bytes < work)
      Fail(api, ": sharedTmpBuffer holds ", bytes, " B; the implementation needs ", work, " B for n = ", p.n,
           " (GetSumMaxMinTmpSize gives the size)");
    CheckUbAlign(api, "sharedTmpBuffer", tmp->addr_);
    CheckUbRange(api, "sharedTmpBuffer", tmp->buf_, tmp->addr_, tmp->addr_ + bytes);
    if (UbOverlap(tmp->addr_, bytes, src.addr_, src_n * sizeof(T)) ||
        UbOverlap(tmp->addr_, bytes, dst.addr_, p.outter * sizeof(T)))
      Fail(api, ": sharedTmpBuffer overlaps src or dst; give it its own buffer");
  } else if (tmp != nullptr && work) {
    Fail(api, ": sharedTmpBuffer is empty; the implementation needs ", work, " B for n = ", p.n);
  }
  for (uint32_t r = 0; r < p.outter; ++r) {
    std::vector<T> row(src.addr_ + uint64_t{r} * p.inner, src.addr_ + uint64_t{r} * p.inner + p.n);
    dst.addr_[r] = RepeatTreeSum(std::move(row), per);
  }
  EndAdvancedApi(api, tmp && tmp->addr_ ? tmp : nullptr, uint64_t{p.outter} * repeats);
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                const LocalTensor<uint8_t>& sharedTmpBuffer, const SumParams& sumParams) {
  trex_emu::SumImpl<T>(dstTensor, srcTensor, &sharedTmpBuffer, sumParams);
}
template <typename T, int32_t reduceDim = -1, bool isReuseSource = false, bool isBasicBlock = false>
inline void Sum(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, const SumParams& sumParams) {
  trex_emu::SumImpl<T>(dstTensor, srcTensor, nullptr, sumParams);
}
}  // namespace AscendC
