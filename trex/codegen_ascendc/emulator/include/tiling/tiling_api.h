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
#include "trex_emu/adv_math_tiling_host.h"
#include "trex_emu/adv_softmax_ext_tiling_host.h"
#include "trex_emu/adv_reduce_tiling_host.h"
#include "trex_emu/adv_sort_tiling_host.h"
#include "trex_emu/tiling_norm.h"
#include "trex_emu/tiling_deepnorm.h"
#include "trex_emu/tiling_rmsnorm.h"
#include "trex_emu/tiling_welford.h"
#include "trex_emu/tiling_topk.h"
#include "trex_emu/tiling_pad.h"
#include "trex_emu/adv_norm_tiling_host.h"
#include "trex_emu/adv_deepnorm_tiling_host.h"
#include "trex_emu/adv_rmsnorm_tiling_host.h"
#include "trex_emu/adv_welford_tiling_host.h"
#include "trex_emu/adv_topk_tiling_host.h"
#include "trex_emu/adv_pad_tiling_host.h"

// A kernel-launch program (asc_program.py: kernel and host main in one unit, include_host/ on the path
// too) gets the host model's ge::Shape, so host tiling code and this header agree on one type.
#if __has_include("trex_host/ge_types.h")
#include "trex_host/ge_types.h"
#else
namespace ge {
class Shape {
 public:
  Shape() = default;
  explicit Shape(const std::vector<int64_t>& dims) : dims_(dims) {}
  size_t GetDimNum() const { return dims_.size(); }
  int64_t GetDim(size_t i) const { return i < dims_.size() ? dims_[i] : 0; }
  std::vector<int64_t> GetDims() const { return dims_; }
  int64_t GetShapeSize() const {
    int64_t n = 1;
    for (int64_t d : dims_) n *= d;
    return n;
  }

 private:
  std::vector<int64_t> dims_;
};
}  // namespace ge
#endif

// asc-devkit include/adv_api/utils/types.h: the advanced APIs' host tiling functions take the shape as
// AscendC::TensorShape, an alias of ge::Shape.
namespace AscendC {
using TensorShape = ge::Shape;
#if __has_include("trex_host/ge_types.h")
using TensorDataType = ge::DataType;  // include/adv_api/utils/types.h
#endif
}  // namespace AscendC
