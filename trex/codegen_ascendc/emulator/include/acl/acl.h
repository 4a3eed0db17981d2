// trex AscendC emulator: the AscendCL runtime calls a kernel-launch `.asc` program makes (CANN's
// acl/acl.h, the subset asc-devkit's examples use), on the host. Device memory is host memory
// registered as GM regions, sized as aclrtMalloc reserves it (rounded up to 32 B, plus 32 B), poisoned
// (0xFF: NaN for floating types) so that an output the kernel never writes does not pass, with a
// poisoned guard after it under device bounds. Streams are synchronous: `<<<>>>` runs the blocks at
// once (asc_program.h), except on a stream being captured: aclmdlRICaptureBegin..aclmdlRICaptureEnd
// record the kernel launches, async copies/memsets and event records/waits issued on the stream (and on
// the streams that join it through events) into an aclmdlRI model, which aclmdlRIExecuteAsync /
// aclmdlRIExecute replay in capture order, as AscendCL's "capture stream tasks into a model" documents
// (single-stream and cross-stream capture; synchronising or querying a capturing stream/event, unsafe calls
// in GLOBAL mode, tasks on the default stream and unjoined sub streams fail with AscendCL's error codes).
// Kernel faults end the program with the emulator's message, exit status 1.
//   TREX_EMU_BOUNDS=device|strict (default device: what faults on the NPU fails, the rest is listed
//   as findings at exit), TREX_EMU_CHECK_SYNC=1 (pipe synchronisation rules).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "trex_emu/asc_program.h"

typedef int aclError;
typedef uint16_t aclFloat16;  // IEEE half bits, as AscendCL's host type
typedef void* aclrtStream;
typedef void* aclrtContext;
typedef void* aclrtEvent;

typedef void* aclmdlRI;

constexpr aclError ACL_SUCCESS = 0;
constexpr aclError ACL_ERROR_INVALID_PARAM = 100000;
constexpr aclError ACL_ERROR_BAD_ALLOC = 200000;
// rt_error_codes.h
constexpr aclError ACL_ERROR_RT_PARAM_INVALID = trex_emu::kRtParamInvalid;
constexpr aclError ACL_ERROR_RT_FILE_OPEN = trex_emu::kRtFileOpen;
constexpr aclError ACL_ERROR_RT_CAPTURE_DEPENDENCY = 107024;
constexpr aclError ACL_ERROR_RT_STREAM_UNJOINED = trex_emu::kRtStreamUnjoined;
constexpr aclError ACL_ERROR_RT_MODEL_CAPTURED = trex_emu::kRtModelCaptured;
constexpr aclError ACL_ERROR_RT_STREAM_CAPTURED = trex_emu::kRtStreamCaptured;
constexpr aclError ACL_ERROR_RT_EVENT_CAPTURED = trex_emu::kRtEventCaptured;
constexpr aclError ACL_ERROR_RT_STREAM_NOT_CAPTURED = trex_emu::kRtStreamNotCaptured;
constexpr aclError ACL_ERROR_RT_CAPTURE_MODE_NOT_SUPPORT = trex_emu::kRtCaptureModeNotSupport;
constexpr aclError ACL_ERROR_RT_STREAM_CAPTURE_IMPLICIT = trex_emu::kRtStreamCaptureImplicit;
constexpr aclError ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED = trex_emu::kRtStreamCaptureUnmatched;
constexpr aclError ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED = trex_emu::kRtCaptureInvalidated;

// event flags (acl_rt.h)
#define ACL_EVENT_SYNC 0x00000001U
#define ACL_EVENT_CAPTURE_STREAM_PROGRESS 0x00000002U
#define ACL_EVENT_TIME_LINE 0x00000008U
// aclmdlRIDebugJsonPrint flags
#define ACL_MDLRI_DEBUG_JSON_PRINT_SUMMARY 0x0UL
#define ACL_MDLRI_DEBUG_JSON_PRINT_VERBOSE 0x1UL

typedef enum {
  ACL_MODEL_RI_CAPTURE_MODE_GLOBAL = 0,
  ACL_MODEL_RI_CAPTURE_MODE_THREAD_LOCAL,
  ACL_MODEL_RI_CAPTURE_MODE_RELAXED,
} aclmdlRICaptureMode;
typedef enum {
  ACL_MODEL_RI_CAPTURE_STATUS_NONE = 0,
  ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE,
  ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED,
} aclmdlRICaptureStatus;
typedef enum { ACL_EVENT_RECORDED_STATUS_NOT_READY = 0, ACL_EVENT_RECORDED_STATUS_COMPLETE = 1 } aclrtEventRecordedStatus;

enum aclrtMemMallocPolicy {
  ACL_MEM_MALLOC_HUGE_FIRST, ACL_MEM_MALLOC_HUGE_ONLY, ACL_MEM_MALLOC_NORMAL_ONLY,
  ACL_MEM_MALLOC_HUGE_FIRST_P2P, ACL_MEM_MALLOC_HUGE_ONLY_P2P, ACL_MEM_MALLOC_NORMAL_ONLY_P2P,
};
enum aclrtMemcpyKind {
  ACL_MEMCPY_HOST_TO_HOST, ACL_MEMCPY_HOST_TO_DEVICE, ACL_MEMCPY_DEVICE_TO_HOST, ACL_MEMCPY_DEVICE_TO_DEVICE,
  ACL_MEMCPY_DEFAULT,
};

inline aclError aclInit(const char*) { trex_emu::ProgramRuntime(); return ACL_SUCCESS; }
inline aclError aclFinalize() { return ACL_SUCCESS; }
inline aclError aclrtSetDevice(int32_t) { trex_emu::ProgramRuntime(); return ACL_SUCCESS; }
inline aclError aclrtResetDevice(int32_t) { return ACL_SUCCESS; }
inline aclError aclrtGetDevice(int32_t* id) { *id = 0; return ACL_SUCCESS; }
inline aclError aclrtGetDeviceCount(uint32_t* n) { *n = 1; return ACL_SUCCESS; }
inline aclError aclrtCreateContext(aclrtContext* ctx, int32_t) { static int c; *ctx = &c; return ACL_SUCCESS; }
inline aclError aclrtDestroyContext(aclrtContext) { return ACL_SUCCESS; }
inline aclError aclrtSetCurrentContext(aclrtContext) { return ACL_SUCCESS; }
inline aclError aclrtCreateStream(aclrtStream* s) {
  if (s == nullptr) return trex_emu::AclFail(ACL_ERROR_INVALID_PARAM, "aclrtCreateStream", "stream is nullptr");
  auto* st = new trex_emu::EmuStream();
  st->id = trex_emu::Streams().next_stream++;
  trex_emu::Streams().streams.insert(st);
  *s = st;
  return ACL_SUCCESS;
}
inline aclError aclrtDestroyStream(aclrtStream s) {
  int code = ACL_SUCCESS;
  trex_emu::EmuStream* st = trex_emu::LookupStream(s, "aclrtDestroyStream", &code);
  if (code != ACL_SUCCESS || st == nullptr) return code;
  if (st->capture != nullptr)
    return trex_emu::AclFail(ACL_ERROR_RT_STREAM_CAPTURED, "aclrtDestroyStream", trex_emu::StreamName(st) + " is being captured");
  trex_emu::Streams().streams.erase(st);
  delete st;
  return ACL_SUCCESS;
}
// Synchronising a stream, the device or an event that is being captured is not permitted (the tasks
// are not executed during the capture).
inline aclError aclrtSynchronizeStream(aclrtStream s) {
  int code = ACL_SUCCESS;
  trex_emu::EmuStream* st = trex_emu::LookupStream(s, "aclrtSynchronizeStream", &code);
  if (code != ACL_SUCCESS) return code;
  if (st != nullptr && st->capture != nullptr)
    return trex_emu::AclFail(ACL_ERROR_RT_STREAM_CAPTURED, "aclrtSynchronizeStream",
                             trex_emu::StreamName(st) + " is being captured (its tasks run when the model is executed)");
  return ACL_SUCCESS;
}
inline aclError aclrtSynchronizeDevice() {
  if (trex_emu::ActiveCapture() != nullptr)
    return trex_emu::AclFail(ACL_ERROR_RT_STREAM_CAPTURED, "aclrtSynchronizeDevice", "a stream is being captured");
  return ACL_SUCCESS;
}
inline const char* aclGetRecentErrMsg() {
  const std::string& e = trex_emu::Streams().last_error;
  return e.empty() ? "trex AscendC emulator: no AscendCL error recorded" : e.c_str();
}

inline aclError aclrtMalloc(void** p, size_t size, aclrtMemMallocPolicy = ACL_MEM_MALLOC_HUGE_FIRST) {
  *p = trex_emu::DeviceMalloc(size);
  return *p ? ACL_SUCCESS : ACL_ERROR_BAD_ALLOC;
}
inline aclError aclrtFree(void* p) { trex_emu::DeviceFree(p); return ACL_SUCCESS; }
// Host page-locked memory (recorded: a captured async copy of host memory must use it).
inline aclError aclrtMallocHost(void** p, size_t size) {
  *p = std::malloc(size == 0 ? 1 : size);
  if (*p == nullptr) return ACL_ERROR_BAD_ALLOC;
  trex_emu::Streams().pinned[reinterpret_cast<uintptr_t>(*p)] = size;
  return ACL_SUCCESS;
}
inline aclError aclrtFreeHost(void* p) {
  trex_emu::Streams().pinned.erase(reinterpret_cast<uintptr_t>(p));
  std::free(p);
  return ACL_SUCCESS;
}
inline void TrexCopyNow(void* dst, const void* src, size_t count, const char* api) {
  trex_emu::CheckHostAccess((std::string(api) + " destination").c_str(), dst, count);
  trex_emu::CheckHostAccess((std::string(api) + " source").c_str(), src, count);
  std::memmove(dst, src, count);
}
inline aclError aclrtMemcpy(void* dst, size_t dst_max, const void* src, size_t count, aclrtMemcpyKind) {
  if (count > dst_max) return ACL_ERROR_INVALID_PARAM;  // as AscendCL: count must fit destMax
  if (const int code = trex_emu::CheckUnsafeCall("aclrtMemcpy")) return code;
  TrexCopyNow(dst, src, count, "aclrtMemcpy");
  return ACL_SUCCESS;
}
// On a capturing stream the copy is recorded into the model; host memory it touches must be page-locked
// (aclrtMallocHost), else it is an unsafe call (refused in GLOBAL / THREAD_LOCAL capture mode).
inline aclError aclrtMemcpyAsync(void* dst, size_t dst_max, const void* src, size_t count, aclrtMemcpyKind kind,
                                 aclrtStream stream) {
  if (count > dst_max) return ACL_ERROR_INVALID_PARAM;
  trex_emu::EmuStream* st = nullptr;
  trex_emu::CaptureModel* m = nullptr;
  if (const int code = trex_emu::TaskTarget(stream, "aclrtMemcpyAsync", &st, &m)) return code;
  if (m == nullptr) {
    TrexCopyNow(dst, src, count, "aclrtMemcpyAsync");
    return ACL_SUCCESS;
  }
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  const bool dst_dev = trex_emu::TouchesDevice(d), src_dev = trex_emu::TouchesDevice(s);
  if ((!dst_dev && !trex_emu::InsidePinned(d, count)) || (!src_dev && !trex_emu::InsidePinned(s, count)))
    if (const int code = trex_emu::CheckUnsafeCall("aclrtMemcpyAsync of host memory not from aclrtMallocHost")) return code;
  trex_emu::CheckHostAccess("aclrtMemcpyAsync destination", dst, count);
  trex_emu::CheckHostAccess("aclrtMemcpyAsync source", src, count);
  trex_emu::CapturedTask t;
  t.type = "MEMCPY_ASYNC";
  static const char* kinds[] = {"HOST_TO_HOST", "HOST_TO_DEVICE", "DEVICE_TO_HOST", "DEVICE_TO_DEVICE", "DEFAULT"};
  t.what = kinds[static_cast<int>(kind) >= 0 && static_cast<int>(kind) <= 4 ? static_cast<int>(kind) : 4];
  t.bytes = count;
  t.run = [=]() -> std::string {
    const std::string err = trex_emu::CheckCopyStillValid(d, src, count, dst_dev, src_dev);
    if (!err.empty()) return err;
    std::memmove(dst, src, count);
    return "";
  };
  trex_emu::AddTask(m, st, std::move(t));
  return ACL_SUCCESS;
}
inline aclError aclrtMemset(void* dst, size_t dst_max, int32_t value, size_t count) {
  if (count > dst_max) return ACL_ERROR_INVALID_PARAM;
  if (const int code = trex_emu::CheckUnsafeCall("aclrtMemset")) return code;
  trex_emu::CheckHostAccess("aclrtMemset", dst, count);
  std::memset(dst, value, count);
  return ACL_SUCCESS;
}
inline aclError aclrtMemsetAsync(void* dst, size_t dst_max, int32_t value, size_t count, aclrtStream stream) {
  if (count > dst_max) return ACL_ERROR_INVALID_PARAM;
  trex_emu::EmuStream* st = nullptr;
  trex_emu::CaptureModel* m = nullptr;
  if (const int code = trex_emu::TaskTarget(stream, "aclrtMemsetAsync", &st, &m)) return code;
  trex_emu::CheckHostAccess("aclrtMemsetAsync", dst, count);
  if (m == nullptr) {
    std::memset(dst, value, count);
    return ACL_SUCCESS;
  }
  trex_emu::CapturedTask t;
  t.type = "MEMSET_ASYNC";
  t.what = "value " + std::to_string(value);
  t.bytes = count;
  const uintptr_t d = reinterpret_cast<uintptr_t>(dst);
  t.run = [=]() -> std::string {
    if (!trex_emu::InsideDevice(d, count))
      return "aclmdlRIExecuteAsync: a captured memset writes device memory that was freed before the model was destroyed";
    std::memset(dst, value, count);
    return "";
  };
  trex_emu::AddTask(m, st, std::move(t));
  return ACL_SUCCESS;
}

// AscendCL's host half conversions (round to nearest even), through the emulator's half type.
inline float aclFloat16ToFloat(aclFloat16 value) {
  half h;
  std::memcpy(&h, &value, sizeof(value));
  return static_cast<float>(h);
}
inline aclFloat16 aclFloatToFloat16(float value) {
  const half h(value);
  aclFloat16 bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
}

// ---- events ------------------------------------------------------------------------------------------
namespace trex_emu {
inline EmuEvent* LookupEvent(aclrtEvent e, const char* api, int* code) {
  *code = kAclOk;
  EmuEvent* ev = static_cast<EmuEvent*>(e);
  if (e == nullptr || !Streams().events.count(ev)) *code = AclFail(kRtParamInvalid, api, "not an event aclrtCreateEvent* made (or destroyed)");
  return ev;
}
inline aclError CreateEvent(aclrtEvent* e, uint32_t flags, const char* api) {
  if (e == nullptr) return AclFail(ACL_ERROR_INVALID_PARAM, api, "event is nullptr");
  auto* ev = new EmuEvent();
  ev->id = Streams().next_event++;
  ev->flags = flags;
  Streams().events.insert(ev);
  *e = ev;
  return ACL_SUCCESS;
}
}  // namespace trex_emu

inline aclError aclrtCreateEvent(aclrtEvent* e) { return trex_emu::CreateEvent(e, ACL_EVENT_SYNC, "aclrtCreateEvent"); }
inline aclError aclrtCreateEventWithFlag(aclrtEvent* e, uint32_t flag) {
  return trex_emu::CreateEvent(e, flag, "aclrtCreateEventWithFlag");
}
inline aclError aclrtCreateEventExWithFlag(aclrtEvent* e, uint32_t flag) {
  return trex_emu::CreateEvent(e, flag, "aclrtCreateEventExWithFlag");
}
inline aclError aclrtDestroyEvent(aclrtEvent e) {
  int code = ACL_SUCCESS;
  trex_emu::EmuEvent* ev = trex_emu::LookupEvent(e, "aclrtDestroyEvent", &code);
  if (code != ACL_SUCCESS) return code;
  if (ev->capture != nullptr)
    return trex_emu::AclFail(ACL_ERROR_RT_EVENT_CAPTURED, "aclrtDestroyEvent", "the event is in a capture");
  trex_emu::Streams().events.erase(ev);
  delete ev;
  return ACL_SUCCESS;
}
// Outside capture the event completes at once (synchronous streams); on a capturing stream the record is
// a task of the model and the event enters the capture: a stream that waits for it joins the capture.
inline aclError aclrtRecordEvent(aclrtEvent e, aclrtStream stream) {
  int code = ACL_SUCCESS;
  trex_emu::EmuEvent* ev = trex_emu::LookupEvent(e, "aclrtRecordEvent", &code);
  if (code != ACL_SUCCESS) return code;
  trex_emu::EmuStream* st = nullptr;
  trex_emu::CaptureModel* m = nullptr;
  if ((code = trex_emu::TaskTarget(stream, "aclrtRecordEvent", &st, &m))) return code;
  if (m == nullptr) {
    ev->recorded = true;
    return ACL_SUCCESS;
  }
  trex_emu::CapturedTask t;
  t.type = "EVENT_RECORD";
  t.what = "event " + std::to_string(ev->id);
  t.run = [ev]() -> std::string {
    if (trex_emu::Streams().events.count(ev)) ev->recorded = true;
    return "";
  };
  ev->record_task = trex_emu::AddTask(m, st, std::move(t));
  if (ev->capture != m) m->events.push_back(ev);
  ev->capture = m;
  return ACL_SUCCESS;
}
inline aclError aclrtStreamWaitEvent(aclrtStream stream, aclrtEvent e) {
  int code = ACL_SUCCESS;
  trex_emu::EmuEvent* ev = trex_emu::LookupEvent(e, "aclrtStreamWaitEvent", &code);
  if (code != ACL_SUCCESS) return code;
  trex_emu::EmuStream* st = nullptr;
  trex_emu::CaptureModel* m = nullptr;
  if ((code = trex_emu::TaskTarget(stream, "aclrtStreamWaitEvent", &st, &m))) return code;
  trex_emu::CaptureModel* em = ev->capture;
  if (em != nullptr && em->capturing) {
    if (m != nullptr && m != em)
      return trex_emu::AclFail(ACL_ERROR_RT_CAPTURE_DEPENDENCY, "aclrtStreamWaitEvent",
                               trex_emu::StreamName(st) + " is captured into another model than the event");
    if (m == nullptr) {  // the stream joins the capture through the event
      st->capture = em;
      st->last_task = -1;
      em->streams.push_back(st);
      m = em;
    }
    trex_emu::CapturedTask t;
    t.type = "EVENT_WAIT";
    t.what = "event " + std::to_string(ev->id);
    trex_emu::AddTask(m, st, std::move(t), ev->record_task);
    return ACL_SUCCESS;
  }
  if (m != nullptr) {  // an event recorded outside the capture: complete already; the wait is still a task
    trex_emu::CapturedTask t;
    t.type = "EVENT_WAIT";
    t.what = "event " + std::to_string(ev->id) + " (recorded outside the capture)";
    trex_emu::AddTask(m, st, std::move(t));
  }
  return ACL_SUCCESS;
}
inline aclError aclrtSynchronizeEvent(aclrtEvent e) {
  int code = ACL_SUCCESS;
  trex_emu::EmuEvent* ev = trex_emu::LookupEvent(e, "aclrtSynchronizeEvent", &code);
  if (code != ACL_SUCCESS) return code;
  if (ev->capture != nullptr)
    return trex_emu::AclFail(ACL_ERROR_RT_EVENT_CAPTURED, "aclrtSynchronizeEvent", "the event is being captured");
  return ACL_SUCCESS;
}
inline aclError aclrtQueryEventStatus(aclrtEvent e, aclrtEventRecordedStatus* status) {
  int code = ACL_SUCCESS;
  trex_emu::EmuEvent* ev = trex_emu::LookupEvent(e, "aclrtQueryEventStatus", &code);
  if (code != ACL_SUCCESS) return code;
  if (ev->capture != nullptr)
    return trex_emu::AclFail(ACL_ERROR_RT_EVENT_CAPTURED, "aclrtQueryEventStatus", "the event is being captured");
  *status = ev->recorded ? ACL_EVENT_RECORDED_STATUS_COMPLETE : ACL_EVENT_RECORDED_STATUS_NOT_READY;
  return ACL_SUCCESS;
}

// ---- aclmdlRI: capturing stream tasks into a model, executing it ------------------------------------
namespace trex_emu {
inline CaptureModel* LookupModel(aclmdlRI h, const char* api, int* code) {
  *code = kAclOk;
  CaptureModel* m = static_cast<CaptureModel*>(h);
  if (h == nullptr || !Streams().models.count(m))
    *code = AclFail(kRtParamInvalid, api, "not a model aclmdlRICaptureEnd returned (or it was destroyed)");
  return m;
}
// Every stream that joined through an event must return to the origin stream: its last task must be
// one the origin stream's last task (transitively) waits for.
inline std::string UnjoinedStream(const CaptureModel* m) {
  std::vector<char> seen(m->tasks.size(), 0);
  std::vector<int> todo;
  if (m->origin->last_task >= 0) todo.push_back(m->origin->last_task);
  while (!todo.empty()) {
    const int t = todo.back();
    todo.pop_back();
    if (seen[t]) continue;
    seen[t] = 1;
    for (int d : m->tasks[t].deps) todo.push_back(d);
  }
  for (const EmuStream* s : m->streams)
    if (s != m->origin && s->last_task >= 0 && !seen[s->last_task])
      return StreamName(s) + " joined the capture through an event but its last task (" + m->tasks[s->last_task].type +
             ") is not waited for by " + StreamName(m->origin) +
             " (record an event on it and aclrtStreamWaitEvent on the origin stream, after its last task)";
  return "";
}
inline void EndCapture(CaptureModel* m) {
  m->capturing = false;
  for (EmuStream* s : m->streams) {
    s->capture = nullptr;
    s->last_task = -1;
  }
  for (EmuEvent* e : m->events)
    if (Streams().events.count(e) && e->capture == m) {
      e->capture = nullptr;
      e->record_task = -1;
    }
}
inline std::string JsonEscape(const std::string& in) {
  std::string out;
  for (char c : in) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace trex_emu

inline aclError aclmdlRICaptureBegin(aclrtStream stream, aclmdlRICaptureMode mode) {
  int code = ACL_SUCCESS;
  trex_emu::EmuStream* st = trex_emu::LookupStream(stream, "aclmdlRICaptureBegin", &code);
  if (code != ACL_SUCCESS) return code;
  if (st == nullptr) return trex_emu::AclFail(ACL_ERROR_RT_PARAM_INVALID, "aclmdlRICaptureBegin", "the default stream cannot be captured");
  if (mode < ACL_MODEL_RI_CAPTURE_MODE_GLOBAL || mode > ACL_MODEL_RI_CAPTURE_MODE_RELAXED)
    return trex_emu::AclFail(ACL_ERROR_RT_PARAM_INVALID, "aclmdlRICaptureBegin", "mode " + std::to_string(mode) + " is not an aclmdlRICaptureMode");
  if (st->capture != nullptr)
    return trex_emu::AclFail(ACL_ERROR_RT_STREAM_CAPTURED, "aclmdlRICaptureBegin", trex_emu::StreamName(st) + " is already being captured");
  auto* m = new trex_emu::CaptureModel();
  m->id = trex_emu::Streams().next_model++;
  m->origin = st;
  m->mode = mode;
  m->streams.push_back(st);
  trex_emu::Streams().models.insert(m);
  st->capture = m;
  st->last_task = -1;
  return ACL_SUCCESS;
}
inline aclError aclmdlRICaptureGetInfo(aclrtStream stream, aclmdlRICaptureStatus* status, aclmdlRI* modelRI) {
  int code = ACL_SUCCESS;
  trex_emu::EmuStream* st = trex_emu::LookupStream(stream, "aclmdlRICaptureGetInfo", &code);
  if (code != ACL_SUCCESS) return code;
  if (status == nullptr) return trex_emu::AclFail(ACL_ERROR_INVALID_PARAM, "aclmdlRICaptureGetInfo", "status is nullptr");
  trex_emu::CaptureModel* m = st == nullptr ? nullptr : st->capture;
  *status = m == nullptr ? ACL_MODEL_RI_CAPTURE_STATUS_NONE
                         : (m->invalidated ? ACL_MODEL_RI_CAPTURE_STATUS_INVALIDATED : ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE);
  if (modelRI != nullptr) *modelRI = m;
  return ACL_SUCCESS;
}
inline aclError aclmdlRICaptureEnd(aclrtStream stream, aclmdlRI* modelRI) {
  int code = ACL_SUCCESS;
  trex_emu::EmuStream* st = trex_emu::LookupStream(stream, "aclmdlRICaptureEnd", &code);
  if (code != ACL_SUCCESS) return code;
  if (modelRI == nullptr) return trex_emu::AclFail(ACL_ERROR_INVALID_PARAM, "aclmdlRICaptureEnd", "modelRI is nullptr");
  *modelRI = nullptr;
  trex_emu::CaptureModel* m = st == nullptr ? nullptr : st->capture;
  if (m == nullptr)
    return trex_emu::AclFail(ACL_ERROR_RT_STREAM_NOT_CAPTURED, "aclmdlRICaptureEnd", trex_emu::StreamName(st) + " is not being captured");
  if (m->origin != st)
    return trex_emu::AclFail(ACL_ERROR_RT_STREAM_CAPTURE_UNMATCHED, "aclmdlRICaptureEnd",
                             "the capture was begun on " + trex_emu::StreamName(m->origin) + ", not " + trex_emu::StreamName(st));
  const std::string unjoined = m->invalidated ? std::string() : trex_emu::UnjoinedStream(m);
  trex_emu::EndCapture(m);
  if (m->invalidated || !unjoined.empty()) {
    const std::string why = m->invalidated ? "the capture was invalidated: " + m->invalid_reason : unjoined;
    trex_emu::Streams().models.erase(m);
    delete m;
    return trex_emu::AclFail(unjoined.empty() ? ACL_ERROR_RT_STREAM_CAPTURE_INVALIDATED : ACL_ERROR_RT_STREAM_UNJOINED,
                             "aclmdlRICaptureEnd", why);
  }
  *modelRI = m;
  return ACL_SUCCESS;
}
inline aclError aclmdlRICaptureThreadExchangeMode(aclmdlRICaptureMode* mode) {
  if (mode == nullptr || *mode < ACL_MODEL_RI_CAPTURE_MODE_GLOBAL || *mode > ACL_MODEL_RI_CAPTURE_MODE_RELAXED)
    return trex_emu::AclFail(ACL_ERROR_RT_PARAM_INVALID, "aclmdlRICaptureThreadExchangeMode", "mode must be an aclmdlRICaptureMode");
  const int old = trex_emu::ThreadCaptureMode();
  trex_emu::ThreadCaptureMode() = *mode;
  *mode = static_cast<aclmdlRICaptureMode>(old);
  return ACL_SUCCESS;
}
// Executes the model's tasks now, in capture order (streams are synchronous here); `stream` must not be
// capturing (a model inside a capture is not emulated).
inline aclError aclmdlRIExecuteAsync(aclmdlRI modelRI, aclrtStream stream) {
  int code = ACL_SUCCESS;
  trex_emu::CaptureModel* m = trex_emu::LookupModel(modelRI, "aclmdlRIExecuteAsync", &code);
  if (code != ACL_SUCCESS) return code;
  if (m->capturing)
    return trex_emu::AclFail(ACL_ERROR_RT_MODEL_CAPTURED, "aclmdlRIExecuteAsync", "the model is still being captured (call aclmdlRICaptureEnd first)");
  trex_emu::EmuStream* st = nullptr;
  trex_emu::CaptureModel* into = nullptr;
  if ((code = trex_emu::TaskTarget(stream, "aclmdlRIExecuteAsync", &st, &into))) return code;
  if (into != nullptr)
    return trex_emu::AclFail(ACL_ERROR_RT_STREAM_CAPTURED, "aclmdlRIExecuteAsync",
                             "executing a model on a stream that is being captured is not emulated");
  trex_emu::ReplayModel(m);
  return ACL_SUCCESS;
}
inline aclError aclmdlRIExecute(aclmdlRI modelRI, int32_t /*timeout ms*/) {
  int code = ACL_SUCCESS;
  trex_emu::CaptureModel* m = trex_emu::LookupModel(modelRI, "aclmdlRIExecute", &code);
  if (code != ACL_SUCCESS) return code;
  if (m->capturing)
    return trex_emu::AclFail(ACL_ERROR_RT_MODEL_CAPTURED, "aclmdlRIExecute", "the model is still being captured (call aclmdlRICaptureEnd first)");
  trex_emu::ReplayModel(m);
  return ACL_SUCCESS;
}
inline aclError aclmdlRIDestroy(aclmdlRI modelRI) {
  int code = ACL_SUCCESS;
  trex_emu::CaptureModel* m = trex_emu::LookupModel(modelRI, "aclmdlRIDestroy", &code);
  if (code != ACL_SUCCESS) return code;
  if (m->capturing)
    return trex_emu::AclFail(ACL_ERROR_RT_MODEL_CAPTURED, "aclmdlRIDestroy", "the model is still being captured");
  trex_emu::Streams().models.erase(m);
  delete m;
  return ACL_SUCCESS;
}
// The model's tasks as JSON (trex's layout: id, stream, type, what it does, the tasks it waits for; VERBOSE
// adds block counts and byte sizes).
inline aclError aclmdlRIDebugJsonPrint(aclmdlRI modelRI, const char* path, uint32_t flags) {
  int code = ACL_SUCCESS;
  trex_emu::CaptureModel* m = trex_emu::LookupModel(modelRI, "aclmdlRIDebugJsonPrint", &code);
  if (code != ACL_SUCCESS) return code;
  if (path == nullptr || flags > ACL_MDLRI_DEBUG_JSON_PRINT_VERBOSE)
    return trex_emu::AclFail(ACL_ERROR_RT_PARAM_INVALID, "aclmdlRIDebugJsonPrint", "path must be set and flags SUMMARY (0) or VERBOSE (1)");
  FILE* f = std::fopen(path, "w");
  if (f == nullptr) return trex_emu::AclFail(ACL_ERROR_RT_FILE_OPEN, "aclmdlRIDebugJsonPrint", std::string("cannot open ") + path);
  std::fprintf(f, "{\n  \"model_id\": %d,\n  \"streams\": [", m->id);
  for (size_t i = 0; i < m->streams.size(); ++i) std::fprintf(f, "%s%d", i ? ", " : "", m->streams[i]->id);
  std::fprintf(f, "],\n  \"tasks\": [\n");
  for (size_t i = 0; i < m->tasks.size(); ++i) {
    const trex_emu::CapturedTask& t = m->tasks[i];
    std::fprintf(f, "    {\"id\": %zu, \"stream\": %d, \"type\": \"%s\", \"name\": \"%s\", \"waits_for\": [", i, t.stream,
                 t.type.c_str(), trex_emu::JsonEscape(t.what).c_str());
    for (size_t j = 0; j < t.deps.size(); ++j) std::fprintf(f, "%s%d", j ? ", " : "", t.deps[j]);
    std::fprintf(f, "]");
    if (flags == ACL_MDLRI_DEBUG_JSON_PRINT_VERBOSE) {
      if (t.type == "KERNEL") std::fprintf(f, ", \"blocks\": %llu", static_cast<unsigned long long>(t.blocks));
      if (t.bytes) std::fprintf(f, ", \"bytes\": %llu", static_cast<unsigned long long>(t.bytes));
    }
    std::fprintf(f, "}%s\n", i + 1 < m->tasks.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
  std::fclose(f);
  return ACL_SUCCESS;
}
inline aclError aclmdlRIDebugPrint(aclmdlRI modelRI) {
  int code = ACL_SUCCESS;
  trex_emu::CaptureModel* m = trex_emu::LookupModel(modelRI, "aclmdlRIDebugPrint", &code);
  if (code != ACL_SUCCESS) return code;
  std::printf("aclmdlRI model %d: %zu task(s) on %zu stream(s)\n", m->id, m->tasks.size(), m->streams.size());
  for (size_t i = 0; i < m->tasks.size(); ++i)
    std::printf("  task %zu stream %d %s %s\n", i, m->tasks[i].stream, m->tasks[i].type.c_str(), m->tasks[i].what.c_str());
  return ACL_SUCCESS;
}
