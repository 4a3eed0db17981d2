"""PlatformAscendC::GetCoreMemSize and ReserveLocalMemory as asc-devkit's impl/utils/tiling/platform/
platform_ascendc.cpp computes them: on Ascend910B / Ascend910_93 (SocVersion::ASCEND910B) UB and L1 report 256 B
less than the chip holds (LOCAL_RESERV_SIZE, the KFC reserve); other SoCs report the whole UB; ReserveLocalMemory
(RESERVED_SIZE_8K/16K/32K) takes that much more off UB for later queries, the last call winning (its page). An op
project written here per SoC: its tiling function records the queries, every block of the kernel copies them into
its slot of a poisoned output."""
import pytest
import torch

from trex.codegen_ascendc.emulator.op_project import OpProject

TILING_H = r"""
#pragma once
#include "register/tilingdata_base.h"
namespace optiling {
BEGIN_TILING_DATA_DEF(UbQueryTilingData)
  TILING_DATA_FIELD_DEF(uint32_t, ubFirst);
  TILING_DATA_FIELD_DEF(uint32_t, ubAfter);
  TILING_DATA_FIELD_DEF(uint32_t, l1);
  TILING_DATA_FIELD_DEF(uint32_t, ubManager);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(UbQuery, UbQueryTilingData)
}  // namespace optiling
"""

HOST = r"""
#include "ub_query_tiling.h"
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

namespace optiling {
static ge::graphStatus TilingFunc(gert::TilingContext* context) {
  UbQueryTilingData tiling;
  auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
  uint64_t ub = 0, ub2 = 0, l1 = 0, ubm = 0;
  platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub);
  const int64_t reserve = *context->GetAttrs()->GetInt(0);
  if (reserve >= 0) platform.ReserveLocalMemory(static_cast<platform_ascendc::ReservedSize>(reserve));
  if (reserve >= 0) platform.ReserveLocalMemory(static_cast<platform_ascendc::ReservedSize>(reserve));  // twice: the last wins
  platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ub2);
  platform.GetCoreMemSize(platform_ascendc::CoreMemType::L1, l1);
  platform_ascendc::PlatformAscendCManager::GetInstance()->GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubm);
  tiling.set_ubFirst(static_cast<uint32_t>(ub));
  tiling.set_ubAfter(static_cast<uint32_t>(ub2));
  tiling.set_l1(static_cast<uint32_t>(l1));
  tiling.set_ubManager(static_cast<uint32_t>(ubm));
  context->SetBlockDim(3);
  context->SetTilingKey(1);
  tiling.SaveToBuffer(context->GetRawTilingData()->GetData(), context->GetRawTilingData()->GetCapacity());
  context->GetRawTilingData()->SetDataSize(tiling.GetDataSize());
  size_t* ws = context->GetWorkspaceSizes(1);
  ws[0] = 0;
  return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
static graphStatus InferShape(gert::InferShapeContext* context) { return GRAPH_SUCCESS; }
}  // namespace ge

namespace ops {
class UbQuery : public OpDef {
 public:
  explicit UbQuery(const char* name) : OpDef(name) {
    this->Input("x").ParamType(REQUIRED).DataType({ge::DT_INT32}).Format({ge::FORMAT_ND});
    this->Output("y").ParamType(REQUIRED).DataType({ge::DT_INT32}).Format({ge::FORMAT_ND});
    this->Attr("reserve").AttrType(OPTIONAL).Int(-1);
    this->SetInferShape(ge::InferShape);
    this->AICore().SetTiling(optiling::TilingFunc);
    @CONFIGS@
  }
};
OP_ADD(UbQuery);
}  // namespace ops
"""

KERNEL = r"""
#include "kernel_operator.h"
using namespace AscendC;
extern "C" __global__ __aicore__ void ub_query(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA(t, tiling);
  GlobalTensor<int32_t> yg;
  yg.SetGlobalBuffer((__gm__ int32_t*)y + GetBlockIdx() * 4, 4);
  yg.SetValue(0, (int32_t)t.ubFirst);
  yg.SetValue(1, (int32_t)t.ubAfter);
  yg.SetValue(2, (int32_t)t.l1);
  yg.SetValue(3, (int32_t)t.ubManager);
}
"""


def project(tmp_path, socs):
    root = tmp_path / ("ub_query_" + ("_".join(socs) or "none"))
    (root / "op_host").mkdir(parents=True)
    (root / "op_kernel").mkdir()
    configs = " ".join(f'this->AICore().AddConfig("{s}");' for s in socs)
    (root / "op_host" / "ub_query_tiling.h").write_text(TILING_H)
    (root / "op_host" / "ub_query.cpp").write_text(HOST.replace("@CONFIGS@", configs))
    (root / "op_kernel" / "ub_query.cpp").write_text(KERNEL)
    return OpProject(root / "op_kernel" / "ub_query.cpp", opt="-O0")


def query(proj, reserve=-1):
    y = torch.full((3, 4), 0x5A5A5A5A, dtype=torch.int32)  # poisoned: each block writes its row
    run = proj.run([torch.zeros(8, dtype=torch.int32)], [y], {"reserve": reserve})
    assert run.block_dim == 3 and run.counters["blocks_run"] == 3
    assert (y == y[0]).all()
    return y[0].tolist()


KB = 1024


@pytest.mark.parametrize("socs, ub, reserve910b", [
    (["ascend910b"], 192 * KB, 256),
    (["ascend910_93"], 192 * KB, 256),
    ([], 192 * KB, 256),                       # no known SoC: 910B's, as op_project.UB_BYTES defaults
    (["ascend310p"], 256 * KB, 0),
    (["ascend910"], 256 * KB, 0),
    (["ascend310b", "ascend910b"], 256 * KB, 0),  # the first known SoC decides
])
def test_ub_and_l1_report_the_910b_kfc_reserve(compile_source, tmp_path, socs, ub, reserve910b):
    proj = project(tmp_path, socs)
    assert proj.info.ub_bytes == ub
    first, after, l1, manager = query(proj)
    assert first == after == ub - reserve910b
    assert l1 == 512 * KB - reserve910b
    assert manager == 192 * KB - 256  # PlatformAscendCManager's default platform: 910B


@pytest.mark.parametrize("reserve, kb", [(0, 8), (1, 16), (2, 32)])
@pytest.mark.parametrize("socs, ub, reserve910b", [(["ascend910b"], 192 * KB, 256), (["ascend310p"], 256 * KB, 0)])
def test_reserve_local_memory_takes_its_size_off_later_ub_queries(compile_source, tmp_path, reserve, kb, socs, ub,
                                                                  reserve910b):
    proj = project(tmp_path, socs)
    first, after, l1, _ = query(proj, reserve)
    assert first == ub - reserve910b
    assert after == ub - reserve910b - kb * KB  # reserved twice: the last call's size, not the sum
    assert l1 == 512 * KB - reserve910b          # L1 is not affected by ReserveLocalMemory
