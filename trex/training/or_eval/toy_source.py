"""A tiny OR data source for CPU plumbing checks of the experiment (not for measurements).

trex/training/or_data's real families render statements of 1-2k characters (about 1k tokens with
their formulations), too long for a model trained a few steps on a shared 2-core CPU. These four
one- or two-variable families have short statements and short gurobipy answers, with references
computed in closed form (one of them infeasible, so the status path is exercised):

| family    | statement                                         | reference               |
|-----------|---------------------------------------------------|-------------------------|
| cap_max   | maximise a*x, 0 <= x <= b                         | a*b                     |
| floor_min | minimise a*x, x >= b                              | a*b                     |
| pair_max  | maximise a*x + c*y, x + y <= b, x, y >= 0         | max(a, c)*b             |
| clash     | minimise x, x >= b, x <= b - d (d >= 1)           | infeasible              |
"""
from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence

from trex.training.or_eval.benchmarks import ORProblem, RefStatus

CODE_HEAD = "import gurobipy as gp\nfrom gurobipy import GRB\nmodel = gp.Model()\n"


def _cap_max(r: random.Random):
    a, b = r.randint(2, 9), r.randint(2, 9)
    return (f"Maximise {a} x where x is at most {b}.",
            CODE_HEAD + f"x = model.addVar(ub={b})\nmodel.setObjective({a} * x, GRB.MAXIMIZE)\nmodel.optimize()\n",
            RefStatus.OPTIMAL, float(a * b))


def _floor_min(r: random.Random):
    a, b = r.randint(2, 9), r.randint(2, 9)
    return (f"Minimise {a} x where x is at least {b}.",
            CODE_HEAD + f"x = model.addVar(lb={b})\nmodel.setObjective({a} * x, GRB.MINIMIZE)\nmodel.optimize()\n",
            RefStatus.OPTIMAL, float(a * b))


def _pair_max(r: random.Random):
    a, c, b = r.randint(2, 9), r.randint(2, 9), r.randint(2, 9)
    return (f"Maximise {a} x + {c} y where x + y is at most {b}.",
            CODE_HEAD + f"x = model.addVar()\ny = model.addVar()\nmodel.addConstr(x + y <= {b})\n"
                        f"model.setObjective({a} * x + {c} * y, GRB.MAXIMIZE)\nmodel.optimize()\n",
            RefStatus.OPTIMAL, float(max(a, c) * b))


def _clash(r: random.Random):
    b, d = r.randint(3, 9), r.randint(1, 2)
    return (f"Minimise x where x is at least {b} and at most {b - d}.",
            CODE_HEAD + f"x = model.addVar()\nmodel.addConstr(x >= {b})\nmodel.addConstr(x <= {b - d})\n"
                        f"model.setObjective(x, GRB.MINIMIZE)\nmodel.optimize()\n",
            RefStatus.INFEASIBLE, None)


FAMILIES: dict[str, Callable[[random.Random], tuple]] = {
    "cap_max": _cap_max, "floor_min": _floor_min, "pair_max": _pair_max, "clash": _clash}


class ToySource:
    def families(self) -> list[str]:
        return sorted(FAMILIES)

    def render_prompt(self, question: str) -> str:
        return question

    def _draws(self, families: Sequence[str], per_family: int, seed_base: int):
        for family in families:
            for k in range(per_family):
                seed = seed_base + k
                yield family, seed, FAMILIES[family](random.Random(f"{family}-{seed}"))

    def cpt_documents(self, families, per_family, seed_base) -> Iterator[dict]:
        for family, seed, (q, code, _, _) in self._draws(families, per_family, seed_base):
            yield {"text": f"{q}\n```python\n{code}```", "family": family, "seed": seed}

    def sft_pairs(self, families, per_family, seed_base) -> Iterator[dict]:
        for family, seed, (q, code, _, _) in self._draws(families, per_family, seed_base):
            yield {"question": q, "response": f"```python\n{code}```", "family": family, "seed": seed}

    def test_problems(self, families, per_family, seed_base) -> list[ORProblem]:
        return [ORProblem(id=f"{family}-{seed}", benchmark="generated", question=q, reference_objective=obj,
                          reference_status=status, family=family, meta={"seed": seed})
                for family, seed, (q, _, status, obj) in self._draws(families, per_family, seed_base)]
