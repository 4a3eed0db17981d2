// trex test op project (written for trex): RowSum's host half. Four ops share one kernel and differ in
// their output's InitValue (asc-devkit OpParamDef/InitValue.md): 0, a ScalarVar, a ScalarVar per DataType
// entry, and a non-zero uint64_t (which InitValue does not take). The attr need_atomic decides whether the
// tiling function calls SetNeedAtomic(true) (tiling key 1: blocks atomically add their rows' sums into y)
// or not (key 2: the kernel writes nothing, so y shows whether InitValue was applied).
#include <string>

#include "graph/utils/type_utils.h"
#include "row_sum_tiling.h"

namespace ge {
// A graph-mode helper in the style of cann-ops lin_space.cpp (ge::Operator, ge::Tensor, ge::AscendString).
static size_t ConstCount(const Operator& op, const Tensor& t, std::string& name) {
  AscendString s;
  (void)op.GetName(s);
  name = s.GetString();
  return t.GetSize() / sizeof(int64_t);
}
}  // namespace ge

namespace optiling {
uint32_t RowSumTiling::HostChecks() const {
  uint32_t bits = 0;
  const gert::ComputeNodeInfo* info = context_->GetComputeNodeInfo();
  if (info->GetInputsNum() == 1 && info->GetOutputsNum() == 1 && info->GetIrInputsNum() == 1) bits |= 1;
  const gert::AnchorInstanceInfo* inst = info->GetInputInstanceInfo(0);
  if (inst != nullptr && inst->GetInstanceStart() == 0 && inst->GetInstantiationNum() == 1) bits |= 2;
  const ge::DataType dt = context_->GetInputDesc(0)->GetDataType();
  const std::string dt_name = ge::TypeUtils::DataTypeToSerialString(dt);
  if (dt_name == (dt == ge::DT_FLOAT ? "DT_FLOAT" : "DT_FLOAT16")) bits |= 4;
  const int32_t packed = static_cast<int32_t>(ge::FORMAT_ND) | (5 << 8);
  if (ge::TypeUtils::FormatToSerialString(static_cast<ge::Format>(ge::GetPrimaryFormat(packed))) == "ND" &&
      ge::GetSubFormat(packed) == 5 && ge::HasSubFormat(packed) &&
      ge::TypeUtils::FormatToSerialString(context_->GetInputDesc(0)->GetOriginFormat()) == "ND")
    bits |= 8;
  const int64_t consts[3] = {4, 5, 6};
  ge::Tensor t(ge::TensorDesc(ge::Shape({3}), ge::FORMAT_ND, ge::DT_INT64),
               reinterpret_cast<const uint8_t*>(consts), sizeof(consts));
  std::string name;
  if (ge::ConstCount(ge::Operator("row_sum_node", "RowSum"), t, name) == 3 && name == "row_sum_node" &&
      ge::UNKNOWN_DIM_NUM == -2)
    bits |= 16;
  return bits;
}

ge::graphStatus RowSumTiling::Run() {
  RowSumTilingData tiling;
  const gert::Shape& shape = context_->GetInputShape(0)->GetStorageShape();
  const uint32_t rows = static_cast<uint32_t>(shape.GetDim(0));
  const uint32_t cols = static_cast<uint32_t>(shape.GetDim(1));
  const uint32_t blocks = rows < MAX_BLOCKS ? rows : MAX_BLOCKS;
  uint32_t first[MAX_BLOCKS + 1] = {};
  for (uint32_t b = 0; b <= blocks; ++b) first[b] = rows * b / blocks;
  tiling.set_rows(rows);
  tiling.set_cols(cols);
  tiling.set_hostChecks(HostChecks());
  tiling.set_firstRow(first);
  const bool need_atomic = *context_->GetAttrs()->GetAttrPointer<int64_t>(0) != 0;
  context_->SetNeedAtomic(need_atomic);
  context_->SetTilingKey(need_atomic ? 1 : 2);
  context_->SetBlockDim(blocks);
  tiling.SaveToBuffer(context_->GetRawTilingData()->GetData(), context_->GetRawTilingData()->GetCapacity());
  context_->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
  context_->GetWorkspaceSizes(1)[0] = 0;
  return ge::GRAPH_SUCCESS;
}

static ge::graphStatus TilingFunc(gert::TilingContext* context) { return RowSumTiling(context).Run(); }
}  // namespace optiling

namespace ops {
// The OpDef of every RowSum variant; `init` sets the output's InitValue.
template <class Init>
static void DefineRowSum(OpDef& op, Init init) {
  op.Input("x").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND});
  init(op.Output("y").ParamType(REQUIRED).DataType({ge::DT_FLOAT, ge::DT_FLOAT16}).Format({ge::FORMAT_ND, ge::FORMAT_ND}));
  op.Attr("need_atomic").AttrType(OPTIONAL).Int(1);
  op.AICore().SetTiling(optiling::TilingFunc).AddConfig("ascend910b");
}

class RowSumZero : public OpDef {
 public:
  explicit RowSumZero(const char* name) : OpDef(name) { DefineRowSum(*this, [](OpParamDef& y) { y.InitValue(0); }); }
};
class RowSumScalar : public OpDef {
 public:
  explicit RowSumScalar(const char* name) : OpDef(name) {
    DefineRowSum(*this, [](OpParamDef& y) { y.InitValue({ScalarType::FLOAT32, 1.5}); });
  }
};
class RowSumList : public OpDef {
 public:
  explicit RowSumList(const char* name) : OpDef(name) {
    DefineRowSum(*this, [](OpParamDef& y) { y.InitValue({{ScalarType::FLOAT32, 2.5}, {ScalarType::FLOAT16, 3}}); });
  }
};
class RowSumBadInit : public OpDef {
 public:
  explicit RowSumBadInit(const char* name) : OpDef(name) {
    DefineRowSum(*this, [](OpParamDef& y) { y.InitValue(uint64_t{5}); });
  }
};
OP_ADD(RowSumZero);
OP_ADD(RowSumScalar);
OP_ADD(RowSumList);
OP_ADD(RowSumBadInit);
}  // namespace ops
