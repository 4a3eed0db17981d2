// trex AscendC emulator: basic APIs asc-devkit's kernel-launch examples use that the other headers lack —
// the ReduceSum mask/repeat form and GetReduceRepeatSumSpr, ReducePairElem (the 9.1 name of PairReduceSum),
// AscendC::Conditional, AscendCUtils::SetOverflow. Semantics from asc-devkit's API pages (docs/zh/api/SIMD-API/基础API/...) and its
// implementation (impl/basic_api/...), Atlas A2/A3 (dav-c220).
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "trex_emu/runtime.h"
#include "trex_emu/tensor.h"
#include "trex_emu/vec.h"
#include "trex_emu/vec_misc.h"

namespace AscendC {

// AscendCUtils::SetOverflow (impl/basic_api/kernel_utils_base.h, arch 2201: CTRL[48] 1 = inf/nan mode, 0 = saturated
// mode), which asc-devkit's layernorm_v2 example sets to 1 around its compute and back to 0 after. The emulator
// computes IEEE float (the inf/nan mode) throughout; the saturated mode is not modelled (docs/emulator.md), so the
// call changes nothing here.
struct AscendCUtils {
  static inline void SetOverflow(uint64_t ctrlValue) { (void)ctrlValue; }
};

// impl/basic_api/utils/kernel_utils_constants.h
template <bool condition, class T1, class T2>
struct Conditional {
  using type = T1;
};
template <class T1, class T2>
struct Conditional<false, T1, T2> {
  using type = T2;
};
template <bool condition1, bool condition2, class T1, class T2, class T3, class T4>
struct ConditionalMulti {
  using type = typename Conditional<condition1, typename Conditional<condition2, T1, T2>::type,
                                    typename Conditional<condition2, T3, T4>::type>::type;
};

}  // namespace AscendC

namespace trex_emu {

// ReduceSum, mask/repeat form (归约计算/ReduceSum, 关键特性说明 方式二 for A2/A3's 高维切分 form; impl dav_c220
// ReduceSumImpl + ReduceSumSecondStep): each repeat's active elements summed by a binary tree into
// sharedTmpBuffer[r], then those repeatTime partial sums reduced the same way, 256 B at a time, until one is
// left: dst[0]. sharedTmpBuffer must hold ceil(repeatTime / elementsPerBlock) * elementsPerBlock elements (the
// page's finalWorkLocalNeedSize); it is left holding garbage. repeatTime 0 is a NOP; a negative one, a negative
// or >65535 srcRepStride, raise. Not the count form: GetReduceRepeatSumSpr does not read this result.
template <class T>
inline void ReduceSumRepeat(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& work,
                            const RepeatMask& m, int32_t repeat, int32_t srcRepStride) {
  static_assert(kFloatTypes<T>, "ReduceSum supports half and float only on Atlas A2/A3");
  const char* api = "ReduceSum";
  if (repeat < 0) Fail(api, ": repeatTime=", repeat, " is negative");
  if (srcRepStride < 0 || srcRepStride > 65535) Fail(api, ": srcRepStride=", srcRepStride, " is outside [0, 65535]");
  CheckUbAlign(api, "src", src.addr_);
  CheckUbAlign(api, "sharedTmpBuffer", work.addr_);
  if (repeat == 0) return;
  const int per = static_cast<int>(kRepeatBytes / sizeof(T));
  const int64_t epb = 32 / static_cast<int64_t>(sizeof(T));
  const int64_t need = (repeat + epb - 1) / epb * epb;
  if (static_cast<int64_t>(work.GetSize()) < need)
    Fail(api, ": sharedTmpBuffer holds ", work.GetSize(), " elements; repeatTime=", repeat, " needs ", need,
         " (ceil(repeatTime / ", epb, ") * ", epb, ", the ReduceSum page's finalWorkLocalNeedSize)");
  CheckUbRange(api, "sharedTmpBuffer", work.buf_, work.addr_, work.addr_ + need);
  const Opnd<T> os = MakeOpnd(src, 1, srcRepStride, "src");
  std::vector<T> level(static_cast<size_t>(repeat));
  for (int r = 0; r < repeat; ++r) {
    T v[128];
    for (int i = 0; i < per; ++i) v[i] = m.Active(r, i) ? *Checked(api, os, r, i) : T(0);
    level[r] = TreeSum(v, per);
  }
  while (level.size() > 1) {
    const size_t n = level.size(), groups = (n + per - 1) / per;
    std::vector<T> next(groups);
    for (size_t g = 0; g < groups; ++g) {
      T v[128];
      for (int i = 0; i < per; ++i) v[i] = g * per + i < n ? level[g * per + i] : T(0);
      next[g] = TreeSum(v, per);
    }
    level.swap(next);
  }
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + 1);
  std::memset(work.addr_, RT().ub_fill, static_cast<size_t>(need) * sizeof(T));  // scratch: garbage afterwards
  dst.addr_[0] = level[0];
  RT().acc_set = false;  // ACC_VAL now holds an intermediate, not a count-form result
  CountRepeats(api, static_cast<uint64_t>(repeat));
}

}  // namespace trex_emu

namespace AscendC {

template <class T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const int32_t mask, const int32_t repeatTime, const int32_t srcRepStride) {
  if (mask < 0) trex_emu::Fail("ReduceSum: mask=", mask, " is negative");
  const auto m = trex_emu::ContinuousMask("ReduceSum", static_cast<uint64_t>(mask), int(256 / sizeof(T)));
  trex_emu::ReduceSumRepeat(dst, src, sharedTmpBuffer, m, repeatTime, srcRepStride);
}
template <class T>
inline void ReduceSum(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<T>& sharedTmpBuffer,
                      const uint64_t mask[], const int32_t repeatTime, const int32_t srcRepStride) {
  const auto m = trex_emu::BitMask("ReduceSum", mask, int(256 / sizeof(T)));
  trex_emu::ReduceSumRepeat(dst, src, sharedTmpBuffer, m, repeatTime, srcRepStride);
}

// GetReduceRepeatSumSpr (归约计算辅助配置接口/GetReduceRepeatSumSpr(ISASI)): the ACC_VAL register, i.e. the result
// of the last count-form ReduceSum of this block ("仅支持配合ReduceSum的tensor前n个数据连续计算接口使用"); read
// before any, or after the mask/repeat form, it raises.
template <class T>
inline T GetReduceRepeatSumSpr() {
  static_assert(trex_emu::kFloatTypes<T>, "GetReduceRepeatSumSpr supports half and float only");
  if (!trex_emu::RT().acc_set)
    trex_emu::Fail("GetReduceRepeatSumSpr: no count-form ReduceSum(dst, src, sharedTmpBuffer, count) ran in this "
                   "block before it (the page: it only reads the result of ReduceSum's tensor-first-n form)");
  T v;
  std::memcpy(&v, &trex_emu::RT().acc_val, sizeof(T));
  return v;
}

// ReducePairElem<ReduceType::SUM> (归约计算/ReducePairElem): PairReduceSum under its 9.1 name; only SUM, dst and
// src of one type on A2/A3 (impl ReducePairElemCommon's static_asserts).
template <ReduceType KIND, class T, class U = T, bool isSetMask = true>
inline void ReducePairElem(const LocalTensor<T>& dst, const LocalTensor<U>& src, const int32_t mask,
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride) {
  static_assert(KIND == ReduceType::SUM, "ReducePairElem: only ReduceType::SUM is supported");
  static_assert(std::is_same<T, U>::value, "ReducePairElem: dst and src types must match on Atlas A2/A3");
  static_assert(trex_emu::kFloatTypes<T>, "ReducePairElem supports half and float only on Atlas A2/A3");
  int repeat = repeatTime;
  const auto m = trex_emu::ResolveMask<isSetMask>("ReducePairElem", static_cast<uint64_t>(mask), int(256 / sizeof(T)),
                                                  repeat);
  trex_emu::PairReduceImpl("ReducePairElem", dst, src, m, repeat, dstRepStride, srcBlkStride, srcRepStride);
}
template <ReduceType KIND, class T, class U = T, bool isSetMask = true>
inline void ReducePairElem(const LocalTensor<T>& dst, const LocalTensor<U>& src, const uint64_t mask[],
                           const int32_t repeatTime, const int32_t dstRepStride, const int32_t srcBlkStride,
                           const int32_t srcRepStride) {
  static_assert(KIND == ReduceType::SUM, "ReducePairElem: only ReduceType::SUM is supported");
  static_assert(std::is_same<T, U>::value, "ReducePairElem: dst and src types must match on Atlas A2/A3");
  static_assert(trex_emu::kFloatTypes<T>, "ReducePairElem supports half and float only on Atlas A2/A3");
  int repeat = repeatTime;
  const auto m = trex_emu::ResolveMask<isSetMask>("ReducePairElem", mask, int(256 / sizeof(T)), repeat);
  trex_emu::PairReduceImpl("ReducePairElem", dst, src, m, repeat, dstRepStride, srcBlkStride, srcRepStride);
}

}  // namespace AscendC
