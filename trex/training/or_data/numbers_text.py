"""Numbers written as words, both ways: ``45 -> "forty-five"`` when rendering, and back when the text
is checked (every quantity of an instance must be recoverable from its text), plus the multiplier
words of ratio constraints ("twice as many", "three times").

Whole numbers 0..999 only: benchmarks spell out small counts and ratios, never prices with decimals.
"""
from __future__ import annotations

import re

ONES = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
        "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen")
TENS = {20: "twenty", 30: "thirty", 40: "forty", 50: "fifty", 60: "sixty", 70: "seventy", 80: "eighty", 90: "ninety"}
# "k times as many": the factor -> the words (first is preferred when rendering).
MULTIPLIERS = {2: ("twice", "two times", "double"), 3: ("three times", "triple"), 4: ("four times",),
               5: ("five times",)}
FRACTION_WORDS = {0.5: "half"}


def to_words(n: int) -> str:
    if not 0 <= n <= 999 or int(n) != n:
        raise ValueError(f"to_words({n!r}): only whole numbers 0..999 are spelled out")
    n = int(n)
    if n < 20:
        return ONES[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return TENS[tens * 10] + ("" if ones == 0 else "-" + ONES[ones])
    hundreds, rest = divmod(n, 100)
    return ONES[hundreds] + " hundred" + ("" if rest == 0 else " and " + to_words(rest))


_WORD_VALUES = {to_words(n): n for n in range(1000)}
_ONES_RE = "|".join(sorted(ONES[1:], key=len, reverse=True))
_BELOW_100 = rf"(?:(?:{'|'.join(TENS.values())})(?:-(?:{'|'.join(ONES[1:10])}))?|{_ONES_RE}|zero)"
NUMBER_WORD_PATTERN = rf"\b(?:(?:{'|'.join(ONES[1:10])}) hundred(?: and {_BELOW_100})?|{_BELOW_100})\b"
_NUMBER_WORD = re.compile(NUMBER_WORD_PATTERN, re.IGNORECASE)
_MULTIPLIER_WORD = re.compile(r"\b(?:" + "|".join(re.escape(w) for ws in MULTIPLIERS.values() for w in ws)
                              + r"|half)\b", re.IGNORECASE)
_MULTIPLIER_VALUE = {w: k for k, ws in MULTIPLIERS.items() for w in ws} | {"half": 0.5}


def digits_for_words(text: str) -> str:
    """The text with every spelled-out number and multiplier word replaced by digits (so the
    every-number check and the round trip read one form). Multipliers go first ("two times")."""
    def fmt(v):
        return str(int(v)) if float(v).is_integer() else repr(v)

    text = _MULTIPLIER_WORD.sub(lambda m: fmt(_MULTIPLIER_VALUE[m.group(0).lower()]), text)
    return _NUMBER_WORD.sub(lambda m: str(_WORD_VALUES[m.group(0).lower()]), text)
