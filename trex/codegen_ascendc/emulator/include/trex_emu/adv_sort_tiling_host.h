// Host tiling helper of the Sort advanced API (impl/adv_api/tiling/sort/sort_tiling_impl.cpp) with SortType /
// SortConfig (include/adv_api/sort/sort_utils*.h). At asc-devkit 82b89a1 GetSortMaxMinTmpSize supports only the
// 950 architectures (DAV_3510 / DAV_5102): on Atlas A2/A3 its ASCENDC_HOST_ASSERT logs "Unsupported NpuArch for Sort
// API." and returns with maxValue / minValue not written. The emulated chip is A2/A3, so this does the same (the
// message on stderr, the outputs untouched).
#pragma once
#include <cstdint>
#include <cstdio>

namespace AscendC {
#ifndef TREX_EMU_SORT_CONFIG
#define TREX_EMU_SORT_CONFIG
enum class SortType { RADIX_SORT, MERGE_SORT };
struct SortConfig {
  SortType type = SortType::RADIX_SORT;
  bool isDescend = false;
  bool hasSrcIndex = false;
  bool hasDstIndex = false;
};
#endif
template <class Shape, class DT>
inline void GetSortMaxMinTmpSize(const Shape&, DT, DT, bool, const SortConfig&, uint32_t&, uint32_t&) {
  std::fprintf(stderr, "[ERROR] [GetSortMaxMinTmpSize] Unsupported NpuArch for Sort API. (Atlas A2/A3: the outputs "
                       "are not written)\n");
}
}  // namespace AscendC
