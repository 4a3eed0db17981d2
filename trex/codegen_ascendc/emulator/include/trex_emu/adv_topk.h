// trex AscendC emulator: the TopK advanced API (asc-devkit 高阶API/排序操作/TopK.md) on Atlas A2/A3, as the dav_c220
// implementation computes it (impl/adv_api/detail/sort/topk/topk_common_impl.h, topk_v220_impl.h; the CPU-debug
// checks of impl/adv_api/detail/api_check/kernel_check/sort/topk/topk_check_common.h and TopkInputCheck).
//
// srcLocal is [outter, inner] (inner a multiple of 32, n <= inner the row's real length; the sort runs over all
// inner elements, so padding must be filled by the caller). Per row:
//   * indices: isInitIndex ? srcIndexLocal's int32 bits (Normal: the same inner indices for every row; Small: row j
//     reads srcIndexLocal[j * 32 ...]) : 0 .. inner-1 (ArithProgression);
//   * !isLargest: the scores are src * -1 (Muls), so the descending sort gives the smallest first;
//   * Sort32 + MrgSort: a full sort by score descending, equal scores in input order (both instructions keep input
//     order, sort.h / Sort32), NaN ranked as +inf (Sort32's order); the merges beyond the first k do not change the
//     first k;
//   * GatherMask of the first k scores and indices. Normal: row j's values at dstValue[j * kAlign] (kAlign: k up to
//     32 B, 8 for float, 16 for half; the tiling's kAlignFourBytes / kAlignTwoBytes), indices at dstIndex[j * kpad]
//     (kpad = (k + 7) / 8 * 8); elements k .. kAlign-1 of each row are not written. Small (inner == 32): rows packed,
//     row j's k values / indices at [j * k].
//   * Normal with isHasfinish: where finishLocal[j] is true, the row's k indices become n (the invalid index).
//   * !isLargest: at the end dstValue[0, tiling.maskOffset) *= -1 (Muls) — the k results back to their values, and
//     the unwritten padding of each row (Normal) negated too, as the implementation does.
// Checks (errors naming TopK): T half/float; 1 <= k <= n <= inner; inner % 32 == 0; Normal inner <= 4096, Small
// inner == 32 and no isHasfinish; operand sizes (src >= inner * outter; Normal: srcIndex >= inner, dstValue >=
// kAlign * outter, dstIndex >= kpad * outter, finish >= outter with isHasfinish; Small: srcIndex >= inner * outter,
// dsts >= k * outter); dstValue, dstIndex, src pairwise disjoint; the TopkTiling must be the one TopKTilingFunc makes
// for this call (the implementation addresses its tmp buffer through its fields: a tiling for another k / inner /
// type / isInitIndex / isLargest makes it read the wrong bytes); tmpLocal (when given) at least
// tiling.tmpLocalSize * sizeof(T) bytes, 32 B aligned, apart from the operands. The first tmpLocalSize * sizeof(T)
// bytes of tmpLocal hold garbage afterwards (scribbled). The form without tmpLocal takes the library's stack buffer,
// which the emulator does not model (no size check).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "trex_emu/tiling_topk.h"
#include "trex_emu/vec.h"

namespace trex_emu {
template <class T>
inline bool TopkOverlap(const void* a, uint64_t an, const void* b, uint64_t bn) {
  const uint8_t* p = static_cast<const uint8_t*>(a);
  const uint8_t* q = static_cast<const uint8_t*>(b);
  return an && bn && p < q + bn && q < p + an;
}

inline void TopkField(const char* name, int64_t got, int64_t want, const AscendC::TopKInfo& info, int32_t k,
                      uint32_t typeSize, bool isInitIndex, bool small, bool isLargest) {
  if (got == want) return;
  Fail("TopK: TopkTiling.", name, " = ", got, ", but TopKTilingFunc gives ", want, " for inner ", info.inner,
       ", k ", k, ", a ", typeSize == 2 ? "half" : "float", " source, isInitIndex ", isInitIndex ? "true" : "false",
       ", ", small ? "TOPK_NSMALL" : "TOPK_NORMAL", ", isLargest ", isLargest ? "true" : "false",
       " (pass the tiling TopKTilingFunc made for this call)");
}

template <class T, bool isInitIndex, bool isHasfinish, AscendC::TopKMode mode>
inline void TopKAdv(const AscendC::LocalTensor<T>& dstV, const AscendC::LocalTensor<int32_t>& dstI,
                    const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<int32_t>& srcIdx,
                    const AscendC::LocalTensor<bool>& finish, const AscendC::LocalTensor<uint8_t>* tmp, int32_t k,
                    const TopkTiling& tl, const AscendC::TopKInfo& info, bool isLargest) {
  static_assert(kFloatTypes<T>, "TopK: T must be half or float (Atlas A2/A3 merge-sort TopK)");
  const char* api = "TopK";
  constexpr bool small = mode == AscendC::TopKMode::TOPK_NSMALL;
  const int32_t outter = info.outter, inner = info.inner, n = info.n;
  if (outter < 1) Fail(api, ": topKInfo.outter = ", outter, " must be at least 1");
  if (!(1 <= k && k <= n))
    Fail(api, ": k = ", k, " must be >= 1 and <= topKInfo.n = ", n);
  if (!(1 <= n && n <= inner))
    Fail(api, ": topKInfo.n = ", n, " must be >= 1 and <= topKInfo.inner = ", inner);
  if (inner % 32 != 0) Fail(api, ": topKInfo.inner = ", inner, " must be a multiple of 32 (pad each row)");
  if (!small && inner > 4096)
    Fail(api, ": topKInfo.inner = ", inner, " must be <= 4096 when topkMode is TOPK_NORMAL");
  if (small && inner != 32) Fail(api, ": topKInfo.inner = ", inner, " must be 32 when topkMode is TOPK_NSMALL");
  if (small && isHasfinish) Fail(api, ": isHasfinish must be false when topkMode is TOPK_NSMALL");

  // The tiling: every field the implementation reads must be TopKTilingFunc's for this call. Fields that scale with
  // outter (Small: the tmp offsets) are compared at the tiling's own outter, which may exceed topKInfo.outter.
  const uint32_t ts = sizeof(T);
  const int32_t pairElems = static_cast<int32_t>(8 / ts);
  int32_t tOutter = outter;
  if (small) {
    if (tl.innerDataSize <= 0 || tl.innerDataSize % (inner * pairElems) != 0 || tl.innerDataSize / (inner * pairElems) < outter)
      Fail(api, ": TopkTiling.innerDataSize = ", tl.innerDataSize, " is not inner * outter * ", pairElems,
           " for an outter >= topKInfo.outter = ", outter, " (pass the tiling TopKTilingFunc made for this call)");
    tOutter = tl.innerDataSize / (inner * pairElems);
  }
  const TopkTiling want = TopkTilingA2(inner, tOutter, k, ts, isInitIndex, mode, isLargest);
  auto F = [&](const char* name, int64_t got, int64_t w) { TopkField(name, got, w, info, k, ts, isInitIndex, small, isLargest); };
  F("tmpLocalSize", tl.tmpLocalSize, want.tmpLocalSize);
  F("innerDataSize", tl.innerDataSize, want.innerDataSize);
  if (!small) {
    F("sortRepeat", tl.sortRepeat, want.sortRepeat);
    F("mrgSortRepeat", tl.mrgSortRepeat, want.mrgSortRepeat);
    F("copyUbToUbBlockCount", tl.copyUbToUbBlockCount, want.copyUbToUbBlockCount);
    F("mrgSortSrc1offset", tl.mrgSortSrc1offset, want.mrgSortSrc1offset);
    F("mrgSortSrc2offset", tl.mrgSortSrc2offset, want.mrgSortSrc2offset);
    F("mrgSortSrc3offset", tl.mrgSortSrc3offset, want.mrgSortSrc3offset);
    F("mrgSortTwoQueueSrc1Offset", tl.mrgSortTwoQueueSrc1Offset, want.mrgSortTwoQueueSrc1Offset);
    F("kAlignFourBytes", tl.kAlignFourBytes, want.kAlignFourBytes);
    F("maskVreducev2FourBytes", tl.maskVreducev2FourBytes, want.maskVreducev2FourBytes);
    if (ts == 2) {
      F("kAlignTwoBytes", tl.kAlignTwoBytes, want.kAlignTwoBytes);
      F("maskVreducev2TwoBytes", tl.maskVreducev2TwoBytes, want.maskVreducev2TwoBytes);
    }
    if (!isInitIndex) F("srcIndexOffset", tl.srcIndexOffset, want.srcIndexOffset);
  } else {
    F("topkMrgSrc1MaskSizeOffset", tl.topkMrgSrc1MaskSizeOffset, want.topkMrgSrc1MaskSizeOffset);
    if (!isInitIndex) F("topkNSmallSrcIndexOffset", tl.topkNSmallSrcIndexOffset, want.topkNSmallSrcIndexOffset);
    F("vreduceIdxMask0", tl.vreduceIdxMask0, want.vreduceIdxMask0);
    F("vreduceIdxMask1", k > 16 ? tl.vreduceIdxMask1 : 0, k > 16 ? want.vreduceIdxMask1 : 0);
    if (ts == 4) {
      F("vreduceValMask0", tl.vreduceValMask0, want.vreduceValMask0);
      F("vreduceValMask1", k > 16 ? tl.vreduceValMask1 : 0, k > 16 ? want.vreduceValMask1 : 0);
    } else {
      const uint16_t got[8] = {tl.vreducehalfValMask0, tl.vreducehalfValMask1, tl.vreducehalfValMask2, tl.vreducehalfValMask3,
                               tl.vreducehalfValMask4, tl.vreducehalfValMask5, tl.vreducehalfValMask6, tl.vreducehalfValMask7};
      const uint16_t w[8] = {want.vreducehalfValMask0, want.vreducehalfValMask1, want.vreducehalfValMask2,
                             want.vreducehalfValMask3, want.vreducehalfValMask4, want.vreducehalfValMask5,
                             want.vreducehalfValMask6, want.vreducehalfValMask7};
      static const char* const names[8] = {"vreducehalfValMask0", "vreducehalfValMask1", "vreducehalfValMask2",
                                           "vreducehalfValMask3", "vreducehalfValMask4", "vreducehalfValMask5",
                                           "vreducehalfValMask6", "vreducehalfValMask7"};
      for (int i = 0; i < 8; ++i) F(names[i], got[i], w[i]);
    }
  }

  // Operands (the CPU-debug size checks, then the UB ranges each access touches).
  const uint64_t all = uint64_t(outter) * inner;
  const int32_t kAlignV = small ? k : (ts == 4 ? tl.kAlignFourBytes : tl.kAlignTwoBytes);
  const int32_t kAlignI = small ? k : tl.kAlignFourBytes;
  if (src.GetSize() < all)
    Fail(api, ": srcLocal holds ", src.GetSize(), " elements, fewer than inner * outter = ", all);
  const uint64_t idxNeed = small ? all : uint64_t(inner);
  if (srcIdx.GetSize() < idxNeed)
    Fail(api, ": srcIndexLocal holds ", srcIdx.GetSize(), " elements, fewer than ", small ? "inner * outter = " : "inner = ",
         idxNeed, small ? " (TOPK_NSMALL)" : " (TOPK_NORMAL)");
  if (isHasfinish && finish.GetSize() < uint64_t(outter))
    Fail(api, ": finishLocal holds ", finish.GetSize(), " elements, fewer than outter = ", outter, " (isHasfinish)");
  const uint64_t needV = uint64_t(kAlignV) * outter, needI = uint64_t(kAlignI) * outter;
  if (dstV.GetSize() < needV)
    Fail(api, ": dstValueLocal holds ", dstV.GetSize(), " elements, fewer than ", small ? "k" : "k_pad", " * outter = ", needV);
  if (dstI.GetSize() < needI)
    Fail(api, ": dstIndexLocal holds ", dstI.GetSize(), " elements, fewer than ", small ? "k" : "kpad_index",
         " * outter = ", needI);
  CheckUbAlign(api, "dstValueLocal", dstV.addr_);
  CheckUbAlign(api, "dstIndexLocal", dstI.addr_);
  CheckUbAlign(api, "srcLocal", src.addr_);
  const uint64_t negV = isLargest ? 0 : uint64_t(tl.maskOffset > 0 ? tl.maskOffset : 0);
  const uint64_t spanV = std::max<uint64_t>(needV, negV);
  if (TopkOverlap<T>(dstV.addr_, spanV * ts, dstI.addr_, needI * 4) || TopkOverlap<T>(dstV.addr_, spanV * ts, src.addr_, all * ts) ||
      TopkOverlap<T>(dstI.addr_, needI * 4, src.addr_, all * ts))
    Fail(api, ": dstValueLocal, dstIndexLocal and srcLocal must not overlap");
  CheckUbRange(api, "srcLocal", src.buf_, src.addr_, src.addr_ + all);
  if (isInitIndex) {
    CheckUbAlign(api, "srcIndexLocal", srcIdx.addr_);
    CheckUbRange(api, "srcIndexLocal", srcIdx.buf_, srcIdx.addr_, srcIdx.addr_ + idxNeed);
    if (TopkOverlap<T>(dstV.addr_, spanV * ts, srcIdx.addr_, idxNeed * 4) || TopkOverlap<T>(dstI.addr_, needI * 4, srcIdx.addr_, idxNeed * 4))
      Fail(api, ": srcIndexLocal must not overlap dstValueLocal / dstIndexLocal");
  }
  if (isHasfinish) {
    CheckUbRange(api, "finishLocal", finish.buf_, finish.addr_, finish.addr_ + outter);
    if (TopkOverlap<T>(dstV.addr_, spanV * ts, finish.addr_, outter) || TopkOverlap<T>(dstI.addr_, needI * 4, finish.addr_, outter))
      Fail(api, ": finishLocal must not overlap dstValueLocal / dstIndexLocal");
  }
  uint64_t tmpBytes = uint64_t(tl.tmpLocalSize > 0 ? tl.tmpLocalSize : 0) * ts;
  if (tmp != nullptr) {
    if (tmp->GetSize() < tmpBytes)
      Fail(api, ": tmpLocal holds ", tmp->GetSize(), " B; the implementation needs tiling.tmpLocalSize * sizeof(T) = ",
           tmpBytes, " B (GetTopKMaxMinTmpSize gives the size)");
    CheckUbAlign(api, "tmpLocal", tmp->addr_);
    CheckUbRange(api, "tmpLocal", tmp->buf_, tmp->addr_, tmp->addr_ + tmpBytes);
    const uint8_t* tb = tmp->addr_;
    if (TopkOverlap<T>(tb, tmpBytes, dstV.addr_, spanV * ts) || TopkOverlap<T>(tb, tmpBytes, dstI.addr_, needI * 4) ||
        TopkOverlap<T>(tb, tmpBytes, src.addr_, all * ts) ||
        (isInitIndex && TopkOverlap<T>(tb, tmpBytes, srcIdx.addr_, idxNeed * 4)) ||
        (isHasfinish && TopkOverlap<T>(tb, tmpBytes, finish.addr_, outter)))
      Fail(api, ": tmpLocal UB bytes [", RT().UbOffset(tb), ", ", RT().UbOffset(tb + tmpBytes),
           ") overlap an operand; give it its own buffer");
  }

  // Compute: all reads first (dst may not alias, but keep the order of the instructions' effects simple).
  const T minusOne = FromF<T>(-1.0f);
  std::vector<T> vals(all);
  for (uint64_t i = 0; i < all; ++i)
    vals[i] = isLargest ? src.addr_[i] : FromF<T>(ToF(src.addr_[i]) * ToF(minusOne));
  std::vector<int32_t> idx(idxNeed);
  for (uint64_t i = 0; i < idxNeed; ++i) idx[i] = isInitIndex ? srcIdx.addr_[i] : static_cast<int32_t>(i % inner);
  std::vector<uint8_t> fin(isHasfinish ? outter : 0);
  for (int32_t j = 0; j < (isHasfinish ? outter : 0); ++j) fin[j] = finish.addr_[j] ? 1 : 0;
  CheckUbRange(api, "dstValueLocal", dstV.buf_, dstV.addr_, dstV.addr_ + spanV);
  CheckUbRange(api, "dstIndexLocal", dstI.buf_, dstI.addr_, dstI.addr_ + needI);
  std::vector<int> order(inner);
  for (int32_t j = 0; j < outter; ++j) {
    const T* row = vals.data() + uint64_t(j) * inner;
    auto key = [&](int i) {
      const float x = ToF(row[i]);
      return x != x ? std::numeric_limits<float>::infinity() : x;
    };
    for (int i = 0; i < inner; ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return key(a) > key(b); });
    T* dv = dstV.addr_ + uint64_t(j) * kAlignV;
    int32_t* di = dstI.addr_ + uint64_t(j) * kAlignI;
    const int32_t* rowIdx = idx.data() + (small ? uint64_t(j) * inner : 0);
    for (int32_t t = 0; t < k; ++t) {
      dv[t] = row[order[t]];
      di[t] = (isHasfinish && fin[j]) ? n : rowIdx[order[t]];
    }
  }
  for (uint64_t i = 0; i < negV; ++i) dstV.addr_[i] = FromF<T>(ToF(dstV.addr_[i]) * ToF(minusOne));

  // Vector work: Sort32 (inner / 32 per row), the merge passes, the gathers (and the Muls when !isLargest).
  uint64_t repeats = small ? uint64_t(outter) * 3 : 0;
  if (!small) {
    int passes = 0;
    for (int z = 32; z < inner; z *= 4) ++passes;
    repeats = uint64_t(outter) * (uint64_t(inner / 32) * (1 + passes) + 2 + (isHasfinish ? 1 : 0));
  }
  if (!isLargest) repeats += CountFormRepeats(all, ts) + CountFormRepeats(negV, ts);
  EndAdvancedApi(api, tmp != nullptr ? tmp->addr_ : nullptr, tmp != nullptr ? tmpBytes : 0, repeats);
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, bool isInitIndex = false, bool isHasfinish = false, bool isReuseSrc = false,
          enum TopKMode topkMode = TopKMode::TOPK_NORMAL>
inline void TopK(const LocalTensor<T>& dstValueLocal, const LocalTensor<int32_t>& dstIndexLocal,
                 const LocalTensor<T>& srcLocal, const LocalTensor<int32_t>& srcIndexLocal,
                 const LocalTensor<bool>& finishLocal, const LocalTensor<uint8_t>& tmpLocal, const int32_t k,
                 const TopkTiling& tilling, const TopKInfo& topKInfo, const bool isLargest = true) {
  trex_emu::TopKAdv<T, isInitIndex, isHasfinish, topkMode>(dstValueLocal, dstIndexLocal, srcLocal, srcIndexLocal,
                                                           finishLocal, &tmpLocal, k, tilling, topKInfo, isLargest);
}
template <typename T, bool isInitIndex = false, bool isHasfinish = false, bool isReuseSrc = false,
          enum TopKMode topkMode = TopKMode::TOPK_NORMAL>
inline void TopK(const LocalTensor<T>& dstValueLocal, const LocalTensor<int32_t>& dstIndexLocal,
                 const LocalTensor<T>& srcLocal, const LocalTensor<int32_t>& srcIndexLocal,
                 const LocalTensor<bool>& finishLocal, const int32_t k, const TopkTiling& tilling,
                 const TopKInfo& topKInfo, const bool isLargest = true) {
  trex_emu::TopKAdv<T, isInitIndex, isHasfinish, topkMode>(dstValueLocal, dstIndexLocal, srcLocal, srcIndexLocal,
                                                           finishLocal, nullptr, k, tilling, topKInfo, isLargest);
}
}  // namespace AscendC
