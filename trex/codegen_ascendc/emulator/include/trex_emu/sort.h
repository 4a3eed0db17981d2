// trex AscendC emulator: the sort family of Atlas A2/A3 (arch 2201) — Sort, MrgSort, Concat, Extract,
// GetSortLen, GetSortOffset, GetMrgSortResult, and ArithProgression / Arange (the index generator the sort
// kernels use for their uint32 indices).
//
// Sources (mirror-cann/asc-devkit@82b89a1):
//  * pages docs/zh/api/SIMD-API/高阶API/排序操作/{Sort,MrgSort-93,Concat,Extract,GetSortLen,GetSortOffset}.md,
//    基础API/Memory矢量计算/排序组合（ISASI）/{MrgSort,Sort32,GetMrgSortResult}.md, 高阶API/索引计算/Arange-94.md;
//  * the implementation impl/basic_api/kernel_operator_proposal_intf_impl.h and its dav_c220 part
//    impl/basic_api/dav_c220/kernel_operator_proposal_impl.h (DoFullSort, ComSortInnerLoopTail in
//    kernel_operator_proposal_base_impl.h), impl/adv_api/detail/index/arithprogression/arithprogression_common_impl.h.
//
// Layout on A2/A3 ("排布方式一"): a sorted element is an 8-byte (score, index) structure — score in the low
// 4 B (float) or the low 2 B (half; the next 2 B reserved), the uint32 index in the high 4 B. A sorted list of
// n elements is therefore GetSortLen<T>(n) = 8n / sizeof(T) elements of T.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "trex_emu/copy.h"
#include "trex_emu/pipe.h"
#include "trex_emu/vec.h"
#include "trex_emu/vec_gather.h"

namespace AscendC {

// impl/basic_api/utils/kernel_utils_ceil_oom_que.h: the type trait kernels use in `if constexpr` (cann-ops'
// moe_init_routing_v2 among them)
template <typename T, typename U>
struct IsSameType : public std::false_type {};
template <typename T>
struct IsSameType<T, T> : public std::true_type {};

constexpr int32_t MRG_SORT_ELEMENT_LEN = 4;

// include/basic_api/kernel_struct_proposal.h
struct MrgSort4Info {
  MrgSort4Info() {}
  MrgSort4Info(const uint16_t elementLengthsIn[MRG_SORT_ELEMENT_LEN], const bool ifExhaustedSuspensionIn,
               const uint16_t validBitIn, const uint16_t repeatTimesIn)
      : ifExhaustedSuspension(ifExhaustedSuspensionIn), validBit(validBitIn),
        repeatTimes(static_cast<uint8_t>(repeatTimesIn)) {
    for (int32_t i = 0; i < MRG_SORT_ELEMENT_LEN; ++i) elementLengths[i] = elementLengthsIn[i];
  }
  uint16_t elementLengths[MRG_SORT_ELEMENT_LEN] = {0};
  bool ifExhaustedSuspension = false;
  uint16_t validBit = 0;
  uint8_t repeatTimes = 1;
};

template <typename T>
struct MrgSortSrcList {
  MrgSortSrcList() {}
  MrgSortSrcList(const LocalTensor<T>& src1In, const LocalTensor<T>& src2In, const LocalTensor<T>& src3In,
                 const LocalTensor<T>& src4In) {
    src1 = src1In[0];
    src2 = src2In[0];
    src3 = src3In[0];
    src4 = src4In[0];
  }
  LocalTensor<T> src1;
  LocalTensor<T> src2;
  LocalTensor<T> src3;
  LocalTensor<T> src4;
};

}  // namespace AscendC

namespace trex_emu {

constexpr int kSortSlotBytes = 8;      // one (score, index) structure
constexpr int kSort32Elements = 32;    // Sort32 / Sort: elements per repeat
constexpr uint16_t kMrgSortMaxLen = 4095;

// The VMS4_SR special register (what GetMrgSortResult reads): the structures taken from each list by the block's
// last MrgSort, 16 bits per list. Per block: every block runs in a thread of its own (launch.h), so a
// thread_local is the block's register; a fresh launch starts fresh threads.
struct Vms4Sr {
  bool set = false;
  uint64_t bits = 0;
};
inline Vms4Sr& Vms4() {
  thread_local Vms4Sr r;
  return r;
}

// The score of a structure as a sort key: NaN sorts as the largest score, as Sort32 orders it (vec_gather.h):
// it keys as +inf, so a NaN and a +inf tie and keep list order.
template <class T>
inline float SortKey(const uint8_t* slot) {
  T v;
  std::memcpy(&v, slot, sizeof(T));
  const float x = ToF(v);
  return x != x ? std::numeric_limits<float>::infinity() : x;
}

struct SortList {
  const uint8_t* p;
  const BufferInfo* buf;
  uint32_t len;  // structures
};

// vmrgsort4 on dav_c220: merge the valid lists (validBit 3 / 7 / 15: the first 2 / 3 / 4), each sorted by score
// descending, into dst, descending; equal scores keep list order (the page: "index的顺序与输入顺序一致"). With
// ifExhaustedSuspension the merge stops right after the element that empties a list. repeat > 1 (only with four
// equal, contiguous lists and no suspension — the page's four conditions) merges the next 4 * len structures of
// the sources into the next 4 * len of dst. taken[i]: structures consumed from list i (by the last repeat).
template <class T>
inline void MrgSortImpl(const char* api, const LocalTensor<T>& dst, const SortList (&lists)[4], uint16_t validBit,
                        bool suspension, int repeat, uint32_t taken[4]) {
  static_assert(kFloatTypes<T>, "MrgSort supports half and float only on Atlas A2/A3");
  if (validBit != 3 && validBit != 7 && validBit != 15)
    Fail(api, ": validBit=", validBit, " is not one of 3 (0b11), 7 (0b111), 15 (0b1111): the valid lists must be the "
              "first 2, 3 or 4");
  CheckRepeat(api, repeat);
  const int n = validBit == 3 ? 2 : validBit == 7 ? 3 : 4;
  for (int i = 0; i < 4; ++i)
    if (lists[i].len > kMrgSortMaxLen)
      Fail(api, ": elementLengths[", i, "]=", lists[i].len, " is outside [0, 4095] (structures of 8 B)");
  CheckUbAlign(api, "dst", dst.addr_);
  static const char* const names[4] = {"src1", "src2", "src3", "src4"};
  for (int i = 0; i < n; ++i) {
    if (lists[i].buf == nullptr) Fail(api, ": ", names[i], " is an empty LocalTensor but validBit ", validBit, " uses it");
    CheckUbAlign(api, names[i], lists[i].p, 8);
  }
  if (repeat > 1) {
    bool ok = n == 4 && !suspension;
    for (int i = 1; i < 4 && ok; ++i)
      ok = lists[i].len == lists[0].len && lists[i].p == lists[i - 1].p + uint64_t{lists[0].len} * kSortSlotBytes;
    if (!ok)
      Fail(api, ": repeatTimes=", repeat, " needs four valid lists (validBit 15) of equal length stored one after "
                "another and ifExhaustedSuspension false (the page's conditions for repeatTimes); got validBit ",
           validBit, ", lengths ", lists[0].len, "/", lists[1].len, "/", lists[2].len, "/", lists[3].len,
           suspension ? ", suspension on" : "");
  }
  if (repeat == 0) return;  // A2/A3: a NOP, dst not written (the page)
  uint8_t* out = reinterpret_cast<uint8_t*>(dst.addr_);
  uint64_t total = 0;
  for (int i = 0; i < n; ++i) total += lists[i].len;
  const uint64_t stride = repeat > 1 ? total * kSortSlotBytes : 0;
  // the page: source and destination must not overlap
  for (int i = 0; i < n; ++i) {
    const uint8_t* lo = lists[i].p;
    const uint8_t* hi = lists[i].p + stride * (repeat - 1) + uint64_t{lists[i].len} * kSortSlotBytes;
    const uint8_t* dlo = out;
    const uint8_t* dhi = out + stride * (repeat - 1) + total * kSortSlotBytes;
    if (lo < dhi && dlo < hi && lists[i].len > 0)
      Fail(api, ": dst UB bytes [", RT().UbOffset(dlo), ", ", RT().UbOffset(dhi), ") overlap ", names[i], " [",
           RT().UbOffset(lo), ", ", RT().UbOffset(hi), "); the page forbids any overlap of sources and destination");
  }
  uint32_t pos[4] = {0, 0, 0, 0};
  for (int r = 0; r < repeat; ++r) {
    std::vector<uint8_t> src[4];
    for (int i = 0; i < n; ++i) {
      const uint8_t* p = lists[i].p + stride * r;
      CheckUbRange(api, names[i], lists[i].buf, p, p + uint64_t{lists[i].len} * kSortSlotBytes);
      src[i].assign(p, p + uint64_t{lists[i].len} * kSortSlotBytes);
      pos[i] = 0;
    }
    std::vector<uint8_t> merged;
    merged.reserve(total * kSortSlotBytes);
    bool stop = false;
    if (suspension)
      for (int i = 0; i < n; ++i) stop |= lists[i].len == 0;
    while (!stop) {
      int best = -1;
      float key = 0;
      for (int i = 0; i < n; ++i) {
        if (pos[i] >= lists[i].len) continue;
        const float k = SortKey<T>(&src[i][uint64_t{pos[i]} * kSortSlotBytes]);
        if (best < 0 || k > key) best = i, key = k;  // strict >: an equal score keeps the earlier list first
      }
      if (best < 0) break;
      const uint8_t* s = &src[best][uint64_t{pos[best]} * kSortSlotBytes];
      merged.insert(merged.end(), s, s + kSortSlotBytes);
      pos[best] += 1;
      if (suspension && pos[best] == lists[best].len) stop = true;
    }
    uint8_t* d = out + stride * r;
    if (!merged.empty()) {
      CheckUbRange(api, "dst", dst.buf_, d, d + merged.size());
      std::memcpy(d, merged.data(), merged.size());
    }
  }
  uint64_t sr = 0;
  for (int i = 0; i < 4; ++i) {
    taken[i] = pos[i];
    sr |= uint64_t{pos[i] & 0xFFFFu} << (16 * i);
  }
  Vms4().set = true;
  Vms4().bits = sr;
  CountRepeats(api, static_cast<uint64_t>(repeat));
}

template <class T>
inline SortList ListOf(const LocalTensor<T>& t, uint16_t len) {
  return SortList{reinterpret_cast<const uint8_t*>(t.addr_), t.buf_, len};
}

}  // namespace trex_emu

namespace AscendC {

// ---- GetSortLen / GetSortOffset: elements of T (not bytes, whatever the pages say: the dav_c220 implementation
// returns elemCount * 4 for half and * 2 for float, i.e. 8 B per element; kernels index LocalTensor<T> with them)
template <typename T>
inline uint32_t GetSortLen(const uint32_t elemCount) {
  static_assert(trex_emu::kFloatTypes<T>, "GetSortLen supports half and float only");
  return elemCount * static_cast<uint32_t>(trex_emu::kSortSlotBytes / sizeof(T));
}
template <typename T>
inline uint32_t GetSortOffset(const uint32_t elemOffset) {
  static_assert(trex_emu::kFloatTypes<T>, "GetSortOffset supports half and float only");
  return elemOffset * static_cast<uint32_t>(trex_emu::kSortSlotBytes / sizeof(T));
}

// ---- MrgSort (basic API, 排序组合（ISASI）/MrgSort.md): elementLengths in structures, validBit 3/7/15,
// repeatTimes as the page says; does not report the consumed counts (GetMrgSortResult reads them).
template <typename T>
inline void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& src, const MrgSort4Info& params) {
  const trex_emu::SortList lists[4] = {
      trex_emu::ListOf(src.src1, params.elementLengths[0]), trex_emu::ListOf(src.src2, params.elementLengths[1]),
      trex_emu::ListOf(src.src3, params.elementLengths[2]), trex_emu::ListOf(src.src4, params.elementLengths[3])};
  uint32_t taken[4];
  trex_emu::MrgSortImpl("MrgSort", dst, lists, params.validBit, params.ifExhaustedSuspension, params.repeatTimes,
                        taken);
}

// ---- MrgSort (advanced API, 排序操作/MrgSort-93.md): sortedNum is written only with isExhaustedSuspension (as
// the implementation reads VMS4_SR only then).
template <typename T, bool isExhaustedSuspension = false>
inline void MrgSort(const LocalTensor<T>& dst, const MrgSortSrcList<T>& sortList, const uint16_t elementCountList[4],
                    uint32_t sortedNum[4], uint16_t validBit, const int32_t repeatTime) {
  const trex_emu::SortList lists[4] = {
      trex_emu::ListOf(sortList.src1, elementCountList[0]), trex_emu::ListOf(sortList.src2, elementCountList[1]),
      trex_emu::ListOf(sortList.src3, elementCountList[2]), trex_emu::ListOf(sortList.src4, elementCountList[3])};
  uint32_t taken[4];
  if (repeatTime < 0 || repeatTime > 255) trex_emu::CheckRepeat("MrgSort", repeatTime);
  trex_emu::MrgSortImpl("MrgSort", dst, lists, validBit, isExhaustedSuspension, repeatTime, taken);
  if (isExhaustedSuspension && repeatTime > 0)
    for (int i = 0; i < 4; ++i) sortedNum[i] = taken[i];
}

// ---- GetMrgSortResult (排序组合（ISASI）/GetMrgSortResult.md): the structures the block's last MrgSort took from
// each list. Raises before any MrgSort ran in the block (the register holds nothing defined).
inline void GetMrgSortResult(uint16_t& mrgSortList1, uint16_t& mrgSortList2, uint16_t& mrgSortList3,
                             uint16_t& mrgSortList4) {
  const trex_emu::Vms4Sr& r = trex_emu::Vms4();
  if (!r.set)
    trex_emu::Fail("GetMrgSortResult: no MrgSort ran in this block before it, so the VMS4_SR register holds nothing; "
                   "run MrgSort first");
  mrgSortList1 = static_cast<uint16_t>(r.bits & 0xFFFF);
  mrgSortList2 = static_cast<uint16_t>((r.bits >> 16) & 0xFFFF);
  mrgSortList3 = static_cast<uint16_t>((r.bits >> 32) & 0xFFFF);
  mrgSortList4 = static_cast<uint16_t>((r.bits >> 48) & 0xFFFF);
}

// ---- Concat (排序操作/Concat.md): on A2/A3 the implementation only makes `concat` the source tensor
// (`concat = src`); Sort reads the scores from it directly.
template <typename T>
inline void Concat(LocalTensor<T>& concat, const LocalTensor<T>& src, const LocalTensor<T>& tmp, const int32_t repeatTime) {
  static_assert(trex_emu::kFloatTypes<T>, "Concat supports half and float only on Atlas A2/A3");
  (void)tmp;
  trex_emu::CheckRepeat("Concat", repeatTime);
  trex_emu::CheckUbAlign("Concat", "src", src.addr_);
  concat = src;
}

// ---- Sort (排序操作/Sort.md, the prototype without SortConfig): Sort32 of repeatTime groups of 32, then with
// isFullSort the dav_c220 DoFullSort: rounds of 4-way MrgSort over tmp (a copy of dst) back into dst, lists of
// 32, 128, 512, ... structures, the short last list merged by the tail step. The result is the whole input
// sorted by score descending, equal scores in input order. tmp must hold repeatTime * 32 structures; its
// contents afterwards are what the algorithm leaves there.
template <typename T, bool isFullSort>
inline void Sort(const LocalTensor<T>& dst, const LocalTensor<T>& concat, const LocalTensor<uint32_t>& index,
                 LocalTensor<T>& tmp, const int32_t repeatTime) {
  static_assert(trex_emu::kFloatTypes<T>, "Sort supports half and float only on Atlas A2/A3");
  const char* api = "Sort";
  trex_emu::CheckRepeat(api, repeatTime);
  trex_emu::CheckUbAlign(api, "dst", dst.addr_);
  trex_emu::CheckUbAlign(api, "concat", concat.addr_);
  trex_emu::CheckUbAlign(api, "index", index.addr_);
  if (isFullSort) trex_emu::CheckUbAlign(api, "tmp", tmp.addr_);
  Sort32(dst, concat, index, repeatTime);
  if constexpr (isFullSort) {
    PipeBarrier<PIPE_V>();
    constexpr uint32_t kSlotElems = trex_emu::kSortSlotBytes / sizeof(T);
    uint32_t loop = 0;
    for (int32_t q = repeatTime; q > 1; q = (q + 3) / 4) ++loop;
    uint16_t single = trex_emu::kSort32Elements;
    const uint32_t srcElementCount = uint32_t(repeatTime) * trex_emu::kSort32Elements;
    const uint32_t dstElementCount = srcElementCount * kSlotElems;
    int32_t totalQue = repeatTime;
    int32_t tailQue = repeatTime % 4;
    int32_t mergeRepeat = repeatTime / 4;
    DataCopy(tmp, dst, dstElementCount);
    PipeBarrier<PIPE_V>();
    for (uint32_t i = 0; i < loop; ++i) {
      const uint32_t baseOffset = uint32_t(single) * kSlotElems;
      if (mergeRepeat > 0) {  // FullSortInnerLoop
        const uint16_t lens[4] = {single, single, single, single};
        MrgSort(dst, MrgSortSrcList<T>(tmp[0], tmp[baseOffset], tmp[2 * baseOffset], tmp[3 * baseOffset]),
                MrgSort4Info(lens, false, 0b1111, static_cast<uint16_t>(mergeRepeat)));
      }
      PipeBarrier<PIPE_V>();
      const uint16_t tailCount = srcElementCount % single ? srcElementCount % single : single;
      if (tailQue > 0) {  // FullSortInnerLoopTail / ComSortInnerLoopTail
        uint16_t lens[4] = {single, single, single, single};
        const uint32_t o0 = 4 * baseOffset * mergeRepeat;
        uint32_t o1 = 0, o2 = 0, o3 = 0;
        uint16_t valid = 0b1111;
        if (tailQue == 2) {
          o1 = o0 + baseOffset, lens[1] = tailCount, lens[2] = lens[3] = 0, valid = 0b0011;
        } else if (tailQue == 3) {
          o1 = o0 + baseOffset, o2 = o0 + 2 * baseOffset, lens[2] = tailCount, lens[3] = 0, valid = 0b0111;
        } else {
          o1 = o0 + baseOffset, o2 = o0 + 2 * baseOffset, o3 = o0 + 3 * baseOffset, lens[3] = tailCount;
        }
        if (tailQue > 1) {
          MrgSort(dst[o0], MrgSortSrcList<T>(tmp[o0], tmp[o1], tmp[o2], tmp[o3]), MrgSort4Info(lens, false, valid, 1));
        } else {
          DataCopy(dst[o0], tmp[o0], uint32_t(tailCount) * kSlotElems);
        }
      }
      PipeBarrier<PIPE_V>();
      DataCopy(tmp, dst, dstElementCount);
      PipeBarrier<PIPE_V>();
      single = static_cast<uint16_t>(single * 4);
      totalQue = totalQue % 4 ? totalQue / 4 + 1 : totalQue / 4;
      tailQue = totalQue % 4;
      if (tailQue == 0 && tailCount != single) tailQue = 4;
      mergeRepeat = (totalQue - tailQue) / 4;
    }
  }
}

// ---- Extract (排序操作/Extract.md): repeatTime groups of 32 structures of `sorted` -> their scores into dstValue
// and their indices into dstIndex (dav_c220 gathers both with GatherMask). Implemented as documented for half
// too: 32 indices per repeat (the dav_c220 half path runs the index GatherMask for 2 * repeatTime repeats, which
// also reads the 256 * repeatTime bytes after the sorted data; that extra read is not modelled).
template <typename T>
inline void Extract(const LocalTensor<T>& dstValue, const LocalTensor<uint32_t>& dstIndex, const LocalTensor<T>& sorted,
                    const int32_t repeatTime) {
  static_assert(trex_emu::kFloatTypes<T>, "Extract supports half and float only on Atlas A2/A3");
  const char* api = "Extract";
  trex_emu::CheckRepeat(api, repeatTime);
  trex_emu::CheckUbAlign(api, "dstValue", dstValue.addr_);
  trex_emu::CheckUbAlign(api, "dstIndex", dstIndex.addr_);
  trex_emu::CheckUbAlign(api, "sorted", sorted.addr_);
  if (repeatTime == 0) return;
  const uint64_t n = uint64_t(repeatTime) * trex_emu::kSort32Elements;
  const uint8_t* s = reinterpret_cast<const uint8_t*>(sorted.addr_);
  trex_emu::CheckUbRange(api, "sorted", sorted.buf_, s, s + n * trex_emu::kSortSlotBytes);
  trex_emu::CheckUbRange(api, "dstValue", dstValue.buf_, dstValue.addr_, dstValue.addr_ + n);
  trex_emu::CheckUbRange(api, "dstIndex", dstIndex.buf_, dstIndex.addr_, dstIndex.addr_ + n);
  std::vector<uint8_t> copy(s, s + n * trex_emu::kSortSlotBytes);  // a destination may alias sorted
  for (uint64_t k = 0; k < n; ++k) {
    std::memcpy(&dstValue.addr_[k], &copy[k * trex_emu::kSortSlotBytes], sizeof(T));
    std::memcpy(&dstIndex.addr_[k], &copy[k * trex_emu::kSortSlotBytes + 4], 4);
  }
  trex_emu::CountRepeats(api, 2 * static_cast<uint64_t>(repeatTime));
}

// ---- ArithProgression / Arange (高阶API/索引计算/Arange-94.md; ArithProgression is the implementation's name,
// which kernels call): dst[i] = firstValue + i * diffValue, built as arithprogression_common_impl.h builds it —
// the first 32 B by scalar SetValue (half computed in float), then Adds of the previous block (+ 32 B worth of
// steps) up to one repeat, then Adds of the previous repeat (+ 256 B worth), so float rounding accumulates as on
// the NPU and the writes end at count rounded up to 32 B (count > one block). int16_t, int32_t, half, float;
// count > 0 and diffValue >= 0 (its checks). The vector mask is left as the implementation leaves it.
template <typename T>
inline void ArithProgression(const LocalTensor<T>& dstLocal, const T firstValue, const T diffValue, const int32_t count) {
  static_assert(trex_emu::kOneOf<T, half, float, int16_t, int32_t>,
                "ArithProgression/Arange: T must be half, float, int16_t or int32_t on Atlas A2/A3");
  if (count <= 0) trex_emu::Fail("ArithProgression: count=", count, " must be greater than 0");
  if (static_cast<float>(trex_emu::Up<T>(diffValue)) < 0.0f)
    trex_emu::Fail("ArithProgression: diffValue=", static_cast<float>(trex_emu::Up<T>(diffValue)),
                   " must be greater than or equal to 0");
  constexpr int32_t kBlock = 32 / sizeof(T);
  constexpr int32_t kRepeat = 256 / sizeof(T);
  auto base = [&](int32_t n) {
    for (int32_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, half>)
        dstLocal.SetValue(i, static_cast<float>(firstValue) + static_cast<float>(diffValue) * static_cast<float>(i));
      else
        dstLocal.SetValue(i, static_cast<T>(static_cast<T>(firstValue) + static_cast<T>(diffValue) * static_cast<T>(i)));
    }
  };
  auto step = [&](int32_t n) -> T {
    if constexpr (std::is_integral_v<T>)
      return static_cast<T>(static_cast<int64_t>(diffValue) * static_cast<int64_t>(n));
    else
      return static_cast<T>(static_cast<float>(diffValue) * static_cast<float>(n));
  };
  const UnaryRepeatParams stride1(1, 1, 1, 1), stride8(1, 1, 8, 8);
  if (count > kBlock) {
    base(kBlock);
    auto ev = GetTPipePtr()->FetchEventID(HardEvent::S_V);
    SetFlag<HardEvent::S_V>(ev);
    WaitFlag<HardEvent::S_V>(ev);
    if (count > kRepeat) {
      SetVectorMask<T>(0, (uint64_t{1} << kBlock) - 1);
      PipeBarrier<PIPE_V>();
      for (int32_t i = 0; i < 7; ++i) {
        Adds<T, false>(dstLocal[(i + 1) * kBlock], dstLocal[i * kBlock], step(kBlock), MASK_PLACEHOLDER, 1, stride1);
        PipeBarrier<PIPE_V>();
      }
      const int32_t repeat = count / kRepeat, tail = count % kRepeat;
      ResetMask();
      PipeBarrier<PIPE_V>();
      for (int32_t i = 0; i < repeat - 1; ++i) {
        Adds<T, false>(dstLocal[(i + 1) * kRepeat], dstLocal[i * kRepeat], step(kRepeat), MASK_PLACEHOLDER, 1, stride8);
        PipeBarrier<PIPE_V>();
      }
      if (tail > 0) {
        SetVectorMask<T>((tail + kBlock - 1) / kBlock * kBlock);
        PipeBarrier<PIPE_V>();
        Adds<T, false>(dstLocal[repeat * kRepeat], dstLocal[(repeat - 1) * kRepeat], step(kRepeat), MASK_PLACEHOLDER,
                       1, stride8);
        PipeBarrier<PIPE_V>();
      }
    } else {
      const int32_t blocks = (count + kBlock - 1) / kBlock;
      SetVectorMask<T>(0, (uint64_t{1} << kBlock) - 1);
      PipeBarrier<PIPE_V>();
      for (int32_t i = 0; i < blocks - 1; ++i) {
        Adds<T, false>(dstLocal[(i + 1) * kBlock], dstLocal[i * kBlock], step(kBlock), MASK_PLACEHOLDER, 1, stride1);
        PipeBarrier<PIPE_V>();
      }
    }
  } else {
    auto ev = GetTPipePtr()->FetchEventID(HardEvent::V_S);
    SetFlag<HardEvent::V_S>(ev);
    WaitFlag<HardEvent::V_S>(ev);
    base(count);
    auto ev2 = GetTPipePtr()->FetchEventID(HardEvent::S_V);
    SetFlag<HardEvent::S_V>(ev2);
    WaitFlag<HardEvent::S_V>(ev2);
  }
}
template <typename T>
inline void Arange(const LocalTensor<T>& dst, const T firstValue, const T diffValue, const int32_t count) {
  ArithProgression(dst, firstValue, diffValue, count);
}

}  // namespace AscendC
