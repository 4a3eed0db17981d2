"""Quadratic constraints in the gurobipy shim (SCIP through pyscipopt): convex and nonconvex QCQP,
MIQCP, MIQP and nonconvex objectives against closed-form optima; statuses; Gurobi's NonConvex
errors; the same models through the reference solver (LinearModel), model.json and the sandbox; and
the one clear error when pyscipopt is missing."""
import math
import sys

import pytest

from trex.training.or_data import gurobi_shim as gp
from trex.training.or_data import scip_backend
from trex.training.or_data.model_file import model_from_json
from trex.training.or_data.solver import LinearModel, solve

pytest.importorskip("pyscipopt")
GRB = gp.GRB
FREE = -GRB.INFINITY


def rel(a: float, b: float) -> float:
    return abs(a - b) / (abs(b) + 1.0)


def ball():
    """min -x - y  s.t.  x^2 + y^2 <= 1: -sqrt(2) at x = y = 1/sqrt(2) (convex QCP)."""
    m = gp.Model()
    x, y = m.addVar(lb=FREE, name="x"), m.addVar(lb=FREE, name="y")
    m.addConstr(gp.quicksum(v * v for v in (x, y)) <= 1, name="disk")
    m.setObjective(-x - y)
    return m, -math.sqrt(2), {"x": 1 / math.sqrt(2), "y": 1 / math.sqrt(2)}


def nearest_point():
    """min (x-2)^2 + (y-2)^2  s.t.  x^2 + y^2 <= 2: 2 at (1, 1) (quadratic objective and row)."""
    m = gp.Model()
    x, y = m.addVar(lb=FREE, name="x"), m.addVar(lb=FREE, name="y")
    m.addQConstr(x * x + y * y, GRB.LESS_EQUAL, 2.0, "disk")
    m.setObjective((x - 2) * (x - 2) + (y - 2) ** 2)
    return m, 2.0, {"x": 1.0, "y": 1.0}


def bilinear_equality():
    """min x + y  s.t.  x*y == 4, x, y >= 0: 4 at (2, 2) (AM-GM; a nonconvex equality)."""
    m = gp.Model()
    x, y = m.addVar(name="x"), m.addVar(name="y")
    m.addConstr(x * y == 4, name="area")
    m.setObjective(x + y)
    return m, 4.0, {"x": 2.0, "y": 2.0}


def outside_disk():
    """min x + 2y  s.t.  x^2 + y^2 >= 1 (both sides written out), 0 <= x, y <= 1: 1 at (1, 0); the
    convex relaxation's minimum, 0 at the origin, is infeasible."""
    m = gp.Model()
    x, y = m.addVar(ub=1, name="x"), m.addVar(ub=1, name="y")
    m.addConstr(x * x + 1 >= 2 - y * y)
    m.setObjective(x + 2 * y)
    return m, 1.0, {"x": 1.0, "y": 0.0}


def integer_disk():
    """max 2x + y over integers with x^2 + y^2 <= 10: 7 at (3, 1) (MIQCP; continuous 7.07)."""
    m = gp.Model()
    x = m.addVar(lb=-5, vtype=GRB.INTEGER, name="x")
    y = m.addVar(lb=-5, vtype=GRB.INTEGER, name="y")
    m.addConstr(x * x + y * y <= 10)
    m.setObjective(2 * x + y, GRB.MAXIMIZE)
    return m, 7.0, {"x": 3.0, "y": 1.0}


def integer_least_squares():
    """min (x - 1.4)^2 + (y - 0.3)^2, x integer in [0, 3], y in [0, 3]: 0.16 at (1, 0.3) (MIQP)."""
    m = gp.Model()
    x = m.addVar(ub=3, vtype=GRB.INTEGER, name="x")
    y = m.addVar(ub=3, name="y")
    m.setObjective((x - 1.4) * (x - 1.4) + (y - 0.3) * (y - 0.3))
    return m, 0.16, {"x": 1.0, "y": 0.3}


def concave_maximum():
    """max x^2 + y^2  s.t.  x + y <= 3, 0 <= x, y <= 2: 5 at a vertex (nonconvex objective)."""
    m = gp.Model()
    x, y = m.addVar(ub=2, name="x"), m.addVar(ub=2, name="y")
    m.addConstr(x + y <= 3)
    m.setObjective(x * x + y * y, GRB.MAXIMIZE)
    return m, 5.0, None


CASES = [ball, nearest_point, bilinear_equality, outside_disk, integer_disk, integer_least_squares, concave_maximum]


@pytest.mark.parametrize("case", CASES, ids=lambda f: f.__name__)
def test_known_optima(case):
    m, optimum, point = case()
    m.optimize()
    assert m.Status == GRB.OPTIMAL and m.SolCount == 1
    assert rel(m.ObjVal, optimum) <= 1e-6, (m.ObjVal, optimum)
    assert rel(m.getObjective().getValue(), optimum) <= 1e-6
    if point is not None:   # flat optima drift by ~sqrt(feasibility tolerance) in x, as in any solver
        assert {v.VarName: v.X for v in m.getVars()} == pytest.approx(point, abs=1e-3)


def test_miqp_continuous_values_are_polished():
    """SCIP's epigraph objective leaves y ~4e-4 off at the flat optimum; the continuous part is
    re-solved by HiGHS with the integers fixed, so y is exact (a coupling product x*y becomes linear)."""
    m, _, point = integer_least_squares()
    m.optimize()
    assert m.getVarByName("y").X == pytest.approx(point["y"], abs=1e-6)
    x, y = m.getVarByName("x"), m.getVarByName("y")
    m.addConstr(x + y >= 2.5)
    m.setObjective((x - 1.4) * (x - 1.4) + (y - 0.3) * (y - 0.3) + x * y)
    m.optimize()   # x = 2, y = 0.5: 0.36 + 0.04 + 1
    assert (x.X, y.X) == pytest.approx((2.0, 0.5), abs=1e-6) and rel(m.ObjVal, 1.4) <= 1e-9


@pytest.mark.parametrize("case", CASES, ids=lambda f: f.__name__)
def test_reference_solver_and_model_file_agree(case):
    """The shim's model.json, read back as the sandbox's parent reads it, solves to the same optimum
    through solver.solve (which routes what HiGHS cannot solve to SCIP and says so)."""
    m, optimum, _ = case()
    model = model_from_json(__import__("json").dumps(m.to_dict()).encode())
    assert model.num_quad_rows == m.NumQConstrs
    result = solve(model, backend="highs")
    assert result.status == "optimal" and rel(result.objective, optimum) <= 1e-6
    assert result.backend == "scip" and result.fallback_reason.startswith("HiGHS cannot solve")


def test_linear_and_convex_qp_stay_on_highs():
    lp = LinearModel()
    x = lp.add_var("x", ub=4)
    lp.obj[x] = 1.0
    lp.maximize = True
    assert solve(lp, backend="highs").backend == "highs"
    lp.quad[(x, x)] = -1.0   # max x - x^2: concave, a convex QP
    result = solve(lp, backend="highs")
    assert result.backend == "highs" and result.objective == pytest.approx(0.25)


def test_infeasible_and_unbounded_statuses():
    m = gp.Model()
    x, y = m.addVar(lb=FREE), m.addVar(lb=FREE)
    m.addConstr(x * x + y * y <= 1)
    m.addConstr(x + y >= 2)      # the disk's farthest point reaches x + y = sqrt(2)
    m.setObjective(x)
    m.optimize()
    assert m.Status == GRB.INFEASIBLE and m.SolCount == 0
    with pytest.raises(gp.GurobiError):
        m.ObjVal
    with pytest.raises(gp.GurobiError):
        x.X
    for build in ("convex", "bilinear"):
        m = gp.Model()
        x, y = m.addVar(lb=FREE if build == "convex" else 0.0), m.addVar(lb=FREE if build == "convex" else 0.0)
        m.addConstr(x - y * y >= 0 if build == "convex" else x * y <= 1)
        m.setObjective(x, GRB.MAXIMIZE)
        m.optimize()
        assert m.Status in (GRB.UNBOUNDED, GRB.INF_OR_UNBD), build
        with pytest.raises(gp.GurobiError):
            m.ObjVal


def test_nonconvex_parameter_as_gurobi():
    """NonConvex -1 (default) and 2 solve a nonconvex model; 0 and 1 refuse it at optimize() with
    Gurobi's errors (10021 for a quadratic equality, 10020 otherwise); a convex model is solved."""
    for value, errno in ((0, 10021), (1, 10021)):
        m, _, _ = bilinear_equality()
        m.params.NonConvex = value
        with pytest.raises(gp.GurobiError) as err:
            m.optimize()
        assert err.value.errno == errno and "NonConvex" in str(err.value)
    for build in (outside_disk, concave_maximum):
        m, _, _ = build()
        m.setParam(GRB.Param.NonConvex, 0)
        with pytest.raises(gp.GurobiError) as err:
            m.optimize()
        assert err.value.errno == 10020
    m, optimum, _ = nearest_point()
    m.Params.NonConvex = 0
    m.optimize()
    assert rel(m.ObjVal, optimum) <= 1e-6
    m, optimum, _ = bilinear_equality()
    m.Params.NonConvex = 2
    m.optimize()
    assert rel(m.ObjVal, optimum) <= 1e-6


def test_quadratic_constraint_api():
    m = gp.Model()
    x = m.addVars(3, lb=FREE, name="x")
    q = gp.QuadExpr()
    q.addTerms([1.0, 1.0], [x[0], x[1]], [x[0], x[1]])
    q.addTerms(1.0, x[2], x[2])
    q.add(x[0], 0.0)
    assert q.size() == 3
    ball_ = m.addQConstr(q <= 3, name="ball")
    lin = m.addConstr(x.sum() >= -10)
    m.setObjective(x[0] + x[1] + x[2], GRB.MAXIMIZE)
    assert (ball_.QCName, ball_.QCSense, ball_.QCRHS) == ("ball", GRB.LESS_EQUAL, 3.0)
    assert m.getQConstrs() == [ball_] and m.getConstrs() == [lin]
    assert (m.NumQConstrs, m.NumConstrs, m.NumQCNZs, m.IsQCP, m.IsQP) == (1, 1, 3, 1, 0)
    m.optimize()
    assert rel(m.ObjVal, 3.0) <= 1e-6     # sqrt(3) * sqrt(3)
    assert m.getAttr("X", x) == pytest.approx({0: 1.0, 1: 1.0, 2: 1.0}, abs=1e-3)
    doc = m.to_dict()
    assert doc["rows"][-1][4] == "ball" and sorted(doc["rows"][-1][5]) == [[0, 0, 1.0], [1, 1, 1.0], [2, 2, 1.0]]


def test_missing_pyscipopt_is_one_clear_error(monkeypatch):
    """Without pyscipopt (simulated: importing it fails) a quadratic constraint is refused at
    addConstr, a nonconvex or mixed-integer quadratic objective at optimize(), both naming the
    package and the install command; linear models and convex QPs still solve on HiGHS."""
    monkeypatch.setitem(sys.modules, "pyscipopt", None)
    assert not scip_backend.available()
    m = gp.Model()
    x, y = m.addVar(), m.addVar()
    with pytest.raises(gp.GurobiError) as err:
        m.addConstr(x * y <= 2)
    assert "pip install pyscipopt" in str(err.value) and m.NumQConstrs == 0
    for build in (integer_least_squares, concave_maximum):
        m, _, _ = build()
        with pytest.raises(gp.GurobiError) as err:
            m.optimize()
        assert "pip install pyscipopt" in str(err.value)
    lp = LinearModel()
    i = lp.add_var("x", ub=1)
    lp.add_row({}, "<=", 1.0, "disk", quad={(i, i): 1.0})
    with pytest.raises(scip_backend.ScipMissing, match="pip install pyscipopt"):
        solve(lp, backend="highs")
    m = gp.Model()
    x = m.addVar(ub=4)
    m.setObjective(x - x * x, GRB.MAXIMIZE)
    m.optimize()
    assert rel(m.ObjVal, 0.25) <= 1e-9


def test_groups_of_quadratic_rows_drop_and_flip():
    """The informativeness filter's operations keep a row's products."""
    lp = LinearModel(maximize=True)
    x, y = lp.add_var("x", lb=-10), lp.add_var("y", lb=-10)
    lp.obj[x] = lp.obj[y] = 1.0
    lp.add_row({}, "<=", 2.0, "disk", quad={(x, x): 1.0, (y, y): 1.0})
    lp.add_row({x: 1.0}, "<=", 5.0, "cap")
    assert rel(solve(lp, backend="highs").objective, 2.0) <= 1e-6
    assert solve(lp.without_group("disk"), backend="highs").status in ("unbounded", "inf_or_unbd")
    flipped = lp.with_flipped_group("disk")
    assert flipped.rows[0].quad == lp.rows[0].quad and flipped.rows[0].sense == ">="


def test_sandbox_verdict_for_scip_models():
    """The sandbox child solves with SCIP for the program; the parent re-solves the model.json and
    reports objective and solution by variable name."""
    from trex.training.or_data.sandbox import Sandbox, SandboxLimits

    code = ("import gurobipy as gp\nfrom gurobipy import GRB\nm = gp.Model()\n"
            "x = m.addVar(lb=-5, vtype=GRB.INTEGER, name='x')\ny = m.addVar(lb=-5, vtype=GRB.INTEGER, name='y')\n"
            "m.addConstr(x * x + y * y <= 10, name='disk')\nm.setObjective(2 * x + y, GRB.MAXIMIZE)\n"
            "m.optimize()\nprint(m.Status, m.ObjVal, x.X, y.X)\n")
    with Sandbox(workers=1) as sb:
        r = sb.run(code, SandboxLimits(backend="shim", wall_s=30))
    assert r.ok and r.status == "optimal" and r.error is None, (r.error, r.stderr)
    assert rel(r.objective, 7.0) <= 1e-6 and r.solution == pytest.approx({"x": 3.0, "y": 1.0})
    assert r.decision_values == pytest.approx({"x": 3.0, "y": 1.0})
    assert r.stdout.split()[:2] == ["2", "7.0"]


GUROBI_STYLE_MPS = """NAME qc
ROWS
 N  OBJ
 L  disk
 E  area
 L  cap
COLUMNS
    x  OBJ  -1
    x  cap  1
    y  OBJ  -1
    u  OBJ  1
    v  OBJ  1
RHS
    RHS1  disk  1
    RHS1  area  4
    RHS1  cap  0.5
BOUNDS
 FR BND  x
 FR BND  y
QCMATRIX   disk
    x  x  1
    y  y  1
QCMATRIX   area
    u  v  0.5
    v  u  0.5
ENDATA
"""


def test_gurobi_mps_with_quadratic_constraints_reads_back(tmp_path):
    """The gurobipy backend's model.mps (HiGHS cannot read QCMATRIX): min -x - y + u + v with
    x^2 + y^2 <= 1, x <= 0.5, u*v == 4: x = 0.5, y = sqrt(0.75), u = v = 2."""
    from trex.training.or_data.model_file import ModelFileError, model_from_mps

    path = tmp_path / "model.mps"
    path.write_text(GUROBI_STYLE_MPS)
    model = model_from_mps(str(path))
    assert model.var_names == ["x", "y", "u", "v"] and model.num_quad_rows == 2
    assert [r.quad for r in model.rows if r.quad] == [{(0, 0): 1.0, (1, 1): 1.0}, {(2, 3): 1.0}]
    result = solve(model, backend="highs")
    assert result.backend == "scip" and rel(result.objective, -0.5 - math.sqrt(0.75) + 4.0) <= 1e-6
    path.write_text(GUROBI_STYLE_MPS.replace("    u  v  0.5", "    u  w  0.5"))
    with pytest.raises(ModelFileError, match="QCMATRIX area"):
        model_from_mps(str(path))
    path.write_text(GUROBI_STYLE_MPS.replace("    u  v  0.5", "    u  v"))
    with pytest.raises(ModelFileError, match="line"):
        model_from_mps(str(path))
