"""Host registration forms of cann-ops' angle_v2/is_finite/is_inf, add_sigmoid_mul_reduce_sum_d and lin_space
(h23_blockers 14, 21, 22; CANN register/op_impl_registry.h): IMPL_OP_INFERSHAPE(Op).InferShape(f)
.InferDataType(g), InferShapeContext::GetInputDesc(i)->GetOriginFormat(), and IMPL_OP_OPTILING(Op).Tiling(fn)
.TilingInputsDataDependency({1}) whose tiling function reads an input's data. Framework launch over 3 blocks
of odd lengths, output poisoned."""
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator.op_project import OpProject
from trex.codegen_ascendc.emulator.runner import compiler_available

PROJECT = Path(__file__).parent / "kernels" / "infer_chain_project"


@pytest.fixture(scope="module")
def proj():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return OpProject(PROJECT / "op_kernel" / "chain_scale.cpp", opt="-O0")


def test_registration_chain_loads_and_names_the_op(proj):
    assert [i.name for i in proj.info.inputs] == ["x", "scale"]
    assert [o.name for o in proj.info.outputs] == ["y"]


@pytest.mark.parametrize("n, scale", [(1001, 0.5), (7, -3.0), (4096, 2.0)])
def test_value_dependent_tiling_over_three_blocks(proj, n, scale):
    x = torch.randn(n)
    y = torch.full((n,), float("nan"))
    run = proj.run([x, torch.tensor([scale])], [y])
    assert run.block_dim == 3
    assert torch.equal(y, x * scale)
