"""ORGEval (Bench4Opt's formulation-graph equivalence) on Bench4Opt's own reference formulations:
permuted copies are equivalent, every single-edit mutant is not, and the loaders (LP text with
Gurobi names, MPS, the gurobipy shim) agree."""
import random

import pytest

from trex.training.or_eval import orgeval

# Items covering both reference classes and both problem classes.
WL_ITEMS = ["bench4opt-lp-blending_problem_cement_production",
            "bench4opt-milp-assignment_problem_school_timetabling",
            "bench4opt-lp-diet_problem_athlete_diet_optimization",
            "bench4opt-milp-knapsack_problem_cargo_loading"]


@pytest.fixture(scope="module")
def references(data_root):
    return orgeval.load_references(data_root)


def _symmetric_ids(references, limit=4):
    return [k for k, (_, flags) in references.items() if flags.get("symmetric") and flags.get("in_valid_problem_list")
            and "vehicle" not in k][:limit]


def _permuted(m: orgeval.LinearModel, seed: int) -> orgeval.LinearModel:
    rng = random.Random(seed)
    order = list(range(len(m.var_names)))
    rng.shuffle(order)
    new_index = {old: new for new, old in enumerate(order)}
    rows = [(tuple(sorted((new_index[j], c) for j, c in terms)), s, r) for terms, s, r in m.rows]
    rng.shuffle(rows)
    pick = lambda seq: tuple(seq[j] for j in order)  # noqa: E731
    return orgeval.LinearModel(var_names=tuple(f"v{k}" for k in range(len(order))), obj=pick(m.obj),
                               lb=pick(m.lb), ub=pick(m.ub), integer=pick(m.integer), rows=tuple(rows),
                               maximize=m.maximize)


def _lp_text(m: orgeval.LinearModel) -> str:
    """CPLEX-style LP text of a model (bounds and integrality included), to test the file path."""
    def expr(terms):
        return " ".join(f"{'+' if c >= 0 else '-'} {abs(c)!r} {m.var_names[j]}" for j, c in terms) or "0 " + m.var_names[0]
    op = {"<": "<=", ">": ">=", "=": "="}
    lines = ["Maximize" if m.maximize else "Minimize",
             " obj: " + expr([(j, c) for j, c in enumerate(m.obj) if c != 0.0]), "Subject To"]
    lines += [f" r{i}: {expr(terms)} {op[s]} {r!r}" for i, (terms, s, r) in enumerate(m.rows)]
    lines.append("Bounds")
    for name, lo, hi in zip(m.var_names, m.lb, m.ub):
        lines.append(f" {'-inf' if lo == -orgeval.INF else repr(lo)} <= {name} <= {'+inf' if hi == orgeval.INF else repr(hi)}")
    ints = [n for n, i in zip(m.var_names, m.integer) if i]
    if ints:
        lines += ["General", " " + " ".join(ints)]
    return "\n".join(lines + ["End"]) + "\n"


def _edit_row(m, index, terms=None, sense=None, rhs=None):
    rows = list(m.rows)
    old_terms, old_sense, old_rhs = rows[index]
    rows[index] = (old_terms if terms is None else terms, old_sense if sense is None else sense,
                   old_rhs if rhs is None else rhs)
    return orgeval.LinearModel(m.var_names, m.obj, m.lb, m.ub, m.integer, tuple(rows), m.maximize)


def _mutants(m: orgeval.LinearModel):
    """Each single edit a wrong formulation makes: a coefficient, a dropped constraint, a flipped
    sense, a rescaled row, an objective coefficient, a lost binary."""
    longest = max(range(len(m.rows)), key=lambda i: len(m.rows[i][0]))
    terms, sense, rhs = m.rows[longest]
    (j0, c0), rest = terms[0], terms[1:]
    yield "changed coefficient", _edit_row(m, longest, terms=((j0, c0 * 1.5 + 1.0),) + rest)
    yield "dropped constraint", orgeval.LinearModel(m.var_names, m.obj, m.lb, m.ub, m.integer,
                                                   m.rows[:longest] + m.rows[longest + 1:], m.maximize)
    flipped = {"<": ">", ">": "<", "=": "<"}[sense]
    yield "flipped sense", _edit_row(m, longest, sense=flipped)
    yield "rescaled row (the metric tells it apart)", _edit_row(
        m, longest, terms=tuple((j, 2 * c) for j, c in terms), rhs=2 * rhs)
    obj = list(m.obj)
    k = max(range(len(obj)), key=lambda j: abs(obj[j]))
    obj[k] = obj[k] * 0.5 + 3.0
    yield "changed objective coefficient", orgeval.LinearModel(m.var_names, tuple(obj), m.lb, m.ub, m.integer,
                                                              m.rows, m.maximize)
    if any(m.binary):
        b = m.binary.index(True)
        ub = list(m.ub)
        ub[b] = orgeval.INF      # a binary declared as a general integer >= 0
        yield "binary lost", orgeval.LinearModel(m.var_names, m.obj, m.lb, tuple(ub), m.integer, m.rows,
                                                 m.maximize)


def test_computed_classes_match_the_authors_wl_determinable_list(references):
    table = orgeval.classify_references(references)
    # The authors' 327 WL-determinable references are exactly the computed ones; of their 96
    # "symmetric decomposable" ones the real check confirms 94 (their list script tests a tuple).
    assert table["wl_determinable -> wl_determinable"] == 327
    assert table["symmetric_decomposable -> symmetric_decomposable"] == 94
    assert table.get("symmetric_decomposable -> undeterminable", 0) == 2
    assert not any(k.startswith("wl_determinable ->") and not k.endswith("wl_determinable") for k in table)


def test_every_reference_against_itself(references):
    results = {k: orgeval.equivalent(m := orgeval.model_from_lp_text(text), m, flags).equivalent
               for k, (text, flags) in references.items()}
    assert sum(v is True for v in results.values()) == 421
    assert sum(v is None for v in results.values()) == 2     # the two folders outside the valid lists


@pytest.mark.parametrize("seed", [0, 1])
def test_permuted_references_are_equivalent(references, seed):
    ids = WL_ITEMS + _symmetric_ids(references)
    for item in ids:
        text, flags = references[item]
        ref = orgeval.model_from_lp_text(text)
        cand = orgeval.model_from_lp_text(_lp_text(_permuted(ref, seed)))   # through the LP file path
        verdict = orgeval.equivalent(cand, ref, flags)
        assert verdict.equivalent is True, (item, verdict)
        assert verdict.objective_sense_match


def test_single_edits_are_not_equivalent(references):
    for item in WL_ITEMS + _symmetric_ids(references):
        text, flags = references[item]
        ref = orgeval.model_from_lp_text(text)
        for what, mutant in _mutants(ref):
            verdict = orgeval.equivalent(_permuted(mutant, 3), ref, flags)
            assert verdict.equivalent is False, (item, what, verdict)


def test_verdicts_agree_with_exact_isomorphism(references):
    """On small items the WL verdict is the exact (VF2++) isomorphism answer."""
    for item in WL_ITEMS[:2] + _symmetric_ids(references, limit=2):
        ref = orgeval.model_from_lp_text(references[item][0])
        if orgeval.formulation_graph(ref).n_nodes > 400:
            continue
        assert orgeval.exact_isomorphic(_permuted(ref, 5), ref)
        for what, mutant in _mutants(ref):
            assert not orgeval.exact_isomorphic(mutant, ref), (item, what)


def test_objective_sense_is_reported_not_judged(references):
    text, flags = references[WL_ITEMS[0]]
    ref = orgeval.model_from_lp_text(text)
    flipped = orgeval.LinearModel(ref.var_names, ref.obj, ref.lb, ref.ub, ref.integer, ref.rows, not ref.maximize)
    verdict = orgeval.equivalent(flipped, ref, flags)
    assert verdict.equivalent is True and verdict.objective_sense_match is False


def test_shim_model_of_the_reference_program_is_equivalent(references, data_root):
    """A gurobipy-style program (the shim) reading data.json builds the reference formulation."""
    import json

    from trex.training.or_data import gurobi_shim as gp

    rec = next(json.loads(line) for line in open(data_root / "bench4opt" / "bench4opt.jsonl")
               if WL_ITEMS[0] in line)
    d = rec["instance_data"]
    n = len(d["costs"])
    model = gp.Model("blend")
    x = model.addVars(n, name="x")
    for i in reversed(range(n)):                              # another constraint order than model.lp
        model.addConstr(x[i] <= d["availability"][i], name=f"avail_{i}")
    model.addConstr(gp.quicksum(d["requirements"][i] * x[i] for i in range(n)) >= d["demand"])
    model.setObjective(gp.quicksum(d["costs"][i] * x[i] for i in range(n)), gp.GRB.MINIMIZE)
    text, flags = references[WL_ITEMS[0]]
    assert orgeval.equivalent(orgeval.model_from_shim(model), orgeval.model_from_lp_text(text), flags).equivalent
    model.addConstr(x[0] >= 1.0)                              # one extra constraint
    assert not orgeval.equivalent(orgeval.model_from_shim(model), orgeval.model_from_lp_text(text), flags).equivalent


def test_mps_round_trip(references, tmp_path):
    import highspy

    text, flags = references[WL_ITEMS[1]]
    lp = tmp_path / "m.lp"
    lp.write_text(orgeval._highs_lp_text(text)[0])
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    assert h.readModel(str(lp)) == highspy.HighsStatus.kOk
    assert h.writeModel(str(tmp_path / "m.mps")) != highspy.HighsStatus.kError   # kWarning: names
    assert orgeval.equivalent(orgeval.model_from_file(tmp_path / "m.mps"), orgeval.model_from_lp_text(text),
                              flags).equivalent


def test_quadratic_constraints_are_left_out_and_counted(references):
    item = "bench4opt-lp-blending_problem_pharmaceuticals_var5"     # 45 quadratic constraints
    model = orgeval.model_from_lp_text(references[item][0])
    assert model.quadratic_terms >= 45 and len(model.rows) == 24


def test_score_models_summary(references):
    ids = WL_ITEMS + _symmetric_ids(references, limit=2)
    cands = {k: _permuted(orgeval.model_from_lp_text(references[k][0]), 7) for k in ids}
    cands[ids[0]] = next(m for _, m in _mutants(cands[ids[0]]))
    cands[ids[1]] = None
    summary = orgeval.score_models(cands, references).as_dict()
    assert (summary["equivalent"], summary["scored"], summary["no_model"]) == (len(ids) - 2, len(ids), 1)


def test_bad_input_names_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="pass an .lp or .mps"):
        orgeval.model_from_file(tmp_path / "missing.lp")
    (tmp_path / "m.txt").write_text("x")
    with pytest.raises(ValueError, match="pass an .lp or .mps"):
        orgeval.model_from_file(tmp_path / "m.txt")
    (tmp_path / "bad.lp").write_text("this is not a model\n")
    with pytest.raises(ValueError, match="could not read"):
        orgeval.model_from_file(tmp_path / "bad.lp")


def test_report_hook_and_folder_cli(references, data_root, tmp_path, capsys):
    ids = WL_ITEMS[:2]
    report = {"items": [{"id": k, "benchmark": "bench4opt"} for k in ids] + [{"id": "x", "benchmark": "nl4opt"}],
              "summary": {}}
    models = {ids[0]: orgeval.model_from_lp_text(references[ids[0]][0])}
    orgeval.add_to_report(report, models, data_root)
    assert report["summary"]["orgeval"]["equivalent"] == 1 and report["summary"]["orgeval"]["scored"] == 2
    assert [i.get("orgeval_equivalent") for i in report["items"]] == [True, False, None]
    (tmp_path / f"{ids[1]}.lp").write_text(references[ids[1]][0])
    assert orgeval.main(["--candidates", str(tmp_path), "--data-root", str(data_root)]) == 0
    assert "ORGEval 100.0%  (1 / 1 scored" in capsys.readouterr().out
    assert orgeval.main(["--candidates", str(tmp_path / "nothing")]) == 2
    assert "--candidates" in capsys.readouterr().err


def _read_back_blend(data_root):
    """The cement-blend reference formulation as the sandbox hands a program's model back
    (a solver.LinearModel, as read from model.json / model.mps in the parent)."""
    import json

    from trex.training.or_data.solver import LinearModel as SolverModel

    rec = next(json.loads(line) for line in open(data_root / "bench4opt" / "bench4opt.jsonl")
               if WL_ITEMS[0] in line)
    d = rec["instance_data"]
    m = SolverModel("blend")
    x = [m.add_var(f"x{i}", obj=c) for i, c in enumerate(d["costs"])]
    m.add_row({x[i]: r for i, r in enumerate(d["requirements"])}, ">=", d["demand"], "demand")
    for i, a in enumerate(d["availability"]):
        m.add_row({x[i]: 1.0}, "<=", a, "availability")
    return m


def test_sandbox_read_back_model_is_scored(references, data_root):
    """The sandbox hands back a solver.LinearModel (model.json / model.mps read in the parent)."""
    m = _read_back_blend(data_root)
    summary = orgeval.score_models({WL_ITEMS[0]: m}, references)
    assert (summary.equivalent, summary.scored) == (1, 1)
    m.rows[0].sense = "<="
    assert orgeval.score_models({WL_ITEMS[0]: m}, references).equivalent == 0


def test_evaluate_reports_orgeval_beside_pass_at_1(data_root):
    """evaluate() puts ORGEval in the report for Bench4Opt items: the model each run built (the
    sandbox's read-back, Outcome.model) against the reference formulation; no model scores as not
    equivalent."""
    from trex.training.or_eval.benchmarks import load_benchmark
    from trex.training.or_eval.cli import render_table
    from trex.training.or_eval.evaluate import evaluate
    from trex.training.or_eval.scoring import Outcome, RunStatus

    by_id = {p.id: p for p in load_benchmark("bench4opt", data_root)}
    problems = [by_id[WL_ITEMS[0]], by_id[WL_ITEMS[3]]]     # the blend is built; the knapsack run builds none
    models = {WL_ITEMS[0]: _read_back_blend(data_root), WL_ITEMS[3]: None}

    def executor(code, problem):
        return Outcome(RunStatus.OPTIMAL, objective=problem.reference_objective, model=models[problem.id])

    report = evaluate(problems, lambda qs: ["```python\npass\n```"] * len(qs), executor, data_root=data_root)
    assert [item["orgeval_equivalent"] for item in report["items"]] == [True, False]
    summary = report["summary"]["orgeval"]
    assert (summary["equivalent"], summary["scored"], summary["no_model"]) == (1, 2, 1)
    assert "ORGEval (bench4opt)" in render_table(report, "t")
