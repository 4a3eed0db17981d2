// trex AscendC emulator: running blocks, CANN CPU-debug style launch (ICPU_RUN_KF, GmAlloc).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "trex_emu/runtime.h"
#include "trex_emu/sync_check.h"

namespace trex_emu {

// The state of one block that the runtime holds while that block runs: its UB arena and buffers,
// flags, mask and atomic registers, sync-check record, barrier phase. Swapped in and out when the
// scheduler switches blocks at a SyncAll.
struct BlockRegs {
  uint32_t block_idx = 0, phase = 0;
  std::vector<uint8_t> ub_storage;
  uint8_t* ub = nullptr;
  std::deque<BufferInfo> buffers;
  TPipeBase* current_pipe = nullptr;
  int flags[64][kNumEventIds] = {};
  uint8_t cmp_mask[32] = {};
  bool mask_counter_mode = false;
  uint64_t mask_bits[2] = {~uint64_t{0}, ~uint64_t{0}};
  uint64_t mask_count = 0;
  uint64_t max_min_cnt = 0;
  bool max_min_set = false;
  uint64_t acc_val = 0;
  bool acc_set = false;
  uint8_t task_sync_calls = 0;
  int atomic_type = 0;
  bool pad_value_set = false;
  uint64_t pad_value_bits = 0;
  SyncState sync;

  void SwapWith(Runtime& rt) {
    std::swap(block_idx, rt.block_idx);
    std::swap(phase, rt.phase);
    ub_storage.swap(rt.ub_storage);  // the arena moves with its vector: UB pointers stay valid
    std::swap(ub, rt.ub);
    buffers.swap(rt.buffers);
    std::swap(current_pipe, rt.current_pipe);
    std::swap(flags, rt.flags);
    std::swap(cmp_mask, rt.cmp_mask);
    std::swap(mask_counter_mode, rt.mask_counter_mode);
    std::swap(mask_bits, rt.mask_bits);
    std::swap(mask_count, rt.mask_count);
    std::swap(max_min_cnt, rt.max_min_cnt);
    std::swap(max_min_set, rt.max_min_set);
    std::swap(acc_val, rt.acc_val);
    std::swap(acc_set, rt.acc_set);
    std::swap(task_sync_calls, rt.task_sync_calls);
    std::swap(atomic_type, rt.atomic_type);
    std::swap(pad_value_set, rt.pad_value_set);
    std::swap(pad_value_bits, rt.pad_value_bits);
    std::swap(sync, Sync());
  }
};

// Thrown inside a block's thread to unwind it when the launch is abandoned at a barrier.
struct BlockAbandoned {};

// Blocks run as threads of which exactly one runs at a time (a baton), in index order. A block that
// waits — at SyncAll(), a barrier of all blocks, or in a software SyncAll over a subset, which polls GM
// counters — hands the baton on; each round resumes every live block, and a waiting block re-checks its
// condition and goes on or hands on again. A round in which no block gets anywhere is a hang on the NPU
// and is reported. Without SyncAll every block runs to its end in turn, as before.
class BlockScheduler {
 public:
  enum class State { kReady, kWaiting, kDone, kFailed };
  struct Block {
    BlockRegs regs;
    State state = State::kReady;
    bool stalled = false;       // resumed, and its wait condition still does not hold
    bool at_barrier = false;    // waiting at a barrier of all blocks (for the hang message)
    std::string error;
    std::thread thread;
  };

  template <class F>
  std::string Run(const char* kernel, uint32_t block_dim, F& body) {
    Runtime& rt = RT();
    blocks_ = std::vector<Block>(block_dim);
    current_ = this;
    rt.barrier = &BlockScheduler::Barrier;
    rt.wait_until = &BlockScheduler::WaitUntil;
    rt.clocks.assign(block_dim, {std::vector<uint32_t>(block_dim, 0)});
    rt.arrivals.assign(block_dim, {});
    std::string err;
    for (uint32_t b = 0; b < block_dim; ++b) blocks_[b].thread = std::thread([this, b, &body] { Entry(b, body); });
    while (err.empty()) {
      bool live = false, progress = false;
      for (uint32_t b = 0; b < block_dim && err.empty(); ++b) {
        Block& blk = blocks_[b];
        if (blk.state == State::kDone) continue;
        Resume(b);
        if (blk.state == State::kFailed) err = Prefix(kernel, b, block_dim) + blk.error;
        if (blk.state == State::kDone || !blk.stalled) progress = true;
        live |= blk.state == State::kWaiting;
      }
      if (!err.empty() || !live) break;
      if (!progress) err = HangMessage(kernel);
    }
    abandon_ = true;  // after an error: unwind blocks that wait, end those never started
    for (uint32_t b = 0; b < block_dim; ++b)
      if (blocks_[b].state == State::kWaiting || blocks_[b].state == State::kReady) Resume(b);
    for (Block& blk : blocks_) blk.thread.join();
    rt.barrier = nullptr;
    rt.wait_until = nullptr;
    current_ = nullptr;
    blocks_.clear();
    return err;
  }

 private:
  static std::string Prefix(const char* kernel, uint32_t b, uint32_t n) {
    return std::string(kernel) + " (block " + std::to_string(b) + " of " + std::to_string(n) + "): ";
  }
  std::string HangMessage(const char* kernel) const {
    std::string ended, waiting;
    bool barrier = false;
    for (uint32_t b = 0; b < blocks_.size(); ++b) {
      std::string& list = blocks_[b].state == State::kDone ? ended : waiting;
      list += (list.empty() ? "" : ", ") + std::to_string(b);
      barrier |= blocks_[b].state == State::kWaiting && blocks_[b].at_barrier;
    }
    if (barrier && !ended.empty())
      return std::string(kernel) + ": SyncAll(): blocks " + ended + " ended without reaching the barrier the other blocks "
             "wait at; on the NPU this hangs (every block of the launch must call SyncAll the same number of times)";
    return std::string(kernel) + ": SyncAll: blocks " + waiting + " wait for blocks that never arrive (ended: " +
           (ended.empty() ? "none" : ended) + "); on the NPU this hangs (a SyncAll over usedCores blocks needs each of "
           "blocks 0..usedCores-1 to call it, with a zeroed GM workspace)";
  }
  // Main thread: give block b the baton and wait until it yields (wait, end or error).
  void Resume(uint32_t b) {
    blocks_[b].regs.SwapWith(RT());
    std::unique_lock<std::mutex> lock(mu_);
    turn_ = static_cast<int64_t>(b);
    cv_.notify_all();
    cv_.wait(lock, [this] { return turn_ == kMain; });
    lock.unlock();
    blocks_[b].regs.SwapWith(RT());
  }
  // Block thread: hand the baton back and, when waiting, wait for the next turn.
  void Yield(uint32_t b, State s) {
    std::unique_lock<std::mutex> lock(mu_);
    blocks_[b].state = s;
    turn_ = kMain;
    cv_.notify_all();
    if (s == State::kWaiting) cv_.wait(lock, [this, b] { return turn_ == static_cast<int64_t>(b); });
  }
  template <class F>
  void Entry(uint32_t b, F& body) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this, b] { return turn_ == static_cast<int64_t>(b); });
    }
    Block& blk = blocks_[b];
    State end = State::kDone;
    if (abandon_) return Yield(b, end);
    try {
      RT().BeginBlock(b, static_cast<uint32_t>(blocks_.size()));
      Sync().Reset();
      body();
      if (RT().check_sync) FlushInstr();
    } catch (const BlockAbandoned&) {
    } catch (const KernelError& e) {
      blk.error = e.what();
      end = State::kFailed;
    } catch (const std::exception& e) {
      blk.error = std::string("C++ exception: ") + e.what();
      end = State::kFailed;
    } catch (...) {
      blk.error = "a C++ exception that is not a std::exception";
      end = State::kFailed;
    }
    RT().EndBlock();
    Yield(b, end);
  }
  // The running block hands on until ready(ctx) holds.
  static void WaitUntil(const char* api, bool (*ready)(void*), void* ctx) {
    BlockScheduler* s = current_;
    const uint32_t b = RT().block_idx;
    if (RT().check_sync) FlushInstr();
    Block& blk = s->blocks_[b];
    blk.stalled = false;
    while (!ready(ctx)) {
      s->Yield(b, State::kWaiting);
      if (s->abandon_) throw BlockAbandoned{};
      blk.stalled = true;
    }
    blk.stalled = false;
    (void)api;
  }
  // SyncAll(): a barrier of all blocks. Each block's arrival (its epoch) is recorded per barrier; once all
  // arrived, every block knows every block's accesses before the barrier (vector clocks, runtime.h).
  static void Barrier(const char* api) {
    BlockScheduler* s = current_;
    Runtime& rt = RT();
    const uint32_t b = rt.block_idx;
    const uint64_t key = (uint64_t{1} << 63) | s->barriers_passed_[b];
    rt.arrivals[b][key] = rt.phase;
    struct Ctx { BlockScheduler* s; uint64_t key; } ctx{s, key};
    s->blocks_[b].at_barrier = true;
    WaitUntil(api, [](void* p) {
      const Ctx& c = *static_cast<Ctx*>(p);
      for (const auto& a : RT().arrivals) if (!a.count(c.key)) return false;
      return true;
    }, &ctx);
    s->blocks_[b].at_barrier = false;
    s->barriers_passed_[b] += 1;
    std::vector<uint32_t> known(rt.clocks.size(), 0);
    for (uint32_t i = 0; i < rt.clocks.size(); ++i) {
      const std::vector<uint32_t> v = rt.ArrivalClock(i, rt.arrivals[i][key]);
      for (size_t k = 0; k < v.size(); ++k) known[k] = std::max(known[k], v[k]);
    }
    rt.Advance(b, known);
  }

  std::map<uint32_t, uint64_t> barriers_passed_;  // barriers of all blocks each block has passed
  static constexpr int64_t kMain = -1;
  static inline BlockScheduler* current_ = nullptr;
  std::vector<Block> blocks_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t turn_ = kMain;
  bool abandon_ = false;
};

// Runs `body` once per block (GetBlockIdx() = 0..block_dim-1, each with a fresh UB arena); returns ""
// or the first error's message. Blocks run one at a time in index order, each to its end or to a
// SyncAll (see BlockScheduler); the NPU runs them in parallel, so GM accesses of two blocks between
// the same barriers are checked for races afterwards.
template <class F>
inline std::string RunBlocks(const char* kernel, uint32_t block_dim, F&& body) {
  Runtime& rt = RT();
  if (block_dim == 0) return std::string(kernel) + ": blockDim must be >= 1";
  if (rt.barrier != nullptr) return std::string(kernel) + ": launched from inside a running kernel";
  rt.gm_accesses.clear();
  rt.gm_written.clear();
  BlockScheduler scheduler;
  std::string err = scheduler.Run(kernel, block_dim, body);
  if (err.empty()) err = FindBlockRace();  // uses the launch's clocks
  rt.gm_accesses.clear();
  rt.gm_written.clear();
  rt.gm_written.shrink_to_fit();
  rt.clocks.clear();
  rt.arrivals.clear();
  if (!err.empty() && err.rfind(kernel, 0) != 0) err = std::string(kernel) + ": " + err;
  return err;
}

template <class F>
inline void RunBlocksOrAbort(const char* kernel, uint32_t block_dim, F&& body) {
  const std::string err = RunBlocks(kernel, block_dim, body);
  if (!err.empty()) {
    std::fprintf(stderr, "[trex AscendC emulator] %s\n", err.c_str());
    std::fflush(stderr);
    std::abort();
  }
}

}  // namespace trex_emu

namespace AscendC {

enum class KernelMode : uint8_t { MIX_MODE = 0, AIC_MODE, AIV_MODE, MIX_AIC_1_1 };
inline void SetKernelMode(KernelMode) {}

// GM memory for CPU-debug style mains; registered so that GM accesses are bounds-checked.
inline void* GmAlloc(size_t size) {
  const size_t rounded = (size + 63u) / 64u * 64u;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  if (p == nullptr) trex_emu::Fail("GmAlloc(", size, "): out of host memory");
  auto& regions = trex_emu::RT().gm_regions;
  regions.push_back(trex_emu::GmRegion{"GmAlloc#" + std::to_string(regions.size()), reinterpret_cast<uintptr_t>(p),
                                       reinterpret_cast<uintptr_t>(p) + size});
  return p;
}
inline void GmFree(void* p) {
  auto& regions = trex_emu::RT().gm_regions;
  for (size_t i = 0; i < regions.size(); ++i)
    if (regions[i].begin == reinterpret_cast<uintptr_t>(p)) {
      regions.erase(regions.begin() + static_cast<long>(i));
      break;
    }
  std::free(p);
}

}  // namespace AscendC

// ICPU_RUN_KF(kernel, blockDim, args...): CANN CPU-debug launch; runs the blocks in turn, and on a
// kernel error prints the message and aborts.
#define ICPU_RUN_KF(func, blockdim, ...) \
  ::trex_emu::RunBlocksOrAbort(#func, static_cast<uint32_t>(blockdim), [&]() { func(__VA_ARGS__); })
