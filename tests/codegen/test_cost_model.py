"""Cost model: sourced hardware numbers, exact byte formulas, constraints with reasons, the exact
solver, the eager-chain model and calibration."""
import itertools

import numpy as np
import pytest

from trex.codegen_ascendc.counting import ascend_cost_model
from trex.cost_models.ascend_model import Prediction, Tiling, calibrate, core_rows
from trex.cost_models.hardware import ASCEND_910B, ASCEND_910C_DIE, H200, HostCPU, Sourced
from trex.passes.mhc_pre.ir import build_mhc_pre_fwd
from trex.passes.rms_norm.ir import build_rms_norm_bwd, build_rms_norm_fwd
from trex.passes.swiglu_limited.ir import build_swiglu_limited_fwd
from trex.compiler.kernel_ir import size


def S(**kw):
    return {size(k): v for k, v in kw.items()}


@pytest.mark.parametrize("hw", [ASCEND_910B, ASCEND_910C_DIE])
def test_every_hardware_number_has_a_source(hw):
    for k, v in hw.__dict__.items():
        if isinstance(v, Sourced):
            assert v.source.strip(), k
    for api, v in hw.cycles_per_repeat.items():
        assert v.value > 0 and "msKPP" in v.source, api
    assert hw.ub_capacity == 196608 - 256 - 8192
    assert H200.copy_bw.source and H200.bf16_matmul_flops.source


def test_host_cpu_is_measured():
    h = HostCPU.detect(nbytes=8 << 20)
    assert h.copy_bw.value > 1e8 and "measured" in h.copy_bw.source


def test_front_tail_split():
    assert core_rows(10, 4) == [3, 3, 3, 1]
    assert core_rows(3, 5) == [1, 1, 1, 0, 0]
    assert sum(core_rows(8191, 48)) == 8191


@pytest.mark.parametrize("til", [Tiling(1, None, 1, 1), Tiling(3, None, 2, 4), Tiling(7, None, 2, 48)])
def test_rms_norm_bytes_are_exact_formulas(til):
    """Every row read once (bf16 in), the weight once per launched core, y and rstd written once."""
    R, D = 100, 136
    m = ascend_cost_model(build_rms_norm_fwd("bf16"), ASCEND_910B)
    pred = m.evaluate(S(ROWS=R, D=D), til)
    assert pred.mte2_bytes == R * D * 2 + til.cores * D * 2
    assert pred.mte3_bytes == R * D * 2 + R * 4
    assert pred.ub_bytes <= ASCEND_910B.ub_capacity
    assert 0 < pred.roofline_fraction <= 1.0
    assert all(0 <= v <= 1 for v in pred.ratios.values()) and set(pred.ratios) == {
        "aiv_mte2_ratio", "aiv_vec_ratio", "aiv_mte3_ratio", "aiv_scalar_ratio"}


def test_violations_explain_infeasible_tilings():
    m = ascend_cost_model(build_rms_norm_fwd("bf16"), ASCEND_910B)
    sizes = S(ROWS=8192, D=7168)
    why = m.violations(sizes, Tiling(8, None, 2, 48))
    assert any("UB use" in w and "rows_per_tile=8" in w for w in why)
    assert any("cores=64" in w for w in m.violations(sizes, Tiling(1, None, 2, 64)))
    assert m.violations(sizes, Tiling(1, None, 2, 48)) == []
    small = S(ROWS=8192, D=16)
    assert any("blockCount" in w for w in m.violations(small, Tiling(5000, None, 1, 1)))
    mh = ascend_cost_model(build_mhc_pre_fwd("bf16"), ASCEND_910B)
    assert any("multiple of 16" in w for w in mh.violations(S(ROWS=64, N=4, HD=256, ITERS=20), Tiling(1, 24, 2, 4)))


def test_solver_is_exact_on_a_small_space():
    """The solver's optimum equals brute force over every feasible point (evaluated one by one)."""
    m = ascend_cost_model(build_swiglu_limited_fwd("bf16"), ASCEND_910B)
    sizes = S(ROWS=24, F=200)
    best = m.solve(sizes, max_cores=4)
    brute = min((m.evaluate(sizes, Tiling(t, None, d, p)) for t, d, p in itertools.product(range(1, 25), (1, 2), range(1, 5))
                 if not m.violations(sizes, Tiling(t, None, d, p))), key=lambda x: x.time_s)
    assert best.time_s == pytest.approx(brute.time_s, rel=1e-12)
    assert not m.violations(sizes, best.tiling)


def test_solver_chunks_rows_that_do_not_fit():
    m = ascend_cost_model(build_mhc_pre_fwd("bf16"), ASCEND_910C_DIE)
    sizes = S(ROWS=96, N=4, HD=2048, ITERS=20)
    best = m.solve(sizes, max_cores=8)
    assert best.tiling.col_chunk is not None and best.tiling.col_chunk < 2048
    assert not m.violations(sizes, best.tiling)
    assert m.violations(sizes, Tiling(1, 2048, 2, 8))      # the whole row does not fit UB


def test_rms_norm_bwd_fits_at_deepseek_width():
    m = ascend_cost_model(build_rms_norm_bwd("bf16"), ASCEND_910C_DIE)
    best = m.solve(S(ROWS=512, D=7168))
    assert best.ub_bytes <= ASCEND_910C_DIE.ub_capacity


def test_eager_chain_counts_one_kernel_per_op():
    p = build_rms_norm_fwd("bf16")
    m = ascend_cost_model(p, ASCEND_910C_DIE)
    e = m.eager_chain(S(ROWS=8192, D=7168))
    n_ops = sum(1 for s in p.prologue + p.body if s.opcode not in ("load", "store", "view"))
    assert e["launches"] == n_ops
    assert e["time_s"] > m.solve(S(ROWS=8192, D=7168)).time_s


def test_calibration_recovers_constants():
    rng = np.random.default_rng(0)
    preds = []
    for _ in range(12):
        pipes = {k: float(rng.uniform(1e-6, 1e-4)) for k in ("mte2", "vec", "mte3", "scalar")}
        preds.append(Prediction(0, {**pipes, "launch": 6e-6}, {}, 0, 0, 0, 0, 0, Tiling(1, None, 1, 1)))
    true = {"mte2": 1.3, "vec": 0.7, "mte3": 1.1, "scalar": 2.0}
    samples = [(p, 4e-6 + sum(true[k] * p.pipes_s[k] for k in true)) for p in preds]
    cal = calibrate(samples)
    assert cal.launch_s == pytest.approx(4e-6, rel=1e-6)
    for k, v in true.items():
        assert cal.scales[k] == pytest.approx(v, rel=1e-6)
    assert cal.apply(preds[0]) == pytest.approx(samples[0][1], rel=1e-9)
    with pytest.raises(ValueError, match="at least 5 samples"):
        calibrate(samples[:3])


def test_pipe_expressions_are_sympy_in_the_tile_symbols():
    from trex.cost_models.kernel_counts import CL, ROWS_PER_TILE, TR
    ex = ascend_cost_model(build_rms_norm_fwd("bf16"), ASCEND_910B).pipe_expressions(2)
    body = ex["body_per_tile"]
    assert body["mte2_bytes"] == 2 * TR * size("D")          # the row tile of x, bf16
    assert body["mte3_bytes"] == 2 * TR * size("D") + 4 * TR  # y and rstd
    assert ROWS_PER_TILE in ex["ub_bytes"].free_symbols
    mh = ascend_cost_model(build_mhc_pre_fwd("bf16"), ASCEND_910B).pipe_expressions(2)
    assert CL in mh["body_per_chunk"]["mte2_bytes"].free_symbols


def test_one_plan_per_program_and_depth():
    """The cost model counts the plan that the printer, the emulator and the project emitter use: it is
    computed once per (program, buffer depth), and the counts come from it."""
    from trex.codegen_ascendc.counting import count
    from trex.codegen_ascendc.lowering import plan_kernel
    p = build_rms_norm_fwd("bf16")
    plan = plan_kernel(p, 2)
    assert plan_kernel(build_rms_norm_fwd("bf16"), 2) is plan       # equal programs: the same plan
    assert plan_kernel(p, 1) is not plan
    assert ascend_cost_model(p, ASCEND_910B).counts(2) == count(plan)
