"""Wilson score intervals and the exact McNemar test, with the standard library only.

scipy is not guaranteed on every machine, so the binomial tail is summed exactly with math.comb
and the normal quantile comes from statistics.NormalDist.
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from statistics import NormalDist


@dataclass(frozen=True)
class Proportion:
    successes: int
    n: int
    rate: float | None
    low: float | None
    high: float | None
    confidence: float

    def as_dict(self) -> dict:
        return asdict(self)


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> Proportion:
    """Wilson score interval for a binomial proportion (well behaved at 0 and n successes)."""
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n == 0:
        return Proportion(0, 0, None, None, None, confidence)
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    # Clamp the rounding noise at the ends (the exact interval touches 0 or 1 there).
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Proportion(successes, n, p, low, high, confidence)


@dataclass(frozen=True)
class McNemarResult:
    n: int                 # paired items
    both_correct: int
    only_a: int            # b: A right, B wrong
    only_b: int            # c: A wrong, B right
    neither: int
    p_value: float         # exact two-sided binomial test on the discordant pairs

    def as_dict(self) -> dict:
        return asdict(self)


def mcnemar_exact_p(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p: 2 * P(X <= min(b, c)), X ~ Binomial(b + c, 1/2), capped at 1."""
    if only_a < 0 or only_b < 0:
        raise ValueError(f"discordant counts must be >= 0, got {only_a}, {only_b}")
    m = only_a + only_b
    if m == 0:
        return 1.0
    k = min(only_a, only_b)
    tail = Fraction(sum(math.comb(m, i) for i in range(k + 1)), 2 ** m)   # exact, no underflow
    return float(min(Fraction(1), 2 * tail))


def mcnemar(correct_a: Sequence[bool], correct_b: Sequence[bool]) -> McNemarResult:
    """Paired comparison of two systems on the same items, in the same order."""
    if len(correct_a) != len(correct_b):
        raise ValueError(f"paired results differ in length: {len(correct_a)} vs {len(correct_b)}; "
                         f"score both systems on the same items in the same order")
    pairs = list(zip(map(bool, correct_a), map(bool, correct_b)))
    both = sum(a and b for a, b in pairs)
    only_a = sum(a and not b for a, b in pairs)
    only_b = sum(b and not a for a, b in pairs)
    return McNemarResult(len(pairs), both, only_a, only_b, len(pairs) - both - only_a - only_b,
                         mcnemar_exact_p(only_a, only_b))
