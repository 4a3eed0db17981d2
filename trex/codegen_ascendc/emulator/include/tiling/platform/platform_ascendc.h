// tiling/platform/platform_ascendc.h, kernel side: op_host tiling headers that the kernel compile includes
// first (op_project.py) include it next to their BEGIN_TILING_DATA_DEF struct (cann-ops inplace_attn_softmax).
// CANN's kernel build compiles only the generated tiling struct, never the host's platform query, so the
// kernel side needs the name to resolve, not platform_ascendc::PlatformAscendC (include_host/ has that).
#pragma once
#include "register/tilingdata_base.h"
