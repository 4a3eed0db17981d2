// trex AscendC emulator: the AscendCL runtime calls a kernel-launch `.asc` program makes (CANN's
// acl/acl.h, the subset asc-devkit's examples use), on the host. Device memory is host memory
// registered as GM regions, sized as aclrtMalloc reserves it (rounded up to 32 B, plus 32 B), poisoned
// (0xFF: NaN for floating types) so that an output the kernel never writes does not pass, with a
// poisoned guard after it under device bounds. Streams are synchronous: `<<<>>>` runs the blocks at
// once (asc_program.h). Kernel faults end the program with the emulator's message, exit status 1.
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

constexpr aclError ACL_SUCCESS = 0;
constexpr aclError ACL_ERROR_INVALID_PARAM = 100000;
constexpr aclError ACL_ERROR_BAD_ALLOC = 200000;

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
inline aclError aclrtCreateStream(aclrtStream* s) { static int st; *s = &st; return ACL_SUCCESS; }
inline aclError aclrtDestroyStream(aclrtStream) { return ACL_SUCCESS; }
inline aclError aclrtSynchronizeStream(aclrtStream) { return ACL_SUCCESS; }
inline aclError aclrtSynchronizeDevice() { return ACL_SUCCESS; }
inline const char* aclGetRecentErrMsg() { return "trex AscendC emulator: no AscendCL error recorded"; }

inline aclError aclrtMalloc(void** p, size_t size, aclrtMemMallocPolicy = ACL_MEM_MALLOC_HUGE_FIRST) {
  *p = trex_emu::DeviceMalloc(size);
  return *p ? ACL_SUCCESS : ACL_ERROR_BAD_ALLOC;
}
inline aclError aclrtFree(void* p) { trex_emu::DeviceFree(p); return ACL_SUCCESS; }
inline aclError aclrtMallocHost(void** p, size_t size) {
  *p = std::malloc(size == 0 ? 1 : size);
  return *p ? ACL_SUCCESS : ACL_ERROR_BAD_ALLOC;
}
inline aclError aclrtFreeHost(void* p) { std::free(p); return ACL_SUCCESS; }
inline aclError aclrtMemcpy(void* dst, size_t dst_max, const void* src, size_t count, aclrtMemcpyKind) {
  if (count > dst_max) return ACL_ERROR_INVALID_PARAM;  // as AscendCL: count must fit destMax
  trex_emu::CheckHostAccess("aclrtMemcpy destination", dst, count);
  trex_emu::CheckHostAccess("aclrtMemcpy source", src, count);
  std::memmove(dst, src, count);
  return ACL_SUCCESS;
}
inline aclError aclrtMemcpyAsync(void* dst, size_t dst_max, const void* src, size_t count, aclrtMemcpyKind kind,
                                 aclrtStream) {
  return aclrtMemcpy(dst, dst_max, src, count, kind);
}
inline aclError aclrtMemset(void* dst, size_t dst_max, int32_t value, size_t count) {
  if (count > dst_max) return ACL_ERROR_INVALID_PARAM;
  trex_emu::CheckHostAccess("aclrtMemset", dst, count);
  std::memset(dst, value, count);
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
