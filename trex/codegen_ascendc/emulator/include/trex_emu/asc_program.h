// trex AscendC emulator: kernel-launch `.asc` programs (the kernel, a host main and `<<<>>>` in one
// file, as asc-devkit's examples are written), built as CANN's CPU-debug mode builds them
// (ASCENDC_CPU_DEBUG). asc_program.py rewrites each `kernel<<<blocks, l2ctrl, stream>>>(args)` into
// trex_emu::AscLaunch("kernel", blocks, stream, [=](auto&&... a) { kernel(a...); }, args): the arguments
// are evaluated at the launch, as the runtime packs them. A launch on a stream that is not being captured
// runs the blocks through the emulator (launch.h) at once (streams are synchronous here); on a stream in
// capture (aclmdlRICaptureBegin, acl/acl.h) it is recorded, with copies of the arguments, into the model
// that aclmdlRIExecuteAsync replays. Device memory (acl/acl.h) is GM regions.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

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

// bisheng's scalar built-ins min/max, which device code calls unqualified (asc-devkit's softmaxflashv3:
// `baseM = min(baseM, rowNum);`). Two type parameters so mixed operands work as the built-ins' usual
// arithmetic conversions do; a program's `using namespace std;` still gets std::min for same-typed
// operands (the more specialised template), and a program's own non-template min wins over this one.
template <typename T, typename U,
          typename = std::enable_if_t<std::is_arithmetic_v<T> && std::is_arithmetic_v<U>>>
constexpr std::common_type_t<T, U> min(T a, U b) {
  using C = std::common_type_t<T, U>;
  return static_cast<C>(b) < static_cast<C>(a) ? static_cast<C>(b) : static_cast<C>(a);
}
template <typename T, typename U,
          typename = std::enable_if_t<std::is_arithmetic_v<T> && std::is_arithmetic_v<U>>>
constexpr std::common_type_t<T, U> max(T a, U b) {
  using C = std::common_type_t<T, U>;
  return static_cast<C>(a) < static_cast<C>(b) ? static_cast<C>(b) : static_cast<C>(a);
}

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

// ---- streams, events and captured models (AscendCL's aclmdlRI capture, acl/acl.h) ----------------
// AscendCL's numbers for the errors below (acl/error_codes/rt_error_codes.h).
constexpr int kAclOk = 0;
constexpr int kRtParamInvalid = 107000;
constexpr int kRtStreamUnjoined = 107025;
constexpr int kRtModelCaptured = 107026;
constexpr int kRtStreamCaptured = 107027;
constexpr int kRtEventCaptured = 107028;
constexpr int kRtStreamNotCaptured = 107029;
constexpr int kRtCaptureModeNotSupport = 107030;
constexpr int kRtStreamCaptureImplicit = 107031;
constexpr int kRtStreamCaptureUnmatched = 107036;
constexpr int kRtFileOpen = 107009;
constexpr int kRtCaptureInvalidated = 507903;

struct CaptureModel;

struct EmuStream {
  int id = 0;
  CaptureModel* capture = nullptr;  // the model this stream's tasks go into (origin or joined via an event)
  int last_task = -1;               // the stream's last task in that model
};

struct EmuEvent {
  int id = 0;
  uint32_t flags = 0;
  bool recorded = false;            // outside capture: recorded (streams are synchronous: complete)
  CaptureModel* capture = nullptr;  // recorded on a capturing stream: in capture state until the capture ends
  int record_task = -1;             // the model task that records it
};

// One captured task: what it is (for aclmdlRIDebugJsonPrint), the tasks it waits for, and the replay.
struct CapturedTask {
  std::string type;   // KERNEL | MEMCPY_ASYNC | MEMSET_ASYNC | EVENT_RECORD | EVENT_WAIT
  std::string what;   // kernel name / copy direction / event id
  int stream = 0;
  uint64_t blocks = 0, bytes = 0;
  std::vector<int> deps;
  std::function<std::string()> run;  // "" or the error that ends the program
};

struct CaptureModel {
  int id = 0;
  EmuStream* origin = nullptr;
  int mode = 0;                      // aclmdlRICaptureMode of the capture
  bool capturing = true;             // between CaptureBegin and CaptureEnd
  bool invalidated = false;
  std::string invalid_reason;
  std::vector<CapturedTask> tasks;
  std::vector<EmuStream*> streams;   // origin first, then the streams joined via events
  std::vector<EmuEvent*> events;     // events put in capture state
  uint64_t executions = 0;
};

struct StreamRegistry {
  std::set<EmuStream*> streams;
  std::set<EmuEvent*> events;
  std::set<CaptureModel*> models;
  int next_stream = 1, next_event = 1, next_model = 1;
  std::map<uintptr_t, size_t> pinned;  // aclrtMallocHost allocations (host page-locked memory)
  std::string last_error;              // aclGetRecentErrMsg
};

inline StreamRegistry& Streams() {
  static StreamRegistry reg;
  return reg;
}

// thread's capture mode (aclmdlRICaptureThreadExchangeMode); GLOBAL by default
inline int& ThreadCaptureMode() {
  static thread_local int mode = 0;
  return mode;
}

// An AscendCL call that fails: the message goes to stderr (and aclGetRecentErrMsg), the code is returned.
inline int AclFail(int code, const std::string& api, const std::string& why) {
  const std::string msg = api + ": " + why + " (aclError " + std::to_string(code) + ")";
  Streams().last_error = msg;
  std::fprintf(stderr, "[trex AscendC emulator] %s\n", msg.c_str());
  std::fflush(stderr);
  return code;
}

inline std::string StreamName(const EmuStream* s) {
  return s == nullptr ? std::string("the default stream") : "stream " + std::to_string(s->id);
}

// nullptr for the default stream; an unknown handle is an error (returned through `code`).
inline EmuStream* LookupStream(const void* handle, const char* api, int* code) {
  *code = kAclOk;
  if (handle == nullptr) return nullptr;
  EmuStream* s = static_cast<EmuStream*>(const_cast<void*>(handle));
  if (!Streams().streams.count(s)) *code = AclFail(kRtParamInvalid, api, "not a stream aclrtCreateStream made (or destroyed)");
  return s;
}

inline CaptureModel* ActiveCapture() {
  for (CaptureModel* m : Streams().models)
    if (m->capturing) return m;
  return nullptr;
}

inline void Invalidate(CaptureModel* m, const std::string& why) {
  if (!m->invalidated) {
    m->invalidated = true;
    m->invalid_reason = why;
  }
}

// An "unsafe" call (aclrtMemcpy, aclrtMemset, an async copy of non-page-locked host memory) while a
// capture is active: allowed only where the capture mode permits it (aclmdlRICaptureMode /
// aclmdlRICaptureThreadExchangeMode: GLOBAL forbids it in every thread unless the thread exchanged its
// mode to RELAXED; THREAD_LOCAL forbids it in the capturing thread). Forbidden: the capture is
// invalidated and the call fails with ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT.
inline int CheckUnsafeCall(const char* api) {
  CaptureModel* m = ActiveCapture();
  if (m == nullptr) return kAclOk;
  const int thread_mode = ThreadCaptureMode();
  bool allowed = thread_mode == 2;  // RELAXED
  if (!allowed) allowed = m->mode == 2;
  if (!allowed) {
    Invalidate(m, std::string(api) + " was called during the capture");
    return AclFail(kRtCaptureModeNotSupport, api,
                   "not permitted while a stream is being captured in mode " + std::string(m->mode == 0 ? "GLOBAL" : "THREAD_LOCAL") +
                       " (switch the thread to ACL_MODEL_RI_CAPTURE_MODE_RELAXED with aclmdlRICaptureThreadExchangeMode); "
                       "the capture is invalidated");
  }
  return kAclOk;
}

// The stream a task goes to: the model it is captured into (nullptr: run now), or an error code.
inline int TaskTarget(const void* handle, const char* api, EmuStream** stream, CaptureModel** model) {
  int code = kAclOk;
  *stream = LookupStream(handle, api, &code);
  *model = nullptr;
  if (code != kAclOk) return code;
  if (*stream == nullptr) {
    if (CaptureModel* m = ActiveCapture()) {
      Invalidate(m, std::string(api) + " on the default stream during the capture");
      return AclFail(kRtStreamCaptureImplicit, api,
                     "a task on the default stream while a stream is being captured (not permitted; the capture is invalidated)");
    }
    return kAclOk;
  }
  if ((*stream)->capture != nullptr) *model = (*stream)->capture;
  return kAclOk;
}

// Appends a task to the model on `stream` (after the stream's previous task, plus `extra` dependencies).
inline int AddTask(CaptureModel* m, EmuStream* stream, CapturedTask task, int extra_dep = -1) {
  task.stream = stream->id;
  if (stream->last_task >= 0) task.deps.push_back(stream->last_task);
  if (extra_dep >= 0) task.deps.push_back(extra_dep);
  m->tasks.push_back(std::move(task));
  stream->last_task = static_cast<int>(m->tasks.size()) - 1;
  return stream->last_task;
}

inline bool InsideDevice(uintptr_t p, size_t n) {
  for (const auto& kv : Program().allocations)
    if (p >= kv.first && p + n <= kv.first + kv.second + 32) return true;  // the 32 B the runtime adds
  return false;
}
inline bool TouchesDevice(uintptr_t p) {
  for (const auto& kv : Program().allocations)
    if (p >= kv.first && p < kv.first + (kv.second + 31) / 32 * 32 + 32) return true;
  return false;
}
inline bool InsidePinned(uintptr_t p, size_t n) {
  for (const auto& kv : Streams().pinned)
    if (p >= kv.first && p + n <= kv.first + kv.second) return true;
  return false;
}

// At replay, a captured copy's memory must still be allocated (AscendCL: the resources a model's tasks
// use must stay valid until the model is destroyed).
inline std::string CheckCopyStillValid(uintptr_t dst, const void* src, size_t count, bool dst_dev, bool src_dev) {
  const uintptr_t s = reinterpret_cast<uintptr_t>(src);
  if (dst_dev && !InsideDevice(dst, count))
    return "aclmdlRIExecuteAsync: a captured copy writes device memory that was freed (or is too small) "
           "before the model was destroyed";
  if (src_dev && !InsideDevice(s, count))
    return "aclmdlRIExecuteAsync: a captured copy reads device memory that was freed before the model was destroyed";
  if (!dst_dev && !InsidePinned(dst, count))
    return "aclmdlRIExecuteAsync: a captured copy writes host memory that was freed (aclrtFreeHost) before the model was destroyed";
  if (!src_dev && !InsidePinned(s, count))
    return "aclmdlRIExecuteAsync: a captured copy reads host memory that was freed (aclrtFreeHost) before the model was destroyed";
  return "";
}

inline void AbortProgram(const std::string& err) {
  std::fprintf(stderr, "[trex AscendC emulator] %s\n", err.c_str());
  std::fflush(stderr);
  std::_Exit(1);
}

// Runs a model's tasks in capture order (a topological order of their dependencies: a wait is issued
// after the record it waits for); a kernel or copy error ends the program as an eager one does.
inline void ReplayModel(CaptureModel* m) {
  m->executions += 1;
  for (CapturedTask& t : m->tasks) {
    const std::string err = t.run ? t.run() : std::string();
    if (!err.empty()) AbortProgram(err);
  }
}

// `kernel<<<blocks, l2ctrl, stream>>>(args)`: runs the blocks now, or records the launch (with copies of
// the arguments) into the model of a capturing stream; a kernel error ends the program (exit status 1)
// with the emulator's message, as a failed aclrtSynchronizeStream ends the examples.
template <class F, class... A>
inline void AscLaunch(const char* kernel, uint64_t blocks, const void* stream, F&& body, A&&... args) {
  ProgramRuntime();
  EmuStream* s = nullptr;
  CaptureModel* m = nullptr;
  if (TaskTarget(stream, (std::string(kernel) + "<<<>>>").c_str(), &s, &m) != kAclOk) return;  // not launched
  if (m != nullptr) {
    CapturedTask t;
    t.type = "KERNEL";
    t.what = kernel;
    t.blocks = blocks;
    auto saved = std::make_tuple(std::decay_t<A>(std::forward<A>(args))...);
    std::string name = kernel;
    auto fn = std::decay_t<F>(std::forward<F>(body));
    t.run = [name, blocks, fn, saved]() mutable -> std::string {
      Program().launches += 1;
      return RunBlocks(name.c_str(), static_cast<uint32_t>(blocks), [&]() { std::apply(fn, saved); });
    };
    AddTask(m, s, std::move(t));
    return;
  }
  Program().launches += 1;
  const std::string err = RunBlocks(kernel, static_cast<uint32_t>(blocks), [&]() { body(args...); });
  if (!err.empty()) AbortProgram(err);
}

}  // namespace trex_emu
