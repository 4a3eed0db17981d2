// LogSoftMaxTiling: the tiling struct of the LogSoftMax advanced API (asc-devkit
// include/adv_api/activation/logsoftmax_tilingdata.h: the 16 uint32_t fields of SoftMaxTiling), global like
// SoftMaxTiling, with the optiling alias; shared by kernel code and host tiling code.
#pragma once
#include <cstdint>

#include "register/tilingdata_base.h"

BEGIN_TILING_DATA_DEF(LogSoftMaxTiling)
  TILING_DATA_FIELD_DEF(uint32_t, srcM);
  TILING_DATA_FIELD_DEF(uint32_t, srcK);
  TILING_DATA_FIELD_DEF(uint32_t, srcSize);
  TILING_DATA_FIELD_DEF(uint32_t, outMaxM);
  TILING_DATA_FIELD_DEF(uint32_t, outMaxK);
  TILING_DATA_FIELD_DEF(uint32_t, outMaxSize);
  TILING_DATA_FIELD_DEF(uint32_t, splitM);
  TILING_DATA_FIELD_DEF(uint32_t, splitK);
  TILING_DATA_FIELD_DEF(uint32_t, splitSize);
  TILING_DATA_FIELD_DEF(uint32_t, reduceM);
  TILING_DATA_FIELD_DEF(uint32_t, reduceK);
  TILING_DATA_FIELD_DEF(uint32_t, reduceSize);
  TILING_DATA_FIELD_DEF(uint32_t, rangeM);
  TILING_DATA_FIELD_DEF(uint32_t, tailM);
  TILING_DATA_FIELD_DEF(uint32_t, tailSplitSize);
  TILING_DATA_FIELD_DEF(uint32_t, tailReduceSize);
END_TILING_DATA_DEF;
namespace optiling {
using ::LogSoftMaxTiling;
}  // namespace optiling
