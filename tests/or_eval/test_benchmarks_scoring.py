"""Loaders for every benchmark format and every scoring rule on known-right / known-wrong outcomes."""
import math

import pytest

from trex.training.or_eval import benchmarks
from trex.training.or_eval.benchmarks import ORProblem, RefStatus, load_benchmark
from trex.training.or_eval.scoring import (RULES, Outcome, RunStatus, answer_decimals, legacy_close, mamo_close,
                                      native_rule, parse_run_status, score, strict_close)

EXPECTED_COUNTS = {"nl4opt": 196, "mamo_easy": 522, "mamo_complex": 211, "optibench": 484,
                   "optmath_bench": 166, "bench4opt": 425}


@pytest.mark.parametrize("name", sorted(EXPECTED_COUNTS))
def test_loader_reads_every_record(data_root, name):
    recs = load_benchmark(name, data_root)
    assert len(recs) == EXPECTED_COUNTS[name]
    assert len({r.id for r in recs}) == len(recs)
    for r in recs:
        assert r.benchmark == name and r.question.strip()
        if r.reference_status is RefStatus.OPTIMAL:
            assert r.reference_objective is not None or r.queried_values
            assert r.reference_objective is None or math.isfinite(r.reference_objective)
        else:
            assert r.reference_objective is None


def test_status_mix_matches_provenance(data_root):
    nl = load_benchmark("nl4opt", data_root)
    assert sum(r.reference_status is RefStatus.NO_BEST_SOLUTION for r in nl) == 15
    b4o = load_benchmark("bench4opt", data_root)
    assert sum(r.reference_status is RefStatus.INFEASIBLE for r in b4o) == 184
    assert all(set(r.data_files) == {"data.json"} for r in b4o)
    assert {r.family for r in b4o} and len({r.family for r in b4o}) == 16
    ob = load_benchmark("optibench", data_root)
    assert sum(r.reference_objective is None for r in ob) == 7
    assert all(r.queried_values for r in ob)


def test_limit_and_aliases(data_root):
    assert len(load_benchmark("optmath", data_root, limit=5)) == 5
    assert load_benchmark("Mamo-Easy", data_root, limit=1)[0].benchmark == "mamo_easy"
    with pytest.raises(ValueError, match="choose one of"):
        load_benchmark("industryor", data_root)


def _perturb(x: float) -> float:
    return x * 1.5 + 7.0   # wrong under every rule (>= 5% off even after rounding)


def _picks(recs, status, k=3):
    return [r for r in recs if r.reference_status is status][:k]


@pytest.mark.parametrize("name", sorted(EXPECTED_COUNTS))
def test_known_right_and_wrong_outcomes_every_format(data_root, name):
    recs = load_benchmark(name, data_root)
    optimal = [r for r in recs if r.reference_status is RefStatus.OPTIMAL and r.reference_objective is not None][:4]
    assert optimal
    for r in optimal:
        # a model whose solution holds every queried value (OptiBench needs them) at the optimum
        solution = {f"v{k}": v for k, v in enumerate((r.queried_values or {}).values())}
        right = score(r, Outcome(RunStatus.OPTIMAL, r.reference_objective, values=solution))
        wrong = score(r, Outcome(RunStatus.OPTIMAL, _perturb(r.reference_objective), ""))
        infeasible = score(r, Outcome(RunStatus.INFEASIBLE))
        crashed = score(r, Outcome(RunStatus.ERROR))
        assert set(right.correct) >= {"strict_1e-6", "legacy_5pct_rounded", native_rule(name)}
        assert all(v is True for v in right.correct.values()), (r.id, right.correct)
        for s in (wrong, infeasible, crashed):
            assert all(v is False for v in s.correct.values()), (r.id, s.correct)
    for r in _picks(recs, RefStatus.NO_BEST_SOLUTION) + _picks(recs, RefStatus.INFEASIBLE):
        for st in (RunStatus.INFEASIBLE, RunStatus.INF_OR_UNBD):
            assert all(score(r, Outcome(st)).correct.values()), (r.id, st)
        for st in (RunStatus.ERROR, RunStatus.TIMEOUT, RunStatus.NO_CODE):
            assert not any(score(r, Outcome(st)).correct.values()), (r.id, st)
        assert not any(score(r, Outcome(RunStatus.OPTIMAL, 12.0)).correct.values())


def _synthetic(status, obj=None, bench="optmath_bench"):
    return ORProblem(id="s", benchmark=bench, question="q", reference_objective=obj, reference_status=status)


def test_unbounded_and_inf_or_unbd_references():
    unb = _synthetic(RefStatus.UNBOUNDED)
    assert score(unb, Outcome(RunStatus.UNBOUNDED)).correct["strict_1e-6"] is True
    assert score(unb, Outcome(RunStatus.INF_OR_UNBD)).correct["strict_1e-6"] is True
    assert score(unb, Outcome(RunStatus.INFEASIBLE)).correct["strict_1e-6"] is False
    inf = _synthetic(RefStatus.INFEASIBLE)
    assert score(inf, Outcome(RunStatus.UNBOUNDED)).correct["strict_1e-6"] is False
    nbs = _synthetic(RefStatus.NO_BEST_SOLUTION, bench="nl4opt")
    assert score(nbs, Outcome(RunStatus.UNBOUNDED)).correct["strict_1e-6"] is True
    # ORLM prints "No Best Solution" for any non-optimal stop: legacy accepts a time limit, strict does not
    limit = score(nbs, Outcome(RunStatus.OTHER_NONOPTIMAL)).correct
    assert limit == {"strict_1e-6": False, "legacy_5pct_rounded": True}


def test_strict_and_legacy_differ_where_they_should():
    p = _synthetic(RefStatus.OPTIMAL, 1000.0)
    near = score(p, Outcome(RunStatus.OPTIMAL, 1030.0)).correct      # 3% off
    assert near["strict_1e-6"] is False and near["legacy_5pct_rounded"] is True
    tiny = score(p, Outcome(RunStatus.OPTIMAL, 1000.0 + 1e-4)).correct
    assert tiny["strict_1e-6"] is True


def test_rule_edges():
    assert strict_close(0.0, 0.0) and strict_close(1e-7, 0.0) and not strict_close(2e-6, 0.0)
    assert legacy_close(0.4, 0.0) and not legacy_close(0.6, 0.0)      # both round; abs 0.05 at gt 0
    assert legacy_close(104.4, 100.0) and not legacy_close(106, 100.0)
    assert answer_decimals("117.15") == 2 and answer_decimals("3.125") == 3 and answer_decimals("10000") == 2
    assert mamo_close(117.154, 117.15, "117.15") and not mamo_close(117.17, 117.15, "117.15")
    assert mamo_close(100005.0, 100000.0, "100000")   # relative 5e-5 <= 1e-4


def test_optibench_needs_every_queried_value():
    p = ORProblem(id="o", benchmark="optibench", question="q", reference_objective=395000.0,
                  reference_status=RefStatus.OPTIMAL,
                  queried_values={"Trucks X": 10.0, "Trucks Y": 15.0, "Total Profit": 395000.0},
                  meta={"answer_key": "Total Profit"})
    rule = "optibench_all_queried_abs1e-4"
    solved = {"trucks_x": 10.0, "trucks_y": 15.0000001}
    assert score(p, Outcome(RunStatus.OPTIMAL, 395000.0, values=solved)).correct[rule]
    only_obj = score(p, Outcome(RunStatus.OPTIMAL, 395000.0, values={"trucks_x": 10.0})).correct
    assert only_obj[rule] is False and only_obj["strict_1e-6"] is True
    # printed numbers count for nothing: the values come from the solver's solution
    printed = score(p, Outcome(RunStatus.OPTIMAL, 395000.0, "Trucks X = 10\nTrucks Y = 15\n")).correct
    assert printed[rule] is False
    # the queried objective must be the solver's objective, not some variable's value
    wrong_obj = score(p, Outcome(RunStatus.OPTIMAL, 1.0, values=dict(solved, total=395000.0))).correct
    assert wrong_obj[rule] is False
    var_only = ORProblem(id="v", benchmark="optibench", question="q", reference_objective=None,
                         reference_status=RefStatus.OPTIMAL, queried_values={"x": 2.0})
    verdicts = score(var_only, Outcome(RunStatus.OPTIMAL, 9.0, values={"x": 2.0})).correct
    assert verdicts == {"strict_1e-6": None, "legacy_5pct_rounded": None, rule: True}


def test_run_status_spellings_and_execution_adapter():
    assert parse_run_status("OPTIMAL") is RunStatus.OPTIMAL
    assert parse_run_status(3) is RunStatus.INFEASIBLE and parse_run_status("9") is RunStatus.OTHER_NONOPTIMAL
    with pytest.raises(ValueError, match="unknown run status"):
        parse_run_status("great")

    class Result:   # the sandbox's ExecutionResult shape
        def __init__(self, ok, status, objective, stdout="", error=None):
            self.ok, self.status, self.objective, self.stdout, self.error = ok, status, objective, stdout, error

    assert Outcome.from_execution(Result(True, "optimal", 5.0)) == Outcome(RunStatus.OPTIMAL, 5.0, "")
    assert Outcome.from_execution(Result(False, "optimal", 5.0)).status is RunStatus.ERROR
    assert Outcome.from_execution(Result(False, "timeout", None)).status is RunStatus.TIMEOUT
    assert Outcome.from_execution(Result(False, "error", None, error="timeout")).status is RunStatus.TIMEOUT
    assert Outcome.from_execution(Result(False, "error", None, error="forbidden name open")).status is RunStatus.ERROR
    assert Outcome.from_execution(Result(True, "infeasible", 3.0)).objective is None


def test_every_native_rule_exists():
    for spec in benchmarks.BENCHMARKS.values():
        assert spec.native_rule in RULES


def test_every_highs_model_status_the_backend_reports_is_a_run_status():
    """The H200 ablation's scoring once died on HiGHS's 'Not Set': each HighsModelStatus, spelled
    as or_data's HiGHS backend spells it, must parse."""
    highspy = pytest.importorskip("highspy")
    from trex.training.or_data.highs_backend import _HIGHS_STATUS
    h = highspy.Highs()
    for name in (k for k in dir(highspy.HighsModelStatus) if k.startswith("k")):
        member = getattr(highspy.HighsModelStatus, name)
        spelled = _HIGHS_STATUS.get(name, h.modelStatusToString(member).lower().replace(" ", "_") or "error")
        assert isinstance(parse_run_status(spelled), RunStatus), name


def test_an_unknown_status_is_a_failed_run_with_its_reason_not_a_crash():
    from types import SimpleNamespace
    out = Outcome.from_execution(SimpleNamespace(ok=True, status="made_up_status", objective=1.0))
    assert out.status is RunStatus.ERROR and out.objective is None
    assert "made_up_status" in out.error
