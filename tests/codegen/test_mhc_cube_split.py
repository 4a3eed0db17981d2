"""mHC's AscendC layout, the Cube split (trex/passes/mhc_pre/ir.py): the projection GEMMs as `rows_matmul`
host steps, the row work in three AIV programs (mhc_pre_fwd_cube, mhc_pre_bwd_coeff_cube,
mhc_pre_bwd_apply_cube). Every program at tilings drawn from the cost model's feasible set (what the solver
and `trex tune` may choose) and at odd shapes runs in the emulator, equals the IR interpreter and has its
predicted bytes equal to the emulator's counters; the ops through the layout match the fp64 reference; the
Cube model prices what the runner launches. The default profile runs a handful of examples; the nightly
profile (TREX_FUZZ_PROFILE=nightly) many more."""
import random

import pytest
import torch
from hypothesis import given, settings, strategies as st

from trex.codegen_ascendc.emulator.runner import compiler_available
from trex.codegen_ascendc.launch import EmulatedKernel
from trex.codegen_ascendc.counting import ascend_cost_model
from trex.compiler import registry
from trex.compiler.kernel_ir import bind_sizes, interpret
from trex.cost_models.ascend_model import Tiling
from trex.cost_models.cube_model import cube_gemm, eager_gemm
from trex.cost_models.hardware import ASCEND_910B, ASCEND_910C_DIE
from trex.passes.mhc_pre import ir
from trex.passes.mhc_pre.op import mhc_pre_bwd_reference, mhc_pre_reference

BF = torch.bfloat16
N = 4
PROGRAMS = {"fwd": ir.build_mhc_pre_fwd_cube, "coeff": ir.build_mhc_pre_bwd_coeff_cube, "apply": ir.build_mhc_pre_bwd_apply_cube}
MODELS: dict = {}
needs_cxx = pytest.mark.skipif(not compiler_available(), reason="no C++ compiler (g++/$CXX) for the emulator")


def _model(p):
    if p not in MODELS:
        MODELS[p] = ascend_cost_model(p, ASCEND_910B)
    return MODELS[p]


def _inputs(which: str, rows: int, width: int, g: torch.Generator) -> tuple[dict, dict]:
    def r(*s, dt=BF):
        return torch.randn(*s, generator=g).to(dt)
    sc = {"iters": 3, "hc_eps": 1e-6, "rms_eps": 1e-6}
    common = {"x": r(rows, N, width), "hproj": torch.randn(rows, 2 + N, N, generator=g),
              "scale": torch.rand(3, 1, generator=g) + 0.5, "base": torch.randn(2 + N, N, generator=g) * 0.1}
    if which == "fwd":
        return common, sc
    if which == "coeff":
        return {"dli": r(rows, width), "dpost": torch.randn(rows, N, generator=g),
                "dcomb": torch.randn(rows, N, N, generator=g), **common}, sc
    return {"x": common["x"], "dli": r(rows, width), "dxp": torch.randn(rows, N, width, generator=g),
            "dss2": torch.randn(rows, 1, generator=g), "pre_mix": torch.rand(rows, N, generator=g)}, {}


def _check(which: str, rows: int, width: int, til: Tiling, seed: int):
    p = PROGRAMS[which]("bf16")
    ins, sc = _inputs(which, rows, width, torch.Generator().manual_seed(seed))
    til = Tiling(til.rows_per_tile, min(til.col_chunk or width, width), til.buffer_depth, til.cores)
    got, counters = EmulatedKernel(p, til, opt="-O0")(ins, sc)
    want = interpret(p, ins, sc, til.schedule())
    for k in want:
        if want[k].dtype == BF:     # one rounding of an fp32 value that may differ in its last fp32 bits
            diff = (got[k].float() - want[k].float()).abs()
            assert (diff <= want[k].float().abs() * 2 ** -7 + 1e-30).all(), (which, k, til)
        else:
            scale = 1.0 + want[k].float().abs().max().item()
            torch.testing.assert_close(got[k].float(), want[k].float(), atol=1e-5 * scale, rtol=1e-5, msg=f"{which} {k} {til}")
    pred = _model(p).evaluate(bind_sizes(p, ins, sc), til)
    assert (pred.mte2_bytes, pred.mte3_bytes) == (counters["mte2_bytes"], counters["mte3_bytes"]), (which, til)
    assert counters["datacopy_truncations"] == 0
    assert counters["ub_peak_bytes"] <= pred.ub_bytes


def _drawn_tiling(which: str, rows: int, width: int, seed: int) -> Tiling:
    p = PROGRAMS[which]("bf16")
    ins, sc = _inputs(which, rows, width, torch.Generator().manual_seed(seed))
    til = _model(p).random_feasible_tiling(bind_sizes(p, ins, sc), random.Random(seed), max_cores=6)
    assert til is not None, (which, rows, width)
    return til


@needs_cxx
@pytest.mark.parametrize("which", sorted(PROGRAMS))
@pytest.mark.parametrize("til", [Tiling(2, 16, 2, 3), Tiling(3, 32, 1, 1), Tiling(1, 48, 2, 5)])
def test_cube_split_programs_match_the_interpreter_and_the_model_bytes(which, til):
    _check(which, rows=7, width=40, til=til, seed=3)


@needs_cxx
@pytest.mark.parametrize("which", sorted(PROGRAMS))
def test_solver_tiling_of_each_cube_split_program_runs(which):
    p = PROGRAMS[which]("bf16")
    ins, sc = _inputs(which, 9, 64, torch.Generator().manual_seed(1))
    best = _model(p).solve(bind_sizes(p, ins, sc), max_cores=4, depths=(2,))
    _check(which, 9, 64, best.tiling, seed=1)


@needs_cxx
# a few examples in the default profiles (each new kernel variant compiles once per program and depth),
# many under the long one (TREX_FUZZ_PROFILE=nightly)
@settings(max_examples=6 if settings.default.max_examples <= 200 else 400, deadline=None)
@given(rows=st.integers(1, 33), width=st.integers(1, 97), seed=st.integers(0, 2 ** 20), which=st.sampled_from(sorted(PROGRAMS)))
def test_drawn_tilings_and_odd_shapes(rows, width, seed, which):
    """Tilings drawn from the feasible set the solver and the tuner search, at odd widths and row tails."""
    _check(which, rows, width, _drawn_tiling(which, rows, width, seed), seed)


def _op_args(rows: int, d: int, g: torch.Generator):
    x = torch.randn(rows, N, d, generator=g).to(BF)
    fn = torch.randn((2 + N) * N, N * d, generator=g) * (N * d) ** -0.5
    scale, base = torch.rand(3, generator=g) + 0.5, torch.randn((2 + N) * N, generator=g) * 0.1
    grads = (torch.randn(rows, d, generator=g).to(BF), torch.randn(rows, N, generator=g), torch.randn(rows, N, N, generator=g))
    return (x, fn, scale, base), grads


@needs_cxx
def test_ops_through_the_cube_split_match_the_fp64_reference_within_the_eager_rule():
    """The runner's launches (GEMMs + AIV programs in the emulator) against fp64, each output's error
    within 3x the eager chain's (bf16 inputs, fp32 compute: the DESIGN.md rule)."""
    from trex.codegen_ascendc.target import EmulatorExecutor
    ex = EmulatorExecutor(opt="-O0")
    fwd, grads = _op_args(6, 40, torch.Generator().manual_seed(11))
    sc = (5, 1e-6, 1e-6)
    d64 = [a.double() for a in fwd]
    got = registry.kernel_spec("mhc_pre").run((*fwd, *sc), ex)
    ref = mhc_pre_reference(*d64, *sc)
    eager = mhc_pre_reference(*fwd, *sc)
    for name, a, e, r in zip(("layer_input", "post", "comb"), got, eager, ref):
        err, err_eager = (a.double() - r).abs().max().item(), (e.double() - r).abs().max().item()
        assert err <= 3 * err_eager + 1e-6 * r.abs().max().item(), (name, err, err_eager)
    got = registry.kernel_spec("mhc_pre_bwd").run((*grads, *fwd, *sc), ex)
    ref = mhc_pre_bwd_reference(*(g.double() for g in grads), *d64, *sc)
    eager = mhc_pre_bwd_reference(*grads, *fwd, *sc)
    for name, a, e, r in zip(("dx", "dfn", "dscale", "dbase"), got, eager, ref):
        assert a.shape == r.shape and a.dtype == e.dtype, name
        err, err_eager = (a.double() - r).abs().max().item(), (e.double() - r).abs().max().item()
        assert err <= 3 * err_eager + 1e-6 * r.abs().max().item(), (name, err, err_eager)


def test_the_layout_launches_gemms_on_the_cube_and_aiv_programs():
    """What the runners launch, in order (the bench prices exactly these): forward h GEMM + one program;
    backward h GEMM, coefficients, dxp and dfn GEMMs, apply."""
    from trex.compiler.kernels import Executor
    from trex.compiler.kernel_ir import interpreter
    log = []

    class Logging(Executor):
        def rows_matmul(self, a, b):
            log.append(("gemm", a.shape[1], b.shape[1], a.shape[0]))
            return super().rows_matmul(a, b)

    def launch(p, ins, sc):
        log.append(("aiv", p.name))
        return interpreter()(p, ins, sc)
    fwd, grads = _op_args(3, 8, torch.Generator().manual_seed(2))
    registry.kernel_spec("mhc_pre").run((*fwd, 2, 1e-6, 1e-6), Logging(launch))
    registry.kernel_spec("mhc_pre_bwd").run((*grads, *fwd, 2, 1e-6, 1e-6), Logging(launch))
    m = (2 + N) * N
    assert log == [("gemm", 3, m, N * 8), ("aiv", "mhc_pre_fwd_cube_bf16"),
                   ("gemm", 3, m, N * 8), ("aiv", "mhc_pre_bwd_coeff_cube_bf16"), ("gemm", 3, N * 8, m),
                   ("gemm", m, N * 8, 3), ("aiv", "mhc_pre_bwd_apply_cube_bf16")]


@pytest.mark.parametrize("hw", [ASCEND_910B, ASCEND_910C_DIE], ids=lambda h: h.name)
def test_cube_model_prices_the_roofline_of_each_mode(hw):
    """h = x fn^T at V4-Pro sizes: x (bf16) streamed once, fn split into 3 bf16 pieces re-read from L2,
    memory-bound; the eager fp32 GEMM reads x in fp32 (twice the bytes); fp32 mode runs at 1/4 rate."""
    rows, k, m = 8192, 4 * 7168, 24
    g = cube_gemm(hw, rows, m, k, 2, 4)
    assert g.mode == "bf16x3" and g.flops == 3 * 2 * rows * m * k and g.launches == 2
    assert g.gm_bytes == rows * k * 2 + k * m * 6 + rows * m * 4 + k * m * (4 + 6)
    assert g.l2_bytes == k * m * 6 * (rows // 256 - 1)
    assert g.memory_s > g.compute_s and g.time_s > g.memory_s
    e = eager_gemm(hw, rows, m, k)
    assert e.mode == "fp32" and e.gm_bytes == rows * k * 4 + k * m * 4 + rows * m * 4
    assert e.compute_s == pytest.approx(e.flops / (hw.cube_flops() / 4))
    assert hw.cube_flops() == pytest.approx(24 * 4096 * 2 * hw.clock_hz.value)


def _bench():
    import importlib.util
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "bench" / "ascend_model.py"
    spec = importlib.util.spec_from_file_location("ascend_model_bench", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_bench_records_the_launches_at_model_sizes_on_meta_tensors():
    """bench/ascend_model.py walks the runner at V4-Pro sizes without computing: the recorded GEMMs are the
    model's (8192 x 24 x 28672 and friends) and the AIV programs carry the example sizes."""
    bench = _bench()
    spec = registry.kernel_spec("mhc_pre_bwd")
    example = dict(spec.sizes["example"])
    steps = bench.launches("mhc_pre_bwd", spec, spec.program("bf16"), example)
    rows, k, m = example["ROWS"], example["N"] * example["HD"], (2 + example["N"]) * example["N"]
    assert [s[0] for s in steps] == ["cube", "aiv", "cube", "cube", "aiv"]
    assert steps[0][1:] == (rows, m, k, 2, 4) and steps[2][1:] == (rows, k, m, 4, 4) and steps[3][1:] == (m, k, rows, 4, 2)
    assert [s[1].name for s in steps if s[0] == "aiv"] == ["mhc_pre_bwd_coeff_cube_bf16", "mhc_pre_bwd_apply_cube_bf16"]
    # (PARTS sizes the cuda layout's programs only)
    assert {str(k_): v for k_, v in steps[1][2].items()} == {k_: v for k_, v in example.items() if k_ != "PARTS"}


@pytest.mark.slow
@pytest.mark.parametrize("hw", [ASCEND_910B, ASCEND_910C_DIE], ids=lambda h: h.name)
@pytest.mark.parametrize("name", ["mhc_pre", "mhc_pre_bwd"])
def test_modelled_fused_over_eager_is_at_least_5x(hw, name):
    """Issue 17's Ascend target, as bench/ascend_model.py computes it (solver over every launch: slow)."""
    bench = _bench()
    spec = registry.kernel_spec(name)
    pr = bench.price(hw, bench.launches(name, spec, spec.program("bf16"), dict(spec.sizes["example"])))
    assert pr["eager_s"] / pr["fused_s"] >= 5.0, (name, hw.name, pr["fused_s"], pr["eager_s"])
