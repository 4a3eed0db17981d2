"""The Bench4Opt items with quadratic constraints (3 of 425: two nonconvex, one convex and
infeasible), scored through or-eval's own path (response -> sandbox -> the parent's solve of the
program's model.json -> every rule -> ORGEval): hand-written correct programs that read the item's
data.json score correct; the same programs with a wrong quadratic constraint that binds score wrong
(the parent's solve enforces the quadratic rows). Measured on the way: in both nonconvex items the
quadratic constraints do not bind at the optimum (the LP without them has the same optimum), so
objective rules cannot tell a program that leaves them out; ORGEval leaves them out by definition."""
import pytest

from trex.training.or_eval.benchmarks import RefStatus, load_benchmark
from trex.training.or_eval.evaluate import SandboxExecutor, evaluate

pytest.importorskip("pyscipopt")

HEADER = "import json\nimport gurobipy as gp\nfrom gurobipy import GRB\nd = json.load(open('data.json'))\nm = gp.Model()\n"

# item id -> (the linear part of the program, its quadratic constraints, a wrong quadratic constraint)
PROGRAMS = {
    # nonconvex: bilinear 'interaction' caps a_ij x_i x_j <= max_ij (45 of them)
    "bench4opt-lp-blending_problem_pharmaceuticals_var5": (
        "n = len(d['costs'])\nx = m.addVars(n, name='x')\n"
        "m.setObjective(gp.quicksum(d['costs'][i] * x[i] for i in range(n)), GRB.MINIMIZE)\n"
        "for i in range(n):\n    m.addConstr(x[i] <= d['availability'][i], name=f'availability_{i}')\n"
        "for k, req in enumerate(d['requirements']):\n"
        "    dose = gp.quicksum(req[i] * x[i] for i in range(n))\n"
        "    m.addConstr(dose >= d['min_dosage'][k], name=f'min_dosage_{k}')\n"
        "    m.addConstr(dose <= d['max_dosage'][k], name=f'max_dosage_{k}')\n",
        "for i in range(n):\n    for j in range(i + 1, n):\n"
        "        m.addQConstr(d['interaction_matrix'][i][j] * x[i] * x[j] <= d['max_interaction'][i][j],"
        " name=f'interaction_{i}_{j}')\n",
        "for i in range(n):\n    for j in range(i + 1, n):\n"
        "        m.addQConstr(d['interaction_matrix'][i][j] * x[i] * x[j] <= d['max_interaction'][i][j] / 100)\n"),
    # nonconvex: crops that cannot share the land have x_i * x_j == 0 (complementarity)
    "bench4opt-lp-portfolio_optimization_problem_agricultural_land_use_var4": (
        "n = len(d['crop_profits'])\nx = m.addVars(n, name='x')\n"
        "m.setObjective(gp.quicksum(d['crop_profits'][i] * x[i] for i in range(n)), GRB.MAXIMIZE)\n"
        "m.addConstr(x.sum() <= d['land_available'], name='Land_Constraint')\n"
        "m.addConstr(gp.quicksum(d['water_usage'][i] * x[i] for i in range(n)) <= d['water_available'])\n"
        "m.addConstr(gp.quicksum(d['nutrient_usage'][i] * x[i] for i in range(n)) <= d['nutrient_available'])\n"
        "m.addConstr(gp.quicksum(d['soil_quality_impact'][i] * x[i] for i in range(n)) <= d['soil_quality_limit'])\n",
        "for i in range(n):\n    for j in range(n):\n"
        "        if i != j and d['crop_rotation_matrix'][i][j] == 0:\n"
        "            m.addConstr(x[i] * x[j] == 0, name=f'Crop_Rotation_Constraint_{i}_{j}')\n",
        "for i in range(n):\n    m.addConstr(x[i] * x[i] <= 1)\n"),
    # convex: the budget must be fully invested within a risk cap w' S w <= r, which it cannot
    "bench4opt-lp-portfolio_optimization_problem_financial_investment_regeneration": (
        "n = len(d['expected_returns'])\nx = m.addVars(n, name='x')\n"
        "m.setObjective(gp.quicksum(d['expected_returns'][i] * x[i] for i in range(n)), GRB.MAXIMIZE)\n"
        "m.addConstr(x.sum() == d['budget'], name='budget')\n",
        "S = d['cov_matrix']\n"
        "m.addConstr(gp.quicksum(S[i][j] * x[i] * x[j] for i in range(n) for j in range(n)) <= d['risk_tolerance'],"
        " name='risk')\n",
        "S = d['cov_matrix']\n"
        "m.addConstr(gp.quicksum(S[i][j] * x[i] * x[j] for i in range(n) for j in range(n)) <= d['budget'] ** 2)\n"),
}


def as_response(code: str) -> str:
    return f"## Code\n```python\n{code}```\n"


@pytest.fixture(scope="module")
def items(data_root):
    by_id = {p.id: p for p in load_benchmark("bench4opt", data_root)}
    missing = [k for k in PROGRAMS if k not in by_id]
    assert not missing, missing
    return [by_id[k] for k in PROGRAMS]


def test_quadratic_constraint_items_score_correct(items, data_root):
    assert [p.reference_status for p in items] == [RefStatus.OPTIMAL, RefStatus.OPTIMAL, RefStatus.INFEASIBLE]
    right = [HEADER + PROGRAMS[p.id][0] + PROGRAMS[p.id][1] + "m.optimize()\n" for p in items]
    wrong = [HEADER + PROGRAMS[p.id][0] + PROGRAMS[p.id][2] + "m.optimize()\n" for p in items]
    with SandboxExecutor(workers=2) as ex:
        report = evaluate(items * 2, lambda qs: [as_response(c) for c in right + wrong], ex, data_root=data_root)
    rows = report["items"]
    for item in rows[:3]:
        assert item["error"] is None and item["correct"] and all(item["correct"].values()), item
    assert [i["run_status"] for i in rows[:3]] == ["optimal", "optimal", "infeasible"]
    # caps / 100: infeasible; x_i^2 <= 1: a small profit; a risk cap of budget^2: a feasible portfolio
    assert [i["run_status"] for i in rows[3:]] == ["infeasible", "optimal", "optimal"]
    for item in rows[3:]:
        assert item["correct"] and not any(item["correct"].values()), item
    # ORGEval leaves quadratic constraints out of the graph, as the authors' graph does, so the
    # linear part the right programs built is what it compares with the reference
    assert [i.get("orgeval_equivalent") for i in rows[:2]] == [True, True]
