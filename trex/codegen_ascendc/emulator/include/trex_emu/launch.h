// trex AscendC emulator: running blocks, CANN CPU-debug style launch (ICPU_RUN_KF, GmAlloc).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <condition_variable>
#include <deque>
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
    std::swap(atomic_type, rt.atomic_type);
    std::swap(pad_value_set, rt.pad_value_set);
    std::swap(pad_value_bits, rt.pad_value_bits);
    std::swap(sync, Sync());
  }
};

// Thrown inside a block's thread to unwind it when the launch is abandoned at a barrier.
struct BlockAbandoned {};

// Blocks run as threads of which exactly one runs at a time (a baton), in index order; a block that
// calls SyncAll() hands the baton on and resumes once every block has reached the barrier, so the
// barrier's cross-block ordering holds. Without SyncAll every block runs to its end in turn, as before.
class BlockScheduler {
 public:
  enum class State { kReady, kAtBarrier, kDone, kFailed };
  struct Block {
    BlockRegs regs;
    State state = State::kReady;
    std::string error;
    std::thread thread;
  };

  template <class F>
  std::string Run(const char* kernel, uint32_t block_dim, F& body) {
    Runtime& rt = RT();
    blocks_ = std::vector<Block>(block_dim);
    current_ = this;
    rt.barrier = &BlockScheduler::Barrier;
    std::string err;
    for (uint32_t b = 0; b < block_dim; ++b) blocks_[b].thread = std::thread([this, b, &body] { Entry(b, body); });
    for (uint32_t round = 0; err.empty(); ++round) {
      bool waiting = false, done = false;
      for (uint32_t b = 0; b < block_dim && err.empty(); ++b) {
        Block& blk = blocks_[b];
        if (blk.state == State::kDone) continue;
        Resume(b);
        if (blk.state == State::kFailed) err = Prefix(kernel, b, block_dim) + blk.error;
        waiting |= blk.state == State::kAtBarrier;
        done |= blk.state == State::kDone;
      }
      if (!err.empty() || !waiting) break;
      if (done) {  // some blocks ended while others wait: on the NPU the barrier never opens
        std::string who;
        for (uint32_t b = 0; b < block_dim; ++b)
          if (blocks_[b].state == State::kDone) who += (who.empty() ? "" : ", ") + std::to_string(b);
        err = std::string(kernel) + ": SyncAll(): blocks " + who + " ended without reaching the barrier the other blocks "
              "wait at; on the NPU this hangs (every block of the launch must call SyncAll the same number of times)";
      }
    }
    abandon_ = true;  // after an error: unwind blocks waiting at a barrier, end those never started
    for (uint32_t b = 0; b < block_dim; ++b)
      if (blocks_[b].state == State::kAtBarrier || blocks_[b].state == State::kReady) Resume(b);
    for (Block& blk : blocks_) blk.thread.join();
    rt.barrier = nullptr;
    current_ = nullptr;
    blocks_.clear();
    return err;
  }

 private:
  static std::string Prefix(const char* kernel, uint32_t b, uint32_t n) {
    return std::string(kernel) + " (block " + std::to_string(b) + " of " + std::to_string(n) + "): ";
  }
  // Main thread: give block b the baton and wait until it yields (barrier, end or error).
  void Resume(uint32_t b) {
    blocks_[b].regs.SwapWith(RT());
    std::unique_lock<std::mutex> lock(mu_);
    turn_ = static_cast<int64_t>(b);
    cv_.notify_all();
    cv_.wait(lock, [this] { return turn_ == kMain; });
    lock.unlock();
    blocks_[b].regs.SwapWith(RT());
  }
  // Block thread: hand the baton back and wait for the next turn.
  void Yield(uint32_t b, State s) {
    std::unique_lock<std::mutex> lock(mu_);
    blocks_[b].state = s;
    turn_ = kMain;
    cv_.notify_all();
    if (s == State::kAtBarrier) cv_.wait(lock, [this, b] { return turn_ == static_cast<int64_t>(b); });
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
  static void Barrier(const char* api) {
    BlockScheduler* s = current_;
    const uint32_t b = RT().block_idx;
    if (RT().check_sync) FlushInstr();
    s->Yield(b, State::kAtBarrier);
    if (s->abandon_) throw BlockAbandoned{};
    RT().phase += 1;
    (void)api;
  }

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
  BlockScheduler scheduler;
  std::string err = scheduler.Run(kernel, block_dim, body);
  if (err.empty()) err = FindBlockRace();
  rt.gm_accesses.clear();
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
