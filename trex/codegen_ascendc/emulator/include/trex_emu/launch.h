// trex AscendC emulator: running blocks, CANN CPU-debug style launch (ICPU_RUN_KF, GmAlloc).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "trex_emu/runtime.h"
#include "trex_emu/sync_check.h"

namespace trex_emu {

// Runs `body` once per block with a fresh UB arena; returns "" or the first error's message.
// Blocks run one after another in index order (the NPU runs them in parallel; a kernel whose result
// depends on the interleaving of blocks is not emulated faithfully).
template <class F>
inline std::string RunBlocks(const char* kernel, uint32_t block_dim, F&& body) {
  Runtime& rt = RT();
  if (block_dim == 0) return std::string(kernel) + ": blockDim must be >= 1";
  rt.gm_accesses.clear();
  for (uint32_t b = 0; b < block_dim; ++b) {
    rt.BeginBlock(b, block_dim);
    Sync().Reset();
    try {
      body();
      if (rt.check_sync) FlushInstr();
    } catch (const KernelError& e) {
      rt.EndBlock();
      return std::string(kernel) + " (block " + std::to_string(b) + " of " + std::to_string(block_dim) + "): " + e.what();
    } catch (const std::exception& e) {
      rt.EndBlock();
      return std::string(kernel) + " (block " + std::to_string(b) + " of " + std::to_string(block_dim) +
             "): C++ exception: " + e.what();
    }
    rt.EndBlock();
  }
  std::string race = FindBlockRace();
  rt.gm_accesses.clear();
  if (!race.empty()) return std::string(kernel) + ": " + race;
  return std::string();
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
