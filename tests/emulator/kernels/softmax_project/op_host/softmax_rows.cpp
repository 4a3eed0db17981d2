// trex emulator tests: op_host of SoftmaxRows: rows split over the cores, the SoftMax tiling from
// SoftMaxTilingFunc; tiling key 1 for float, 2 for half. Registered with DEVICE_IMPL_OP_OPTILING (the
// tiling-sink registration) besides OP_ADD's SetTiling: both name the same function.
#include "softmax_rows_tiling.h"
#include "register/device_op_impl_registry.h"
#include "register/op_def_registry.h"
#include "graph/utils/type_utils.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
  SoftmaxRowsTilingData tiling;
  const gert::Shape shape = context->GetInputShape(0)->GetStorageShape();
  const uint32_t cols = static_cast<uint32_t>(shape.GetDim(shape.GetDimNum() - 1));
  const uint32_t rows = static_cast<uint32_t>(shape.GetShapeSize() / cols);
  auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
  uint32_t blocks = platform.GetCoreNumAiv();
  while (rows % blocks != 0) --blocks;
  const uint32_t per = rows / blocks;
  uint32_t typeSize = 0;
  ge::TypeUtils::GetDataTypeLength(context->GetInputDesc(0)->GetDataType(), typeSize);
  ge::Shape src({static_cast<int64_t>(per), static_cast<int64_t>(cols)});
  const uint32_t tmp = AscendC::GetSoftMaxMinTmpSize(src, typeSize, false);
  AscendC::SoftMaxTilingFunc(src, typeSize, tmp, tiling.softmax);
  tiling.set_rowsPerBlock(per);
  tiling.set_cols(cols);
  context->SetBlockDim(blocks);
  context->SetTilingKey(typeSize == 4 ? 1 : 2);
  tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
  context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
  size_t* ws = context->GetWorkspaceSizes(1);
  ws[0] = 0;
  return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ops {
class SoftmaxRows : public OpDef {
 public:
  explicit SoftmaxRows(const char* name) : OpDef(name) {
    // ValueDepend with DependScope::TILING (tiling sink): accepted; the tiling function sees x's data anyway
    this->Input("x")
        .ParamType(REQUIRED)
        .DataType({ge::DT_FLOAT, ge::DT_FLOAT16})
        .Format({ge::FORMAT_ND, ge::FORMAT_ND})
        .ValueDepend(OPTIONAL, DependScope::TILING);
    this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
    this->AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
  }
};
OP_ADD(SoftmaxRows);
}  // namespace ops

namespace optiling {
DEVICE_IMPL_OP_OPTILING(SoftmaxRows).Tiling(optiling::TilingFunc);
}  // namespace optiling
