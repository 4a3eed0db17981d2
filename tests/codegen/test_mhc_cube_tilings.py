"""Every tiling of the Cube split's AIV programs (mhc_pre_fwd_cube, mhc_pre_bwd_coeff_cube,
mhc_pre_bwd_apply_cube) that the cost model's feasible set offers at a shape (AscendCostModel.
feasible_tilings: what the solver and `trex tune` can pick) launches in the emulator with its sync checks on,
matches the fp64 reference within the DESIGN.md rule (3x the eager chain's error, bf16 in) and moves the
bytes the model predicts. Hypothesis draws the shapes; each example launches the whole feasible set.
The ci profile draws three small shapes (up to 6 rows, HD 48: up to 72 tilings each) at depths 1-2, whose
kernels test_mhc_cube_split.py compiles anyway; the nightly test (marker `nightly`) draws 25 larger ones
(up to 17 rows, HD 130: ~1300 tilings each) with depth 3 as well."""
import pytest
import torch
from hypothesis import given, settings, strategies as st

from trex.codegen_ascendc.counting import ascend_cost_model
from trex.codegen_ascendc.emulator.runner import compiler_available
from trex.codegen_ascendc.target import EmulatorExecutor
from trex.compiler.kernel_ir import bind_sizes
from trex.compiler.testing import assert_close_to_reference
from trex.cost_models.hardware import ASCEND_910C_DIE
from trex.passes.mhc_pre import ir
from trex.tuning import harness

pytestmark = pytest.mark.skipif(not compiler_available(), reason="no C++ compiler (g++/$CXX) for the emulator")

N = 4
PROGRAMS = {"fwd": ir.build_mhc_pre_fwd_cube, "coeff": ir.build_mhc_pre_bwd_coeff_cube,
            "apply": ir.build_mhc_pre_bwd_apply_cube}
MODELS: dict = {}
# one printed and compiled kernel per (program, depth), its tiling swapped per launch (as the emulate target does)
KERNELS = EmulatorExecutor(hw=ASCEND_910C_DIE, opt="-O0")


def _model(p):
    if p not in MODELS:
        MODELS[p] = ascend_cost_model(p, ASCEND_910C_DIE)
    return MODELS[p]


def _launch_every_feasible_tiling(which: str, rows: int, width: int, iters: int, seed: int, depths) -> int:
    p = PROGRAMS[which]("bf16")
    named = {"ROWS": rows, "N": N, "HD": width, "ITERS": iters}
    ins = harness.make_inputs(p, harness.program_sizes(p, named), seed, distribution="heavy")
    sc = {s.name: v for s, v in ((s, {"iters": iters, "hc_eps": 1e-6, "rms_eps": 1e-6}[s.name]) for s in p.scalars)}
    sizes = bind_sizes(p, ins, sc)
    model = _model(p)
    tilings = model.feasible_tilings(sizes, depths=depths)
    assert tilings, (which, named)
    reference, eager = harness.reference_fp64(p, ins, sc), harness.reference_eager(p, ins, sc)
    for til in tilings:
        got, counters = KERNELS.kernel(p, til)(ins, sc)
        where = f"{p.name} {named} {til}"
        assert_close_to_reference(tuple(got[k] for k in reference), tuple(eager[k] for k in reference),
                                  tuple(reference.values()), name=where)
        pred = model.evaluate(sizes, til)
        assert (counters["mte2_bytes"], counters["mte3_bytes"]) == (pred.mte2_bytes, pred.mte3_bytes), where
        assert counters["datacopy_truncations"] == 0 and counters["ub_peak_bytes"] <= pred.ub_bytes, where
    return len(tilings)


def test_the_feasible_set_is_canonical_and_complete():
    """feasible_tilings lists each canonical point once: every (rows_per_tile, chunk, depth) of each
    distinct rows-per-core block, at the fewest cores giving it; the solver's choice is among them."""
    p = PROGRAMS["apply"]("bf16")
    sizes = {k: v for k, v in bind_sizes(p, harness.make_inputs(p, {"ROWS": 5, "N": N, "HD": 40}, 0), {}).items()}
    tilings = _model(p).feasible_tilings(sizes, depths=(1, 2))
    assert len(tilings) == len(set(tilings))
    # 5 rows: blocks 5, 3, 2, 1 (cores 1, 2, 3, 5); chunks 16, 32, 40; depths 1, 2 (all fit UB at HD 40)
    assert {(t.cores, t.rows_per_tile) for t in tilings} == {(1, r) for r in range(1, 6)} | {
        (2, r) for r in range(1, 4)} | {(3, 1), (3, 2), (5, 1)}
    assert {t.col_chunk for t in tilings} == {16, 32, 40} and len(tilings) == 11 * 3 * 2
    assert _model(p).solve(sizes).tiling in set(tilings)


@settings(max_examples=3 if settings.default.max_examples <= 200 else 40, deadline=None)
@given(rows=st.integers(1, 6), width=st.integers(1, 48), iters=st.integers(1, 3), seed=st.integers(0, 2 ** 20),
       which=st.sampled_from(sorted(PROGRAMS)))
def test_every_feasible_tiling_of_a_drawn_shape_matches_the_reference(rows, width, iters, seed, which):
    _launch_every_feasible_tiling(which, rows, width, iters, seed, depths=(1, 2))


@pytest.mark.nightly
@settings(settings.get_profile("nightly"), max_examples=25)
@given(rows=st.integers(1, 17), width=st.integers(1, 130), iters=st.integers(1, 20), seed=st.integers(0, 2 ** 20),
       which=st.sampled_from(sorted(PROGRAMS)))
def test_nightly_every_feasible_tiling_with_depth_3(rows, width, iters, seed, which):
    _launch_every_feasible_tiling(which, rows, width, iters, seed, depths=(1, 2, 3))
