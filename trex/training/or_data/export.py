"""JSONL export: CPT documents and SFT pairs, each with provenance; atomic writes."""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from trex.training.or_data.contract import build_prompt
from trex.training.or_tokenizer import format_prompt

GENERATOR_VERSION = "or_data/3"   # 2: sizes drawn from the benchmarks, the text->model round trip; 3: plot_layout (QCQP)


@lru_cache(maxsize=1)
def git_commit() -> str:
    """HEAD of the checkout ($TREX_COMMIT wins, for copies of the tree without .git)."""
    if os.environ.get("TREX_COMMIT"):
        return os.environ["TREX_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                             text=True, timeout=10)
        return out.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def provenance(instance, report) -> dict:
    return {
        "generator": GENERATOR_VERSION, "commit": git_commit(), "family": instance.family, "seed": instance.seed,
        "difficulty": instance.difficulty, "size_bin": instance.size_bin, "skin": instance.skin, "options": instance.options, "data": instance.data,
        "reference_solver": instance.solver, "reference_fallback": instance.solver_fallback,
        "status": instance.status, "objective": instance.objective,
        "sandbox_backend": report.backend, "sandbox_fallback": report.fallback_reason,
        "checks_passed": [k for k, v in report.checks.items() if v],
        "informative_groups": sorted(instance.informative), "rejections": instance.rejections,
    }


def cpt_document(instance, formulation: str, report) -> dict:
    """A plain-text worked example: the problem, then its verified formulation and code."""
    text = f"Problem:\n{instance.text}\n\nFormulation:\n{formulation}"
    return {"id": instance.uid, "text": text, "provenance": provenance(instance, report)}


def sft_pair(instance, formulation: str, report) -> dict:
    """An SFT pair whose ``prompt`` is the exact text evaluation decodes from.

    ``question`` is the instruction-wrapped problem (what `trex or-eval --benchmark generated:` and
    the experiment pass to ``format_prompt``); ``prompt = format_prompt(question)`` is what the
    training loop encodes (after its bos), so training and evaluation see the same tokens."""
    question = build_prompt(instance.text)
    return {"id": instance.uid, "problem": instance.text, "question": question, "prompt": format_prompt(question),
            "response": formulation, "provenance": provenance(instance, report)}


def atomic_write_text(path: Path, text: str) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_write_jsonl(path: Path, records) -> None:
    atomic_write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))


def atomic_write_json(path: Path, obj) -> None:
    atomic_write_text(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def read_jsonl(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]
