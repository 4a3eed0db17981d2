// trex test op project (written for trex): RowSum's tiling data next to host code, as cann-ops
// mul_sigmoid_tiling.h has it: a helper class over gert::TilingContext and host includes. The kernel sees
// only the tiling struct and the constant its array size names (CANN generates the kernel's struct).
#pragma once
#include "register/tilingdata_base.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

#define ROW_SUM_HOST_ONLY_MACRO(x) (x)  // not a numeric #define: the kernel never sees it

namespace optiling {
constexpr uint32_t MAX_BLOCKS = 8;
BEGIN_TILING_DATA_DEF(RowSumTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, rows);
  TILING_DATA_FIELD_DEF(uint32_t, cols);
  TILING_DATA_FIELD_DEF(uint32_t, hostChecks);             // one bit per host API check that held
  TILING_DATA_FIELD_DEF_ARR(uint32_t, MAX_BLOCKS + 1, firstRow);  // block b sums rows [firstRow[b], firstRow[b + 1])
END_TILING_DATA_DEF;

REGISTER_TILING_DATA_CLASS(RowSumZero, RowSumTilingData)
REGISTER_TILING_DATA_CLASS(RowSumScalar, RowSumTilingData)
REGISTER_TILING_DATA_CLASS(RowSumList, RowSumTilingData)
REGISTER_TILING_DATA_CLASS(RowSumBadInit, RowSumTilingData)

class RowSumTiling {
 public:
  explicit RowSumTiling(gert::TilingContext* context) : context_(context) {}
  ge::graphStatus Run();
 private:
  uint32_t HostChecks() const;
  gert::TilingContext* context_;
};
}  // namespace optiling
