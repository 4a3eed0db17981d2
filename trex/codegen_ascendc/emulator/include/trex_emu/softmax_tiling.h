// SoftMaxTiling: the tiling struct of the SoftMax advanced API, shared by both halves of an op project
// (the op_host tiling header embeds it with TILING_DATA_FIELD_DEF_STRUCT(SoftMaxTiling, ...), the
// kernel reads it from GET_TILING_DATA), so the bytes the host saves are the layout the kernel reads.
// Fields as CANN's (16 uint32_t, srcM ... tailReduceSize). The emulated SoftMax uses srcM/srcK only
// when the call gives no SoftMaxShapeInfo; the split fields describe how the NPU library tiles rows.
#pragma once
#include <cstdint>

#include "register/tilingdata_base.h"

BEGIN_TILING_DATA_DEF(SoftMaxTiling)
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
using ::SoftMaxTiling;
}  // namespace optiling
