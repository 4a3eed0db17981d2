// trex test op project (written for trex): ErfCustom's tiling data.
#pragma once
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(ErfCustomTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, totalLength);
  TILING_DATA_FIELD_DEF(uint32_t, blockLength);  // elements per block, a multiple of 32 B; the last block takes the rest
  TILING_DATA_FIELD_DEF(uint32_t, tileLength);   // elements per tile, a multiple of 32 B
  TILING_DATA_FIELD_DEF(uint32_t, tmpBytes);     // sharedTmpBuffer: GetErf(c)MaxMinTmpSize's minimum
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(ErfCustom, ErfCustomTilingData)
}  // namespace optiling
