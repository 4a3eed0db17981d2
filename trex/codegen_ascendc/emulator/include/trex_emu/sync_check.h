// trex AscendC emulator: optional checker of AscendC's intra-core synchronisation rules.
//
// The emulator executes instructions one at a time, so a missing barrier or flag never changes its
// results; on the NPU the pipes (scalar S, vector V, GM->UB MTE2, UB->GM MTE3) run concurrently and
// such a kernel reads stale or half-written data. With Runtime::check_sync on, every UB access is
// recorded per instruction and checked against the documented ordering rules:
//   * V after V (read after write) needs PipeBarrier<PIPE_V>; two DataCopy into overlapping UB need
//     PipeBarrier<PIPE_MTE2> (MTE3 likewise);
//   * across pipes, data written by pipe A is visible to pipe B only after SetFlag/WaitFlag<A_B>,
//     PipeBarrier<PIPE_ALL>, or the TQue hand-off (EnQue/DeQue orders producer -> consumer,
//     FreeTensor/AllocTensor orders the last reader -> the next writer);
//   * a write after another pipe's read (WAR) needs the same ordering;
//   * the scalar pipe is in order with itself, and its loads complete before later instructions issue.
// Accesses of one instruction are merged per operand into a bounding range (strided repeat forms are
// checked conservatively).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "trex_emu/runtime.h"

namespace trex_emu {

enum SyncPipe : uint8_t { kPipeS = 0, kPipeV = 1, kPipeMte2 = 2, kPipeMte3 = 3 };
constexpr uint8_t kAllPipes = 0xF;
inline const char* SyncPipeName(int p) {
  static const char* const kNames[] = {"PIPE_S", "PIPE_V", "PIPE_MTE2", "PIPE_MTE3"};
  return kNames[p];
}

// The pipe an API call runs on (by API name; everything else is a vector instruction).
struct ApiPipe {
  const char* api;
  SyncPipe pipe;
};
constexpr ApiPipe kApiPipes[] = {
    {"DataCopy(GM->UB)", kPipeMte2},
    {"DataCopy(GM->UB, DataCopyParams)", kPipeMte2},
    {"DataCopyPad(GM->UB)", kPipeMte2},
    {"DataCopy(UB->GM)", kPipeMte3},
    {"DataCopy(UB->GM, DataCopyParams)", kPipeMte3},
    {"DataCopyPad(UB->GM)", kPipeMte3},
    {"LocalTensor::GetValue", kPipeS},
    {"LocalTensor::SetValue", kPipeS},
};
inline SyncPipe PipeOfApi(const char* api) {
  for (const auto& e : kApiPipes)
    if (std::strcmp(e.api, api) == 0) return e.pipe;
  return kPipeV;
}

struct UbEvent {
  const uint8_t* b;
  const uint8_t* e;
  const char* api;
  uint64_t seq;
  SyncPipe pipe;
  bool write;
  uint8_t visible;  // pipes already ordered after this access
};

struct PendingAccess {
  const char* operand;
  const uint8_t* b;
  const uint8_t* e;
  bool write;
};

struct SyncState {
  std::vector<UbEvent> events;
  const char* pending_api = nullptr;
  std::vector<PendingAccess> pending;
  uint64_t seq = 0;
  uint64_t flag_seq[64][kNumEventIds] = {};

  void Reset() {
    events.clear();
    pending.clear();
    pending_api = nullptr;
    seq = 0;
    std::memset(flag_seq, 0, sizeof flag_seq);
  }
};

inline SyncState& Sync() {
  static SyncState s;
  return s;
}

inline std::string BufferNameAt(const uint8_t* p) {
  for (const auto& b : RT().buffers)
    if (p >= b.begin && p < b.end) return b.name;
  return "UB";
}

// The documented way to order pipe `from` before pipe `to`.
inline std::string SyncFix(int from, int to) {
  if (from == to) return std::string("PipeBarrier<") + SyncPipeName(from) + ">()";
  if (from == kPipeMte2 && to == kPipeV) return "DeQue the tensor from its VECIN queue, or SetFlag/WaitFlag<HardEvent::MTE2_V>";
  if (from == kPipeV && to == kPipeMte3) return "EnQue/DeQue it through a VECOUT queue, or SetFlag/WaitFlag<HardEvent::V_MTE3>";
  if ((from == kPipeV && to == kPipeMte2) || (from == kPipeMte3 && to == kPipeV) || (from == kPipeMte3 && to == kPipeMte2))
    return std::string("FreeTensor/AllocTensor through the queue, or SetFlag/WaitFlag<HardEvent::") +
           (SyncPipeName(from) + 5) + "_" + (SyncPipeName(to) + 5) + ">";
  return std::string("SetFlag/WaitFlag<HardEvent::") + (SyncPipeName(from) + 5) + "_" + (SyncPipeName(to) + 5) + ">";
}

inline void Prune() {
  auto& ev = Sync().events;
  ev.erase(std::remove_if(ev.begin(), ev.end(), [](const UbEvent& e) { return e.visible == kAllPipes; }), ev.end());
}

// Checks the pending instruction's accesses against earlier ones, then records them.
inline void FlushInstr() {
  SyncState& st = Sync();
  if (st.pending.empty()) return;
  const char* api = st.pending_api;
  const SyncPipe p = PipeOfApi(api);
  const uint8_t pbit = static_cast<uint8_t>(1u << p);
  std::vector<PendingAccess> accesses;
  accesses.swap(st.pending);
  st.pending_api = nullptr;
  for (const PendingAccess& a : accesses) {
    for (const UbEvent& e : st.events) {
      if (e.e <= a.b || a.e <= e.b) continue;
      const bool ordered = (e.visible & pbit) != 0;
      const char* kind = nullptr;
      if (e.write && !a.write && !ordered) kind = "reads";                                   // RAW
      else if (e.write && a.write && !ordered && (e.pipe != p || p == kPipeMte2 || p == kPipeMte3))
        kind = "overwrites";                                                                    // WAW
      else if (!e.write && a.write && e.pipe != p && !ordered) kind = "overwrites";           // WAR
      if (kind == nullptr) continue;
      const uint8_t* lo = std::max(a.b, e.b);
      const uint8_t* hi = std::min(a.e, e.e);
      std::ostringstream os;
      os << "sync hazard: " << api << " (" << SyncPipeName(p) << ") " << kind << " UB bytes [" << RT().UbOffset(lo)
         << ", " << RT().UbOffset(hi) << ") of " << BufferNameAt(lo) << " (" << a.operand << ") that " << e.api << " ("
         << SyncPipeName(e.pipe) << ") " << (e.write ? "wrote" : "read") << ", with nothing ordering the two on the "
         << "NPU, where pipes run concurrently; insert " << SyncFix(e.pipe, p) << " in between";
      Fail(os.str());
    }
  }
  for (const PendingAccess& a : accesses) {
    if (a.write)  // a write supersedes the accesses it covers completely
      st.events.erase(std::remove_if(st.events.begin(), st.events.end(),
                                     [&](const UbEvent& e) { return e.b >= a.b && e.e <= a.e; }),
                      st.events.end());
    // The scalar unit issues every instruction in program order and a scalar load completes before
    // the instructions after it are issued, so a scalar read is ordered before all later accesses;
    // a scalar write (SetValue) is only ordered with the scalar pipe itself until an S_* flag.
    const uint8_t visible = p != kPipeS ? 0u : (a.write ? (1u << kPipeS) : kAllPipes);
    st.events.push_back(UbEvent{a.b, a.e, api, ++st.seq, p, a.write, visible});
  }
  Prune();
}

inline void NoteUbAccess(const char* api, const char* operand, const void* lo, const void* hi) {
  SyncState& st = Sync();
  if (st.pending_api != nullptr && st.pending_api != api) FlushInstr();
  st.pending_api = api;
  // A write is an operand named for the destination, as the API pages name them: dst, dstLocal, dstTensor,
  // dstValueLocal (an advanced API's other outputs, e.g. meanLocal, pass their steps' "dst" instead).
  const bool write = std::strncmp(operand, "dst", 3) == 0 || std::strcmp(api, "LocalTensor::SetValue") == 0;
  const uint8_t* b = static_cast<const uint8_t*>(lo);
  const uint8_t* e = static_cast<const uint8_t*>(hi);
  for (PendingAccess& a : st.pending)
    if (a.operand == operand && a.write == write) {  // same operand: grow the bounding range
      a.b = std::min(a.b, b);
      a.e = std::max(a.e, e);
      return;
    }
  st.pending.push_back(PendingAccess{operand, b, e, write});
}

inline void EndInstr() {
  if (RT().check_sync) FlushInstr();
}

// ---- synchronisation events ----
inline void SyncBarrier(int pipe) {  // pipe: SyncPipe, or -1 for PIPE_ALL
  if (!RT().check_sync) return;
  FlushInstr();
  for (UbEvent& e : Sync().events)
    if (pipe < 0) e.visible = kAllPipes;
    else if (e.pipe == pipe) e.visible |= static_cast<uint8_t>(1u << pipe);
  Prune();
}
inline void SyncSetFlag(int event, int id) {
  if (!RT().check_sync) return;
  FlushInstr();
  Sync().flag_seq[event][id] = Sync().seq;
}
inline void SyncWaitFlag(int event, int id, int from, int to) {
  if (!RT().check_sync) return;
  FlushInstr();
  if (from < 0 || to < 0) return;  // a pipe the emulator does not model (cube, MTE1, FIX)
  const uint64_t limit = Sync().flag_seq[event][id];
  const uint8_t from_bit = static_cast<uint8_t>(1u << from);
  // Accesses of the source pipe issued before the SetFlag, and accesses the source pipe was already
  // ordered after (transitivity: MTE3 -> V then V -> S orders MTE3 before S).
  for (UbEvent& e : Sync().events)
    if ((e.pipe == from && e.seq <= limit) || (e.visible & from_bit)) e.visible |= static_cast<uint8_t>(1u << to);
  Prune();
}
// TQue hand-off for one buffer: EnQue/DeQue and FreeTensor/AllocTensor order everything in it.
inline void SyncBufferHandoff(const BufferInfo* buf) {
  if (!RT().check_sync || buf == nullptr) return;
  FlushInstr();
  for (UbEvent& e : Sync().events)
    if (e.b >= buf->begin && e.e <= buf->end) e.visible = kAllPipes;
  Prune();
}

}  // namespace trex_emu
