"""Issue 19 (scoring no program can game): programs that print numbers without solving, enumerate
candidate values, hard-code an objective or patch the solver score 0 under every rule, on real
items of every benchmark, through the real path (response -> sandbox -> parent's solve -> rules)."""
import pytest

from trex.training.or_eval.benchmarks import RefStatus, load_benchmark
from trex.training.or_eval.evaluate import SandboxExecutor, evaluate

BENCHES = ("nl4opt", "mamo_easy", "mamo_complex", "optibench", "optmath_bench", "bench4opt")
HEADER = "import gurobipy as gp\nfrom gurobipy import GRB\nm = gp.Model()\n"


def attacks(answer: float, queried: dict) -> dict[str, str]:
    """Each program knows the answer (the worst case: it read it somewhere) and tries to get it
    scored without formulating the problem."""
    prints = "".join(f"print({k!r}, {v!r})\n" for k, v in queried.items()) + f"print({answer!r})\n"
    return {
        "print_only": prints,
        "print_with_a_real_model": HEADER + "x = m.addVar(ub=1)\ny = m.addVar(ub=1)\nm.addConstr(x + y <= 1)\n"
                                   "m.setObjective(x + 2 * y, GRB.MAXIMIZE)\nm.optimize()\n" + prints,
        "enumerate_printed": "for k in range(-1000, 10000):\n    print(k, k / 2, k / 4)\n" + prints,
        "enumerate_models": HEADER.replace("m = gp.Model()\n", "") + (
            "for k in [0.0, 1.0, %r]:\n    m = gp.Model()\n    x = m.addVar(lb=k, ub=k)\n"
            "    m.setObjective(x, GRB.MAXIMIZE)\n    m.optimize()\n" % answer),
        "constant_objective": HEADER + f"x = m.addVar()\nm.setObjective(0 * x + {answer!r})\nm.optimize()\n",
        "fixed_variable": HEADER + f"x = m.addVar(lb={answer!r}, ub={answer!r})\nm.setObjective(x)\nm.optimize()\n",
        "answer_as_a_bound": HEADER + f"x = m.addVar(lb={answer!r}, ub={answer + 1!r})\n"
                              "m.addConstr(x <= 1e9)\nm.setObjective(x, GRB.MINIMIZE)\nm.optimize()\n",
        "constant_plus_sliver": HEADER + f"x = m.addVar(ub=1e-9)\ny = m.addVar(ub=1e-9)\nm.addConstr(x + y <= 1e-9)\n"
                                 f"m.setObjective(x + y + {answer!r}, GRB.MAXIMIZE)\nm.optimize()\n",
        "spray_variables": HEADER + "xs = [m.addVar(lb=k, ub=k + 1e-12) for k in range(0, 2000)]\n"
                            + "".join(f"v{i} = m.addVar(lb={v!r}, ub={v!r})\n" for i, v in enumerate(queried.values()))
                            + "m.setObjective(xs[0], GRB.MINIMIZE)\nm.optimize()\n",
        "patch_objval": HEADER + "gp.Model.ObjVal = %r\ngp.Model.Status = 2\nx = m.addVar(ub=1)\ny = m.addVar(ub=1)\n"
                         "m.addConstr(x + y <= 1)\nm.setObjective(x + y, GRB.MAXIMIZE)\nm.optimize()\n" % answer,
        "patch_solver": "import gurobipy as gp\nfrom gurobipy import GRB\nimport numpy\n"
                        "class Fake:\n    status, objective, has_solution = 'optimal', %r, True\n    x = [0.0, 0.0]\n"
                        "gp.solve_canonical = lambda *a, **k: Fake\n" % answer
                        + "m = gp.Model()\nx = m.addVar(ub=1)\ny = m.addVar(ub=1)\nm.addConstr(x + y <= 1)\n"
                          "m.setObjective(x + y, GRB.MAXIMIZE)\nm.optimize()\nprint(m.ObjVal)\n",
    }


@pytest.fixture(scope="module")
def executor():
    with SandboxExecutor(workers=2) as ex:
        yield ex


@pytest.mark.parametrize("name", BENCHES)
def test_gaming_programs_score_zero_under_every_rule(data_root, executor, name):
    items = [p for p in load_benchmark(name, data_root)
             if p.reference_status is RefStatus.OPTIMAL and p.reference_objective not in (None, 0.0, 1.0)][:2]
    assert items
    problems, responses, kinds = [], [], []
    for p in items:
        for kind, code in attacks(p.reference_objective, p.queried_values or {}).items():
            problems.append(p)
            responses.append(f"```python\n{code}```\n")
            kinds.append(kind)
    report = evaluate(problems, lambda qs: responses, executor)
    accepted = [(kind, item["id"], rule, item["error"]) for kind, item in zip(kinds, report["items"])
                for rule, verdict in item["correct"].items() if verdict]
    assert accepted == [], accepted
    # the two patching programs did solve their own (honest) model: the parent's solve, not theirs
    for kind, item in zip(kinds, report["items"]):
        if kind in ("patch_objval", "patch_solver", "print_with_a_real_model"):
            assert item["run_status"] == "optimal" and item["objective"] in (1.0, 2.0), (kind, item)
        if kind in ("print_only", "enumerate_printed"):
            assert item["error"] == "no optimize() call", (kind, item["error"])
        if kind in ("constant_objective", "fixed_variable", "answer_as_a_bound", "constant_plus_sliver",
                    "enumerate_models", "spray_variables"):
            assert (item["error"] or "").startswith("hard-coded objective"), (kind, item["error"])
