// trex emulator tests: the tiling header of the SoftmaxRows op project (op_host style), embedding the
// SoftMax API's tiling struct.
#pragma once
#include "register/tilingdata_base.h"
#include "tiling/tiling_api.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(SoftmaxRowsTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, rowsPerBlock);
  TILING_DATA_FIELD_DEF(uint32_t, cols);
  TILING_DATA_FIELD_DEF_STRUCT(SoftMaxTiling, softmax);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(SoftmaxRows, SoftmaxRowsTilingData)
}  // namespace optiling
