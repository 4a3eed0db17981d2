// trex AscendC emulator: the core-type constants and g_coreType (asc-devkit impl/utils/sys_constants.h,
// impl/utils/sys_macros.h). The emulator runs vector (AIV) blocks only, so g_coreType is AIV: kernels that
// return early on `g_coreType == AIC` (cann-ops' moe_init_routing_v2) run their vector path. (CPU-debug
// declares it `extern int32_t` and sets it per core; the NPU build makes it a constexpr per split core.)
#pragma once
#include <cstdint>

namespace AscendC {
constexpr int32_t MIX = 0;
constexpr int32_t AIC = 1;
constexpr int32_t AIV = 2;
}  // namespace AscendC

constexpr int32_t g_coreType = AscendC::AIV;
