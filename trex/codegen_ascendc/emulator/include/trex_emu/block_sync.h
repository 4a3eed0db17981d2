// trex AscendC emulator: inter-core and inter-task synchronisation beyond SyncAll, and the scalar GM accesses
// that bypass the data cache — IBSet/IBWait, InitDetermineComputeWorkspace/WaitPreBlock/NotifyNextBlock,
// WaitPreTaskEnd/SetNextTaskStart, DataSyncBarrier, ReadGmByPassDCache/WriteGmByPassDCache. Each follows
// asc-devkit's implementation for dav-c220 (impl/basic_api/kernel_operator_block_sync_intf_impl.h,
// dav_c220/kernel_operator_determine_compute_sync_impl.h, kernel_scalar.h) on the same GM words, and the
// constraints of its API page (docs/zh/api/SIMD-API/基础API/同步控制/..., 标量计算/...).
//
// Blocks run one at a time (launch.h); a block that waits hands the baton on until its condition holds, and a
// round in which no block gets anywhere is the NPU's hang, reported. The waits order GM accesses for the
// cross-block race check as the hardware does: what the signalling block did before its IBSet/NotifyNextBlock
// precedes what the waiting block does after its IBWait/WaitPreBlock. The GM words of the protocols are the
// synchronisation itself and are not recorded as data accesses.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "trex_emu/copy.h"
#include "trex_emu/pipe.h"
#include "trex_emu/runtime.h"
#include "trex_emu/sync_check.h"
#include "trex_emu/tensor.h"

namespace trex_emu {

// Sync keys in Runtime::arrivals: kind in the top byte (SyncAll uses bit 63 and small generation numbers).
constexpr uint64_t kSyncKeyIB = uint64_t{0x21} << 56;
constexpr uint64_t kSyncKeySeq = uint64_t{0x22} << 56;

// The running block signals `key`: its accesses so far precede whoever merges the key; it goes on in a new epoch.
inline void SyncPublish(uint64_t key) {
  Runtime& rt = RT();
  if (rt.arrivals.size() <= rt.block_idx || rt.clocks.size() <= rt.block_idx) return;  // outside a launch
  rt.arrivals[rt.block_idx][key] = rt.phase;
  rt.Advance(rt.block_idx, rt.clocks[rt.block_idx][rt.phase]);
}
// The running block has seen the signals with keys in [lo, hi): it knows what their senders did before them.
inline void SyncMerge(uint64_t lo, uint64_t hi) {
  Runtime& rt = RT();
  if (rt.arrivals.size() <= rt.block_idx || rt.clocks.size() <= rt.block_idx) return;
  std::vector<uint32_t> known = rt.clocks[rt.block_idx][rt.phase];
  for (uint32_t i = 0; i < rt.arrivals.size(); ++i)
    for (auto it = rt.arrivals[i].lower_bound(lo); it != rt.arrivals[i].end() && it->first < hi; ++it) {
      const std::vector<uint32_t> v = rt.ArrivalClock(i, it->second);
      for (size_t k = 0; k < v.size(); ++k) known[k] = std::max(known[k], v[k]);
    }
  rt.Advance(rt.block_idx, known);
}
// Hand the baton on until ready(ctx); outside a multi-block launch a condition that does not hold already
// can never come true.
inline void SyncWait(const char* api, bool (*ready)(void*), void* ctx, const char* what) {
  if (ready(ctx)) return;
  Runtime& rt = RT();
  if (rt.wait_until == nullptr) Fail(api, ": ", what, " never happens: no other block runs (called outside a launch)");
  rt.wait_until(api, ready, ctx);
}
// GM words of a protocol: bounds-checked, not recorded for the race check.
inline void CheckSyncGm(const char* api, const void* p, uint64_t bytes) {
  Runtime& rt = RT();
  const bool recording = rt.check_races;
  rt.check_races = false;
  CheckGm(api, p, bytes);
  rt.check_races = recording;
}
inline void CheckSyncUb(const char* api, const AscendC::LocalTensor<int32_t>& ub, uint64_t elems) {
  CheckUbAlign(api, "ubWorkspace", ub.addr_);
  CheckUbRange(api, "ubWorkspace", ub.buf_, ub.addr_, ub.addr_ + elems);
}

}  // namespace trex_emu

namespace AscendC {

// ---- DataSyncBarrier<MemDsbT> (同步控制/核内同步/DataSyncBarrier(ISASI)): waits until the earlier memory
// accesses of the kind named complete. The emulator completes every access when it is issued: a no-op.
enum class MemDsbT : uint8_t { ALL = 0, DDR, UB, SEQ };
template <MemDsbT arg0>
inline void DataSyncBarrier() {}

// ---- ReadGmByPassDCache / WriteGmByPassDCache (标量计算/...(ISASI)): one scalar GM load/store that skips the
// data cache (ld_dev/st_dev), the way cores exchange flags. Bounds-checked; integer types of 1-8 bytes only
// (the impl's static_assert). These are the inter-core channel itself, so they are not recorded for the race
// check. A block that polls an address that another block must change hands the baton on after a few
// unchanged reads (the NPU's cores run in parallel), so a flag written by a later block is seen.
}  // namespace AscendC
namespace trex_emu {
template <class T>
constexpr bool kByPassTypes = std::is_integral<T>::value && !std::is_same<T, bool>::value && sizeof(T) <= 8;
struct GmPoll {
  const volatile uint8_t* addr;
  uint64_t bits;
  size_t size;
};
inline bool GmPollChanged(void* p) {
  const GmPoll& g = *static_cast<GmPoll*>(p);
  uint64_t now = 0;
  std::memcpy(&now, const_cast<const uint8_t*>(g.addr), g.size);
  return now != g.bits;
}
}  // namespace trex_emu
namespace AscendC {
template <class T>
inline T ReadGmByPassDCache(__gm__ T* addr) {
  static_assert(trex_emu::kByPassTypes<T>, "ReadGmByPassDCache supports int8_t/uint8_t/int16_t/uint16_t/int32_t/"
                                           "uint32_t/int64_t/uint64_t only");
  trex_emu::CheckSyncGm("ReadGmByPassDCache", addr, sizeof(T));
  trex_emu::Runtime& rt = trex_emu::RT();
  rt.counters.scalar_ops += 1;
  T v;
  std::memcpy(&v, addr, sizeof(T));
  // a poll loop: the same address read unchanged many times in a row -> let the other blocks run
  static thread_local const void* last = nullptr;
  static thread_local uint32_t same = 0;
  same = last == static_cast<const void*>(addr) ? same + 1 : 0;
  last = addr;
  if (same >= 64 && rt.wait_until != nullptr) {
    same = 0;
    trex_emu::GmPoll g{reinterpret_cast<const volatile uint8_t*>(addr), 0, sizeof(T)};
    std::memcpy(&g.bits, &v, sizeof(T));
    rt.wait_until("ReadGmByPassDCache", &trex_emu::GmPollChanged, &g);
    std::memcpy(&v, addr, sizeof(T));
  }
  return v;
}
template <class T>
inline void WriteGmByPassDCache(__gm__ T* addr, T value) {
  static_assert(trex_emu::kByPassTypes<T>, "WriteGmByPassDCache supports int8_t/uint8_t/int16_t/uint16_t/int32_t/"
                                           "uint32_t/int64_t/uint64_t only");
  trex_emu::CheckSyncGm("WriteGmByPassDCache", addr, sizeof(T));
  trex_emu::RT().counters.scalar_ops += 1;
  std::memcpy(addr, &value, sizeof(T));
}

// ---- IBSet / IBWait (同步控制/核间同步/IBSet, IBWait): the flag of (blockIdx, eventID) is the int32 at
// gmWorkspace[coreNum * 8 * eventID + blockIdx * 8] (coreNum = GetBlockNum(), twice that when !isAIVOnly).
// IBSet waits until it is 0 and writes 1; IBWait waits until it is 1 and writes 0 (so the pair alternates);
// the 32-byte slot is copied through ubWorkspace[0..8) as the impl does. The page's constraints raise:
// gmWorkspace too small for the slot (coreNum*32*eventID + blockIdx*32 + 32 B), ubWorkspace under 32 B, a
// negative blockIdx/eventID. A wait nobody answers is the NPU's hang, reported.
}  // namespace AscendC
namespace trex_emu {
struct IBFlag {
  volatile int32_t* word;
  int32_t want;
};
inline bool IBFlagIs(void* p) {
  const IBFlag& f = *static_cast<IBFlag*>(p);
  return *f.word == f.want;
}
template <bool isAIVOnly>
inline void IBSetWait(const char* api, const AscendC::GlobalTensor<int32_t>& gm, const AscendC::LocalTensor<int32_t>& ub,
                      int32_t blockIdx, int32_t eventID, bool set) {
  Runtime& rt = RT();
  if (blockIdx < 0 || eventID < 0) Fail(api, ": blockIdx=", blockIdx, " and eventID=", eventID, " must be >= 0");
  const int64_t cores = int64_t{rt.block_num} * (isAIVOnly ? 1 : 2);
  const int64_t at = cores * 8 * eventID + int64_t{blockIdx} * 8;
  if (gm.GetSize() != 0 && static_cast<int64_t>(gm.GetSize()) < at + 8)
    Fail(api, ": gmWorkspace holds ", gm.GetSize() * 4, " B; blockIdx=", blockIdx, ", eventID=", eventID, " with ",
         cores, " cores needs ", (at + 8) * 4, " B (the page: cores*32B*eventID + blockIdx*32B + 32B)");
  CheckSyncUb(api, ub, 8);
  int32_t* slot = gm.addr_ + at;
  CheckSyncGm(api, slot, 32);
  if (rt.check_sync) FlushInstr();
  IBFlag f{slot, set ? 0 : 1};
  SyncWait(api, &IBFlagIs, &f, set ? "the flag's reset by IBWait" : "the matching IBSet");
  const uint64_t prefix = kSyncKeyIB | (static_cast<uint64_t>(at) << 20);
  if (!set) SyncMerge(prefix, prefix + (uint64_t{1} << 20));
  std::memcpy(ub.addr_, slot, 32);
  ub.addr_[0] = set ? 1 : 0;
  *slot = ub.addr_[0];
  if (set) {
    uint32_t gen = 0;
    for (const auto& a : rt.arrivals)
      for (auto it = a.lower_bound(prefix); it != a.end() && it->first < prefix + (uint64_t{1} << 20); ++it) ++gen;
    SyncPublish(prefix + gen);
  }
  rt.counters.scalar_ops += 1;
}
}  // namespace trex_emu
namespace AscendC {
template <bool isAIVOnly = true>
inline void IBSet(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
                  int32_t eventID) {
  trex_emu::IBSetWait<isAIVOnly>("IBSet", gmWorkspace, ubWorkspace, blockIdx, eventID, true);
}
template <bool isAIVOnly = true>
inline void IBWait(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace, int32_t blockIdx,
                   int32_t eventID) {
  trex_emu::IBSetWait<isAIVOnly>("IBWait", gmWorkspace, ubWorkspace, blockIdx, eventID, false);
}

// ---- InitDetermineComputeWorkspace / WaitPreBlock / NotifyNextBlock (核间同步): blocks take turns in index order,
// round after round, through GM words gmWorkspace[b * 8] (b < GetBlockNum()) and the round number kept in
// ubWorkspace[GetBlockNum() * 8]. Init: block 0 zeroes the words, every block sets its round to 1 (the GM need
// not be zeroed by the host). WaitPreBlock (block i, round k): waits until words 0..i-1 hold k and the rest 0.
// NotifyNextBlock: the last block zeroes all words, another writes k into its own; the round becomes k+1.
// gmWorkspace under GetBlockNum()*32 B or ubWorkspace under GetBlockNum()*32+32 B raise (the pages).
}  // namespace AscendC
namespace trex_emu {
struct SeqTurn {
  const volatile int32_t* gm;
  int64_t block, total;
  int32_t round;
};
inline bool SeqTurnReady(void* p) {
  const SeqTurn& s = *static_cast<SeqTurn*>(p);
  for (int64_t i = 0; i < s.total; ++i)
    if (s.gm[i * 8] != (i < s.block ? s.round : 0)) return false;
  return true;
}
inline void CheckSeqWorkspaces(const char* api, const AscendC::GlobalTensor<int32_t>& gm,
                               const AscendC::LocalTensor<int32_t>& ub) {
  const uint64_t n = RT().block_num;
  if (gm.GetSize() != 0 && gm.GetSize() < n * 8)
    Fail(api, ": gmWorkspace holds ", gm.GetSize() * 4, " B; ", n, " blocks need ", n * 32, " B (GetBlockNum()*32)");
  if (ub.GetSize() < n * 8 + 8)
    Fail(api, ": ubWorkspace holds ", ub.GetSize() * 4, " B; ", n, " blocks need ", n * 32 + 32,
         " B (GetBlockNum()*32+32)");
  CheckSyncUb(api, ub, n * 8 + 1);
  CheckSyncGm(api, gm.addr_, n * 32);
  if (RT().check_sync) FlushInstr();
}
}  // namespace trex_emu
namespace AscendC {
inline void InitDetermineComputeWorkspace(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace) {
  const char* api = "InitDetermineComputeWorkspace";
  trex_emu::CheckSeqWorkspaces(api, gmWorkspace, ubWorkspace);
  const uint32_t n = trex_emu::RT().block_num;
  if (trex_emu::RT().block_idx == 0) {
    std::memset(ubWorkspace.addr_, 0, size_t{n} * 32);
    std::memset(gmWorkspace.addr_, 0, size_t{n} * 32);
  }
  ubWorkspace.addr_[n * 8] = 1;
}
inline void WaitPreBlock(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace) {
  const char* api = "WaitPreBlock";
  trex_emu::CheckSeqWorkspaces(api, gmWorkspace, ubWorkspace);
  trex_emu::Runtime& rt = trex_emu::RT();
  const uint32_t n = rt.block_num;
  trex_emu::SeqTurn s{gmWorkspace.addr_, rt.block_idx, n, ubWorkspace.addr_[n * 8]};
  trex_emu::SyncWait(api, &trex_emu::SeqTurnReady, &s, "the previous block's NotifyNextBlock");
  std::memcpy(ubWorkspace.addr_, gmWorkspace.addr_, size_t{n} * 32);
  const uint64_t lo = trex_emu::kSyncKeySeq | (static_cast<uint64_t>(static_cast<uint32_t>(s.round)) << 24);
  trex_emu::SyncMerge(lo, lo + (uint64_t{1} << 24));
}
inline void NotifyNextBlock(GlobalTensor<int32_t>& gmWorkspace, LocalTensor<int32_t>& ubWorkspace) {
  const char* api = "NotifyNextBlock";
  trex_emu::CheckSeqWorkspaces(api, gmWorkspace, ubWorkspace);
  trex_emu::Runtime& rt = trex_emu::RT();
  const uint32_t n = rt.block_num, b = rt.block_idx;
  const int32_t round = ubWorkspace.addr_[n * 8];
  if (b + 1 == n) {
    std::memset(ubWorkspace.addr_, 0, size_t{n} * 32);
    std::memset(gmWorkspace.addr_, 0, size_t{n} * 32);
  } else {
    for (int i = 0; i < 8; ++i) ubWorkspace.addr_[b * 8 + i] = round;
    std::memcpy(gmWorkspace.addr_ + b * 8, ubWorkspace.addr_ + b * 8, 32);
  }
  // the next block's turn in this round (and, from the last block, the first block's next round) follows this
  trex_emu::SyncPublish(trex_emu::kSyncKeySeq | (static_cast<uint64_t>(static_cast<uint32_t>(round + (b + 1 == n))) << 24) | b);
  ubWorkspace.addr_[n * 8] = round + 1;
}

// ---- WaitPreTaskEnd / SetNextTaskStart (同步控制/任务间同步): order a SuperKernel's sub-kernels; a kernel launched
// alone has no previous or next task, so they do nothing. The pages' constraint that each is called at most once
// per core is checked (a second call hangs the NPU's task sync).
}  // namespace AscendC
namespace trex_emu {
inline void TaskSyncOnce(const char* api, uint8_t bit) {
  Runtime& rt = RT();
  if (rt.task_sync_calls & bit)
    Fail(api, ": called a second time in this block; the page requires exactly one call per core");
  rt.task_sync_calls |= bit;
}
}  // namespace trex_emu
namespace AscendC {
template <bool FORCE = false>
inline void WaitPreTaskEnd() {
  trex_emu::TaskSyncOnce("WaitPreTaskEnd", 1);
}
template <pipe_t AIV_PIPE = PIPE_MTE3, pipe_t AIC_PIPE = PIPE_FIX, bool FORCE = false>
inline void SetNextTaskStart() {
  trex_emu::TaskSyncOnce("SetNextTaskStart", 2);
}

}  // namespace AscendC
