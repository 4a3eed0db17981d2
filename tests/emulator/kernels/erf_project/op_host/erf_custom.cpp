// trex test op project: ErfCustom's host half. Attribute `complement` picks Erfc (tiling key 2) over Erf
// (key 1); the temporary buffer is sized with the API's host helper.
#include "erf_custom_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/tiling_api.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
  ErfCustomTilingData tiling;
  const uint32_t total = static_cast<uint32_t>(context->GetInputShape(0)->GetStorageShape().GetShapeSize());
  const uint32_t typeSize = context->GetInputDesc(0)->GetDataType() == ge::DT_FLOAT ? 4 : 2;
  const uint32_t align = 32 / typeSize;
  const uint32_t cores = 3;
  uint32_t perBlock = (total + cores - 1) / cores;
  perBlock = (perBlock + align - 1) / align * align;
  const bool complement = *context->GetAttrs()->GetBool(0);
  const uint32_t tile = 96;
  uint32_t maxTmp = 0, minTmp = 0;
  if (complement) AscendC::GetErfcMaxMinTmpSize(ge::Shape({tile}), typeSize, false, maxTmp, minTmp);
  else AscendC::GetErfMaxMinTmpSize(ge::Shape({tile}), typeSize, false, maxTmp, minTmp);
  tiling.set_totalLength(total);
  tiling.set_blockLength(perBlock);
  tiling.set_tileLength(tile);
  tiling.set_tmpBytes(minTmp);
  context->SetBlockDim((total + perBlock - 1) / perBlock);
  context->SetTilingKey(complement ? 2 : 1);
  tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
  context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
  size_t* ws = context->GetWorkspaceSizes(1);
  ws[0] = 0;
  return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ops {
class ErfCustom : public OpDef {
 public:
  explicit ErfCustom(const char* name) : OpDef(name) {
    this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
    this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
    this->Attr("complement").AttrType(OPTIONAL).Bool(false);
    this->AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
  }
};
OP_ADD(ErfCustom);
}  // namespace ops
