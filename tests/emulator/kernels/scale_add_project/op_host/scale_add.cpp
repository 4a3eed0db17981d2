// trex test op project: the host half. Tiling key 1: float, key 2: half; blocks split the rows.
#include "scale_add_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"
#include "graph/utils/type_utils.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
  ScaleAddTilingData tiling;
  auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
  uint64_t ub = 0;
  platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
  const gert::StorageShape* xs = context->GetInputShape(0);
  const uint32_t total = static_cast<uint32_t>(xs->GetStorageShape().GetShapeSize());
  uint32_t typeLen = 0;
  ge::TypeUtils::GetDataTypeLength(context->GetInputDesc(0)->GetDataType(), typeLen);
  const uint32_t align = 32 / typeLen;
  const uint32_t cores = platform.GetCoreNumAiv();
  uint32_t perBlock = (total + cores - 1) / cores;
  perBlock = (perBlock + align - 1) / align * align;
  const uint32_t blocks = (total + perBlock - 1) / perBlock;
  tiling.set_totalLength(total);
  tiling.set_blockLength(perBlock);
  tiling.set_tileLength(std::min<uint32_t>(perBlock, static_cast<uint32_t>(ub / 8 / typeLen / align * align)));
  tiling.set_alpha(*context->GetAttrs()->GetFloat(0));
  const uint32_t shape[2] = {static_cast<uint32_t>(xs->GetStorageShape().GetDim(0)),
                             static_cast<uint32_t>(xs->GetStorageShape().GetDimNum() > 1 ? xs->GetStorageShape().GetDim(1) : 1)};
  tiling.set_shape(shape);
  context->SetBlockDim(blocks);
  context->SetTilingKey(context->GetInputDesc(0)->GetDataType() == ge::DT_FLOAT ? 1 : 2);
  tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
  context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
  size_t* ws = context->GetWorkspaceSizes(1);
  ws[0] = 64;
  return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static graphStatus InferShape(gert::InferShapeContext* context) {
  *context->GetOutputShape(0) = *context->GetInputShape(0);
  return GRAPH_SUCCESS;
}
}  // namespace ge

namespace ops {
class ScaleAdd : public OpDef {
 public:
  explicit ScaleAdd(const char* name) : OpDef(name) {
    this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
    this->Input("bias").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
    this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
    this->Attr("alpha").AttrType(OPTIONAL).Float(2.0);
    this->SetInferShape(ge::InferShape);
    this->AICore().SetTiling(optiling::TilingFunc);
    this->AICore().AddConfig("ascend910b");
  }
};
OP_ADD(ScaleAdd);
}  // namespace ops
