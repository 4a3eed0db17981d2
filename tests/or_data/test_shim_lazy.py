"""The gurobipy shim's lazy solve: optimize() checks, raises and exports as before, and the solve
runs at the first read of a result (Status, ObjVal, SolCount, Runtime, X, getAttr, getValue), once.
A read after the model was edited gives the results of the model optimize() saw (as the eager shim
did), and the sandbox's verdict (the parent's solve of the export) is the same whether the program
reads a result or not."""
import json
import math

import pytest

from trex.training.or_data import gurobi_shim as gp
from trex.training.or_data import scip_backend
from trex.training.or_data.contract import gold_formulation, parse_formulation
from trex.training.or_data.instances import generate_instance

GRB = gp.GRB
FREE = -GRB.INFINITY
needs_scip = pytest.mark.skipif(not scip_backend.available(), reason="pyscipopt not installed (pip install pyscipopt)")


@pytest.fixture
def solver_calls(monkeypatch):
    """Counts the shim's solver runs (HiGHS and SCIP), passing each through."""
    calls = []

    def counting(name, real):
        def wrapper(*args, **kwargs):
            calls.append(name)
            return real(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(gp, "solve_canonical", counting("highs", gp.solve_canonical))
    monkeypatch.setattr(scip_backend, "solve_quadratic", counting("scip", scip_backend.solve_quadratic))
    return calls


def lp():
    """max 3x + 2y  s.t.  x + y <= 4, x + 3y <= 6, x <= 3: 11 at (3, 1)."""
    m = gp.Model()
    x, y = m.addVar(ub=3, name="x"), m.addVar(name="y")
    m.addConstr(x + y <= 4)
    m.addConstr(x + 3 * y <= 6)
    m.setObjective(3 * x + 2 * y, GRB.MAXIMIZE)
    return m, 11.0


def milp():
    """max 5a + 4b + 3c  s.t.  2a + 3b + c <= 5, 4a + b + 2c <= 11, 3a + 4b + 2c <= 8, integers: 13."""
    m = gp.Model()
    a, b, c = (m.addVar(vtype=GRB.INTEGER, name=n) for n in "abc")
    m.addConstr(2 * a + 3 * b + c <= 5)
    m.addConstr(4 * a + b + 2 * c <= 11)
    m.addConstr(3 * a + 4 * b + 2 * c <= 8)
    m.setObjective(5 * a + 4 * b + 3 * c, GRB.MAXIMIZE)
    return m, 13.0


def qp():
    """min (x - 1)^2 + (y - 2)^2  s.t.  x + y <= 1: 2 at (0, 1) (convex QP, HiGHS)."""
    m = gp.Model()
    x, y = m.addVar(lb=FREE, name="x"), m.addVar(lb=FREE, name="y")
    m.addConstr(x + y <= 1)
    m.setObjective((x - 1) * (x - 1) + (y - 2) ** 2)
    return m, 2.0


def qcqp():
    """min -x - y  s.t.  x^2 + y^2 <= 1: -sqrt(2) (SCIP)."""
    m = gp.Model()
    x, y = m.addVar(lb=FREE, name="x"), m.addVar(lb=FREE, name="y")
    m.addConstr(x * x + y * y <= 1)
    m.setObjective(-x - y)
    return m, -math.sqrt(2)


def infeasible():
    m = gp.Model()
    x = m.addVar(name="x")
    m.addConstr(x <= -1)
    m.setObjective(x)
    return m, None


MODELS = [pytest.param(lp, "highs", id="lp"), pytest.param(milp, "highs", id="milp"), pytest.param(qp, "highs", id="qp"),
          pytest.param(qcqp, "scip", id="qcqp", marks=needs_scip), pytest.param(infeasible, "highs", id="infeasible")]


def results(m, variables, objective):
    """Everything a program can read after optimize() (variables and objective as they were then)."""
    sol = m.SolCount
    out = {"status": m.Status, "solcount": sol}
    if sol:
        out.update(obj=m.ObjVal, x=[v.X for v in variables], getattr_x=m.getAttr("X", variables),
                   value=objective.getValue())
    else:
        with pytest.raises(gp.GurobiError) as err:
            m.ObjVal
        out["objval_errno"] = err.value.errno
        with pytest.raises(gp.GurobiError):
            variables[0].X
    return out


def _edit(m):
    """Edits after optimize() that would change every result if the model were solved again."""
    v = m.getVars()[0]
    v.LB = v.UB = 0.5
    m.addConstr(m.getVars()[-1] >= 1e6)
    m.setObjective(0 * v + 7.0, GRB.MAXIMIZE)
    return m.addVar(name="late")


@pytest.mark.parametrize("build,solver", MODELS)
def test_lazy_results_equal_an_immediate_read_even_after_edits(build, solver, solver_calls):
    eager, expected = build()
    eager.optimize()
    first = results(eager, eager.getVars(), eager.getObjective())  # read at once: the eager shim's results
    lazy, _ = build()
    lazy.optimize()
    variables, objective = lazy.getVars(), lazy.getObjective()
    late = _edit(lazy)  # edits after optimize() do not reach the solve optimize() asked for
    assert results(lazy, variables, objective) == first
    if first["solcount"]:
        with pytest.raises(IndexError):  # a variable added after optimize() has no value, as in the eager shim
            late.X
    assert solver_calls == [solver, solver]
    if expected is None:
        assert first["status"] == GRB.INFEASIBLE and first["solcount"] == 0
    else:
        assert first["status"] == GRB.OPTIMAL and first["obj"] == pytest.approx(expected, abs=1e-6)
    lazy.optimize()  # optimizing again solves the edited model: x fixed at 0.5, objective 7
    assert lazy.Status in (GRB.OPTIMAL, GRB.INFEASIBLE, GRB.INF_OR_UNBD)
    assert lazy.Status != GRB.OPTIMAL or lazy.ObjVal == pytest.approx(7.0)
    assert len(solver_calls) == 3


READERS = {
    "Status": lambda m: m.Status, "status": lambda m: m.status, "ObjVal": lambda m: m.ObjVal,
    "objVal": lambda m: m.objVal, "SolCount": lambda m: m.SolCount, "Runtime": lambda m: m.Runtime,
    "X": lambda m: m.getVars()[0].X, "x": lambda m: m.getVars()[0].x,
    "Var.getAttr": lambda m: m.getVars()[0].getAttr("X"), "getAttr(X, list)": lambda m: m.getAttr("X", m.getVars()),
    "getAttr(X, dict)": lambda m: m.getAttr("X", {"x": m.getVars()[0]}),
    "getAttr(Status)": lambda m: m.getAttr(GRB.Attr.Status), "getValue": lambda m: m.getObjective().getValue(),
    "QuadExpr.getValue": lambda m: (m.getVars()[0] * m.getVars()[1]).getValue(),
}


@pytest.mark.parametrize("reader", sorted(READERS))
def test_every_result_read_solves_once(reader, solver_calls):
    m, _ = lp()
    m.optimize()
    assert solver_calls == []
    value = READERS[reader](m)
    assert solver_calls == ["highs"]
    assert value is not None
    results(m, m.getVars(), m.getObjective())
    m.Runtime, m.Status, m.getVars()[1].X
    assert solver_calls == ["highs"]  # once, however many reads
    assert m.Runtime > 0 and m.getVars()[1].X == pytest.approx(1.0)


def test_nothing_read_means_no_solve_and_the_export_is_the_model_at_optimize(solver_calls, tmp_path, monkeypatch):
    path = tmp_path / "model.json"
    monkeypatch.setattr(gp, "EXPORT_PATH", str(path))
    m, _ = milp()
    m.optimize()
    exported = json.loads(path.read_text())
    assert exported == m.to_dict()
    # structure is not a result: reading it solves nothing
    assert (m.NumVars, m.NumConstrs, m.NumIntVars, m.IsMIP, m.IsQP, m.ModelSense) == (3, 3, 3, 1, 0, GRB.MAXIMIZE)
    assert [v.VarName for v in m.getVars()] == ["a", "b", "c"] and m.getVarByName("b").VType == GRB.INTEGER
    _edit(m)
    assert json.loads(path.read_text()) == exported  # edits after optimize() never reach the export
    m.reset()  # nothing can read the deferred solve any more
    assert m.Status == GRB.LOADED and m.SolCount == 0
    with pytest.raises(gp.GurobiError):
        m.ObjVal
    m.optimize()
    m.optimize()  # a second optimize() before any read replaces the first: one solve in all
    assert json.loads(path.read_text()) == m.to_dict() != exported
    assert solver_calls == []
    m.Status
    assert solver_calls == ["highs"]


def _nonconvex_objective(nonconvex):
    m = gp.Model()
    x, y = m.addVar(ub=1, name="x"), m.addVar(ub=1, name="y")
    m.setObjective(x * y)  # indefinite
    m.setParam("NonConvex", nonconvex)
    return m


def _quadratic_equality(nonconvex):
    m = gp.Model()
    x, y = m.addVar(name="x"), m.addVar(name="y")
    m.addConstr(x * y == 4)
    m.setObjective(x + y)
    m.Params.NonConvex = nonconvex
    return m


def _semicontinuous():
    m = gp.Model()
    m.addVar(vtype=GRB.SEMICONT, lb=1, ub=2)
    return m


def _bad_time_limit():
    m, _ = lp()
    m.Params.TimeLimit = "soon"
    return m


def _miqp():
    m = gp.Model()
    x = m.addVar(vtype=GRB.INTEGER, ub=3, name="x")
    m.setObjective((x - 1.4) * (x - 1.4))
    return m


ERRORS = [
    pytest.param(_semicontinuous, gp.GurobiError, 10003, id="semicontinuous"),
    pytest.param(_bad_time_limit, ValueError, None, id="bad TimeLimit"),
    pytest.param(lambda: _nonconvex_objective(0), gp.GurobiError, 10020, id="NonConvex 0, nonconvex objective",
                 marks=needs_scip),
    pytest.param(lambda: _quadratic_equality(1), gp.GurobiError, 10021, id="NonConvex 1, quadratic equality",
                 marks=needs_scip),
]


@pytest.mark.parametrize("build,error,errno", ERRORS)
def test_errors_are_still_raised_at_optimize(build, error, errno, solver_calls):
    m = build()
    with pytest.raises(error) as err:
        m.optimize()
    if errno is not None:
        assert err.value.errno == errno
    assert m.Status == GRB.LOADED and solver_calls == []  # nothing deferred after a refusal


def test_missing_scip_is_refused_at_optimize(monkeypatch, solver_calls):
    monkeypatch.setattr(scip_backend, "available", lambda: False)
    m = _miqp()
    with pytest.raises(gp.GurobiError, match="pip install") as err:
        m.optimize()
    assert err.value.errno == 10003 and solver_calls == [] and m.Status == GRB.LOADED


def test_a_solver_library_failure_surfaces_at_the_first_read(monkeypatch):
    """The one documented difference besides Runtime: an exception of the solver library itself
    (not one of the shim's checks) is raised at the first read instead of at optimize(); the
    results stay those before optimize(), as after an eager optimize() that raised."""
    m, _ = lp()
    m.optimize()
    m.Status
    assert m.Status == GRB.OPTIMAL

    def broken(**kwargs):
        raise RuntimeError("HiGHS failed")

    monkeypatch.setattr(gp, "solve_canonical", broken)
    m.optimize()
    with pytest.raises(RuntimeError, match="HiGHS failed"):
        m.ObjVal
    assert m.Status == GRB.OPTIMAL and m.ObjVal == pytest.approx(11.0)


# -- the sandbox's verdict ---------------------------------------------------------------------
READ_EVERYTHING = ("\n_read = (model.Status, model.SolCount, model.Runtime, [v.X for v in model.getVars()] "
                   "if model.SolCount else None)\n")
EDIT_AFTER = ("\nfor _v in model.getVars():\n    _v.LB = _v.UB = 0.0\nmodel.setObjective(model.getVars()[0] * 0.0 + 123.0)\n"
              "_read = (model.Status, model.SolCount, [v.X for v in model.getVars()] if model.SolCount else None)\n")
# (family, seed): an LP, a MILP, a QP, a QCQP (SCIP) and an infeasible draw
VERDICT_CASES = [("transportation", 2), ("transportation", 3), ("knapsack", 2), ("portfolio", 2),
                 pytest.param("plot_layout", 2, marks=needs_scip)]


def _verdict(r):
    d = r.to_dict()
    return {k: d[k] for k in ("ok", "status", "objective", "error", "solution", "decision_values", "exit_code",
                              "num_vars", "num_constrs", "num_int_vars", "num_qnzs")}


@pytest.mark.parametrize("family,seed", VERDICT_CASES)
def test_sandbox_verdict_is_unchanged_by_reads_and_later_edits(family, seed, or_sandbox):
    instance = generate_instance(family, seed, 1)
    code = parse_formulation(gold_formulation(instance)).code
    assert code.rstrip().endswith("model.optimize()")
    as_is, read, edited = (or_sandbox.run(code + extra) for extra in ("", READ_EVERYTHING, EDIT_AFTER))
    assert as_is.ok and as_is.status == instance.status, as_is
    assert as_is.status != "optimal" or as_is.objective == pytest.approx(instance.objective, rel=1e-6)
    assert _verdict(read) == _verdict(as_is)
    assert _verdict(edited) == _verdict(as_is)  # the verdict is the model at optimize(), not after
