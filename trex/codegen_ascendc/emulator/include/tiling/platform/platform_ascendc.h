// tiling/platform/platform_ascendc.h, kernel side: op_host tiling headers that the kernel compile includes
// first (op_project.py) include it next to their BEGIN_TILING_DATA_DEF struct (cann-ops inplace_attn_softmax).
// CANN's kernel build compiles only the generated tiling struct, never the host's platform query, so the
// kernel side needs the name to resolve, not platform_ascendc::PlatformAscendC (include_host/ has that).
#pragma once
#include "register/tilingdata_base.h"

// In a kernel-launch program (kernel and host main in one unit: asc_program.py puts include_host/ after
// include/ on the path) the host's platform_ascendc::PlatformAscendC is wanted as well.
#if __has_include("trex_host/ge_types.h")
#include_next <tiling/platform/platform_ascendc.h>
#endif
