"""Loaders for the public OR benchmarks (../shared/data/or_benchmarks/) into one record type.

Every benchmark folder holds ``<name>.jsonl`` in a shared normalised schema (``id``, ``question``,
``answer`` = reference optimum or null, ``status``) plus benchmark-specific fields that the
benchmark's own scoring rule needs (README.md and each PROVENANCE.md there):

| benchmark     | extra fields kept                          | why                                            |
|---------------|--------------------------------------------|------------------------------------------------|
| nl4opt        | answer_str                                 | "No Best Solution" references (status)         |
| mamo_easy     | answer_str                                 | Mamo's decimals rule depends on the string     |
| mamo_complex  | answer_str                                 | idem                                           |
| optibench     | queried_values, answer_key, answer_note    | the authors score every queried value          |
| optmath_bench | -                                          | objective only                                 |
| bench4opt     | instance_data -> data.json, family, class  | the program must read data.json (model-data    |
|               |                                            | separation); family for per-family breakdowns  |

Generated problems from training/or_data (the experiment's test split) load into the same record
type with ``load_generated``.
"""
from __future__ import annotations

import ast
import json
import math
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path


class RefStatus(str, Enum):
    """Status of the reference answer."""
    OPTIMAL = "optimal"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    INF_OR_UNBD = "inf_or_unbd"            # the solver could not tell which of the two
    NO_BEST_SOLUTION = "no_best_solution"  # ORLM/NL4OPT label: no optimum exists (infeasible or unbounded)


# Spellings of a status found in the data files and in solver/sandbox outputs -> RefStatus.
_STATUS_SPELLINGS: dict[str, RefStatus] = {
    "optimal": RefStatus.OPTIMAL,
    "infeasible": RefStatus.INFEASIBLE,
    "unbounded": RefStatus.UNBOUNDED,
    "inf_or_unbd": RefStatus.INF_OR_UNBD,
    "infeasible_or_unbounded": RefStatus.INF_OR_UNBD,
    "no_best_solution": RefStatus.NO_BEST_SOLUTION,
    "no best solution": RefStatus.NO_BEST_SOLUTION,
}


def parse_ref_status(value) -> RefStatus:
    if isinstance(value, RefStatus):
        return value
    key = str(value).strip().lower()
    if key not in _STATUS_SPELLINGS:
        raise ValueError(f"unknown reference status {value!r}; expected one of "
                         f"{sorted(_STATUS_SPELLINGS)}")
    return _STATUS_SPELLINGS[key]


@dataclass(frozen=True)
class ORProblem:
    """One evaluation item, whatever benchmark or generator it came from."""
    id: str
    benchmark: str
    question: str
    reference_objective: float | None
    reference_status: RefStatus
    answer_str: str | None = None                # verbatim reference string (Mamo decimals rule)
    queried_values: dict[str, float] | None = None  # OptiBench: every quantity the item asks for
    data_files: dict[str, str] = field(default_factory=dict)  # files written next to the program
    family: str | None = None
    split: str | None = None                     # experiment family split (seen / cpt_only / held_out)
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.reference_status is RefStatus.OPTIMAL and self.reference_objective is None \
                and not self.queried_values:
            raise ValueError(f"{self.id}: status optimal needs a reference objective or queried values")


def _as_float(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, (int, float)):
        out = float(value)
    else:
        text = str(value).strip()
        if not text or text.lower() in ("none", "null", "no best solution"):
            return None
        out = float(text.replace(",", ""))
    if math.isnan(out):
        return None
    return out


def _as_mapping(value) -> dict | None:
    """JSON objects arrive parsed; tolerate a Python-literal string too (some exports stringify)."""
    if value is None or isinstance(value, dict):
        return value
    text = str(value)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return ast.literal_eval(text)


def _base(rec: dict) -> dict:
    return dict(id=str(rec["id"]), benchmark=str(rec["benchmark"]), question=str(rec["question"]),
                reference_objective=_as_float(rec.get("answer")),
                reference_status=parse_ref_status(rec["status"]))


def _meta(rec: dict, keys: Iterable[str]) -> dict:
    return {k: rec[k] for k in keys if k in rec}


_SOURCE_KEYS = ("source_repo", "source_commit", "source_file", "source_index")


def _load_answer_str(rec: dict) -> ORProblem:
    """NL4OPT and Mamo: objective plus the verbatim answer string."""
    return ORProblem(**_base(rec), answer_str=rec.get("answer_str"),
                     meta=_meta(rec, _SOURCE_KEYS + ("orig_id", "type", "nl4opt_competition_ref")))


def _load_optibench(rec: dict) -> ORProblem:
    queried = _as_mapping(rec.get("queried_values")) or {}
    return ORProblem(**_base(rec), answer_str=rec.get("answer_str"),
                     queried_values={str(k): float(v) for k, v in queried.items()},
                     meta=_meta(rec, _SOURCE_KEYS + ("answer_key", "answer_note", "problem_type",
                                                     "orig_index")))


def _load_optmath(rec: dict) -> ORProblem:
    return ORProblem(**_base(rec), meta=_meta(rec, _SOURCE_KEYS + ("orig_id",)))


def _load_bench4opt(rec: dict) -> ORProblem:
    data = _as_mapping(rec.get("instance_data"))
    files = {"data.json": json.dumps(data)} if data is not None else {}
    return ORProblem(**_base(rec), data_files=files, family=rec.get("family"),
                     meta=_meta(rec, _SOURCE_KEYS + ("problem_class", "domain", "variant",
                                                     "instance_dir", "model_stats", "orgeval",
                                                     "question_concise")))


@dataclass(frozen=True)
class BenchmarkSpec:
    name: str
    folder: str
    loader: Callable[[dict], ORProblem]
    native_rule: str   # key into scoring.RULES: the benchmark authors' own rule (or our closest stand-in)


BENCHMARKS: dict[str, BenchmarkSpec] = {s.name: s for s in (
    BenchmarkSpec("nl4opt", "nl4opt", _load_answer_str, "legacy_5pct_rounded"),
    BenchmarkSpec("mamo_easy", "mamo_easy", _load_answer_str, "mamo_decimals"),
    BenchmarkSpec("mamo_complex", "mamo_complex", _load_answer_str, "mamo_decimals"),
    BenchmarkSpec("optibench", "optibench", _load_optibench, "optibench_all_queried_abs1e-4"),
    BenchmarkSpec("optmath_bench", "optmath_bench", _load_optmath, "strict_1e-6"),
    BenchmarkSpec("bench4opt", "bench4opt", _load_bench4opt, "strict_1e-6"),
)}

ALIASES = {"mamo-easy": "mamo_easy", "mamo-complex": "mamo_complex", "optmath": "optmath_bench",
           "optmath-bench": "optmath_bench", "b4o": "bench4opt", "nl4opt-245": "nl4opt"}

DATA_ENV = "TREX_OR_BENCHMARKS"


def resolve_name(name: str) -> str:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; choose one of {sorted(BENCHMARKS)} "
                         f"(aliases: {sorted(ALIASES)})")
    return key


def default_data_root() -> Path:
    """``$TREX_OR_BENCHMARKS``, else ``shared/data/or_benchmarks`` in or next to the repository."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    for candidate in (repo / "shared" / "data" / "or_benchmarks",
                      repo.parent / "shared" / "data" / "or_benchmarks"):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"benchmark data not found next to {repo}; set {DATA_ENV} to the "
                            f"or_benchmarks folder")


def iter_benchmark(name: str, root: str | os.PathLike | None = None) -> Iterator[ORProblem]:
    spec = BENCHMARKS[resolve_name(name)]
    path = Path(root) if root is not None else default_data_root()
    path = path / spec.folder / f"{spec.folder}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} missing; point {DATA_ENV} (or root=) at the or_benchmarks folder")
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield spec.loader(json.loads(line))
            except (KeyError, ValueError, SyntaxError) as exc:
                raise ValueError(f"{path}:{lineno}: cannot load record: {exc}") from exc


def load_benchmark(name: str, root: str | os.PathLike | None = None,
                   limit: int | None = None) -> list[ORProblem]:
    out = []
    for rec in iter_benchmark(name, root):
        if limit is not None and len(out) >= limit:
            break
        out.append(rec)
    return out


# --------------------------------------------------------------------- generated test problems
# Field names the OR data pipeline may use for the same thing, in order of preference.
_GENERATED_KEYS = {
    "question": ("question", "prompt", "nl", "problem"),
    "objective": ("objective", "obj", "answer", "reference_objective"),
    "status": ("status", "reference_status"),
}


def _first(rec: dict, names: Iterable[str], default=None):
    for n in names:
        if n in rec:
            return rec[n]
    return default


def generated_to_problem(rec: dict, benchmark: str = "generated", split: str | None = None) -> ORProblem:
    """One record of training/or_data's JSONL (a test pair with provenance) -> ORProblem."""
    question = _first(rec, _GENERATED_KEYS["question"])
    if question is None:
        raise ValueError(f"generated record has none of the question fields {_GENERATED_KEYS['question']}: "
                         f"keys {sorted(rec)}")
    prov = rec.get("provenance") or {}
    family = rec.get("family") or prov.get("family")
    rid = rec.get("id") or f"{family}-{rec.get('seed', prov.get('seed'))}"
    return ORProblem(id=str(rid), benchmark=benchmark, question=str(question),
                     reference_objective=_as_float(_first(rec, _GENERATED_KEYS["objective"])),
                     reference_status=parse_ref_status(_first(rec, _GENERATED_KEYS["status"], "optimal")),
                     family=family, split=split or rec.get("split"),
                     meta={k: v for k, v in rec.items() if k in ("seed", "level", "provenance", "params")})


def load_generated(path: str | os.PathLike, benchmark: str = "generated",
                   limit: int | None = None) -> list[ORProblem]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append(generated_to_problem(json.loads(line), benchmark))
                if limit is not None and len(out) >= limit:
                    break
    return out
