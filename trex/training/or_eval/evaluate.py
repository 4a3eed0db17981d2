"""Greedy Pass@1 -> sandboxed execution -> scoring -> JSON.

The three stages are separable so each can be tested alone:
- ``respond``: questions -> response texts (greedy decoding of a model, or any callable);
- ``run_responses``: response -> program (first ```python block) -> sandbox -> Outcome;
- ``summarise``: per-item verdicts under every rule -> rates with Wilson intervals, overall and by
  split / family, plus the execution and format rates.

The sandbox is trex.training.or_data.sandbox.execute_solver_code: a fresh child per program inside
the kernel's namespaces, seccomp and a cgroup; the program only builds its model, which the sandbox
solves outside the untrusted process, so status, objective and variable values never come from
anything the program prints or reports. Scoring untrusted code refuses to start where the host lacks
a kernel layer unless the caller opts in (``allow_weak_sandbox`` / ``TREX_ALLOW_WEAK_SANDBOX=1``);
the report records which layers held.
"""
from __future__ import annotations

import inspect
import json
import os
import platform
import re
import subprocess
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

from trex.resources import benchmark_root_or_none
from trex.training.or_eval import orgeval
from trex.training.or_eval.benchmarks import ORProblem
from trex.training.or_eval.scoring import RULES, HEADLINE_RULES, ItemScore, Outcome, RunStatus, native_rule, score
from trex.training.or_eval.stats import wilson_interval

_FENCED = re.compile(r"```[ \t]*(python|py)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


def extract_code(response: str) -> str | None:
    """The program in a response: the first ```python block (ORLM's convention), else the first
    unlabelled fenced block, else None (counts as a format failure)."""
    blocks = _FENCED.findall(response)
    for lang, body in blocks:
        if lang:
            return body
    for _, body in blocks:
        if body.strip():
            return body
    return None


# ---------------------------------------------------------------------------------- execution
Executor = Callable[[str, ORProblem], Outcome]


class SandboxExecutor:
    """Runs programs in trex.training.or_data.sandbox (one pool of ``workers`` warm zygotes).

    Data files (Bench4Opt's ``data.json``) are passed through the sandbox's ``files`` argument,
    which writes them read-only into the program's working folder. With a sandbox that has no such
    argument, programs that open data.json fail there ("forbidden name open"), scored wrong.
    """

    # A failure of the sandbox itself (e.g. its warm zygote process died) says nothing about the
    # program; it is retried on a fresh zygote. Program errors are never retried.
    INFRA_ERROR_PREFIX = "sandbox failure"
    INFRA_RETRIES = 2

    def __init__(self, workers: int = 1, limits=None, allow_weak_sandbox: bool = False):
        try:
            from trex.training.or_data.sandbox import KERNEL_LAYERS, WEAK_SANDBOX_ENV, Sandbox, execute_solver_code
        except ImportError as exc:   # the OR data pipeline is a separate package; say what is missing
            raise RuntimeError(f"trex.training.or_data.sandbox is not importable ({exc}); the evaluation "
                               f"needs its execute_solver_code to run generated programs") from exc
        self._execute = execute_solver_code
        self.weak_sandbox_allowed = allow_weak_sandbox or os.environ.get(WEAK_SANDBOX_ENV) == "1"
        self._sandbox = Sandbox(workers=max(1, workers), require=() if self.weak_sandbox_allowed else KERNEL_LAYERS)
        self.limits = limits
        params = inspect.signature(execute_solver_code).parameters
        self._files_arg = next((p for p in ("files", "data_files", "extra_files") if p in params), None)
        self.infra_retries_used = 0
        self._enforced: set[str] | None = None    # isolation layers every run so far had
        self._enforced_lock = threading.Lock()
        # The sandbox's zygote processes die with the *thread* that started them (PR_SET_PDEATHSIG
        # is per thread on Linux), so every sandbox call runs on threads that live as long as this
        # executor, never on a short-lived pool of the caller.
        self._threads = ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="or-sandbox")

    @property
    def passes_data_files(self) -> bool:
        """Whether the sandbox can place a problem's data files next to its program."""
        return self._files_arg is not None

    def __call__(self, code: str, problem: ORProblem) -> Outcome:
        return self._threads.submit(self._run, code, problem).result()

    def _run(self, code: str, problem: ORProblem) -> Outcome:
        kwargs = {"limits": self.limits, "sandbox": self._sandbox}
        if problem.data_files and self._files_arg is not None:
            kwargs[self._files_arg] = dict(problem.data_files)
        result = self._execute(code, **kwargs)
        for _ in range(self.INFRA_RETRIES):
            if not str(getattr(result, "error", "") or "").startswith(self.INFRA_ERROR_PREFIX):
                break
            self.infra_retries_used += 1
            result = self._execute(code, **kwargs)
        layers = set(getattr(result, "enforced", None) or ())
        # A program the static check rejected never reached the sandbox (its result names only
        # "static_check"): it says nothing about the layers, and must not empty the intersection
        # (the session-11 ablation JSONs recorded ["static_check"] alone that way).
        if layers and not getattr(result, "violations", None):
            with self._enforced_lock:
                self._enforced = layers if self._enforced is None else self._enforced & layers
        return Outcome.from_execution(result)

    @property
    def isolation(self) -> dict:
        """What the runs had, for the record: the isolation layers enforced in EVERY run so far, and
        why the network namespace is off when the sandbox had to drop it (trex.training.or_data.sandbox)."""
        return {"enforced_in_every_run": sorted(self._enforced or ()),
                "verified_at_start": self._sandbox.verified_layers,
                "missing": dict(self._sandbox.missing_reasons),
                "weak_sandbox_allowed": self.weak_sandbox_allowed,
                "network_namespace_error": self._sandbox.network_namespace_error}

    def close(self) -> None:
        self._sandbox.close()
        self._threads.shutdown(wait=True)

    def __enter__(self) -> "SandboxExecutor":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def run_responses(problems: Sequence[ORProblem], responses: Sequence[str], executor: Executor,
                  workers: int = 1, on_done: Callable[[int, Outcome], None] | None = None
                  ) -> list[tuple[str | None, Outcome]]:
    """(extracted code, outcome) per item; a response without code is NO_CODE and is not run.
    ``on_done(index, outcome)`` is called as each item finishes (progress, live FAILED lines)."""
    if len(problems) != len(responses):
        raise ValueError(f"{len(problems)} problems but {len(responses)} responses")

    def one(i: int) -> tuple[str | None, Outcome]:
        code = extract_code(responses[i])
        outcome = Outcome(RunStatus.NO_CODE) if code is None else executor(code, problems[i])
        if on_done is not None:
            on_done(i, outcome)
        return code, outcome

    if workers <= 1:
        return [one(i) for i in range(len(problems))]
    with ThreadPoolExecutor(max_workers=workers) as pool:   # each sandbox call is its own process
        return list(pool.map(one, range(len(problems))))


# ------------------------------------------------------------------------------------ summary
def rule_summary(verdicts: Sequence[bool | None], confidence: float = 0.95) -> dict:
    scored = [v for v in verdicts if v is not None]
    prop = wilson_interval(sum(scored), len(scored), confidence)
    return {"correct": prop.successes, "scored": prop.n, "not_applicable": len(verdicts) - len(scored),
            "pass_at_1": prop.rate, "wilson_low": prop.low, "wilson_high": prop.high,
            "confidence": confidence}


def summarise(problems: Sequence[ORProblem], scores: Sequence[ItemScore],
              rules: Sequence[str]) -> dict:
    def block(idx: list[int]) -> dict:
        statuses = [scores[i].run_status for i in idx]
        executed = sum(s not in (RunStatus.NO_CODE.value, RunStatus.ERROR.value, RunStatus.TIMEOUT.value)
                       for s in statuses)
        return {"n": len(idx),
                "format_rate": (sum(s != RunStatus.NO_CODE.value for s in statuses) / len(idx)) if idx else None,
                "execution_rate": (executed / len(idx)) if idx else None,
                "run_status_counts": {s: statuses.count(s) for s in sorted(set(statuses))},
                "rules": {r: rule_summary([scores[i].correct[r] for i in idx]) for r in rules}}

    everything = list(range(len(problems)))
    by_split, by_family = defaultdict(list), defaultdict(list)
    for i, p in enumerate(problems):
        if p.split:
            by_split[p.split].append(i)
        if p.family:
            by_family[p.family].append(i)
    return {"overall": block(everything),
            "by_split": {k: block(v) for k, v in sorted(by_split.items())},
            "by_family": {k: block(v) for k, v in sorted(by_family.items())}}


def _git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                              cwd=Path(__file__).resolve().parent).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def atomic_write_json(path: str | os.PathLike, obj) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=f".{p.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, sort_keys=False, default=str)
            f.write("\n")
        os.replace(tmp, p)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return p


def failure_reason(problem: ORProblem, outcome: Outcome) -> str:
    """Why an item is scored wrong, in one line: the sandbox's error, or what the solve gave
    against the reference."""
    if outcome.status is RunStatus.NO_CODE:
        return "no ```python block in the response"
    if outcome.error:
        return f"{outcome.status.value}: {outcome.error.strip().splitlines()[-1][:200]}"
    if problem.reference_status.value != "optimal":
        return f"solver status {outcome.status.value}, reference {problem.reference_status.value}"
    if outcome.status is not RunStatus.OPTIMAL:
        return f"solver status {outcome.status.value}, reference optimal {problem.reference_objective}"
    return f"objective {outcome.objective}, reference {problem.reference_objective}"


@dataclass
class EvalConfig:
    max_new_tokens: int = 512
    workers: int = 4
    confidence: float = 0.95
    keep_responses: bool = True   # store each response in the JSON (for auditing failures)


def evaluate(problems: Sequence[ORProblem], respond: Callable[[list[str]], list[str]],
             executor: Executor, config: EvalConfig | None = None, out: str | os.PathLike | None = None,
             meta: dict | None = None, on_item: Callable[[ORProblem, ItemScore, Outcome], None] | None = None,
             data_root: str | os.PathLike | None = None) -> dict:
    """Pass@1 of ``respond`` on ``problems``: one greedy response each, executed and scored under
    the strict and legacy rules plus each benchmark's native rule. Returns (and writes) the report.
    ``on_item(problem, score, outcome)`` is called as each item is scored (progress output).
    Bench4Opt items also get ORGEval (the built model against the reference formulation) when the
    benchmark files are found (``data_root``, else trex.resources' search)."""
    config = config or EvalConfig()
    if not problems:
        raise ValueError("no problems to evaluate; check the benchmark name and --limit")
    t0 = time.perf_counter()
    responses = list(respond([p.question for p in problems]))
    t_gen = time.perf_counter() - t0
    natives = sorted({native_rule(p.benchmark) for p in problems})
    rules = list(dict.fromkeys(list(HEADLINE_RULES) + natives))
    done = None if on_item is None else (lambda i, outcome: on_item(problems[i], score(problems[i], outcome, tuple(rules)),
                                                                    outcome))
    runs = run_responses(problems, responses, executor, workers=config.workers, on_done=done)
    t_exec = time.perf_counter() - t0 - t_gen
    scores = [score(p, outcome, tuple(rules)) for p, (_, outcome) in zip(problems, runs)]
    items = []
    for p, resp, (code, outcome), s in zip(problems, responses, runs, scores):
        item = {"id": p.id, "benchmark": p.benchmark, "split": p.split, "family": p.family,
                "reference_status": p.reference_status.value, "reference_objective": p.reference_objective,
                "run_status": s.run_status, "objective": s.objective, "error": outcome.error,
                "correct": s.correct,
                "failure": None if s.correct.get(native_rule(p.benchmark)) is not False else failure_reason(p, outcome),
                "has_code": code is not None}
        if config.keep_responses:
            item["response"] = resp
        items.append(item)
    report = {
        "benchmarks": sorted({p.benchmark for p in problems}),
        "native_rules": {b: native_rule(b) for b in sorted({p.benchmark for p in problems})},
        "rule_labels": {r: RULES[r].label for r in rules},
        "decoding": {"kind": "greedy", "samples": 1, "max_new_tokens": config.max_new_tokens},
        "timing_s": {"generate": round(t_gen, 3), "execute": round(t_exec, 3)},
        "summary": summarise(problems, scores, rules),
        "items": items,
        "environment": {"python": platform.python_version(), "platform": platform.platform(),
                        "commit": _git_commit()},
        "meta": meta or {},
        "sandbox": getattr(executor, "isolation", None),   # the layers that held in every run
        "config": asdict(config),
    }
    if any(p.benchmark == "bench4opt" for p in problems):
        root, _ = benchmark_root_or_none(data_root)
        if root is not None and (Path(root) / "bench4opt" / "bench4opt.jsonl").is_file():
            orgeval.add_to_report(report, {p.id: outcome.model for p, (_, outcome) in zip(problems, runs)}, root)
    if out is not None:
        atomic_write_json(out, report)
    return report
