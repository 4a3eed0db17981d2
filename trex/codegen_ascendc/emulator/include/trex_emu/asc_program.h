// trex AscendC emulator: kernel-launch `.asc` programs (the kernel, a host main and `<<<>>>` in one
// file, as asc-devkit's examples are written), built as CANN's CPU-debug mode builds them
// (ASCENDC_CPU_DEBUG). asc_program.py rewrites each `kernel<<<blocks, l2ctrl, stream>>>(args)` into
// trex_emu::AscLaunch("kernel", blocks, [&] { kernel(args); }), which runs the blocks through the
// emulator (launch.h) at once: streams are synchronous here. Device memory (acl/acl.h) is GM regions.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "kernel_operator.h"
#include "trex_emu/launch.h"

// The asc language's kernel-type qualifiers (bisheng's; the emulator runs vector kernels only).
#ifndef __vector__
#define __vector__
#endif
#ifndef __cube__
#define __cube__
#endif
#ifndef __mix__
#define __mix__(aic, aiv)
#endif
// The asc language's built-in block variables (bisheng's; AscendC::GetBlockIdx()/GetBlockNum() in C++).
#ifndef block_idx
#define block_idx (::AscendC::GetBlockIdx())
#endif
#ifndef block_num
#define block_num (::AscendC::GetBlockNum())
#endif

namespace trex_emu {

// Bytes past each aclrtMalloc allocation that are poisoned and, under device bounds, readable (a read
// there is a finding, as runner.py's GM_GUARD_BYTES).
constexpr size_t kProgramGuardBytes = 32 * 1024;

struct ProgramState {
  std::map<uintptr_t, size_t> allocations;  // device pointer -> bytes requested
  uint64_t launches = 0;
};

inline ProgramState& Program() {
  static ProgramState state;
  return state;
}

inline void PrintProgramFindings() {
  const auto& findings = RT().counters.findings;
  if (findings.empty()) return;
  std::string lines;
  for (const auto& kv : findings) lines += "\n  " + kv.first + " (x" + std::to_string(kv.second) + ")";
  std::fprintf(stderr, "[trex AscendC emulator] findings under device bounds (strict bounds refuse them):%s\n",
               lines.c_str());
}

// Configures the runtime once per process from the environment (see acl/acl.h).
inline Runtime& ProgramRuntime() {
  static bool configured = [] {
    Runtime& rt = RT();
    const char* bounds = std::getenv("TREX_EMU_BOUNDS");
    const std::string mode = bounds ? bounds : "device";
    if (mode != "device" && mode != "strict") {
      std::fprintf(stderr, "[trex AscendC emulator] TREX_EMU_BOUNDS=%s: use device or strict\n", mode.c_str());
      std::exit(2);
    }
    rt.device_bounds = mode == "device";
    const char* sync = std::getenv("TREX_EMU_CHECK_SYNC");
    rt.check_sync = sync != nullptr && std::strcmp(sync, "1") == 0;
    std::atexit(PrintProgramFindings);
    return true;
  }();
  (void)configured;
  return RT();
}

// aclrtMalloc: the allocation the NPU's runtime makes (size rounded up to 32 B, plus 32 B), filled with
// 0xFF, followed by a poisoned guard; registered as a GM region so kernels' accesses are bounds-checked.
inline void* DeviceMalloc(size_t size) {
  Runtime& rt = ProgramRuntime();
  const size_t allocation = (size + 31) / 32 * 32 + 32;
  const size_t guard = rt.device_bounds ? kProgramGuardBytes : 0;
  void* p = std::aligned_alloc(64, (allocation + guard + 63) / 64 * 64);
  if (p == nullptr) return nullptr;
  std::memset(p, 0xFF, allocation + guard);
  const uintptr_t b = reinterpret_cast<uintptr_t>(p);
  rt.gm_regions.push_back(GmRegion{"aclrtMalloc#" + std::to_string(Program().allocations.size()) + " (" +
                                       std::to_string(size) + " B)", b, b + allocation, guard});
  Program().allocations[b] = size;
  return p;
}

inline void DeviceFree(void* p) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(p);
  auto& regions = RT().gm_regions;
  for (size_t i = 0; i < regions.size(); ++i)
    if (regions[i].begin == b) {
      regions.erase(regions.begin() + static_cast<long>(i));
      break;
    }
  if (Program().allocations.erase(b)) std::free(p);
}

// A host-side copy into or out of device memory must stay inside the allocation (AscendCL checks
// destMax; a count past a device buffer's end is a host bug the NPU's runtime rejects).
inline void CheckHostAccess(const char* api, const void* p, size_t count) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(p);
  for (const GmRegion& r : RT().gm_regions)
    if (b >= r.begin && b < r.end && b + count > r.end) {
      std::fprintf(stderr, "[trex AscendC emulator] %s: %zu bytes at offset %zu of %s run past its end\n", api,
                   count, static_cast<size_t>(b - r.begin), r.name.c_str());
      std::exit(1);
    }
}

// `kernel<<<blocks, l2ctrl, stream>>>(args)`: runs the blocks now; a kernel error ends the program
// (exit status 1) with the emulator's message, as a failed aclrtSynchronizeStream ends the examples.
template <class F>
inline void AscLaunch(const char* kernel, uint64_t blocks, F&& body) {
  ProgramRuntime();
  Program().launches += 1;
  const std::string err = RunBlocks(kernel, static_cast<uint32_t>(blocks), body);
  if (!err.empty()) {
    std::fprintf(stderr, "[trex AscendC emulator] %s\n", err.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }
}

}  // namespace trex_emu
