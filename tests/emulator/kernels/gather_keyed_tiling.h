// trex emulator tests: the tiling header of gather_keyed.cpp (op_host style).
#pragma once
#include "register/tilingdata_base.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(GatherKeyedTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, perBlock);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(GatherKeyed, GatherKeyedTilingData)
}  // namespace optiling
