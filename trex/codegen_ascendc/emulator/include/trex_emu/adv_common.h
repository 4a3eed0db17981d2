// trex AscendC emulator: names the advanced-API examples use from CANN's kernel headers besides the APIs.
//  * ASCENDC_ASSERT(cond, behavior) / KERNEL_LOG(level, fmt, ...) (asc-devkit impl/basic_api/kernel_log.h, the
//    CPU-debug build): on a false cond, `behavior` runs, then the kernel stops (raise(SIGABRT) there; a
//    trex_emu::Fail naming the condition here, so the launch reports it).
//  * ONE_BLK_SIZE (32, the bytes of one UB data block), DivCeil(uint32_t, uint32_t) (kernel_utils: the
//    non-template form, which mixed argument types such as DivCeil(n * sizeof(T), 32) resolve to).
//  * DataFormat (include/basic_api/kernel_struct_data_copy.h / adv_api transdata_tiling.h).
//  * memcpy_s / memset_s (the securec library CANN's headers bring into host code): 0 (EOK) on success; a null
//    pointer or count > destMax is an error (22 / 34) and clears dest as securec does.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "trex_emu/runtime.h"

namespace AscendC {
enum KernelLogLevel : int { KERNEL_DEBUG = 0, KERNEL_INFO = 1, KERNEL_WARN = 2, KERNEL_ERROR = 3 };
constexpr int32_t ONE_BLK_SIZE = 32;
constexpr inline uint32_t DivCeil(uint32_t a, uint32_t b) { return (a + b - 1) / b; }
enum class DataFormat : uint8_t { ND = 0, NZ, NCHW, NC1HWC0, NHWC, NCDHW, NDC1HWC0, FRACTAL_Z_3D };
}  // namespace AscendC
using AscendC::KERNEL_DEBUG;
using AscendC::KERNEL_INFO;
using AscendC::KERNEL_WARN;
using AscendC::KERNEL_ERROR;

#ifndef KERNEL_LOG
#define KERNEL_LOG(level, format, ...)                                                                  \
  do {                                                                                                  \
    std::fprintf(stderr, "[%s] " format "\n",                                                           \
                 (level) == ::AscendC::KERNEL_ERROR ? "ERROR" : (level) == ::AscendC::KERNEL_WARN ? "WARN"  \
                                                                                                 : "INFO", \
                 ##__VA_ARGS__);                                                                        \
  } while (0)
#endif
#ifndef ASCENDC_ASSERT
#define ASCENDC_ASSERT(cond, behavior)                                                     \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      behavior;                                                                            \
      ::trex_emu::Fail("ASCENDC_ASSERT(" #cond ") failed at ", __FILE__, ":", __LINE__);   \
    }                                                                                      \
  } while (0)
#endif

#if !defined(SECUREC_H) && !defined(TREX_EMU_SECUREC)
#define TREX_EMU_SECUREC 1
#ifndef EOK
#define EOK 0
#endif
inline int memcpy_s(void* dest, size_t destMax, const void* src, size_t count) {
  if (dest == nullptr || src == nullptr) return 22;
  if (count > destMax) {
    std::memset(dest, 0, destMax);
    return 34;
  }
  std::memmove(dest, src, count);
  return EOK;
}
inline int memset_s(void* dest, size_t destMax, int c, size_t count) {
  if (dest == nullptr) return 22;
  if (count > destMax) {
    std::memset(dest, c, destMax);
    return 34;
  }
  std::memset(dest, c, count);
  return EOK;
}
#endif
