// tiling_rmsnorm.h: RmsNormTiling, the tiling struct of the RmsNorm advanced API (asc-devkit
// include/adv_api/normalization/rmsnorm_tilingdata.h: 12 fields), global like SoftMaxTiling, with the optiling
// and AscendC::tiling aliases; shared by kernel code and host tiling code.
#pragma once
#include <cstdint>

#include "register/tilingdata_base.h"

BEGIN_TILING_DATA_DEF(RmsNormTiling)
  TILING_DATA_FIELD_DEF(uint32_t, bLength);
  TILING_DATA_FIELD_DEF(uint32_t, sLength);
  TILING_DATA_FIELD_DEF(uint32_t, hLength);
  TILING_DATA_FIELD_DEF(uint32_t, originalHLength);
  TILING_DATA_FIELD_DEF(float, reciprocalOfHLength);
  TILING_DATA_FIELD_DEF(uint32_t, mainBshLength);
  TILING_DATA_FIELD_DEF(uint32_t, mainBsLength);
  TILING_DATA_FIELD_DEF(uint32_t, mainBsLengthAlign);
  TILING_DATA_FIELD_DEF(uint32_t, loopRound);
  TILING_DATA_FIELD_DEF(uint32_t, inputTailPos);
  TILING_DATA_FIELD_DEF(uint32_t, tailBshLength);
  TILING_DATA_FIELD_DEF(uint32_t, tailBsLength);
END_TILING_DATA_DEF;

namespace optiling {
using ::RmsNormTiling;
}  // namespace optiling
namespace AscendC {
namespace tiling {
using ::RmsNormTiling;
}  // namespace tiling
}  // namespace AscendC
