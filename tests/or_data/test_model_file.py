"""The model a sandboxed program wrote, read back as untrusted data: faithful for real models,
refused when malformed, and the hard-coded / sprayed shapes recognised."""
import json
import math
import os

import pytest

from trex.training.or_data import gurobi_shim as gp
from trex.training.or_data.model_file import (ModelFileError, decision_values, hard_coded_objective,
                                              model_from_json, model_from_mps, read_untrusted)
from trex.training.or_data.solver import solve


def shim_model():
    m = gp.Model()
    x = m.addVar(ub=4, name="x")
    y = m.addVar(vtype=gp.GRB.INTEGER, ub=3.5, name="y")
    m.setObjective(3 * x + 2 * y + 1, gp.GRB.MAXIMIZE)
    m.addConstr(x + y <= 5)
    m.addConstr(x - y >= -10)
    return m


def test_json_round_trip_solves_like_the_shim():
    m = shim_model()
    m.optimize()
    model = model_from_json(json.dumps(m.to_dict()).encode())
    r = solve(model, backend="highs")
    assert r.status == "optimal" and r.objective == pytest.approx(m.ObjVal) == pytest.approx(15.0)
    assert model.var_names == ["x", "y"] and model.integer == [False, True] and model.maximize
    assert hard_coded_objective(model, r.objective) is None
    assert decision_values(model, r.x) == {"x": pytest.approx(4.0), "y": pytest.approx(1.0)}


@pytest.mark.parametrize("mutate, message", [
    (lambda d: d.update(format="other"), "trex-model-1"),
    (lambda d: d["vars"][0].__setitem__(1, float("nan")), "NaN"),
    (lambda d: d["vars"][0].__setitem__(3, "S"), "variable type"),
    (lambda d: d["rows"][0][0].__setitem__(0, 7), "does not exist"),
    (lambda d: d["rows"][0].__setitem__(2, "!"), r"rows\[0\]"),
    (lambda d: d.update(quad=[[0, 9, 1.0]]), r"quad\[0\]"),
    (lambda d: d["vars"][1].__setitem__(4, "1"), "not a number"),
])
def test_malformed_documents_are_refused(mutate, message):
    doc = shim_model().to_dict()
    mutate(doc)
    with pytest.raises(ModelFileError, match=message):
        model_from_json(json.dumps(doc).encode())


def test_links_fifos_and_huge_files_are_refused(tmp_path):
    (tmp_path / "real.json").write_text("{}")
    os.symlink(tmp_path / "real.json", tmp_path / "link.json")
    os.mkfifo(tmp_path / "fifo.json")
    assert read_untrusted(str(tmp_path / "absent.json")) is None
    for name in ("link.json", "fifo.json"):
        with pytest.raises(ModelFileError):
            read_untrusted(str(tmp_path / name))
    with pytest.raises(ModelFileError, match="bytes >"):
        read_untrusted(str(tmp_path / "real.json"), limit=1)


@pytest.mark.parametrize("build, hard_coded", [
    (lambda m, x, y: m.setObjective(0 * x + 42.0), True),                                   # constant
    (lambda m, x, y: (m.setObjective(m.addVar(lb=42, ub=42)),), True),                      # fixed variable
    (lambda m, x, y: (m.setObjective(m.addVar(lb=42, ub=43), gp.GRB.MINIMIZE)), True),      # answer as a bound
    (lambda m, x, y: (m.addConstr(x + y <= 1e-9), m.setObjective(x + y + 42.0, gp.GRB.MAXIMIZE)), True),
    (lambda m, x, y: (m.addConstr(x + y <= 40), m.setObjective(x + y + 2.0, gp.GRB.MAXIMIZE)), False),
])
def test_hard_coded_objectives(build, hard_coded):
    m = gp.Model()
    x, y = m.addVar(name="x"), m.addVar(name="y")
    build(m, x, y)
    model = model_from_json(json.dumps(m.to_dict()).encode())
    r = solve(model, backend="highs")
    assert (hard_coded_objective(model, r.objective) is not None) is hard_coded, r


def test_sprayed_and_pinned_variables_are_not_decisions():
    m = gp.Model()
    x, y = m.addVar(ub=3, name="x"), m.addVar(ub=5, name="y")
    m.addConstr(x + y <= 6)
    m.setObjective(x + 2 * y, gp.GRB.MAXIMIZE)
    pinned = [m.addVar(lb=k, ub=k, name=f"p{k}") for k in range(5)]
    chain = [m.addVar(lb=-1e9, name=f"s{k}") for k in range(5)]
    for a, b in zip(chain, chain[1:]):
        m.addConstr(b - a == 1)          # a sprayed cluster never touching the objective
    m.addConstr(pinned[0] + x <= 100)    # a pinned variable beside a decision
    model = model_from_json(json.dumps(m.to_dict()).encode())
    r = solve(model, backend="highs")
    assert set(decision_values(model, r.x)) == {"x", "y"}


def test_mps_from_highs_reads_back(tmp_path, monkeypatch):
    import highspy

    import trex.training.or_data.solver as solver

    monkeypatch.setattr(solver, "_open_memo", type(solver._open_memo)())   # HiGHS must really run
    m = shim_model()
    model = model_from_json(json.dumps(m.to_dict()).encode())
    path = str(tmp_path / "model.mps")
    real_run = highspy.Highs.run

    def write_then_run(self):
        self.writeModel(path)
        return real_run(self)

    highspy.Highs.run = write_then_run
    try:
        first = solve(model, backend="highs")
    finally:
        highspy.Highs.run = real_run
    again = solve(model_from_mps(path), backend="highs")   # the file holds the minimisation HiGHS got
    assert again.status == "optimal" and math.isclose(again.objective, -first.objective, abs_tol=1e-9)
