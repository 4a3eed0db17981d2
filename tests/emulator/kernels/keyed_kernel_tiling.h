// trex emulator tests: the tiling header of keyed_kernel.cpp (op_host style).
#pragma once
#include "register/tilingdata_base.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(KeyedTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, perBlock);
  TILING_DATA_FIELD_DEF(float, scale);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(Keyed, KeyedTilingData)
}  // namespace optiling
