"""The plot_layout family (QCQP: bilinear area rows, SCIP through the shim): its optimum against an
independent solve that uses no SCIP (continuous: the Lagrange condition of the road's frontage,
bisected; whole meters: an exact dynamic program over the frontage), the text round trip, sizes,
and the gold program through the sandbox. The generic family tests (tests/or_data/test_families.py,
test_roundtrip_sizes.py, test_surface.py) cover it too, being parametrized over FAMILIES."""
import math

import numpy as np
import pytest

from trex.training.or_data.contract import gold_formulation
from trex.training.or_data.families import FAMILIES
from trex.training.or_data.instances import generate_instance
from trex.training.or_data.solver import objectives_agree, solve
from trex.training.or_data.validate import validate

pytest.importorskip("pyscipopt")
FAM = FAMILIES["plot_layout"]


def continuous_optimum(data: dict) -> float:
    """min sum 2c_i (L_i + A_i / L_i) s.t. sum L_i <= R, A_i / L_i <= D: at the optimum W_i = A_i / L_i
    (a convex problem in L), and L_i(mu) = max(sqrt(A_i / (1 + mu / 2c_i)), A_i / D) for the frontage's
    multiplier mu >= 0, the largest root of sum L_i(mu) = R (mu = 0 when the road does not bind)."""
    area, cost, road, depth = data["area"], data["fence_cost"], data["frontage"], data.get("depth", math.inf)

    def lengths(mu):
        return [max(math.sqrt(a / (1 + mu / (2 * c))), a / depth) for a, c in zip(area, cost)]

    lo, hi = 0.0, 1.0
    if sum(lengths(0.0)) > road:
        while sum(lengths(hi)) > road:
            hi *= 2
        for _ in range(200):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if sum(lengths(mid)) > road else (lo, mid)
    ls = lengths(hi if sum(lengths(0.0)) > road else 0.0)
    return sum(2 * c * (length + a / length) for a, c, length in zip(area, cost, ls))


def integer_optimum(data: dict) -> float:
    """Whole meters: for a length L the best depth is ceil(A / L) (within the depth cap), so the
    problem is a knapsack over the frontage; exact dynamic program over the meters used."""
    road, depth = data["frontage"], data.get("depth", math.inf)
    best = {0: 0.0}
    for a, c in zip(data["area"], data["fence_cost"]):
        options = [(length, 2 * c * (length + math.ceil(a / length))) for length in range(1, road + 1)
                   if math.ceil(a / length) <= depth]
        nxt: dict[int, float] = {}
        for used, cost in best.items():
            for length, fence in options:
                if used + length <= road and cost + fence < nxt.get(used + length, math.inf):
                    nxt[used + length] = cost + fence
        best = nxt
    return min(best.values())


def test_optimum_matches_an_independent_solve():
    kinds = set()
    for seed in range(12):
        for difficulty in (1, 2, 3):
            inst = generate_instance("plot_layout", seed, difficulty)
            assert inst is not None, (seed, difficulty)
            if inst.status != "optimal":
                continue
            integer = inst.options.get("integer", False)
            kinds.add((integer, "depth" in inst.data))
            expected = (integer_optimum if integer else continuous_optimum)(inst.data)
            assert objectives_agree(inst.objective, expected), (seed, difficulty, inst.objective, expected)
            assert inst.solver in ("scip", "gurobipy") or inst.solver_fallback
    # continuous and whole-meter instances were checked, and some with the depth cap
    assert {(False, False), (True, False)} <= kinds and any(depth for _, depth in kinds), kinds


def test_every_group_binds_and_the_model_is_nonconvex():
    inst = generate_instance("plot_layout", 3, 3)
    model = FAM.build(inst.data, inst.options)
    assert model.num_quad_rows == len(inst.data["area"]) and model.needs_scip()
    assert set(inst.informative) >= {"area", "frontage"}
    assert all(v["drop"] and v["flip"] for v in inst.informative.values())
    assert solve(model, backend="highs").backend == "scip"


def test_sizes_reach_the_benchmark_bins():
    rng = np.random.default_rng(0)
    sizes = {FAM.build(*FAM.sample(rng, d)).num_vars for d in (1, 2, 3) for _ in range(40)}
    assert 2 in sizes and max(sizes) >= 12 and all(s % 2 == 0 for s in sizes)


def test_gold_program_passes_validation(or_sandbox):
    for seed in (11, 12):
        inst = generate_instance("plot_layout", seed)
        report = validate(inst, gold_formulation(inst), or_sandbox)
        assert report.accepted, (seed, report.reason)
