// trex test op project: TplScale's host half. The template arguments come from the input dtype, the
// `scale` attribute and whether the length is a multiple of 32 B; ASCENDC_TPL_SEL_PARAM sets the key.
#include "register/op_def_registry.h"
#include "platform/platform_info.h"  // fe::PlatFormInfos, as cann-ops op_host files include it
#include "../op_kernel/tpl_scale_tiling.h"
#include "../op_kernel/tiling_key_tpl_scale.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
  const uint32_t total = static_cast<uint32_t>(context->GetInputShape(0)->GetOriginShape().GetShapeSize());
  const ge::DataType dtype = context->GetInputDesc(0)->GetDataType();
  const uint32_t typeLen = dtype == ge::DT_FLOAT ? 4 : 2;
  const uint32_t align = 32 / typeLen;
  const fe::PlatFormInfos* platform = context->GetPlatformInfo();
  const uint32_t cores = platform != nullptr ? 4 : 1;
  uint32_t perBlock = (total + cores - 1) / cores;
  perBlock = (perBlock + align - 1) / align * align;
  const uint32_t blocks = (total + perBlock - 1) / perBlock;
  TplScaleTiling* tiling = context->GetTilingData<TplScaleTiling>();
  tiling->totalLength = total;
  tiling->blockLength = perBlock;
  tiling->tileLength = 64;
  context->SetBlockDim(blocks);
  const uint32_t D_T = static_cast<uint32_t>(dtype);
  const uint32_t SCALE = *context->GetAttrs()->GetAttrPointer<uint32_t>(0);  // an int attribute read as uint32
  const uint32_t USE_PAD = total % align != 0;
  ASCENDC_TPL_SEL_PARAM(context, D_T, SCALE, USE_PAD);
  size_t* ws = context->GetWorkspaceSizes(1);
  ws[0] = 0;
  return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ops {
class TplScale : public OpDef {
 public:
  explicit TplScale(const char* name) : OpDef(name) {
    this->Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
    this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT16, ge::DT_FLOAT}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
    this->Attr("scale").AttrType(OPTIONAL).Int(2);
    this->AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
  }
};
OP_ADD(TplScale);
}  // namespace ops
