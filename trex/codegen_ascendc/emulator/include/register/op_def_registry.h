// register/op_def_registry.h, kernel side: op_host tiling headers that the kernel compile includes first
// (op_project.py) include it (cann-ops inplace_attn_softmax, mul_sigmoid). CANN's kernel build compiles only
// the generated tiling struct, so here it brings the tiling-data macros; ops::OpDef and the registration
// macros are host-only (include_host/register/op_def_registry.h).
#pragma once
#include "register/tilingdata_base.h"
