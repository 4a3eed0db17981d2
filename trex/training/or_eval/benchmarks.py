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

Generated problems from trex/training/or_data (the experiment's test split) load into the same record
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

from trex.resources import BENCHMARKS_ENV, BENCHMARKS_FIX, benchmark_root_or_none


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

DATA_ENV = BENCHMARKS_ENV


def resolve_name(name: str) -> str:
    key = name.strip().lower()
    key = ALIASES.get(key, key)
    if key not in BENCHMARKS:
        raise ValueError(f"unknown benchmark {name!r}; choose one of {sorted(BENCHMARKS)} "
                         f"(aliases: {sorted(ALIASES)})")
    return key


def default_data_root() -> Path:
    """``$TREX_OR_BENCHMARKS``, else ``shared/data/or_benchmarks`` beside the checkout (trex.resources)."""
    root, source = benchmark_root_or_none()
    if root is None:
        raise FileNotFoundError(f"benchmark data not found: {source}; {BENCHMARKS_FIX}")
    return root


def iter_benchmark(name: str, root: str | os.PathLike | None = None) -> Iterator[ORProblem]:
    spec = BENCHMARKS[resolve_name(name)]
    path = Path(root) if root is not None else default_data_root()
    path = path / spec.folder / f"{spec.folder}.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"{path} missing: the data root must be the or_benchmarks folder (holding "
                                f"{spec.folder}/{spec.folder}.jsonl); point {DATA_ENV} (or root=) at it")
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
# Field names the OR data pipeline may use for the same thing, in order of preference. ``trex
# or-data generate``'s sft.jsonl keeps the reference under ``provenance`` (objective, status); the
# experiment's test.jsonl keeps it at the top level. Top-level keys win.
_GENERATED_KEYS = {
    "question": ("question", "prompt", "nl", "problem"),
    "objective": ("objective", "obj", "answer", "reference_objective"),
    "status": ("status", "reference_status"),
}
_MISSING = object()


def _first(rec: dict, names: Iterable[str], default=None):
    for n in names:
        if n in rec:
            return rec[n]
    return default


def _first_here_or_in_provenance(rec: dict, names: Iterable[str], default=None):
    names = tuple(names)
    value = _first(rec, names, _MISSING)
    if value is _MISSING:
        value = _first(rec.get("provenance") or {}, names, _MISSING)
    return default if value is _MISSING else value


def _generated_question(rec: dict) -> str | None:
    """The question as evaluation hands it to ``tokenizer.format_prompt``.

    An or_data SFT record holds it as ``question``; its ``prompt`` is ``format_prompt(question)``
    (the exact text the model is trained on), so a record with only a ``prompt`` is unwrapped, and
    a record with both must agree (else training and evaluation would see different prompts)."""
    from trex.training.or_tokenizer import format_prompt, unformat_prompt

    prompt = rec.get("prompt")
    if "question" in rec:
        question = str(rec["question"])
        if prompt is not None and unformat_prompt(str(prompt)) is not None and prompt != format_prompt(question):
            raise ValueError("the record's prompt is not format_prompt(question): training and evaluation "
                             "would see different prompts; re-export it with `trex or-data generate`")
        return question
    if prompt is not None:
        prompt = str(prompt)
        unwrapped = unformat_prompt(prompt)
        return prompt if unwrapped is None else unwrapped
    value = _first(rec, _GENERATED_KEYS["question"])
    return None if value is None else str(value)


def generated_to_problem(rec: dict, benchmark: str = "generated", split: str | None = None) -> ORProblem:
    """One record of trex/training/or_data's JSONL (a test pair with provenance) -> ORProblem."""
    question = _generated_question(rec)
    if question is None:
        if _is_cpt_document(rec):
            raise ValueError("this is a CPT document (a 'text' field, no question/answer pair); `generated:` "
                             "wants the sft.jsonl that `trex or-data generate` writes next to cpt.jsonl")
        raise ValueError(f"generated record has none of the question fields {_GENERATED_KEYS['question']}: "
                         f"keys {sorted(rec)}")
    prov = rec.get("provenance") or {}
    family = rec.get("family") or prov.get("family")
    rid = rec.get("id") or f"{family}-{rec.get('seed', prov.get('seed'))}"
    return ORProblem(id=str(rid), benchmark=benchmark, question=question,
                     reference_objective=_as_float(_first_here_or_in_provenance(rec, _GENERATED_KEYS["objective"])),
                     reference_status=parse_ref_status(
                         _first_here_or_in_provenance(rec, _GENERATED_KEYS["status"], "optimal")),
                     family=family, split=split or rec.get("split"),
                     meta={k: v for k, v in rec.items() if k in ("seed", "level", "provenance", "params")})


def resolve_generated_path(path: str | os.PathLike) -> Path:
    """``PATH`` of ``generated:PATH``: a JSONL file, or a ``trex or-data generate`` output folder
    (its sft.jsonl)."""
    p = Path(path)
    if p.is_dir():
        if (p / "sft.jsonl").is_file():
            return p / "sft.jsonl"
        raise FileNotFoundError(f"{p} is a folder without sft.jsonl; pass generated:FILE.jsonl or the output "
                                f"folder of a finished `trex or-data generate` run")
    if not p.is_file():
        raise FileNotFoundError(f"generated problems file {p} not found; pass generated:PATH to the sft.jsonl "
                                f"written by `trex or-data generate` (or the experiment's test.jsonl)")
    return p


def load_generated(path: str | os.PathLike, benchmark: str = "generated",
                   limit: int | None = None) -> list[ORProblem]:
    path = resolve_generated_path(path)
    out = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if limit is not None and len(out) >= limit:
                break
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                if _is_cpt_document(rec):
                    raise ValueError(f"{path} holds CPT documents (a 'text' field, no question/answer pairs), "
                                     f"which have no question to evaluate; use {_sft_file_next_to(path)}")
                out.append(generated_to_problem(rec, benchmark))
            except (KeyError, ValueError) as exc:   # json.JSONDecodeError is a ValueError
                raise ValueError(f"{path}:{lineno}: cannot load a generated problem: {exc}") from exc
    return out


def _is_cpt_document(rec: dict) -> bool:
    return "text" in rec and not any(k in rec for k in _GENERATED_KEYS["question"])


def _sft_file_next_to(cpt_path: Path) -> str:
    """The SFT file `trex or-data generate` writes beside a CPT file (cpt.jsonl or cpt/shard-K.jsonl)."""
    if cpt_path.name == "cpt.jsonl":
        return str(cpt_path.with_name("sft.jsonl"))
    if cpt_path.parent.name == "cpt":
        return str(cpt_path.parent.parent / "sft" / cpt_path.name)
    return "the sft.jsonl written next to it by `trex or-data generate`"
