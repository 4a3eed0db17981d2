// trex test op project: AddList's tiling data (a plain struct, GET_TILING_DATA_WITH_STRUCT).
#pragma once
#include <cstdint>
struct AddListTiling {
  uint32_t n, count, perBlock;
};
