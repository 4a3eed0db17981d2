"""The fuzzing strategies draw what they promise: every dtype, edge row counts, strided layouts,
each kind of special value, valid arguments (the reference accepts them), the profile's size cap;
and the tiling choosers only draw feasible tilings."""
import collections
import dataclasses
import random

import pytest
import torch
from hypothesis import given, settings

from trex.codegen_ascendc.counting import ascend_cost_model
from trex.cost_models.hardware import ASCEND_910B
from trex.passes.rms_norm.ir import build_rms_norm_fwd
from trex.compiler import registry
from trex.compiler.kernel_ir import DType, bind_sizes
from trex.compiler.strategies import EDGE_ROWS, profile_element_cap
from trex.compiler.strategies import fuzz_arguments


def test_every_registered_fused_op_registers_an_argument_generator():
    """Each op package of trex/passes/ registers its ops' generators with the op
    (define_fused_op(fuzz_arguments=)), so the fuzz suite covers a new op with no edit outside its package."""
    fused = registry.fused_ops()
    assert {"rms_norm", "rms_norm_bwd", "add_rms_norm", "swiglu_limited", "swiglu_limited_bwd", "rope",
            "mhc_pre", "mhc_pre_bwd"} <= set(fused)
    missing = sorted(name for name, fop in fused.items() if fop.fuzz_arguments is None)
    assert not missing, f"fused ops without fuzz_arguments=: {missing}"


@pytest.mark.parametrize("op_name", sorted(registry.fused_ops()))
def test_every_generator_draws_arguments_its_reference_accepts(op_name):
    fop = registry.fused_ops()[op_name]

    @settings(max_examples=10)
    @given(args=fuzz_arguments(op_name))
    def draw(args):
        assert len(args) == len(fop.op._schema.arguments), args
        fop.reference(*args)

    draw()


def test_an_op_without_a_generator_names_the_fix(monkeypatch):
    with pytest.raises(KeyError, match="not a registered fused op"):
        fuzz_arguments("no_such_op")
    fop = registry.fused_ops()["rms_norm"]
    monkeypatch.setitem(registry._FUSED_OPS, "rms_norm", dataclasses.replace(fop, fuzz_arguments=None))
    with pytest.raises(KeyError, match=r"pass fuzz_arguments=.* to define_fused_op in trex\.passes\.rms_norm\.op"):
        fuzz_arguments("rms_norm")


@pytest.mark.parametrize("op_name", ["rms_norm", "swiglu_limited"])
def test_strategy_covers_dtypes_rows_layouts_and_special_values(op_name):
    seen: collections.Counter = collections.Counter()
    cap = profile_element_cap()
    fop = registry.fused_ops()[op_name]

    @settings(max_examples=300)
    @given(args=fuzz_arguments(op_name))
    def draw(args):
        x = args[0]
        assert x.numel() <= max(cap, x.shape[-1] * (x.shape[-2] if x.dim() == 3 else 1))   # >= 1 row always
        fop.reference(*args)                      # valid arguments: the reference accepts them
        rows = x.numel() // max(x.shape[-1], 1)
        seen[x.dtype] += 1
        seen["edge rows"] += rows in EDGE_ROWS
        seen["strided"] += not x.is_contiguous()
        xf = x.float()
        seen["nan"] += bool(torch.isnan(xf).any())
        seen["inf"] += bool(torch.isinf(xf).any())
        seen["zero row"] += bool((xf.reshape(-1, x.shape[-1]) == 0).all(-1).any())
        seen["large"] += bool(xf.abs().max() >= 1e4)
        if op_name == "swiglu_limited":
            seen["at limit"] += bool((xf.abs() == args[2]).any())

    draw()
    wanted = [torch.bfloat16, torch.float16, torch.float32, "edge rows", "strided", "nan", "inf", "zero row", "large"]
    wanted += ["at limit"] if op_name == "swiglu_limited" else []
    assert all(seen[k] > 0 for k in wanted), seen


def test_random_feasible_tiling_draws_only_feasible_points():
    program = build_rms_norm_fwd(DType.BF16)
    model = ascend_cost_model(program, ASCEND_910B)
    x, w = torch.zeros(129, 7168, dtype=torch.bfloat16), torch.zeros(7168, dtype=torch.bfloat16)
    sizes = bind_sizes(program, {"x": x, "w": w}, {"eps": 1e-6})
    rng = random.Random(0)
    drawn = {model.random_feasible_tiling(sizes, rng) for _ in range(40)}
    drawn.discard(None)
    assert len(drawn) > 5
    for til in drawn:
        assert model.violations(sizes, til) == [], til
