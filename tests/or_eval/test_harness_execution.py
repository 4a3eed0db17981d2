"""Acceptance: known-correct programs score correct and known-wrong ones wrong, on every benchmark
format, through the real pipeline (response -> code extraction -> sandbox -> scoring -> JSON)."""
import json

import pytest

from trex.training.or_eval.benchmarks import ORProblem, RefStatus, load_benchmark
from trex.training.or_eval.evaluate import EvalConfig, SandboxExecutor, evaluate, extract_code

pytest.importorskip("trex.training.or_data.sandbox")

BENCHES = ("nl4opt", "mamo_easy", "mamo_complex", "optibench", "optmath_bench", "bench4opt")

HEADER = "import gurobipy as gp\nfrom gurobipy import GRB\nmodel = gp.Model()\n"


def objective_program(value: float, queried: dict | None = None) -> str:
    """A real two-variable model whose optimum is exactly `value` (max x + y s.t. x + y <= value,
    x <= y), with one decision variable per queried value, tied to x + y by a constraint so that
    its optimal value is the queried one."""
    lines = [HEADER, "x = model.addVar(lb=-GRB.INFINITY, name='x')\n",
             "y = model.addVar(lb=-GRB.INFINITY, name='y')\n",
             f"model.addConstr(x + y <= {value!r})\n", "model.addConstr(x - y <= 0)\n"]
    for k, (key, v) in enumerate((queried or {}).items()):
        lines.append(f"v{k} = model.addVar(lb=-GRB.INFINITY, name={key!r})\n")
        lines.append(f"model.addConstr(v{k} - x - y == {v - value!r})\n")
    lines += ["model.setObjective(x + y, GRB.MAXIMIZE)\n", "model.optimize()\n"]
    return "".join(lines)


INFEASIBLE = HEADER + ("x = model.addVar(lb=0)\nmodel.addConstr(x >= 2)\nmodel.addConstr(x <= 1)\n"
                       "model.setObjective(x, GRB.MINIMIZE)\nmodel.optimize()\n")
UNBOUNDED = HEADER + "x = model.addVar(lb=0)\nmodel.setObjective(x, GRB.MAXIMIZE)\nmodel.optimize()\n"


def as_response(code: str) -> str:
    return f"## Variables\n- x\n## Code\n```python\n{code}```\n"


def right_and_wrong(p: ORProblem) -> tuple[str, str]:
    if p.reference_status is RefStatus.OPTIMAL:
        ref = p.reference_objective
        right = objective_program(ref, p.queried_values)
        wrong = objective_program(ref * 1.5 + 7.0, {k: v * 1.5 + 7.0 for k, v in (p.queried_values or {}).items()})
        return right, wrong
    right = UNBOUNDED if p.reference_status is RefStatus.UNBOUNDED else INFEASIBLE
    return right, objective_program(42.0)


def pick(recs, k_opt=3, k_other=2):
    opt = [r for r in recs if r.reference_status is RefStatus.OPTIMAL and r.reference_objective is not None]
    other = [r for r in recs if r.reference_status is not RefStatus.OPTIMAL]
    return opt[:k_opt] + other[:k_other]


@pytest.fixture(scope="module")
def executor():
    with SandboxExecutor(workers=2) as ex:
        yield ex


@pytest.mark.parametrize("name", BENCHES)
def test_known_right_programs_pass_and_wrong_fail(data_root, executor, tmp_path, name):
    problems = pick(load_benchmark(name, data_root))
    if name in ("nl4opt", "bench4opt"):   # these carry no-optimum / infeasible references
        assert any(p.reference_status is not RefStatus.OPTIMAL for p in problems)
    answers = {p.id: right_and_wrong(p) for p in problems}
    for which, index in (("right", 0), ("wrong", 1)):
        out = tmp_path / f"{name}_{which}.json"
        report = evaluate(problems, lambda qs: [as_response(answers[p.id][index]) for p in problems],
                          executor, EvalConfig(workers=2), out=out)
        on_disk = json.loads(out.read_text())
        assert on_disk["summary"]["overall"]["n"] == len(problems)
        for item in report["items"]:
            verdicts = [v for v in item["correct"].values() if v is not None]
            assert verdicts, item
            expected = which == "right"
            assert all(v is expected for v in verdicts), (which, item["id"], item["run_status"], item["correct"])
        rules = report["summary"]["overall"]["rules"]
        assert rules["strict_1e-6"]["pass_at_1"] == (1.0 if which == "right" else 0.0)
        assert report["summary"]["overall"]["execution_rate"] == 1.0, [(i["run_status"], i["error"]) for i in report["items"]]


def test_unbounded_reference_through_sandbox(executor):
    p = ORProblem(id="u", benchmark="optmath_bench", question="maximise x, x >= 0",
                  reference_objective=None, reference_status=RefStatus.UNBOUNDED)
    report = evaluate([p, p], lambda qs: [as_response(UNBOUNDED), as_response(INFEASIBLE)], executor)
    assert [i["correct"]["strict_1e-6"] for i in report["items"]] == [True, False]


def test_format_and_runtime_failures_are_wrong(executor):
    p = ORProblem(id="f", benchmark="optmath_bench", question="q", reference_objective=5.0,
                  reference_status=RefStatus.OPTIMAL)
    responses = ["The answer is 5.", as_response("import os\nos.system('true')\n"),
                 as_response(HEADER + "model.optimize(\n")]
    report = evaluate([p] * 3, lambda qs: responses, executor)
    assert [i["run_status"] for i in report["items"]] == ["no_code", "error", "error"]
    assert not any(i["correct"]["strict_1e-6"] for i in report["items"])
    assert report["summary"]["overall"]["format_rate"] == pytest.approx(2 / 3)
    assert report["summary"]["overall"]["execution_rate"] == 0.0


def test_bench4opt_programs_read_data_json(data_root, executor):
    """Model-data separation: the program reads the instance's data.json from its working folder."""
    if not executor.passes_data_files:
        pytest.skip("this trex.training.or_data sandbox cannot place data files next to a program")
    p = next(r for r in load_benchmark("bench4opt", data_root) if r.reference_status is RefStatus.OPTIMAL)
    expected = sorted(json.loads(p.data_files["data.json"]))
    code = ("import json\nwith open('data.json') as f:\n    data = json.load(f)\n"
            f"assert sorted(data) == {expected!r}\n" + objective_program(p.reference_objective))
    report = evaluate([p], lambda qs: [as_response(code)], executor)
    item = report["items"][0]
    assert item["run_status"] == "optimal", item["error"]
    assert all(item["correct"].values())


def test_extract_code_conventions():
    assert extract_code("x\n```python\na = 1\n```\n```python\nb = 2\n```") == "a = 1\n"
    assert extract_code("```\nc = 3\n```") == "c = 3\n"
    assert extract_code("```py\nd = 4\n```") == "d = 4\n"
    assert extract_code("no code here") is None


def test_timeout_is_wrong_even_for_an_infeasible_reference():
    """SIRL counts a timeout as correct when the reference is infeasible; the strict rule does not."""
    from trex.training.or_data.sandbox import SandboxLimits

    p = ORProblem(id="t", benchmark="nl4opt", question="q", reference_objective=None,
                  reference_status=RefStatus.NO_BEST_SOLUTION)
    spin = HEADER + "while True:\n    pass\nmodel.optimize()\n"
    with SandboxExecutor(workers=1, limits=SandboxLimits(wall_s=2.0, cpu_s=1)) as ex:
        report = evaluate([p], lambda qs: [as_response(spin)], ex)
    item = report["items"][0]
    assert item["run_status"] == "timeout", item["error"]
    assert not any(item["correct"].values())


def test_or_data_gold_formulations_score_correct(executor):
    """The generated-problem format: or_data's gold answer for each test instance is correct under
    the strict rule, and a formulation with a perturbed number is not."""
    pytest.importorskip("trex.training.or_data.instances")
    from trex.training.or_eval.or_data_source import ORDataPipelineSource

    src = ORDataPipelineSource(workers=1)
    families = ["production_mix", "knapsack", "transportation"]
    insts = src.instances(families, 1, seed_base=3_000_000)
    problems = src.test_problems(families, 1, seed_base=3_000_000)
    assert [p.id for p in problems] == [i["uid"] for i in insts]
    gold = [i["formulation"] for i in insts]
    report = evaluate(problems, lambda qs: gold, executor)
    assert all(item["correct"]["strict_1e-6"] for item in report["items"]), report["items"]
    # scale the objective: multiply the objective expression by 3 in the code (a wrong formulation)
    wrong = [g.replace("model.setObjective(", "model.setObjective(3 * ", 1) for g in gold]
    assert all(w != g for w, g in zip(wrong, gold))
    report = evaluate(problems, lambda qs: wrong, executor)
    # (scaling the objective leaves an infeasible instance infeasible, hence still correct)
    optimal = [item for item in report["items"] if item["reference_status"] == "optimal"]
    assert optimal and not any(item["correct"]["strict_1e-6"] for item in optimal), report["items"]


def test_a_statically_rejected_program_leaves_the_recorded_layers_alone():
    """A program the static check rejects never reaches the sandbox, so the layers every run had are
    those of the runs that did (session 11's ablation JSONs had recorded ["static_check"] alone)."""
    p = ORProblem(id="s", benchmark="optmath_bench", question="maximise x, x >= 0",
                  reference_objective=None, reference_status=RefStatus.UNBOUNDED)
    with SandboxExecutor(workers=1) as ex:
        evaluate([p], lambda qs: [as_response(UNBOUNDED)], ex)
        ran = ex.isolation["enforced_in_every_run"]
        evaluate([p], lambda qs: [as_response("import os\nos.system('true')\n")], ex)
        assert ex.isolation["enforced_in_every_run"] == ran
    assert len(ran) > 1 and "static_check" in ran, ran
