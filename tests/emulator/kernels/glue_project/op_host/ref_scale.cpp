// trex test op project: RefScale's host half, using CANN header names and helpers the cann-ops projects use
// (exe_graph/runtime/tiling_context.h, GetSigmoidMaxMinTmpSize, GetMeanMaxMinTmpSize, a writable array getter).
#include "ref_scale_tiling.h"
#include "exe_graph/runtime/tiling_context.h"
#include "register/op_def_registry.h"
#include "register/op_impl_registry.h"  // CANN op_host files include either (cann-ops pows_tiling.cc)
#include "tiling/tiling_api.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
  RefScaleTilingData tiling;
  const uint32_t n = static_cast<uint32_t>(context->GetInputShape(0)->GetStorageShape().GetShapeSize());
  const uint32_t typeSize = context->GetInputDesc(0)->GetDataType() == ge::DT_FLOAT ? 4 : 2;
  tiling.set_n(n);
  uint32_t* sizes = tiling.get_sizes();
  AscendC::GetSigmoidMaxMinTmpSize(ge::Shape({n}), typeSize, false, sizes[0], sizes[1]);
  AscendC::GetMeanMaxMinTmpSize(n, typeSize, 4, false, sizes[2], sizes[3]);
  context->SetBlockDim(1);
  tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
  context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
  size_t* ws = context->GetWorkspaceSizes(1);
  ws[0] = 0;
  return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ops {
class RefScale : public OpDef {
 public:
  explicit RefScale(const char* name) : OpDef(name) {
    this->Input("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
    this->Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
    this->AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
  }
};
OP_ADD(RefScale);
}  // namespace ops
