// trex AscendC emulator: TPipe / TQue / TBuf over the per-core UB arena, synchronisation
// primitives, block index/number.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "trex_emu/runtime.h"
#include "trex_emu/sync_check.h"
#include "trex_emu/tensor.h"

namespace AscendC {

enum class HardEvent : uint8_t {
  MTE2_MTE1, MTE1_MTE2, MTE1_M, M_MTE1, MTE2_V, V_MTE2, MTE3_V, V_MTE3, M_V, V_M, V_V, MTE3_MTE1, MTE1_MTE3, MTE1_V,
  MTE2_M, M_MTE2, V_MTE1, M_FIX, FIX_M, MTE3_MTE2, MTE2_MTE3, S_V, V_S, S_MTE2, MTE2_S, S_MTE3, MTE3_S, MTE2_FIX,
  FIX_MTE2, FIX_S, M_S, FIX_MTE3, MTE1_FIX, FIX_MTE1, FIX_FIX, MAX,
};

enum pipe_t : int { PIPE_S = 0, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL, PIPE_MTE4, PIPE_MTE5, PIPE_V2, PIPE_FIX };

enum event_t : int32_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };
using TEventID = int8_t;

enum KernelType : int {
  KERNEL_TYPE_AIV_ONLY = 0, KERNEL_TYPE_AIC_ONLY, KERNEL_TYPE_MIX_AIV_1_0, KERNEL_TYPE_MIX_AIC_1_0,
  KERNEL_TYPE_MIX_AIC_1_1, KERNEL_TYPE_MIX_AIC_1_2,
};

inline int64_t GetBlockIdx() { return trex_emu::RT().block_idx; }
inline int64_t GetBlockNum() { return trex_emu::RT().block_num; }
inline int64_t GetSubBlockIdx() { return 0; }
inline int64_t GetTaskRation() { return 1; }

}  // namespace AscendC

// Kernel-type selection changes only which cores start on the NPU; the emulator runs AIV blocks.
#define KERNEL_TASK_TYPE_DEFAULT(type) ((void)0)
#define KERNEL_TASK_TYPE(key, type) ((void)0)

namespace trex_emu {

inline const char* EventName(AscendC::HardEvent e) {
  static const char* const kNames[] = {
      "MTE2_MTE1", "MTE1_MTE2", "MTE1_M", "M_MTE1", "MTE2_V", "V_MTE2", "MTE3_V", "V_MTE3", "M_V", "V_M", "V_V",
      "MTE3_MTE1", "MTE1_MTE3", "MTE1_V", "MTE2_M", "M_MTE2", "V_MTE1", "M_FIX", "FIX_M", "MTE3_MTE2", "MTE2_MTE3",
      "S_V", "V_S", "S_MTE2", "MTE2_S", "S_MTE3", "MTE3_S", "MTE2_FIX", "FIX_MTE2", "FIX_S", "M_S", "FIX_MTE3",
      "MTE1_FIX", "FIX_MTE1", "FIX_FIX"};
  const unsigned i = static_cast<unsigned>(e);
  return i < sizeof(kNames) / sizeof(kNames[0]) ? kNames[i] : "HardEvent(?)";
}

// Pipes of a HardEvent "SRC_DST" as SyncPipe values (-1 for pipes the emulator does not model).
inline int SyncPipeNamed(const std::string& n) {
  if (n == "S") return kPipeS;
  if (n == "V") return kPipeV;
  if (n == "MTE2") return kPipeMte2;
  if (n == "MTE3") return kPipeMte3;
  return -1;
}
inline int EventSourcePipe(AscendC::HardEvent e) {
  const std::string n = EventName(e);
  return SyncPipeNamed(n.substr(0, n.find('_')));
}
inline int EventTargetPipe(AscendC::HardEvent e) {
  const std::string n = EventName(e);
  return SyncPipeNamed(n.substr(n.find('_') + 1));
}

// Name of the buffer argument in an InitBuffer call's argument text: "inQueueX, BUFFER_NUM, n" -> "inQueueX".
inline std::string FirstArgName(const char* args) {
  std::string s(args ? args : "");
  int depth = 0;
  size_t i = 0;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '(' || c == '<' || c == '[') ++depth;
    else if (c == ')' || c == '>' || c == ']') --depth;
    else if (c == ',' && depth == 0) break;
  }
  std::string name = s.substr(0, i);
  const size_t b = name.find_first_not_of(" \t\n");
  const size_t e = name.find_last_not_of(" \t\n");
  return b == std::string::npos ? std::string("<buffer>") : name.substr(b, e - b + 1);
}

// The call site of an InitBuffer / InitBufPool macro call (the macros at the end of this file and of bufpool.h).
// `x.InitBuffer(args)` expands to `x.InitBufferAt(trex_emu::InitSite(trex_emu_site_)[trex_emu::CallText{__FILE__,
// __LINE__, "args"}], args)`. That text is also a valid declaration: a class of the kernel's own that declares
// `bool InitBuffer(T& que, uint8_t num, uint32_t len)` (asc-devkit's EXTERN_IMPL_BUFPOOL pools do, and the macro
// rewrites that name too) declares `InitBufferAt(trex_emu::InitSite* trex_emu_site_, T& que, ...)`: the site part
// reads as a parameter `trex_emu_site_` of type array of InitSite (bound CallText{...} == 1), which decays to a
// pointer. In a call it is a temporary InitSite (built from the global tag below, or from that parameter in a call
// inside such a member) that lives to the end of the full expression; while it does, Current() names it, so code
// run by the call (InitStartBufHandle / InitBufHandle inside a user pool's InitBuffer) can name the buffer too.
struct CallText {
  const char* file;
  int line;
  const char* text;
  constexpr operator std::size_t() const { return 1; }  // the array bound when the site is a parameter declaration
};
struct SiteTag {};
class InitSite {
 public:
  explicit InitSite(SiteTag) {}
  explicit InitSite(const InitSite*) {}
  InitSite(const InitSite&) = delete;
  InitSite& operator=(const InitSite&) = delete;
  ~InitSite() {
    if (active_) Current() = prev_;
  }
  InitSite* operator[](const CallText& at) {
    at_ = at;
    prev_ = Current();
    Current() = this;
    active_ = true;
    return this;
  }
  const char* File() const { return at_.file; }
  int Line() const { return at_.line; }
  const char* Call() const { return at_.text; }
  // The innermost InitBuffer / InitBufPool macro call being evaluated (nullptr outside one).
  static const InitSite*& Current() {
    static const InitSite* current = nullptr;
    return current;
  }

 private:
  CallText at_{"?", 0, ""};
  const InitSite* prev_ = nullptr;
  bool active_ = false;
};
inline const char* SiteFile() { return InitSite::Current() ? InitSite::Current()->File() : "?"; }
inline int SiteLine() { return InitSite::Current() ? InitSite::Current()->Line() : 0; }
inline const char* SiteCall() { return InitSite::Current() ? InitSite::Current()->Call() : ""; }

// Pools declared with EXTERN_IMPL_BUFPOOL (bufpool.h) carry asc-devkit's TBufPoolImpl handle block.
template <class P, class = void>
struct IsUserPool : std::false_type {};
template <class P>
struct IsUserPool<P, std::void_t<decltype(P::trexEmuUserPool)>> : std::true_type {};

class QueBase;
class TBufBase;

class TPipeBase {
 public:
  TPipeBase() {
    RT().current_pipe = this;
  }
  ~TPipeBase();  // after QueBase
  TPipeBase(const TPipeBase&) = delete;
  TPipeBase& operator=(const TPipeBase&) = delete;

  // Hands out `bytes` (rounded up to 32) of UB for the buffer named `name`.
  BufferInfo* Allocate(const std::string& name, uint32_t bytes, int position, const char* file, int line,
                       const char* call, uint32_t total_request) {
    Runtime& rt = RT();
    const uint32_t rounded = (bytes + kUbAlign - 1) / kUbAlign * kUbAlign;
    const bool over = uint64_t{used_} + rounded > rt.ub_bytes;
    if (over && rt.device_bounds && uint64_t{used_} + rounded <= rt.UbAddressSpace()) {
      // The NPU hands out the addresses without a check; nothing faults until an access leaves the UB.
      NoteFinding(kFindingUbOverallocation, std::string(file) + ":" + std::to_string(line) + " pipe.InitBuffer(" +
                                                FirstArgName(call) + ") ends at " + std::to_string(used_ + rounded) +
                                                " B of " + std::to_string(rt.ub_bytes));
    } else if (over) {
      std::ostringstream os;
      os << "UB overflow: " << file << ":" << line << ": pipe.InitBuffer(" << call << ") asks for " << total_request
         << " B for buffer '" << FirstArgName(call) << "', but only " << (used_ < rt.ub_bytes ? rt.ub_bytes - used_ : 0)
         << " B of the "
         << rt.ub_bytes << " B unified buffer remain (" << used_ << " B already allocated";
      if (!allocations_.empty()) {
        os << ":";
        for (const auto& a : allocations_) os << " " << a.first << "=" << a.second << " B";
      }
      os << "); shrink the tile or the buffer count";
      Fail(os.str());
    }
    // The buffer owns its 32-byte-rounded extent (the next one starts there): a 32-byte DataCopy or a
    // DataCopyPad block into the rounded tail of a buffer of 16378 B is legal on the NPU.
    rt.buffers.push_back(BufferInfo{name, rt.ub + used_, rt.ub + used_ + rounded, position});
    used_ += rounded;
    if (used_ > rt.counters.ub_peak_bytes) rt.counters.ub_peak_bytes = used_;
    return &rt.buffers.back();
  }
  void NoteAllocation(const std::string& name, uint32_t bytes) { allocations_.emplace_back(name, bytes); }
  uint32_t UsedBytes() const { return used_; }
  void ResetArena() {
    used_ = 0;
    allocations_.clear();
  }
  void Register(QueBase* q);  // after QueBase

  // The queues this pipe's InitBuffer gave memory (an EnQue of another queue's tensor looks its buffer up here).
  std::vector<QueBase*> ques_;
  // HardEvent -> event ids taken from the pipe's pool (asc-devkit TPipe::AllocEventID: the lowest free bit of
  // eventPool_[evt].eventOccupy): by AllocEventID, or left taken by a FreeTensor of an enqueued tensor
  // (leaked_[evt] of them; the NPU's EnQue allocated the id and only DeQue releases it).
  int event_mask_[64] = {};
  int leaked_[64] = {};

 private:
  uint32_t used_ = 0;
  std::vector<std::pair<std::string, uint32_t>> allocations_;
};

enum class BufState : uint8_t { kFree, kAllocated, kQueued, kDequeued };

class QueBase {
 public:
  std::string name_;
  AscendC::TPosition position_ = AscendC::TPosition::VECIN;
  int depth_ = 1;
  uint32_t buf_bytes_ = 0;
  std::vector<BufferInfo*> bufs_;
  std::vector<BufState> state_;
  // A queued tensor: one of this queue's buffers, or (device bounds) another queue's buffer enqueued here.
  struct Slot {
    QueBase* owner;
    int index;
  };
  std::deque<Slot> fifo_;
  int next_ = 0;
  TPipeBase* pipe_ = nullptr;
  // Device bounds, queue misuse the NPU build runs (see Enque/Free): other queues' buffers dequeued from this
  // queue and not yet freed on it; per own buffer, the queue it was enqueued into ("" if none); tensors freed
  // while enqueued, which the NPU's usedCount still counts (FreeTensor does not decrement it).
  std::vector<Slot> foreign_;
  std::vector<std::string> lent_to_;
  std::vector<int> lent_evt_;  // that queue's FreeTensor event (a HardEvent)
  int stale_ = 0;
  // InitStartBufHandle's start handle (a user pool's TBufType block, EXTERN_IMPL_BUFPOOL): buffer k is the one
  // InitBufHandle writes through handle start + k. nullptr for queues given memory by a TPipe / TBufPool.
  void* handle_start_ = nullptr;

  QueBase() = default;
  // A copy is not registered with the pipe (only the queue InitBuffer gave memory is).
  QueBase(const QueBase& o) { *this = o; }
  QueBase& operator=(const QueBase& o) {
    if (this == &o) return *this;
    name_ = o.name_;
    position_ = o.position_;
    depth_ = o.depth_;
    buf_bytes_ = o.buf_bytes_;
    bufs_ = o.bufs_;
    state_ = o.state_;
    fifo_ = o.fifo_;
    next_ = o.next_;
    foreign_ = o.foreign_;
    lent_to_ = o.lent_to_;
    lent_evt_ = o.lent_evt_;
    stale_ = o.stale_;
    handle_start_ = o.handle_start_;
    return *this;
  }
  ~QueBase() {
    if (pipe_ == nullptr) return;
    auto& q = pipe_->ques_;
    for (size_t k = 0; k < q.size(); ++k)
      if (q[k] == this) {
        q.erase(q.begin() + static_cast<long>(k));
        break;
      }
  }

  std::string Describe() const {
    std::ostringstream os;
    os << "TQue '" << name_ << "' (" << AscendC::PositionName(position_) << ", depth " << depth_ << ", "
       << bufs_.size() << " buffer(s) of " << buf_bytes_ << " B)";
    return os.str();
  }
  // The queue buffer a tensor belongs to. By its buffer, as the NPU's LocalTensor carries its buffer handle
  // (a sub-tensor t[k] keeps it, even past the buffer's end; a 0-B buffer has no address of its own), else
  // by address (a LocalTensor built over the same UB bytes).
  int FindBuffer(const void* p, const BufferInfo* owner) const {
    for (size_t i = 0; i < bufs_.size(); ++i)
      if (owner != nullptr && bufs_[i] == owner) return static_cast<int>(i);
    for (size_t i = 0; i < bufs_.size(); ++i)
      if (p >= bufs_[i]->begin && p < bufs_[i]->end) return static_cast<int>(i);
    return -1;
  }
  void RequireInit(const char* api) const {
    if (bufs_.empty()) Fail(api, " on a TQue that was never given memory: call pipe.InitBuffer(que, num, bytes) first");
  }
  static bool Holds(const BufferInfo* b, const void* p, const BufferInfo* owner) {
    return owner != nullptr ? b == owner : (p >= b->begin && p < b->end);
  }
  // The HardEvents of the NPU build's EnQue set_flag and FreeTensor set_flag for this queue (asc-devkit
  // impl/basic_api/kernel_event.h GetQueEvt: GM -> UB MTE2_V / V_MTE2, UB -> GM V_MTE3 / MTE3_V); -1 for the
  // positions the queue-misuse model does not cover.
  int EnqueEvent() const {
    if (position_ == AscendC::TPosition::VECIN) return static_cast<int>(AscendC::HardEvent::MTE2_V);
    if (position_ == AscendC::TPosition::VECOUT) return static_cast<int>(AscendC::HardEvent::V_MTE3);
    return -1;
  }
  int FreeEvent() const {
    if (position_ == AscendC::TPosition::VECIN) return static_cast<int>(AscendC::HardEvent::V_MTE2);
    if (position_ == AscendC::TPosition::VECOUT) return static_cast<int>(AscendC::HardEvent::MTE3_V);
    return -1;
  }
  // Device bounds: the queue of this pipe (a VECIN/VECOUT one, as this queue must be) whose buffer the tensor is.
  QueBase* Lender(const void* p, const BufferInfo* owner, int* index) {
    if (!RT().device_bounds || pipe_ == nullptr || EnqueEvent() < 0) return nullptr;
    for (QueBase* q : pipe_->ques_) {
      if (q == this || q->EnqueEvent() < 0) continue;
      const int j = q->FindBuffer(p, owner);
      if (j >= 0) {
        *index = j;
        return q;
      }
    }
    return nullptr;
  }
  int Alloc() {
    RequireInit("TQue::AllocTensor");
    const int n = static_cast<int>(bufs_.size());
    for (int k = 0; k < n; ++k) {
      const int i = (next_ + k) % n;
      if (state_[i] == BufState::kFree) {
        if (bufs_[i]->begin == nullptr)
          Fail(Describe(), ": AllocTensor hands out buffer ", i, ", which InitStartBufHandle counted but no "
               "InitBufHandle gave an address. asc-devkit's TQueBind::InitBufHandle(pool, index, handle, addr, len) "
               "writes through `handle` and ignores `index` (impl/basic_api/kernel_tquebind_impl.h), so buffer k "
               "needs the handle GetBufHandle(start + k), not the start handle for every k");
        if (static_cast<size_t>(i) < lent_to_.size() && !lent_to_[i].empty())
          Fail(Describe(), ": AllocTensor hands out buffer ", i, " again after it was enqueued into ", lent_to_[i],
               " (device bounds; the NPU runs a single use). On the NPU that queue's DeQue and FreeTensor work on "
               "this buffer's handle: its FreeTensor stores an ", EventName(static_cast<AscendC::HardEvent>(lent_evt_[i])),
               " event id in it, where this AllocTensor waits on ", EventName(static_cast<AscendC::HardEvent>(FreeEvent())),
               " with that id, so the copy into the buffer is not ordered after the other queue's reader (a race), "
               "and from the next reuse on it waits for an id nobody set (a hang); asc-devkit "
               "impl/basic_api/kernel_tquebind_impl.h FreeBuffer, AllocBuffer. Enqueue a tensor of the queue's own "
               "AllocTensor (copy into it)");
        state_[i] = BufState::kAllocated;
        next_ = (i + 1) % n;
        SyncBufferHandoff(bufs_[i]);  // FreeTensor -> AllocTensor orders the last reader before the next writer
        return i;
      }
    }
    Fail(Describe(), ": AllocTensor while all ", n,
         " buffers are in use (allocated, enqueued or dequeued without FreeTensor); on the NPU this deadlocks. "
         "FreeTensor each tensor before allocating again, or InitBuffer with more buffers");
  }
  // The NPU build's EnQue stores the tensor's buffer handle in this queue and sets this queue's EnQue event
  // on it, checking nothing (asc-devkit impl/basic_api/kernel_tquebind_impl.h EnQue(TBufHandle): the range and
  // state checks are ASCENDC_DEBUG_ASSERTs, compiled out without ASCENDC_CPU_DEBUG / ASCENDC_DEBUG,
  // impl/basic_api/kernel_log.h). Device bounds take another UB queue's tensor as that: recorded as a queue
  // misuse, dequeued here as that buffer, and its own queue fails when it hands the buffer out again (Alloc).
  void Enque(const void* p, const BufferInfo* owner) {
    RequireInit("TQue::EnQue");
    const int i = FindBuffer(p, owner);
    QueBase* from = this;
    int at = i;
    if (i < 0) {
      from = Lender(p, owner, &at);
      if (from == nullptr) Fail(Describe(), ": EnQue of a tensor that does not belong to this queue");
    }
    // CANN's TQueBind::EnQue asserts the buffer is OCCUPIED (allocated) or DEQUE: a dequeued tensor may be
    // enqueued again (the DeQue -> modify -> EnQue hand-back many kernels use); free or queued ones may not.
    const BufState st = from->state_[at];
    if (st != BufState::kAllocated && st != BufState::kDequeued)
      Fail(Describe(), ": EnQue of ", from == this ? "buffer " + std::to_string(at) : from->bufs_[at]->name, " which is ",
           st == BufState::kFree ? "free" : "already enqueued", " (AllocTensor it, or DeQue it, before enqueueing it)");
    if (static_cast<int>(fifo_.size()) >= depth_)
      Fail(Describe(), ": EnQue would hold ", fifo_.size() + 1, " tensors, more than the queue depth ", depth_,
           "; DeQue before enqueueing more");
    if (pipe_ != nullptr && EnqueEvent() >= 0 && pipe_->leaked_[EnqueEvent()] > 0 &&
        pipe_->event_mask_[EnqueEvent()] == (1 << kNumEventIds) - 1)
      Fail(Describe(), ": EnQue needs an ", EventName(static_cast<AscendC::HardEvent>(EnqueEvent())),
           " event id, but all ", kNumEventIds, " are taken (", pipe_->leaked_[EnqueEvent()],
           " left taken by FreeTensor of enqueued tensors); on the NPU AllocEventID hands out an id outside [0, ",
           kNumEventIds, ")");
    if (from != this) {
      NoteFinding(kFindingQueueMisuse, "EnQue of " + from->bufs_[at]->name + " into " + name_ + " (another queue's tensor)");
      from->lent_to_.resize(from->bufs_.size());
      from->lent_evt_.resize(from->bufs_.size(), -1);
      from->lent_to_[at] = name_;
      from->lent_evt_[at] = FreeEvent();
    } else {
      state_[i] = BufState::kQueued;
    }
    fifo_.push_back(Slot{from, at});
  }
  BufferInfo* Deque() {
    RequireInit("TQue::DeQue");
    if (fifo_.empty())
      Fail(Describe(), ": DeQue on an empty queue (no EnQue before it); on the NPU this blocks forever",
           stale_ > 0 ? " (or, after a FreeTensor of an enqueued tensor, returns that freed tensor)" : "");
    const Slot e = fifo_.front();
    fifo_.pop_front();
    if (e.owner == this) state_[e.index] = BufState::kDequeued;
    else foreign_.push_back(e);
    BufferInfo* b = e.owner->bufs_[e.index];
    SyncBufferHandoff(b);  // EnQue -> DeQue orders the producer before the consumer
    return b;
  }
  void Free(const void* p, const BufferInfo* owner) {
    RequireInit("TQue::FreeTensor");
    const int i = FindBuffer(p, owner);
    if (i < 0) {
      // Another queue's buffer dequeued from this one (device bounds): the NPU's FreeBuffer writes FREE and this
      // queue's free event into that buffer's handle (the mismatch its own AllocTensor then fails on).
      for (size_t k = 0; k < foreign_.size(); ++k) {
        const Slot e = foreign_[k];
        if (!Holds(e.owner->bufs_[e.index], p, owner)) continue;
        NoteFinding(kFindingQueueMisuse, "FreeTensor on " + name_ + " of " + e.owner->bufs_[e.index]->name +
                                             " (another queue's tensor, dequeued from " + name_ + ")");
        e.owner->state_[e.index] = BufState::kFree;
        foreign_.erase(foreign_.begin() + static_cast<long>(k));
        return;
      }
      Fail(Describe(), ": FreeTensor of a tensor that does not belong to this queue");
    }
    if (state_[i] == BufState::kFree) Fail(Describe(), ": FreeTensor of buffer ", i, " which is already free (double free)");
    if (state_[i] == BufState::kQueued) {
      // The NPU build's FreeBuffer frees it whatever its state (the state check is a debug assert): the next
      // AllocTensor waits for the V-side free event as usual. A depth-1 queue's EnQue overwrites its one slot,
      // so the stale entry is harmless there; its usedCount stays counted and the EnQue's event id stays taken
      // (only DeQue waits on and releases it). A deeper queue's ring keeps the freed tensor at its head: still
      // an error.
      const int evt = EnqueEvent();
      if (!RT().device_bounds || depth_ != 1 || evt < 0 || pipe_ == nullptr)
        Fail(Describe(), ": FreeTensor of buffer ", i, " while it is still enqueued (DeQue it first)");
      int& mask = pipe_->event_mask_[evt];
      int id = 0;
      while (id < kNumEventIds && (mask & (1 << id))) ++id;
      if (id == kNumEventIds)
        Fail(Describe(), ": FreeTensor of buffer ", i, " while it is still enqueued, with all ", kNumEventIds, " ",
             EventName(static_cast<AscendC::HardEvent>(evt)), " event ids taken (", pipe_->leaked_[evt],
             " by earlier such frees): on the NPU its EnQue got an id outside [0, ", kNumEventIds, ")");
      mask |= 1 << id;
      pipe_->leaked_[evt] += 1;
      NoteFinding(kFindingQueueMisuse, "FreeTensor of " + bufs_[i]->name + " while enqueued (no DeQue; its " +
                                           EventName(static_cast<AscendC::HardEvent>(evt)) + " event id stays taken)");
      for (size_t k = 0; k < fifo_.size(); ++k)
        if (fifo_[k].owner == this && fifo_[k].index == i) {
          fifo_.erase(fifo_.begin() + static_cast<long>(k));
          break;
        }
      stale_ += 1;
    }
    state_[i] = BufState::kFree;
  }
  void Reset() {
    bufs_.clear();
    state_.clear();
    fifo_.clear();
    foreign_.clear();
    lent_to_.clear();
    lent_evt_.clear();
    stale_ = 0;
    next_ = 0;
    handle_start_ = nullptr;
  }
};

inline TPipeBase::~TPipeBase() {
  for (QueBase* q : ques_) q->pipe_ = nullptr;
  if (RT().current_pipe == this) RT().current_pipe = nullptr;
}
inline void TPipeBase::Register(QueBase* q) {
  if (q->pipe_ == this) return;
  if (q->pipe_ != nullptr) {
    auto& o = q->pipe_->ques_;
    for (size_t k = 0; k < o.size(); ++k)
      if (o[k] == q) {
        o.erase(o.begin() + static_cast<long>(k));
        break;
      }
  }
  q->pipe_ = this;
  ques_.push_back(q);
}

class TBufBase {
 public:
  std::string name_;
  BufferInfo* buf_ = nullptr;
  uint32_t bytes_ = 0;
  void* handle_start_ = nullptr;  // as QueBase::handle_start_ (a TBuf has one handle)
};

}  // namespace trex_emu

namespace AscendC {

class TPipe;
inline TPipe* GetTPipePtr();

// A buffer's handle, as asc-devkit's user-defined pools (EXTERN_IMPL_BUFPOOL, bufpool.h) see it
// (impl/basic_api/kernel_tensor_base.h: TBufHandle = uint8_t*, pointing at a TBufType; kernel_tpipe_base.h:
// INVALID_TEVENTID). The emulator keeps each queue's buffers itself; InitBufHandle also fills these fields.
using TBufHandle = uint8_t*;
enum class TBufState : uint8_t { FREE = 0, OCCUPIED, ENQUE, DEQUE };
constexpr TEventID INVALID_TEVENTID = static_cast<TEventID>(-1);
struct TBufType {
  TBufState state;
  HardEvent freeBufEvt;
  TEventID enQueEvtID;
  TEventID freeBufEvtID;
  uint32_t address;
  uint32_t dataLen;
  int32_t usertag;
};

template <TPosition POS, int32_t DEPTH = 1, auto MASK = 0>
class TQue : public trex_emu::QueBase {
 public:
  TQue() {
    position_ = POS;
    depth_ = DEPTH < 1 ? 1 : DEPTH;
  }
  template <class T>
  LocalTensor<T> AllocTensor() {
    return Whole<T>(bufs_[Alloc()]);
  }
  template <class T>
  bool EnQue(const LocalTensor<T>& t) {
    Enque(t.addr_, t.buf_);
    return true;
  }
  template <class T>
  LocalTensor<T> DeQue() {
    return Whole<T>(Deque());
  }
  template <class T>
  void FreeTensor(LocalTensor<T>& t) {
    Free(t.addr_, t.buf_);
  }
  // The NPU's usedCount: the queued tensors, plus those freed while enqueued (device bounds; FreeTensor keeps
  // them counted).
  bool VacantInQue() const { return static_cast<int>(fifo_.size()) + stale_ < depth_; }
  bool HasTensorInQue() const { return !fifo_.empty() || stale_ > 0; }
  int32_t GetTensorCountInQue() const { return static_cast<int32_t>(fifo_.size()) + stale_; }
  bool HasIdleBuffer() const {
    for (auto s : state_)
      if (s == trex_emu::BufState::kFree) return true;
    return false;
  }
  // For user-defined pools (EXTERN_IMPL_BUFPOOL): asc-devkit impl/basic_api/kernel_tquebind_impl.h. The queue
  // gets `num` buffers starting at handle `startBufhandle` (their addresses come from InitBufHandle).
  void InitStartBufHandle(TBufHandle startBufhandle, uint8_t num, uint32_t len) {
    if (num == 0)
      trex_emu::Fail(trex_emu::SiteFile(), ":", trex_emu::SiteLine(), ": InitStartBufHandle for TQue '",
                     trex_emu::FirstArgName(trex_emu::SiteCall()), "': buffer count must be >= 1");
    this->Reset();
    this->name_ = trex_emu::FirstArgName(trex_emu::SiteCall());
    this->buf_bytes_ = len;
    this->handle_start_ = startBufhandle;
    trex_emu::Runtime& rt = trex_emu::RT();
    for (int i = 0; i < num; ++i) {
      rt.buffers.push_back(trex_emu::BufferInfo{this->name_ + "[" + std::to_string(i) + "]", nullptr, nullptr,
                                                static_cast<int>(this->position_)});
      this->bufs_.push_back(&rt.buffers.back());
      this->state_.push_back(trex_emu::BufState::kFree);
    }
    this->lent_to_.assign(num, std::string());
    this->lent_evt_.assign(num, -1);
  }
  // Writes the buffer at `bufhandle` (its state, events, address curPoolAddr and 32-byte-rounded length) and
  // ignores `index`, as asc-devkit does: the buffer is the one the handle points at.
  template <class Pool>
  void InitBufHandle(Pool* bufPool, uint32_t index, TBufHandle bufhandle, uint32_t curPoolAddr, uint32_t len) {
    (void)index;
    const int k = HandleIndex(bufhandle);
    len = (len + trex_emu::kUbAlign - 1) / trex_emu::kUbAlign * trex_emu::kUbAlign;
    trex_emu::BufferInfo* b = this->bufs_[k];
    b->begin = bufPool->tBufPoolImpl.Hand(bufhandle, curPoolAddr, len, b->name, this->FreeEvent());
    b->end = b->begin + len;
  }

 private:
  template <class T>
  static LocalTensor<T> Whole(trex_emu::BufferInfo* b) {
    return LocalTensor<T>(reinterpret_cast<T*>(b->begin), static_cast<uint32_t>((b->end - b->begin) / sizeof(T)), b);
  }
  int HandleIndex(TBufHandle h) const {
    const char* what = this->handle_start_ == nullptr ? "before InitStartBufHandle gave the queue its handles"
                                                       : "with a handle that is not one of the queue's";
    if (this->handle_start_ != nullptr) {
      const auto* start = static_cast<const TBufType*>(this->handle_start_);
      const auto* p = reinterpret_cast<const TBufType*>(h);
      if (p >= start && p < start + this->bufs_.size()) return static_cast<int>(p - start);
    }
    trex_emu::Fail(trex_emu::SiteFile(), ":", trex_emu::SiteLine(), ": InitBufHandle on TQue '", this->name_, "' ",
                   what, " (InitStartBufHandle(start, num, len) gives it the num handles from start)");
  }
};

// TQueBind<src, dst, depth>: a queue between two positions; in UB both are the same memory.
template <TPosition SRC, TPosition DST, int32_t DEPTH = 1, auto MASK = 0>
class TQueBind : public TQue<SRC, DEPTH, MASK> {};

template <TPosition POS = TPosition::VECCALC>
class TBuf : public trex_emu::TBufBase {
 public:
  template <class T>
  LocalTensor<T> Get() const {
    Require("TBuf::Get");
    return LocalTensor<T>(reinterpret_cast<T*>(buf_->begin), bytes_ / static_cast<uint32_t>(sizeof(T)), buf_);
  }
  template <class T>
  LocalTensor<T> Get(uint32_t len) const {
    Require("TBuf::Get");
    if (uint64_t{len} * sizeof(T) > bytes_)
      trex_emu::Fail("TBuf '", name_, "'::Get<", trex_emu::TypeName<T>(), ">(", len, ") asks for ", uint64_t{len} * sizeof(T),
                     " B but the buffer has ", bytes_, " B");
    return LocalTensor<T>(reinterpret_cast<T*>(buf_->begin), len, buf_);
  }
  // offset in bytes, size in elements
  template <class T>
  LocalTensor<T> GetWithOffset(uint32_t size, uint32_t bufOffset) const {
    Require("TBuf::GetWithOffset");
    if (bufOffset % trex_emu::kUbAlign != 0)
      trex_emu::Fail("TBuf '", name_, "'::GetWithOffset: byte offset ", bufOffset, " is not 32-byte aligned");
    if (uint64_t{bufOffset} + uint64_t{size} * sizeof(T) > bytes_)
      trex_emu::Fail("TBuf '", name_, "'::GetWithOffset(", size, ", ", bufOffset, ") exceeds the buffer's ", bytes_, " B");
    return LocalTensor<T>(reinterpret_cast<T*>(buf_->begin + bufOffset), size, buf_);
  }
  template <class T>
  LocalTensor<T> AllocTensor() const { return Get<T>(); }
  template <class T>
  void FreeTensor(LocalTensor<T>&) const {}
  // For user-defined pools (EXTERN_IMPL_BUFPOOL): asc-devkit impl/basic_api/kernel_tbuf_impl.h
  // InitStartBufHandle (one handle, bufLen = len) and TQueBind::InitBufHandle, which TBuf inherits.
  void InitStartBufHandle(TBufHandle startBufhandle, uint8_t num, uint32_t len) {
    name_ = trex_emu::FirstArgName(trex_emu::SiteCall());
    if (num != 1)
      trex_emu::Fail(trex_emu::SiteFile(), ":", trex_emu::SiteLine(), ": InitStartBufHandle for TBuf '", name_,
                     "': num is ", static_cast<int>(num), ", but a TBuf has exactly one buffer (num must be 1)");
    trex_emu::Runtime& rt = trex_emu::RT();
    rt.buffers.push_back(trex_emu::BufferInfo{name_, nullptr, nullptr, static_cast<int>(POS)});
    buf_ = &rt.buffers.back();
    bytes_ = len;
    handle_start_ = startBufhandle;
  }
  template <class Pool>
  void InitBufHandle(Pool* bufPool, uint32_t index, TBufHandle bufhandle, uint32_t curPoolAddr, uint32_t len) {
    (void)index;  // as TQue::InitBufHandle: the handle decides, and a TBuf has only its start handle
    if (handle_start_ == nullptr || bufhandle != handle_start_)
      trex_emu::Fail(trex_emu::SiteFile(), ":", trex_emu::SiteLine(), ": InitBufHandle on TBuf '", name_, "' ",
                     handle_start_ == nullptr ? "before InitStartBufHandle gave it its handle"
                                              : "with a handle other than the one InitStartBufHandle gave it");
    len = (len + trex_emu::kUbAlign - 1) / trex_emu::kUbAlign * trex_emu::kUbAlign;
    buf_->begin = bufPool->tBufPoolImpl.Hand(bufhandle, curPoolAddr, len, name_, -1);
    buf_->end = buf_->begin + len;
  }

 private:
  void Require(const char* api) const {
    if (buf_ == nullptr || buf_->begin == nullptr)
      trex_emu::Fail(api, " on a TBuf that was never given memory: call pipe.InitBuffer(buf, bytes) first",
                     buf_ == nullptr ? "" : " (it has a handle from InitStartBufHandle, but no InitBufHandle gave it an address)");
  }
};

class TPipe : public trex_emu::TPipeBase {
 public:
  TPipe() = default;

  // The InitBuffer / InitBufPool macros' form (the call site first; see trex_emu::InitSite).
  template <class... A>
  bool InitBufferAt(const trex_emu::InitSite* at, A&&... args) {
    return InitBufferAt(at->File(), at->Line(), at->Call(), std::forward<A>(args)...);
  }
  template <class... A>
  bool InitBufPoolAt(const trex_emu::InitSite* at, A&&... args) {
    return InitBufPoolAt(at->File(), at->Line(), at->Call(), std::forward<A>(args)...);
  }
#ifdef TREX_EMU_NO_INITBUFFER_MACRO
  // Without the macros the call text is unknown: messages name no buffer and no line.
  template <class... A>
  bool InitBuffer(A&&... args) { return InitBufferAt("?", 0, "", std::forward<A>(args)...); }
  template <class... A>
  bool InitBufPool(A&&... args) { return InitBufPoolAt("?", 0, "", std::forward<A>(args)...); }
#endif

  template <TPosition POS, int32_t DEPTH, auto MASK>
  bool InitBufferAt(const char* file, int line, const char* call, TQue<POS, DEPTH, MASK>& que, uint8_t num, uint32_t len) {
    return InitQue(file, line, call, que, num, len);
  }
  template <TPosition SRC, TPosition DST, int32_t DEPTH, auto MASK>
  bool InitBufferAt(const char* file, int line, const char* call, TQueBind<SRC, DST, DEPTH, MASK>& que, uint8_t num,
                    uint32_t len) {
    return InitQue(file, line, call, que, num, len);
  }
  template <TPosition POS>
  bool InitBufferAt(const char* file, int line, const char* call, TBuf<POS>& buf, uint32_t len) {
    const std::string name = trex_emu::FirstArgName(call);
    buf.name_ = name;
    buf.bytes_ = len;
    buf.buf_ = Allocate(name, len, static_cast<int>(POS), file, line, call, len);
    NoteAllocation(name, (len + 31u) / 32u * 32u);
    return true;
  }
  // InitBuffer(tbuf, num, len): the queue form's signature on a TBuf (CANN's InitBuffer is one template
  // over the buffer type, so kernels write it). A TBuf has one buffer: it gets num * len bytes.
  template <TPosition POS>
  bool InitBufferAt(const char* file, int line, const char* call, TBuf<POS>& buf, uint8_t num, uint32_t len) {
    if (num == 0) trex_emu::Fail(file, ":", line, ": pipe.InitBuffer(", call, "): buffer count must be >= 1");
    return InitBufferAt(file, line, call, buf, static_cast<uint32_t>(num) * len);
  }
  // TBufPool (bufpool.h): a region of this pipe's UB for the pool, or a pool reusing `share`'s start
  // address (asc-devkit TPipe/InitBufPool.md: non-shared and shared mode).
  // A user-defined pool (EXTERN_IMPL_BUFPOOL) gets the same region; its TBufPoolImpl records it as asc-devkit's
  // TPipe::InitBufPool does (impl/basic_api/kernel_tpipe_impl.h: startAddr_ = maxAddr_ = the pipe's next UB
  // address, maxLen_ = len rounded to 32; shared: the share's startAddr_ and maxLen_).
  template <class Pool>
  bool InitBufPoolAt(const char* file, int line, const char* call, Pool& pool, uint32_t len) {
    const std::string name = trex_emu::FirstArgName(call);
    trex_emu::BufferInfo* b = Allocate(name, len, static_cast<int>(Pool::poolPos), file, line, call, len);
    NoteAllocation(name, (len + 31u) / 32u * 32u);
    if constexpr (trex_emu::IsUserPool<Pool>::value)
      pool.tBufPoolImpl.Place(name, trex_emu::RT().UbOffset(b->begin), len);
    else
      pool.Place(name, b->begin, len, Pool::kBufIDSize);
    return true;
  }
  template <class Pool, class Share>
  bool InitBufPoolAt(const char* file, int line, const char* call, Pool& pool, uint32_t len, Share& share) {
    static_assert(trex_emu::IsUserPool<Pool>::value == trex_emu::IsUserPool<Share>::value,
                  "trex emulator: a TBufPool sharing the memory of a user-defined (EXTERN_IMPL_BUFPOOL) pool, or "
                  "the reverse, is not emulated; share between two TBufPools or two user-defined pools");
    if constexpr (trex_emu::IsUserPool<Pool>::value) {
      pool.tBufPoolImpl.PlaceShared(file, line, call, trex_emu::FirstArgName(call), len, share.tBufPoolImpl);
      return true;
    } else {
      return Pool::PlaceShared(file, line, call, pool, len, share);
    }
  }
  // Frees all UB handed out so far; queues and buffers must be re-initialised. The event-id pool starts empty
  // again (asc-devkit TPipe::Reset -> ResetPool: eventOccupy = 0, impl/basic_api/kernel_tpipe_impl.h:1029-1043).
  void Reset() {
    ResetArena();
    std::fill(event_mask_, event_mask_ + 64, 0);
    std::fill(leaked_, leaked_ + 64, 0);
  }
  void Destroy() { ResetArena(); }
  void Init() {}

  TEventID FetchEventID(HardEvent) { return 0; }
  template <HardEvent E>
  TEventID FetchEventID() { return 0; }
  template <HardEvent E>
  TEventID AllocEventID() {
    int& used = event_mask_[static_cast<int>(E)];
    for (int id = 0; id < trex_emu::kNumEventIds; ++id)
      if (!(used & (1 << id))) {
        used |= 1 << id;
        return static_cast<TEventID>(id);
      }
    trex_emu::Fail("AllocEventID<", trex_emu::EventName(E), ">: all 8 event ids are allocated; ReleaseEventID some");
  }
  template <HardEvent E>
  void ReleaseEventID(TEventID id) {
    event_mask_[static_cast<int>(E)] &= ~(1 << id);
  }

 private:
  template <class Q>
  bool InitQue(const char* file, int line, const char* call, Q& que, uint8_t num, uint32_t len) {
    const std::string name = trex_emu::FirstArgName(call);
    if (num == 0) trex_emu::Fail(file, ":", line, ": pipe.InitBuffer(", call, "): buffer count must be >= 1");
    que.Reset();
    que.name_ = name;
    que.buf_bytes_ = len;
    const uint32_t rounded = (len + 31u) / 32u * 32u;
    for (int i = 0; i < num; ++i) {
      que.bufs_.push_back(Allocate(name + "[" + std::to_string(i) + "]", len, static_cast<int>(que.position_), file, line,
                                   call, num * rounded));
      que.state_.push_back(trex_emu::BufState::kFree);
    }
    que.lent_to_.assign(num, std::string());
    que.lent_evt_.assign(num, -1);
    Register(&que);
    NoteAllocation(name, num * rounded);
    return true;
  }
};

inline TPipe* GetTPipePtr() {
  auto* p = static_cast<TPipe*>(trex_emu::RT().current_pipe);
  if (p == nullptr) trex_emu::Fail("GetTPipePtr(): no TPipe exists in this block (declare `TPipe pipe;` first)");
  return p;
}

// ---- synchronisation: semantics-free on a sequential host, but misuse is detected ----
inline int SyncPipeOf(pipe_t p) {
  switch (p) {
    case PIPE_V: return trex_emu::kPipeV;
    case PIPE_MTE2: return trex_emu::kPipeMte2;
    case PIPE_MTE3: return trex_emu::kPipeMte3;
    case PIPE_ALL: return -1;
    default: return -2;  // pipes the emulator does not model
  }
}
inline void pipe_barrier(pipe_t p) {
  const int sp = SyncPipeOf(p);
  if (sp >= -1) trex_emu::SyncBarrier(sp);
}
template <pipe_t PIPE>
inline void PipeBarrier() {
  static_assert(PIPE != PIPE_S, "PipeBarrier<PIPE_S> is not allowed (AscendC: same-pipe barriers exist for V/MTE pipes only)");
  pipe_barrier(PIPE);
}

template <HardEvent E>
inline void SetFlag(int32_t eventID) {
  if (eventID < 0 || eventID >= trex_emu::kNumEventIds)
    trex_emu::Fail("SetFlag<", trex_emu::EventName(E), ">(", eventID, "): event id must be in [0, 8)");
  int& f = trex_emu::RT().flags[static_cast<int>(E)][eventID];
  if (f > 0)
    trex_emu::Fail("SetFlag<", trex_emu::EventName(E), ">(", eventID,
                   ") twice without a WaitFlag in between (AscendC forbids setting the same event id twice in a row)");
  f = 1;
  trex_emu::SyncSetFlag(static_cast<int>(E), eventID);
}
template <HardEvent E>
inline void WaitFlag(int32_t eventID) {
  if (eventID < 0 || eventID >= trex_emu::kNumEventIds)
    trex_emu::Fail("WaitFlag<", trex_emu::EventName(E), ">(", eventID, "): event id must be in [0, 8)");
  int& f = trex_emu::RT().flags[static_cast<int>(E)][eventID];
  if (f == 0)
    trex_emu::Fail("WaitFlag<", trex_emu::EventName(E), ">(", eventID,
                   ") without a matching SetFlag before it; on the NPU this waits forever");
  f = 0;
  trex_emu::SyncWaitFlag(static_cast<int>(E), eventID, trex_emu::EventSourcePipe(E), trex_emu::EventTargetPipe(E));
}

// TQueSync<src, dst> (asc-devkit 同步控制/核内同步/TQueSync模板参数.md; impl/basic_api/kernel_tquesync_impl.h):
// SetFlag(id)/WaitFlag(id) are set_flag/wait_flag(src, dst, id), i.e. SetFlag/WaitFlag<HardEvent::SRC_DST>(id),
// with the same misuse checks and the same place in the sync checker. src == dst, or a pair no HardEvent
// names, is a compile error as in the impl's static_asserts.
namespace trex_sync {
constexpr HardEvent kNoEvent = HardEvent::MAX;
constexpr HardEvent PipePairEvent(pipe_t src, pipe_t dst) {
  struct Row { pipe_t src, dst; HardEvent event; };
  constexpr Row rows[] = {
      {PIPE_MTE2, PIPE_MTE1, HardEvent::MTE2_MTE1}, {PIPE_MTE1, PIPE_MTE2, HardEvent::MTE1_MTE2},
      {PIPE_MTE1, PIPE_M, HardEvent::MTE1_M},       {PIPE_M, PIPE_MTE1, HardEvent::M_MTE1},
      {PIPE_MTE2, PIPE_V, HardEvent::MTE2_V},       {PIPE_V, PIPE_MTE2, HardEvent::V_MTE2},
      {PIPE_MTE3, PIPE_V, HardEvent::MTE3_V},       {PIPE_V, PIPE_MTE3, HardEvent::V_MTE3},
      {PIPE_M, PIPE_V, HardEvent::M_V},             {PIPE_V, PIPE_M, HardEvent::V_M},
      {PIPE_MTE3, PIPE_MTE1, HardEvent::MTE3_MTE1}, {PIPE_MTE1, PIPE_MTE3, HardEvent::MTE1_MTE3},
      {PIPE_MTE1, PIPE_V, HardEvent::MTE1_V},       {PIPE_MTE2, PIPE_M, HardEvent::MTE2_M},
      {PIPE_M, PIPE_MTE2, HardEvent::M_MTE2},       {PIPE_V, PIPE_MTE1, HardEvent::V_MTE1},
      {PIPE_M, PIPE_FIX, HardEvent::M_FIX},         {PIPE_FIX, PIPE_M, HardEvent::FIX_M},
      {PIPE_MTE3, PIPE_MTE2, HardEvent::MTE3_MTE2}, {PIPE_MTE2, PIPE_MTE3, HardEvent::MTE2_MTE3},
      {PIPE_S, PIPE_V, HardEvent::S_V},             {PIPE_V, PIPE_S, HardEvent::V_S},
      {PIPE_S, PIPE_MTE2, HardEvent::S_MTE2},       {PIPE_MTE2, PIPE_S, HardEvent::MTE2_S},
      {PIPE_S, PIPE_MTE3, HardEvent::S_MTE3},       {PIPE_MTE3, PIPE_S, HardEvent::MTE3_S},
      {PIPE_MTE2, PIPE_FIX, HardEvent::MTE2_FIX},   {PIPE_FIX, PIPE_MTE2, HardEvent::FIX_MTE2},
      {PIPE_FIX, PIPE_S, HardEvent::FIX_S},         {PIPE_M, PIPE_S, HardEvent::M_S},
      {PIPE_FIX, PIPE_MTE3, HardEvent::FIX_MTE3},   {PIPE_MTE1, PIPE_FIX, HardEvent::MTE1_FIX},
      {PIPE_FIX, PIPE_MTE1, HardEvent::FIX_MTE1},
  };
  for (const Row& r : rows)
    if (r.src == src && r.dst == dst) return r.event;
  return kNoEvent;
}
}  // namespace trex_sync

template <pipe_t src, pipe_t dst>
class TQueSync {
  static_assert(src != dst, "TQueSync: src/dst pipe cannot be the same (use PipeBarrier for one pipe)");
  static constexpr HardEvent kEvent = trex_sync::PipePairEvent(src, dst);
  static_assert(kEvent != trex_sync::kNoEvent, "TQueSync: no hardware event connects these two pipes");

 public:
  void SetFlag(TEventID id) { AscendC::SetFlag<kEvent>(id); }
  void WaitFlag(TEventID id) { AscendC::WaitFlag<kEvent>(id); }
};

// Cross-core barrier: every block of the launch waits until all have called it (blocks run as
// cooperating threads, launch.h). GM written before the barrier by any block is visible after it.
template <bool isAIVOnly = true>
inline void SyncAll() {
  trex_emu::Runtime& rt = trex_emu::RT();
  if (rt.barrier == nullptr) trex_emu::Fail("SyncAll(): called outside a kernel launch");
  rt.barrier("SyncAll");
}

namespace trex_sync {
// The software SyncAll of the A2/A3 implementation (asc-devkit impl/basic_api/dav_c220/kernel_operator_sync_impl.h,
// SoftSyncAllImpl + ClcSyncCount): block b increments its counter gm[b * 8] (one 32-byte slot per block) to
// cur, copies the counters of blocks [0, total) into ubWorkspace and waits until their sum (on a block's first
// call: 1 + the others') reaches total * cur.
struct SoftSync {
  __gm__ int32_t* gm;
  int32_t* ub;
  int32_t block, total, cur;
  bool first;
};
inline bool SoftSyncReady(void* p) {
  const SoftSync& s = *static_cast<SoftSync*>(p);
  int64_t count = s.first ? 1 : 0;
  for (int32_t i = 0; i < s.total; ++i) {
    s.ub[i * 8] = s.gm[i * 8];  // the poll's GM -> UB copy of the counters
    if (!s.first || i != s.block) count += s.gm[i * 8];
  }
  return count >= int64_t{s.total} * s.cur;
}
}  // namespace trex_sync

// Software form (SyncAll.md, 软同步): gmWorkspace of at least GetBlockNum() * 32 B, zeroed by the host or by
// every block (the page's constraint); ubWorkspace likewise at least GetBlockNum() * 32 B. usedCores 0 (or the
// block count) is a barrier of all blocks, as the hard form. 0 < usedCores < blockNum synchronises blocks
// [0, usedCores) with each other through the GM counters exactly as the implementation does (a block outside
// that range that calls it waits for those blocks); GM the participants wrote before it is visible to them
// after it (the race check orders only what the participants synchronised). usedCores above the block count
// raises (the page: it must not exceed numBlocks).
template <bool isAIVOnly = true>
inline void SyncAll(const GlobalTensor<int32_t>& gmWorkspace, const LocalTensor<int32_t>& ubWorkspace,
                    const int32_t usedCores = 0) {
  trex_emu::Runtime& rt = trex_emu::RT();
  if (rt.barrier == nullptr) trex_emu::Fail("SyncAll(gmWorkspace, ubWorkspace, usedCores): called outside a kernel launch");
  if (usedCores < 0 || static_cast<uint32_t>(usedCores) > rt.block_num)
    trex_emu::Fail("SyncAll(gmWorkspace, ubWorkspace, usedCores=", usedCores, "): usedCores must be in [0, ", rt.block_num,
                   "] (it cannot exceed the launch's block count)");
  const uint64_t need = uint64_t{rt.block_num} * 32;
  if (gmWorkspace.GetSize() != 0 && gmWorkspace.GetSize() * sizeof(int32_t) < need)
    trex_emu::Fail("SyncAll: the GM workspace holds ", gmWorkspace.GetSize() * sizeof(int32_t), " B but ", rt.block_num,
                   " blocks need ", need, " B (blockNum * 32 B)");
  if (usedCores == 0 || static_cast<uint32_t>(usedCores) == rt.block_num) {
    (void)ubWorkspace;
    SyncAll<isAIVOnly>();
    return;
  }
  trex_emu::CheckUbRange("SyncAll", "ubWorkspace", ubWorkspace.buf_, ubWorkspace.addr_, ubWorkspace.addr_ + need / 4);
  const int32_t b = static_cast<int32_t>(rt.block_idx);
  __gm__ int32_t* slot = gmWorkspace.addr_ + b * 8;
  const bool recording = rt.check_races;
  rt.check_races = false;  // the counters are the synchronisation itself, not data the race check pairs
  trex_emu::CheckGm("SyncAll(gmWorkspace)", gmWorkspace.addr_, need);
  rt.check_races = recording;
  trex_sync::SoftSync s{gmWorkspace.addr_, ubWorkspace.addr_, b, usedCores, *slot + 1, *slot + 1 == 1};
  *slot = s.cur;
  ubWorkspace.addr_[b * 8] = s.cur;
  const uint64_t key = static_cast<uint64_t>(static_cast<uint32_t>(s.cur));
  rt.arrivals[rt.block_idx][key] = rt.phase;
  rt.wait_until("SyncAll", &trex_sync::SoftSyncReady, &s);
  std::vector<uint32_t> known = rt.clocks[rt.block_idx][rt.phase];
  for (int32_t i = 0; i < usedCores; ++i) {
    auto it = rt.arrivals[i].find(key);
    if (it == rt.arrivals[i].end()) continue;
    const std::vector<uint32_t> v = rt.ArrivalClock(static_cast<uint32_t>(i), it->second);
    for (size_t k = 0; k < v.size(); ++k) known[k] = std::max(known[k], v[k]);
  }
  rt.Advance(rt.block_idx, known);
}

}  // namespace AscendC

// `pipe.InitBuffer(que, num, bytes)` records the call site and text so that a UB overflow names the buffer and
// the line (trex_emu::InitSite says how the same expansion also declares a kernel's own InitBuffer member).
// Define TREX_EMU_NO_INITBUFFER_MACRO to do without (messages then name neither).
#ifndef TREX_EMU_NO_INITBUFFER_MACRO
inline constexpr trex_emu::SiteTag trex_emu_site_{};
#define InitBuffer(...)                                                                                  \
  InitBufferAt(trex_emu::InitSite(trex_emu_site_)[trex_emu::CallText{__FILE__, __LINE__, #__VA_ARGS__}] \
                   __VA_OPT__(, ) __VA_ARGS__)
#endif
