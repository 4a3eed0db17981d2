"""Generated AscendC run through the emulator: outputs equal the IR reference interpreter's (same
schedule), and the cost model's MTE2/MTE3 bytes equal the emulator's counters, for every pattern
and several tilings (including the solver's choice). Skips without a C++ compiler."""
import math

import pytest
import torch
from hypothesis import example, given, settings, strategies as st

from trex.codegen_ascendc.emulator.runner import compiler_available
from trex.codegen_ascendc.launch import EmulatedKernel
from trex.codegen_ascendc.counting import ascend_cost_model
from trex.cost_models.ascend_model import Tiling
from trex.cost_models.hardware import ASCEND_910B
from trex.compiler.kernel_ir import DType, bind_sizes, interpret
from trex.compiler import registry
from trex.tuning import harness

SPECS = registry.kernel_specs()

pytestmark = pytest.mark.skipif(not compiler_available(), reason="no C++ compiler (g++/$CXX) for the emulator")
BF = torch.bfloat16


def inputs_for(name: str, rows: int, width: int, g: torch.Generator):
    def r(*s, dt=BF, scale=1.0):
        return (torch.randn(*s, generator=g) * scale).to(dt)
    if name == "rms_norm":
        return {"x": r(rows, width), "w": r(width)}, {"eps": 1e-6}
    if name == "rms_norm_bwd":
        return {"dy": r(rows, width), "x": r(rows, width), "w": r(width),
                "rstd": torch.rand(rows, 1, generator=g) + 0.5}, {}
    if name == "swiglu_limited":
        return {"gate": r(rows, width, scale=4), "up": r(rows, width, scale=4),
                "route_weight": torch.rand(rows, 1, generator=g)}, {"limit": 3.0}
    if name == "swiglu_limited_bwd":
        return {"dh": r(rows, width), "gate": r(rows, width, scale=4), "up": r(rows, width, scale=4),
                "route_weight": torch.rand(rows, 1, generator=g)}, {"limit": 3.0}
    if name == "rope":
        heads, rd = 3, 2 * max(1, min(width, 64) // 2)
        return {"x": r(rows * heads, width + 8), "cos2": r(rows, rd), "sin2": r(rows, rd)}, {"cdiv": heads}
    if not name.startswith("mhc_pre"):
        # any other op: a row op whose every column size is `width`, inputs drawn from its program's views
        spec = SPECS[name]
        sizes = {k: (rows if k == "ROWS" else width) for k in spec.sizes["example"]}
        p = spec.program(DType.BF16)
        return harness.make_inputs(p, sizes, int(torch.randint(1 << 30, (1,), generator=g))), \
            harness.scalars_for(name, p, sizes)
    n = 4      # the AscendC layout's programs take the Cube's projection hproj = x fn^T, not fn
    common = {"x": r(rows, n, width), "hproj": torch.randn(rows, 2 + n, n, generator=g),
              "scale": torch.rand(3, 1, generator=g) + 0.5, "base": torch.randn(2 + n, n, generator=g) * 0.1}
    sc = {"iters": 4, "hc_eps": 1e-6, "rms_eps": 1e-6}
    if name == "mhc_pre":
        return common, sc
    return {"dli": r(rows, width), "dpost": torch.randn(rows, n, generator=g),
            "dcomb": torch.randn(rows, n, n, generator=g), **common}, sc


def ulp_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """How many representable values of the (16-bit) dtype lie between a and b, elementwise: the
    sign-magnitude bit patterns mapped onto one ordered integer line (+0 and -0 both at 0)."""
    def ordered(t):
        bits = t.contiguous().view(torch.int16).to(torch.int32)
        return torch.where(bits < 0, -(bits & 0x7FFF), bits)
    return (ordered(a) - ordered(b)).abs()


def assert_within_ulps(got: torch.Tensor, want: torch.Tensor, ulps: int, msg: str) -> None:
    assert got.dtype == want.dtype and got.shape == want.shape, (msg, got.dtype, want.dtype, got.shape, want.shape)
    nan_got, nan_want = torch.isnan(got), torch.isnan(want)
    assert torch.equal(nan_got, nan_want), f"{msg}: NaN at other positions"
    distance = torch.where(nan_want, 0, ulp_distance(got, want))
    worst = int(distance.max()) if distance.numel() else 0
    if worst > ulps:
        i = int(distance.flatten().argmax())
        raise AssertionError(f"{msg}: {worst} ulps apart at flat index {i} (got {got.flatten()[i].item()}, "
                             f"want {want.flatten()[i].item()}); allowed {ulps}")


def test_ulp_distance_counts_representable_values():
    one = torch.tensor([1.0], dtype=BF)
    after = torch.nextafter(one.float(), torch.tensor([2.0])).to(BF)      # fp32 step rounds back to 1.0
    assert int(ulp_distance(one, after)) == 0
    up = (one.view(torch.int16) + 1).view(BF)
    assert int(ulp_distance(one, up)) == 1
    assert int(ulp_distance(torch.tensor([0.0], dtype=BF), torch.tensor([-0.0], dtype=BF))) == 0
    tiny = torch.tensor([1], dtype=torch.int16).view(BF)                  # the smallest positive subnormal
    assert int(ulp_distance(tiny, -tiny)) == 2
    assert int(ulp_distance(torch.tensor([-0.4902], dtype=BF), torch.tensor([-0.4922], dtype=BF))) == 1
    with pytest.raises(AssertionError, match="2 ulps apart"):
        assert_within_ulps(torch.tensor([1.0], dtype=BF), (one.view(torch.int16) + 2).view(BF), 1, "t")


_MODELS: dict = {}


def model_for(p):
    """One cost model per program (its lambdified formulas are built once)."""
    if p not in _MODELS:
        _MODELS[p] = ascend_cost_model(p, ASCEND_910B)
    return _MODELS[p]


def check(name: str, rows: int, width: int, til: Tiling, seed: int = 0):
    p = SPECS[name].program(DType.BF16)
    ins, sc = inputs_for(name, rows, width, torch.Generator().manual_seed(seed))
    if name == "rope":      # tiles may not straddle a token's heads (the program's row group)
        til = Tiling(math.gcd(til.rows_per_tile, sc["cdiv"]), til.col_chunk, til.buffer_depth, til.cores)
    if p.chunk_dims and til.col_chunk is not None:
        til = Tiling(til.rows_per_tile, min(til.col_chunk, width), til.buffer_depth, til.cores)
    elif not p.chunk_dims:
        til = Tiling(til.rows_per_tile, None, til.buffer_depth, til.cores)
    got, counters = EmulatedKernel(p, til, opt="-O0")(ins, sc)  # -O0: faster builds for small shapes
    want = interpret(p, ins, sc, til.schedule())
    for k in want:
        if want[k].dtype in (torch.bfloat16, torch.float16):
            # A 16-bit output is an fp32 value rounded once. Reductions sum in another order than the
            # interpreter (a tree per 256-B repeat), so the fp32 values differ by a few fp32 ulps, and
            # one that lies at a rounding midpoint rounds to the neighbouring 16-bit value: at most one
            # ulp of the output dtype apart (mhc_pre's layer_input at rows=23, width=73, tiling
            # 3/16/2/1: -0.4902 in the kernel, -0.4922 in the interpreter)
            assert_within_ulps(got[k], want[k], 1, msg=f"{name} {k} {til}")
        else:
            scale = 1.0 + want[k].float().abs().max().item()      # fp32: summation-order rounding
            torch.testing.assert_close(got[k].float(), want[k].float(), atol=1e-5 * scale, rtol=1e-5,
                                       msg=f"{name} {k} {til}")
    pred = model_for(p).evaluate(bind_sizes(p, ins, sc), til)
    assert (pred.mte2_bytes, pred.mte3_bytes) == (counters["mte2_bytes"], counters["mte3_bytes"]), (name, til)
    assert counters["datacopy_truncations"] == 0
    assert counters["ub_peak_bytes"] <= pred.ub_bytes
    return pred, counters


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("til", [Tiling(2, 16, 2, 3), Tiling(3, 32, 2, 1), Tiling(1, 16, 2, 8)])
def test_generated_kernel_matches_ir_and_model_bytes(name, til):
    check(name, rows=7, width=40, til=til)


@pytest.mark.parametrize("name", ["rms_norm", "mhc_pre"])
def test_single_buffered_variant(name):
    check(name, rows=5, width=48, til=Tiling(2, 16, 1, 2))


@pytest.mark.parametrize("name", sorted(SPECS))
def test_solver_tiling_runs_in_the_emulator(name):
    p = SPECS[name].program(DType.BF16)
    ins, sc = inputs_for(name, 9, 64, torch.Generator().manual_seed(1))
    best = model_for(p).solve(bind_sizes(p, ins, sc), max_cores=4, depths=(2,))  # reuse compiled kernels
    check(name, 9, 64, best.tiling, seed=1)


@settings(max_examples=60, deadline=None)
@example(rows=23, width=73, t=3, cores=1, chunk=16, name="mhc_pre")    # the fresh clone's one-ulp case
@given(rows=st.integers(1, 40), width=st.integers(2, 97), t=st.integers(1, 9), cores=st.integers(1, 6),
       chunk=st.sampled_from([16, 32, 48]), name=st.sampled_from(sorted(SPECS)))
def test_bytes_equal_counters_property(rows, width, t, cores, chunk, name):
    """Random shapes (odd widths, tails) and tilings: outputs equal the interpreter's, bytes equal counters."""
    check(name, rows, width, Tiling(t, chunk, 2, cores), seed=rows * 131 + width)


def test_ops_on_the_emulator_match_the_pass_references():
    """Contract-level: each fused op (forward and backward) through its kernel spec's runner with the
    emulator executor (generated AscendC at the solver's tiling) against the composite reference."""
    from trex.codegen_ascendc.target import EmulatorExecutor
    from trex.passes.mhc_pre.op import mhc_pre_bwd_reference, mhc_pre_reference
    from trex.passes.rms_norm.op import rms_norm_bwd_reference, rms_norm_reference
    from trex.passes.rope.op import rope_reference
    from trex.passes.swiglu_limited.op import swiglu_limited_bwd_reference, swiglu_limited_reference
    ex = EmulatorExecutor(opt="-O0")
    g = torch.Generator().manual_seed(7)

    def close(a, b):
        torch.testing.assert_close(a.float(), b.float(), atol=2e-2, rtol=2e-2)

    x, w = torch.randn(3, 4, 40, generator=g).to(BF), torch.randn(40, generator=g).to(BF)
    y, r = SPECS["rms_norm"].run((x, w, 1e-6, None), ex)
    yr, rr = rms_norm_reference(x, w, 1e-6, None)
    close(y, yr)
    close(r, rr)
    dy = torch.randn(3, 4, 40, generator=g).to(BF)
    for a, b in zip(SPECS["rms_norm_bwd"].run((dy, x, w, rr), ex), rms_norm_bwd_reference(dy, x, w, rr)):
        close(a, b)
    gate, up = (torch.randn(5, 33, generator=g) * 4).to(BF), (torch.randn(5, 33, generator=g) * 4).to(BF)
    rw = torch.rand(5, 1, generator=g)
    close(SPECS["swiglu_limited"].run((gate, up, 3.0, rw, None), ex), swiglu_limited_reference(gate, up, 3.0, rw, None))
    dh = torch.randn(5, 33, generator=g).to(BF)
    for a, b in zip(SPECS["swiglu_limited_bwd"].run((dh, gate, up, 3.0, rw), ex),
                    swiglu_limited_bwd_reference(dh, gate, up, 3.0, rw)):
        close(a, b)
    xq = torch.randn(2, 3, 2, 24, generator=g).to(BF)
    cos, sin = torch.randn(3, 1, 4, generator=g), torch.randn(3, 1, 4, generator=g)
    for inverse in (False, True):
        close(SPECS["rope"].run((xq, cos, sin, 8, inverse), ex), rope_reference(xq, cos, sin, 8, inverse))
    xm = torch.randn(3, 4, 48, generator=g).to(BF)
    fn, sc, base = torch.randn(24, 4 * 48, generator=g) * 0.05, torch.rand(3, generator=g) + 0.5, torch.randn(24, generator=g) * 0.1
    got, want = SPECS["mhc_pre"].run((xm, fn, sc, base, 20, 1e-6, 1e-6), ex), mhc_pre_reference(xm, fn, sc, base, 20, 1e-6, 1e-6)
    for a, b in zip(got, want):
        close(a, b)
    dli, dpost, dcomb = torch.randn(3, 48, generator=g).to(BF), torch.randn(3, 4, generator=g), torch.randn(3, 4, 4, generator=g)
    for a, b in zip(SPECS["mhc_pre_bwd"].run((dli, dpost, dcomb, xm, fn, sc, base, 20, 1e-6, 1e-6), ex),
                    mhc_pre_bwd_reference(dli, dpost, dcomb, xm, fn, sc, base, 20, 1e-6, 1e-6)):
        close(a, b)
