// trex test op project: TplScale's tiling data, a plain struct (read with GET_TILING_DATA_WITH_STRUCT).
#pragma once
#include <cstdint>

struct TplScaleTiling {
  uint32_t totalLength;  // elements
  uint32_t blockLength;  // elements per block; the last block takes the rest
  uint32_t tileLength;   // elements per tile (a multiple of 32 B)
};
