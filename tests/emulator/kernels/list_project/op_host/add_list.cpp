// trex test op project (written for trex): AddList, y = x[0] + x[1] + ... over a DYNAMIC input, then + bias
// (a REQUIRED input after the dynamic one: its instance index follows the list). Tiling key 1: float, 2: half.
#include "register/op_def_registry.h"
#include "../op_kernel/add_list_tiling.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
  AddListTiling* t = context->GetTilingData<AddListTiling>();
  uint32_t count = 0;
  while (context->GetDynamicInputShape(0, count) != nullptr && count < context->GetComputeNodeInputNum() - 1) ++count;
  t->count = count;
  t->n = static_cast<uint32_t>(context->GetDynamicInputShape(0, 0)->GetStorageShape().GetShapeSize());
  for (uint32_t j = 1; j < count; ++j)
    if (context->GetDynamicInputShape(0, j)->GetStorageShape().GetShapeSize() != t->n) return ge::GRAPH_FAILED;
  // bias is IR input 1 and instance `count`
  if (context->GetOptionalInputShape(1)->GetStorageShape().GetShapeSize() != t->n) return ge::GRAPH_FAILED;
  const uint32_t blocks = t->n >= 256 ? 4 : 1;
  t->perBlock = (t->n + blocks - 1) / blocks;
  t->perBlock = (t->perBlock + 15) / 16 * 16;
  context->SetBlockDim((t->n + t->perBlock - 1) / t->perBlock);
  context->SetTilingKey(context->GetDynamicInputDesc(0, 0)->GetDataType() == ge::DT_FLOAT ? 1 : 2);
  size_t* ws = context->GetWorkspaceSizes(1);
  ws[0] = 0;
  return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ops {
class AddList : public OpDef {
 public:
  explicit AddList(const char* name) : OpDef(name) {
    this->Input("x").ParamType(DYNAMIC).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
    this->Input("bias").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
    this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
    this->AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
  }
};
OP_ADD(AddList);
}  // namespace ops
