// tiling/tiling_api.h — the host tiling helpers of CANN's advanced (adv) API are not emulated; this
// header provides the platform and registry parts so op_host files that include it compile.
#pragma once
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

// op_host files write `using namespace AscendC;` for the adv APIs' tiling helpers (not emulated).
namespace AscendC {}
