"""Scoring rules: each benchmark's own rule, plus the strict and legacy rules on every benchmark.

Published OR numbers are scored in incompatible ways (reference/or_posttraining.md §1.2), so every
item is scored under every rule and each figure carries its rule's label:

| rule                          | source                                  | optimal reference                                      |
|-------------------------------|-----------------------------------------|--------------------------------------------------------|
| strict_1e-6                   | SIRL / OptMATH paper protocol           | |p-g| / (|g|+1) <= 1e-6                                 |
| legacy_5pct_rounded           | ORLM eval/execute.py (NL4OPT authors)   | round(p), round(g) within 5% rel (abs 0.05 if g rounds to 0) |
| mamo_decimals                 | Mamo 3.run_code_comp_optimization.py    | |p-g|*10^d < 1 (d = decimals of the answer string, >= 2) or |p-g|/|g| <= 1e-4 |
| optibench_all_queried_abs1e-4 | OptiBench gpt_baseline.py               | every queried value within 1e-4 absolute               |

No rule flips integrality or objective sense after a wrong answer (the OptMATH repo's "conversion
fallback" and SIRL's retry inflate accuracy; §1.2 says not to use them for headline numbers).

Infeasible / unbounded references (the STATUS_MATCH table): a program is right when its solver
reports a status compatible with the reference: ``infeasible`` accepts infeasible or
inf_or_unbd, ``unbounded`` accepts unbounded or inf_or_unbd, and ``no_best_solution`` /
``inf_or_unbd`` (no optimum exists) accept any of the three. The legacy ORLM rule is looser: its
appended trailer prints "No Best Solution" whenever the status is not OPTIMAL, so any non-optimal
solver status (e.g. a time limit) counts for a no-optimum reference; a crash or timeout of the
program never counts. SIRL's "a timeout is correct when gt is infeasible" is not adopted.

Every value a rule looks at comes from the sandbox's own solve of the model the program built
(trex/training/or_data/sandbox.py): the objective and the decision variables' values by name. What
the program prints is never read, so printing candidates, enumerating numbers, hard-coding an
objective (refused by the sandbox as "hard-coded objective") or patching the solver in the program
scores 0 under every rule (tests/or_eval/test_scoring_adversarial.py).

Deviations, stated where they apply:
- OptiBench: the authors ask an LLM to read each queried value from the program output. Here the
  extraction is deterministic and reads the solution, not the output: the queried objective
  (``answer_key``) must equal the solver objective within 1e-4, and every other queried value must
  equal (within 1e-4) the objective or the value of one of the model's decision variables (free
  variables joined to the objective through constraints; trex.training.or_data.model_file).
  Like the authors' rule, this rejects a correct alternative optimum whose variable values differ.
- Bench4Opt: the authors' metric (ORGEval: equivalence of the built model's variable-constraint
  graph with the reference formulation, trex.training.or_eval.orgeval) is reported beside Pass@1
  (``summary.orgeval``, ``items[].orgeval_equivalent``) when the benchmark files are found; the
  "native" rule here is objective/status match under strict_1e-6 (the project's "B4O-Feasible"
  reading, extended to the infeasible items through status matching).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum

from trex.training.or_eval.benchmarks import BENCHMARKS, ORProblem, RefStatus, resolve_name


class RunStatus(str, Enum):
    """What running the generated program produced (normalised from the sandbox result)."""
    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INF_OR_UNBD = "inf_or_unbd"
    OTHER_NONOPTIMAL = "other_nonoptimal"   # solver stopped without proof (time/iteration limit, ...)
    ERROR = "error"                         # program crashed, was rejected, or built no model
    TIMEOUT = "timeout"                     # the sandbox killed it
    NO_CODE = "no_code"                     # the response held no program to run


# Sandbox / solver spellings -> RunStatus. Gurobi status codes are accepted too
# (2 OPTIMAL, 3 INFEASIBLE, 4 INF_OR_UNBD, 5 UNBOUNDED; the rest are non-optimal stops).
_RUN_STATUS_SPELLINGS: dict[str, RunStatus] = {
    "optimal": RunStatus.OPTIMAL, "2": RunStatus.OPTIMAL,
    "infeasible": RunStatus.INFEASIBLE, "3": RunStatus.INFEASIBLE,
    "inf_or_unbd": RunStatus.INF_OR_UNBD, "infeasible_or_unbounded": RunStatus.INF_OR_UNBD,
    "4": RunStatus.INF_OR_UNBD,
    "unbounded": RunStatus.UNBOUNDED, "5": RunStatus.UNBOUNDED,
    "time_limit": RunStatus.OTHER_NONOPTIMAL, "iteration_limit": RunStatus.OTHER_NONOPTIMAL,
    "node_limit": RunStatus.OTHER_NONOPTIMAL, "solution_limit": RunStatus.OTHER_NONOPTIMAL,
    "interrupted": RunStatus.OTHER_NONOPTIMAL, "suboptimal": RunStatus.OTHER_NONOPTIMAL,
    "numeric": RunStatus.OTHER_NONOPTIMAL, "cutoff": RunStatus.OTHER_NONOPTIMAL,
    "other_nonoptimal": RunStatus.OTHER_NONOPTIMAL, "not_solved": RunStatus.OTHER_NONOPTIMAL,
    "timeout": RunStatus.TIMEOUT, "killed": RunStatus.TIMEOUT,
    "error": RunStatus.ERROR, "rejected": RunStatus.ERROR, "crash": RunStatus.ERROR,
    "no_model": RunStatus.ERROR, "size_limit": RunStatus.ERROR,
    "no_code": RunStatus.NO_CODE, "format_error": RunStatus.NO_CODE,
    # HiGHS model statuses outside the table of or_data/highs_backend.py, as modelStatusToString
    # spells them: a stop short of a proof is non-optimal, a model HiGHS could not take is an error
    "objective_bound": RunStatus.OTHER_NONOPTIMAL, "objective_target": RunStatus.OTHER_NONOPTIMAL,
    "unknown": RunStatus.OTHER_NONOPTIMAL, "interrupted_by_highs": RunStatus.OTHER_NONOPTIMAL, "memory": RunStatus.ERROR, "not_set": RunStatus.ERROR,
    "load_error": RunStatus.ERROR, "model_error": RunStatus.ERROR, "presolve_error": RunStatus.ERROR,
    "solve_error": RunStatus.ERROR, "postsolve_error": RunStatus.ERROR, "empty": RunStatus.ERROR,
}


# The sandbox's error text for runs killed by a time limit (trex/training/or_data/sandbox.py).
_ERROR_KINDS: dict[str, RunStatus] = {"timeout": RunStatus.TIMEOUT, "cpu_time": RunStatus.TIMEOUT}


def parse_run_status(value) -> RunStatus:
    if isinstance(value, RunStatus):
        return value
    key = str(value).strip().lower().replace(" ", "_").replace("-", "_")
    if key.startswith("grb.status."):
        key = key[len("grb.status."):]
    if key in _RUN_STATUS_SPELLINGS:
        return _RUN_STATUS_SPELLINGS[key]
    if key.isdigit():   # any other Gurobi code is a non-optimal stop
        return RunStatus.OTHER_NONOPTIMAL
    raise ValueError(f"unknown run status {value!r}; expected one of {sorted(_RUN_STATUS_SPELLINGS)} "
                     f"or a Gurobi status code")


@dataclass(frozen=True)
class Outcome:
    """The part of an execution that scoring looks at."""
    status: RunStatus
    objective: float | None = None
    stdout: str = ""             # kept for the record; no rule reads it
    error: str | None = None     # the sandbox's reason when the program did not run to a status
    values: dict[str, float] | None = None   # decision variables' values (name -> value), solver's
    model: object | None = None  # the model the program built, as the sandbox read it back (ORGEval's input)

    @classmethod
    def from_execution(cls, result) -> "Outcome":
        """From trex.training.or_data.sandbox's ExecutionResult (ok, status, objective, stdout, ...)."""
        status = getattr(result, "status", None)
        ok = bool(getattr(result, "ok", status is not None))
        error = getattr(result, "error", None)
        try:
            run_status = parse_run_status(status) if status not in (None, "") else RunStatus.ERROR
        except ValueError:
            # a status no table knows is a failed run with its reason, never an evaluator crash
            # (the H200 ablation's scoring once died on HiGHS's 'not_set')
            run_status, error = RunStatus.ERROR, f"unknown solver status {status!r}"
        if not ok and run_status not in (RunStatus.TIMEOUT, RunStatus.NO_CODE):
            # a run that did not complete: killed for time (wall or CPU), or any other error
            run_status = _ERROR_KINDS.get(str(error or "").strip().lower(), RunStatus.ERROR)
        objective = getattr(result, "objective", None)
        objective = float(objective) if objective is not None and math.isfinite(float(objective)) else None
        values = getattr(result, "decision_values", None) if run_status is RunStatus.OPTIMAL else None
        return cls(run_status, objective if run_status is RunStatus.OPTIMAL else None,
                   str(getattr(result, "stdout", "") or ""), error, dict(values) if values else None,
                   getattr(result, "model", None))


# Reference status -> run statuses that match it (strict). A no-optimum reference accepts any
# proof of non-existence; it never accepts a crash, a timeout or a non-optimal stop.
STATUS_MATCH: dict[RefStatus, frozenset[RunStatus]] = {
    RefStatus.INFEASIBLE: frozenset({RunStatus.INFEASIBLE, RunStatus.INF_OR_UNBD}),
    RefStatus.UNBOUNDED: frozenset({RunStatus.UNBOUNDED, RunStatus.INF_OR_UNBD}),
    RefStatus.INF_OR_UNBD: frozenset({RunStatus.INFEASIBLE, RunStatus.UNBOUNDED, RunStatus.INF_OR_UNBD}),
    RefStatus.NO_BEST_SOLUTION: frozenset({RunStatus.INFEASIBLE, RunStatus.UNBOUNDED,
                                           RunStatus.INF_OR_UNBD}),
}
# ORLM's trailer prints "No Best Solution" for every status other than OPTIMAL once the program ran.
LEGACY_STATUS_MATCH: dict[RefStatus, frozenset[RunStatus]] = {
    ref: ok | {RunStatus.OTHER_NONOPTIMAL} for ref, ok in STATUS_MATCH.items()
}


# ------------------------------------------------------------------------- objective comparisons
def strict_close(pred: float, ref: float, tol: float = 1e-6) -> bool:
    return abs(pred - ref) / (abs(ref) + 1.0) <= tol


def legacy_close(pred: float, ref: float, tol: float = 0.05) -> bool:
    rp, rg = round(pred), round(ref)
    if rg == 0:
        return abs(rp - rg) <= tol
    return abs(rp - rg) / abs(rg) <= tol


def answer_decimals(answer_str: str | None, floor: int = 2) -> int:
    """Decimals printed in a reference string ("117.15" -> 2, "3.125" -> 3), at least ``floor``."""
    if not answer_str:
        return floor
    text = answer_str.strip()
    if "e" in text.lower() or "." not in text:
        return floor
    return max(floor, len(text.split(".", 1)[1]))


def mamo_close(pred: float, ref: float, answer_str: str | None) -> bool:
    d = answer_decimals(answer_str)
    if abs(pred * 10 ** d - ref * 10 ** d) < 1:
        return True
    if ref == 0:
        return abs(pred - ref) <= 1
    return abs(pred - ref) / abs(ref) <= 1e-4


# ------------------------------------------------------------------------------------ the rules
def _status_gate(problem: ORProblem, outcome: Outcome, table) -> bool | None:
    """Shared handling of non-optimal references; None means: optimal reference, compare values."""
    if problem.reference_status is RefStatus.OPTIMAL:
        return None
    return outcome.status in table[problem.reference_status]


def _objective_rule(close: Callable[[float, float, ORProblem], bool], table):
    def rule(problem: ORProblem, outcome: Outcome) -> bool | None:
        gate = _status_gate(problem, outcome, table)
        if gate is not None:
            return gate
        if problem.reference_objective is None:
            return None   # nothing to compare under an objective-only rule (OptiBench variable-only items)
        if outcome.status is not RunStatus.OPTIMAL or outcome.objective is None:
            return False
        return close(outcome.objective, problem.reference_objective, problem)
    return rule


def _optibench_rule(problem: ORProblem, outcome: Outcome) -> bool | None:
    gate = _status_gate(problem, outcome, STATUS_MATCH)
    if gate is not None:
        return gate
    if outcome.status is not RunStatus.OPTIMAL or outcome.objective is None:
        return False
    queried = dict(problem.queried_values or {})
    objective_target = queried.pop(problem.meta.get("answer_key"), problem.reference_objective)
    if objective_target is None and not queried:
        return None
    if objective_target is not None and abs(outcome.objective - objective_target) >= 1e-4:
        return False
    candidates = [outcome.objective, *(outcome.values or {}).values()]
    return all(any(abs(c - t) < 1e-4 for c in candidates) for t in queried.values())


@dataclass(frozen=True)
class Rule:
    name: str
    label: str
    fn: Callable[[ORProblem, Outcome], bool | None]


RULES: dict[str, Rule] = {r.name: r for r in (
    Rule("strict_1e-6", "strict: |p-g|/(|g|+1) <= 1e-6, status must match (SIRL/OptMATH paper)",
         _objective_rule(lambda p, g, _: strict_close(p, g), STATUS_MATCH)),
    Rule("legacy_5pct_rounded", "legacy: round both, 5% relative (ORLM); any non-optimal status "
         "matches a no-optimum reference", _objective_rule(lambda p, g, _: legacy_close(p, g),
                                                           LEGACY_STATUS_MATCH)),
    Rule("mamo_decimals", "Mamo authors: |p-g|*10^d < 1 (d = answer decimals, >= 2) or rel <= 1e-4",
         _objective_rule(lambda p, g, prob: mamo_close(p, g, prob.answer_str), STATUS_MATCH)),
    Rule("optibench_all_queried_abs1e-4", "OptiBench authors: every queried value within 1e-4 abs "
         "(read from the solver's objective and decision variables, not printed text or an LLM)",
         _optibench_rule),
)}

HEADLINE_RULES = ("strict_1e-6", "legacy_5pct_rounded")


def native_rule(benchmark: str) -> str:
    """The benchmark authors' own rule (or the stand-in named in this module's docstring)."""
    try:
        return BENCHMARKS[resolve_name(benchmark)].native_rule
    except ValueError:
        return "strict_1e-6"   # generated problems come from our own solver: strict, per §1 lessons


@dataclass
class ItemScore:
    problem_id: str
    run_status: str
    objective: float | None
    correct: dict[str, bool | None] = field(default_factory=dict)   # rule name -> verdict (None = n/a)


def score(problem: ORProblem, outcome: Outcome, rules: tuple[str, ...] | None = None) -> ItemScore:
    """Score one item under the headline rules plus the benchmark's native rule."""
    names = rules or tuple(dict.fromkeys(HEADLINE_RULES + (native_rule(problem.benchmark),)))
    unknown = [n for n in names if n not in RULES]
    if unknown:
        raise ValueError(f"unknown scoring rules {unknown}; known: {sorted(RULES)}")
    return ItemScore(problem.id, outcome.status.value, outcome.objective,
                     {n: RULES[n].fn(problem, outcome) for n in names})
