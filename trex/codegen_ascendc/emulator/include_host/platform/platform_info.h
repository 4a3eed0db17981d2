// platform/platform_info.h — CANN's platform-info header; op_host code includes it for fe::PlatFormInfos
// (the type GetPlatformInfo() returns), which the emulator's host model defines in trex_host/ge_types.h.
// PlatformInfoManager is not modelled: platform_ascendc::PlatformAscendC gives the core count and UB size.
#pragma once
#include "trex_host/ge_types.h"
