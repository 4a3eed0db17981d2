// trex test op project (written for trex): RefScale's tiling data; the array field is filled through CANN's
// writable get_ pointer.
#pragma once
#include "register/tilingdata_base.h"

namespace optiling {
BEGIN_TILING_DATA_DEF(RefScaleTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, n);
  TILING_DATA_FIELD_DEF_ARR(uint32_t, 4, sizes);  // sigmoid max, sigmoid min, mean max, mean min
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(RefScale, RefScaleTilingData)
}  // namespace optiling
