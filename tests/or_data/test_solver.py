import pytest

from trex.training.or_data.solver import LinearModel, gurobi_available, objectives_agree, solve


def _small():
    m = LinearModel("t", maximize=True)
    x = m.add_var("x", ub=4, obj=3)
    y = m.add_var("y", ub=3.5, integer=True, obj=2)
    m.add_row({x: 1, y: 1}, "<=", 5, "cap")
    return m


def test_highs_and_auto_agree():
    a = solve(_small(), backend="highs")
    b = solve(_small(), backend="auto")
    assert a.status == b.status == "optimal" and a.objective == pytest.approx(14.0)
    assert objectives_agree(b.objective, a.objective)
    assert b.backend == ("gurobipy" if gurobi_available() else "highs")


def test_groups_drop_and_flip():
    m = _small()
    assert m.groups == ["cap"]
    assert solve(m.without_group("cap"), backend="highs").objective == pytest.approx(3 * 4 + 2 * 3)
    assert solve(m.with_flipped_group("cap"), backend="highs").objective == pytest.approx(18.0)


def test_size_limit_falls_back_to_highs():
    m = LinearModel("big", maximize=True)
    xs = [m.add_var(f"x{i}", ub=1, obj=1) for i in range(2001)]
    m.add_row({x: 1 for x in xs}, "<=", 1000, "cap")
    r = solve(m, backend="auto")
    assert r.status == "optimal" and r.objective == pytest.approx(1000)
    assert r.backend == "highs" and r.fallback_reason


def test_infeasible_and_bad_args():
    m = LinearModel()
    x = m.add_var("x")
    m.add_row({x: 1}, ">=", 3, "a")
    m.add_row({x: 1}, "<=", 1, "b")
    assert solve(m, backend="highs").status == "infeasible"
    with pytest.raises(ValueError, match="backend"):
        solve(m, backend="cplex")
    with pytest.raises(ValueError, match="sense"):
        m.add_row({x: 1}, "<", 1, "c")


def test_objective_agreement_rule():
    assert objectives_agree(100.0, 100.00005)
    assert not objectives_agree(100.0, 100.001)
    assert objectives_agree(0.0, 5e-7) and not objectives_agree(0.0, 2e-6)
    assert not objectives_agree(None, 1.0) and objectives_agree(None, None)


def test_open_path_memo_solves_an_identical_model_once(monkeypatch):
    """The open-source path reuses the result of an identical model (names and groups aside), as a
    copy; a model that differs in one number, or a result a time limit cut short, is solved again."""
    import trex.training.or_data.solver as solver

    runs = []
    real = solver._solve_highs
    monkeypatch.setattr(solver, "_solve_highs", lambda m, t: runs.append(m) or real(m, t))
    monkeypatch.setattr(solver, "_open_memo", type(solver._open_memo)())
    first = solve(_small(), backend="highs")
    renamed = _small()
    renamed.var_names = ["a", "b"]
    renamed.rows[0].group = "other"
    again = solve(renamed, backend="auto")
    assert len(runs) == 1 and (again.status, again.objective, again.x) == (first.status, first.objective, first.x)
    assert again.fallback_reason == (None if gurobi_available() else "gurobipy not importable or no license")
    again.x.append(99.0)                                 # a caller's copy: the memo keeps its own
    assert solve(_small(), backend="highs").x == first.x and len(runs) == 1
    changed = _small()
    changed.rows[0].rhs = 4
    assert solve(changed, backend="highs").objective == pytest.approx(3 * 4 + 2 * 0) and len(runs) == 2
    monkeypatch.setattr(solver, "_solve_highs",
                        lambda m, t: runs.append(m) or solver.SolveResult("time_limit", None, [], "highs", 0.0))
    cut = _small()
    cut.obj = [1.0, 1.0]
    solve(cut, backend="highs")
    solve(cut, backend="highs")
    assert len(runs) == 4
    monkeypatch.setattr(solver, "_solve_highs", lambda m, t: runs.append(m) or real(m, t))
    monkeypatch.setattr(solver, "OPEN_MEMO_MAX_TERMS", 2)      # _small has 2 variables + 2 terms
    solve(changed, backend="highs")
    assert len(runs) == 5
