"""Decontamination against every question of the public OR benchmarks in shared/data/or_benchmarks/.

A generated text is contaminated when it shares a word n-gram (13 by default, the GPT-3 rule) with
any benchmark question, or when its MinHash Jaccard similarity (word 5-gram shingles) to one
reaches ``jaccard_threshold``.  All *.jsonl files directly inside each benchmark folder are read
(the normalized files; ``original/`` copies are the same questions).

Building the index (n-grams and MinHash signatures of ~2.4k questions) costs about 3 s of CPU, a
tenth of a 300-sample corpus on 2 cores, so it is cached under $TREX_CACHE_DIR/decontam (default
~/.cache/trex/decontam) in a file named by a hash of the questions and the index's parameters;
loading it takes about 0.1 s. A missing, unreadable or unwritable cache only means a rebuild.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from trex.resources import BENCHMARKS_FIX, benchmark_root_or_none

from trex.training.or_data.dedup import LSHIndex, MinHasher, normalize, shingles_of_words

# what a cached index holds and how its n-grams are hashed: bump when either changes
INDEX_FORMAT = 1
NUM_PERM, BANDS = 64, 32     # 2 rows per band: sensitive down to jaccard ~0.2 before verification

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


def _ngram_keys(words: list[str], n: int) -> set[int]:
    """Stable 63-bit keys of the word n-grams (the same in every process, unlike ``hash``)."""
    return {int.from_bytes(hashlib.blake2b(" ".join(words[i:i + n]).encode(), digest_size=8).digest(), "little") >> 1
            for i in range(len(words) - n + 1)}


def cache_dir() -> Path:
    return Path(os.environ.get("TREX_CACHE_DIR") or Path.home() / ".cache" / "trex") / "decontam"


@dataclass
class ContaminationHit:
    benchmark_id: str
    kind: str  # "ngram" | "minhash"
    score: float


class Decontaminator:
    def __init__(self, root: Path | None = None, ngram: int = 13, jaccard_threshold: float = 0.5,
                 use_cache: bool = True):
        self.ngram = ngram
        self.jaccard_threshold = jaccard_threshold
        self.questions = load_benchmark_questions(root)
        self.hasher = MinHasher(NUM_PERM)
        key = hashlib.sha256(json.dumps([INDEX_FORMAT, ngram, NUM_PERM, BANDS, self.questions]).encode()).hexdigest()
        cached = cache_dir() / f"index-{key[:32]}.npz"
        index = self._load(cached) if use_cache else None
        if index is None:
            index = self._build()
            if use_cache:
                self._save(cached, index)
        keys, owners, signatures = index
        qids = [qid for qid, _ in self.questions]
        self.ngram_owner: dict[int, str] = dict(zip(keys.tolist(), (qids[k] for k in owners.tolist())))
        self.lsh = LSHIndex(NUM_PERM, BANDS)
        for qid, sig in zip(qids, signatures):
            self.lsh.add(qid, sig)

    def _build(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(n-gram keys, the index of the first question holding each, one signature per question)."""
        owner: dict[int, int] = {}
        signatures = np.empty((len(self.questions), NUM_PERM), dtype=np.uint64)
        for k, (_, text) in enumerate(self.questions):
            words = normalize(text).split()
            for g in _ngram_keys(words, self.ngram):
                owner.setdefault(g, k)
            signatures[k] = self.hasher.signature(shingles_of_words(words))
        return (np.fromiter(owner.keys(), dtype=np.int64, count=len(owner)),
                np.fromiter(owner.values(), dtype=np.int32, count=len(owner)), signatures)

    def _load(self, path: Path):
        try:
            with np.load(path, allow_pickle=False) as z:
                index = z["keys"], z["owners"], z["signatures"]
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            return None
        ok = (index[2].shape == (len(self.questions), NUM_PERM) and len(index[0]) == len(index[1])
              and (len(index[1]) == 0 or 0 <= index[1].min() <= index[1].max() < len(self.questions)))
        return index if ok else None

    @staticmethod
    def _save(path: Path, index) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".index-", suffix=".npz")
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, keys=index[0], owners=index[1], signatures=index[2])
            os.replace(tmp, path)       # atomic: a concurrent reader sees the old file or the new one
        except OSError:
            pass

    def check(self, text: str) -> list[ContaminationHit]:
        hits = []
        words = normalize(text).split()
        owners = {self.ngram_owner[g] for g in _ngram_keys(words, self.ngram) if g in self.ngram_owner}
        hits += [ContaminationHit(o, "ngram", 1.0) for o in sorted(owners)]
        for qid, sim in self.lsh.query(self.hasher.signature(shingles_of_words(words)), self.jaccard_threshold):
            hits.append(ContaminationHit(qid, "minhash", sim))
        return hits

    def __len__(self) -> int:
        return len(self.questions)


@lru_cache(maxsize=4)
def cached_decontaminator(root: str | None = None, ngram: int = 13, jaccard_threshold: float = 0.5) -> Decontaminator:
    """One index per process (building it reads ~2.4k questions and takes a few seconds)."""
    return Decontaminator(Path(root) if root else None, ngram, jaccard_threshold)
