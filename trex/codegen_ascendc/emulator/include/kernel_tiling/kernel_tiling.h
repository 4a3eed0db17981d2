// kernel_tiling/kernel_tiling.h — in CANN, the structs of the advanced APIs' tiling data (matmul,
// softmax, ...). Of those the emulator has SoftMaxTiling; op tiling structs come from the op_host header
// through GET_TILING_DATA (see trex_emu/op_project.h).
#pragma once
#include <cstdint>
#include "register/tilingdata_base.h"
#include "trex_emu/softmax_tiling.h"
#include "trex_emu/logsoftmax_tiling.h"
#include "trex_emu/tiling_norm.h"
#include "trex_emu/tiling_deepnorm.h"
#include "trex_emu/tiling_rmsnorm.h"
#include "trex_emu/tiling_welford.h"
#include "trex_emu/tiling_topk.h"
#include "trex_emu/tiling_pad.h"
