// tiling/tiling_api.h, kernel side: op_host tiling headers (included before the kernel, see
// op_project.py) include it for the adv APIs' tiling structs: the tiling-data macros, SoftMaxTiling, and
// (for headers that also hold host tiling code) the SoftMax host helpers over a minimal ge::Shape.
#pragma once
#include <cstdint>
#include <vector>

#include "register/tilingdata_base.h"
#include "trex_emu/softmax_tiling.h"
#include "trex_emu/softmax_tiling_host.h"
#include "trex_emu/erf_tiling_host.h"
#include "trex_emu/adv_tiling_host.h"

namespace ge {
class Shape {
 public:
  Shape() = default;
  explicit Shape(const std::vector<int64_t>& dims) : dims_(dims) {}
  size_t GetDimNum() const { return dims_.size(); }
  int64_t GetDim(size_t i) const { return i < dims_.size() ? dims_[i] : 0; }

 private:
  std::vector<int64_t> dims_;
};
}  // namespace ge
