// trex test op project: ChainScale's host half in the registration style of cann-ops' angle_v2, is_finite and
// lin_space (h23_blockers 14, 21, 22): IMPL_OP_INFERSHAPE(Op).InferShape(f).InferDataType(g), an infer-shape
// function reading GetInputDesc(i)->GetOriginFormat(), and IMPL_OP_OPTILING(Op).Tiling(fn)
// .TilingInputsDataDependency({1}) with a tiling function that reads input 1's data (the scale).
#include "chain_scale_tiling.h"
#include "register/op_def_registry.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
  ChainScaleTilingData tiling;
  const uint32_t n = static_cast<uint32_t>(context->GetInputShape(0)->GetStorageShape().GetShapeSize());
  const uint32_t blocks = 3;
  tiling.set_n(n);
  tiling.set_perBlock((n + blocks - 1) / blocks);
  tiling.set_scale(*context->GetInputTensor(1)->GetData<float>());
  context->SetBlockDim(blocks);
  tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
  context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
  context->GetWorkspaceSizes(1)[0] = 0;
  return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static graphStatus InferShapeChainScale(gert::InferShapeContext* context) {
  if (context->GetInputDesc(0)->GetOriginFormat() != FORMAT_ND) return GRAPH_FAILED;
  *context->GetOutputShape(0) = *context->GetInputShape(0);
  return GRAPH_SUCCESS;
}
static graphStatus InferDataTypeChainScale(gert::InferDataTypeContext* context) {
  (void)context->GetNodeName();
  context->SetOutputDataType(0, context->GetInputDataType(0));
  return GRAPH_SUCCESS;
}
IMPL_OP_INFERSHAPE(ChainScale).InferShape(InferShapeChainScale).InferDataType(InferDataTypeChainScale);
IMPL_OP_OPTILING(ChainScale).Tiling(optiling::TilingFunc).TilingInputsDataDependency({1});
}  // namespace ge

namespace ops {
class ChainScale : public OpDef {
 public:
  explicit ChainScale(const char* name) : OpDef(name) {
    this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
    this->Input("scale").ParamType(REQUIRED).ValueDepend(OPTIONAL).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
    this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT}).Format({ge::FORMAT_ND});
    this->AICore().AddConfig("ascend910b");
  }
};
OP_ADD(ChainScale);
}  // namespace ops
