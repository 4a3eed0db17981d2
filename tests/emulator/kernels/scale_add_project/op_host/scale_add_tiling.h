// trex test op project (written for trex): y = x * alpha + bias, CANN framework-launch layout.
#pragma once
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(ScaleAddTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, totalLength);
  TILING_DATA_FIELD_DEF(uint32_t, blockLength);  // elements per block (a multiple of 32 B of elements)
  TILING_DATA_FIELD_DEF(uint32_t, tileLength);
  TILING_DATA_FIELD_DEF(float, alpha);
  TILING_DATA_FIELD_DEF_ARR(uint32_t, 2, shape);
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(ScaleAdd, ScaleAddTilingData)
}  // namespace optiling
