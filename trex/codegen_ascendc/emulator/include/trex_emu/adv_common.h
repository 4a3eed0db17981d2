// trex AscendC emulator: names the advanced-API examples use from CANN's kernel headers besides the APIs.
//  * ASCENDC_ASSERT(cond, behavior) / KERNEL_LOG(level, fmt, ...) (asc-devkit impl/basic_api/kernel_log.h, the
//    CPU-debug build): on a false cond, `behavior` runs, then the kernel stops (raise(SIGABRT) there; a
//    trex_emu::Fail naming the condition here, so the launch reports it).
//  * ONE_BLK_SIZE (32, the bytes of one UB data block), DivCeil(uint32_t, uint32_t) (kernel_utils: the
//    non-template form, which mixed argument types such as DivCeil(n * sizeof(T), 32) resolve to).
//  * DataFormat (include/basic_api/kernel_struct_data_copy.h / adv_api transdata_tiling.h).
#pragma once
#include <cstdint>
#include <cstdio>

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
