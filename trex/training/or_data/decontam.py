"""Decontamination against every question of the public OR benchmarks in shared/data/or_benchmarks/.

A generated text is contaminated when it shares a word n-gram (13 by default, the GPT-3 rule) with
any benchmark question, or when its MinHash Jaccard similarity (word 5-gram shingles) to one
reaches ``jaccard_threshold``.  All *.jsonl files directly inside each benchmark folder are read
(the normalized files; ``original/`` copies are the same questions).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from trex.resources import BENCHMARKS_FIX, benchmark_root_or_none

from trex.training.or_data.dedup import LSHIndex, MinHasher, normalize, shingles

QUESTION_FIELDS = ("question", "question_concise")


def default_benchmark_root() -> Path:
    """$TREX_OR_BENCHMARKS, else shared/data/or_benchmarks beside the checkout (trex.resources); the
    path may not exist (callers check and name the fix)."""
    root, _ = benchmark_root_or_none()
    return root if root is not None else Path("shared/data/or_benchmarks")


def load_benchmark_questions(root: Path | None = None) -> list[tuple[str, str]]:
    root = Path(root) if root else default_benchmark_root()
    if not root.is_dir():
        raise FileNotFoundError(f"benchmark folder {root} not found; {BENCHMARKS_FIX}")
    out = []
    for path in sorted(root.glob("*/*.jsonl")):
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                rec = json.loads(line)
                for fld in QUESTION_FIELDS:
                    if isinstance(rec.get(fld), str) and rec[fld].strip():
                        out.append((f"{rec.get('id', path.stem)}#{fld}", rec[fld]))
    return out


def _ngrams(text: str, n: int) -> set[int]:
    words = normalize(text).split()
    return {hash(" ".join(words[i:i + n])) for i in range(len(words) - n + 1)}


@dataclass
class ContaminationHit:
    benchmark_id: str
    kind: str  # "ngram" | "minhash"
    score: float


class Decontaminator:
    def __init__(self, root: Path | None = None, ngram: int = 13, jaccard_threshold: float = 0.5):
        self.ngram = ngram
        self.jaccard_threshold = jaccard_threshold
        self.questions = load_benchmark_questions(root)
        self.ngram_owner: dict[int, str] = {}
        self.hasher = MinHasher(64)
        self.lsh = LSHIndex(64, 32)  # 2 rows per band: sensitive down to jaccard ~0.2 before verification
        for qid, text in self.questions:
            for g in _ngrams(text, ngram):
                self.ngram_owner.setdefault(g, qid)
            self.lsh.add(qid, self.hasher.signature(shingles(text)))

    def check(self, text: str) -> list[ContaminationHit]:
        hits = []
        owners = {self.ngram_owner[g] for g in _ngrams(text, self.ngram) if g in self.ngram_owner}
        hits += [ContaminationHit(o, "ngram", 1.0) for o in sorted(owners)]
        for qid, sim in self.lsh.query(self.hasher.signature(shingles(text)), self.jaccard_threshold):
            hits.append(ContaminationHit(qid, "minhash", sim))
        return hits

    def __len__(self) -> int:
        return len(self.questions)


@lru_cache(maxsize=4)
def cached_decontaminator(root: str | None = None, ngram: int = 13, jaccard_threshold: float = 0.5) -> Decontaminator:
    """One index per process (building it reads ~2.4k questions and takes a few seconds)."""
    return Decontaminator(Path(root) if root else None, ngram, jaccard_threshold)
