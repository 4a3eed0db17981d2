"""Deduplication: exact (after normalisation), structural (same family + data), and near-duplicate
text by MinHash over word 5-gram shingles with LSH banding (no extra dependency)."""
from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import defaultdict

import numpy as np

_MERSENNE = (1 << 61) - 1
_PRIME32 = 4294967291  # largest prime below 2**32: (a*h + b) stays below 2**64


def normalize(text: str) -> str:
    """Case-folded, NFKC, markdown table rules and punctuation dropped, whitespace collapsed."""
    text = unicodedata.normalize("NFKC", text).casefold()
    text = re.sub(r"[|\-]{2,}", " ", text)
    text = re.sub(r"[^\w.$%]+", " ", text)
    text = re.sub(r"(?<!\d)\.|\.(?!\d)", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def exact_key(text: str) -> str:
    return hashlib.sha1(normalize(text).encode()).hexdigest()


def structure_key(family: str, data: dict, options: dict) -> str:
    payload = json.dumps([family, data, options], sort_keys=True, separators=(",", ":"))
    return hashlib.sha1(payload.encode()).hexdigest()


def shingles(text: str, n: int = 5) -> set[str]:
    return shingles_of_words(normalize(text).split(), n)


def shingles_of_words(words: list[str], n: int = 5) -> set[str]:
    """The word n-gram shingles of an already normalized, split text."""
    if len(words) < n:
        return {" ".join(words)} if words else set()
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def _hash32(items) -> np.ndarray:
    digests = b"".join([hashlib.blake2b(s.encode(), digest_size=4).digest() for s in items])
    return np.frombuffer(digests, dtype="<u4").astype(np.uint64) % _PRIME32


class MinHasher:
    def __init__(self, num_perm: int = 64, seed: int = 1):
        rng = np.random.default_rng(seed)
        self.a = rng.integers(1, _PRIME32, size=num_perm, dtype=np.uint64)
        self.b = rng.integers(0, _PRIME32, size=num_perm, dtype=np.uint64)
        self.num_perm = num_perm

    def signature(self, shingle_set: set[str]) -> np.ndarray:
        if not shingle_set:
            return np.full(self.num_perm, _PRIME32, dtype=np.uint64)
        h = _hash32(sorted(shingle_set))
        return ((np.outer(h, self.a) + self.b) % _PRIME32).min(axis=0)

    @staticmethod
    def jaccard(sig_a: np.ndarray, sig_b: np.ndarray) -> float:
        return float(np.mean(sig_a == sig_b))


class LSHIndex:
    """Banded LSH over MinHash signatures: candidates share one band exactly."""

    def __init__(self, num_perm: int = 64, bands: int = 16):
        if num_perm % bands:
            raise ValueError(f"LSHIndex: num_perm={num_perm} must be divisible by bands={bands}")
        self.bands, self.rows = bands, num_perm // bands
        self.buckets: list[dict] = [defaultdict(list) for _ in range(bands)]
        self.signatures: dict[str, np.ndarray] = {}

    def _band_keys(self, sig: np.ndarray):
        for b in range(self.bands):
            yield b, sig[b * self.rows:(b + 1) * self.rows].tobytes()

    def add(self, key: str, sig: np.ndarray) -> None:
        self.signatures[key] = sig
        for b, k in self._band_keys(sig):
            self.buckets[b][k].append(key)

    def query(self, sig: np.ndarray, threshold: float) -> list[tuple[str, float]]:
        seen: set[str] = set()
        hits = []
        for b, k in self._band_keys(sig):
            for key in self.buckets[b].get(k, ()):
                if key in seen:
                    continue
                seen.add(key)
                sim = MinHasher.jaccard(sig, self.signatures[key])
                if sim >= threshold:
                    hits.append((key, sim))
        return sorted(hits, key=lambda kv: -kv[1])


class Deduplicator:
    """Keeps the first of each duplicate; ``check_and_add`` returns None (new) or the reason."""

    def __init__(self, near_threshold: float = 0.8, num_perm: int = 64, bands: int = 16):
        self.near_threshold = near_threshold
        self.hasher = MinHasher(num_perm)
        self.lsh = LSHIndex(num_perm, bands)
        self.exact: dict[str, str] = {}
        self.structural: dict[str, str] = {}

    def check_and_add(self, key: str, text: str, struct: str | None = None) -> str | None:
        ek = exact_key(text)
        if ek in self.exact:
            return f"exact duplicate of {self.exact[ek]}"
        if struct is not None and struct in self.structural:
            return f"same instance data as {self.structural[struct]}"
        sig = self.hasher.signature(shingles(text))
        hits = self.lsh.query(sig, self.near_threshold)
        if hits:
            return f"near duplicate of {hits[0][0]} (jaccard~{hits[0][1]:.2f})"
        self.exact[ek] = key
        if struct is not None:
            self.structural[struct] = key
        self.lsh.add(key, sig)
        return None

    def __len__(self) -> int:
        return len(self.exact)
