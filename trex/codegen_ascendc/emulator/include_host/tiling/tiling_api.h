// tiling/tiling_api.h — the platform and registry parts op_host files need, and of the advanced (adv)
// APIs' host tiling helpers (the trex_emu/*_tiling_host.h headers, with the tiling structs they fill:
// trex_emu/tiling_*.h). An op project's op_host file sees the same helpers as a kernel-launch program.
#pragma once
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"
#include "trex_host/ge_types.h"
#include "trex_emu/softmax_tiling_host.h"
#include "trex_emu/erf_tiling_host.h"
#include "trex_emu/adv_tiling_host.h"
#include "trex_emu/adv_math_tiling_host.h"
#include "trex_emu/adv_softmax_ext_tiling_host.h"
#include "trex_emu/adv_reduce_tiling_host.h"
#include "trex_emu/adv_sort_tiling_host.h"
#include "trex_emu/tiling_norm.h"
#include "trex_emu/tiling_deepnorm.h"
#include "trex_emu/tiling_rmsnorm.h"
#include "trex_emu/tiling_welford.h"
#include "trex_emu/tiling_topk.h"
#include "trex_emu/tiling_pad.h"
#include "trex_emu/adv_norm_tiling_host.h"
#include "trex_emu/adv_deepnorm_tiling_host.h"
#include "trex_emu/adv_rmsnorm_tiling_host.h"
#include "trex_emu/adv_welford_tiling_host.h"
#include "trex_emu/adv_topk_tiling_host.h"
#include "trex_emu/adv_pad_tiling_host.h"

// op_host files write `using namespace AscendC;` for the adv APIs' tiling helpers.
namespace AscendC {}

// asc-devkit include/adv_api/utils/types.h: the advanced APIs' host tiling functions take the shape as
// AscendC::TensorShape, an alias of ge::Shape.
namespace AscendC {
using TensorShape = ge::Shape;
using TensorDataType = ge::DataType;  // include/adv_api/utils/types.h
}  // namespace AscendC
