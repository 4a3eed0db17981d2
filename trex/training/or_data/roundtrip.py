"""The text -> model round trip: re-derive an instance's model from its problem text alone and
reject the sample when the text does not determine it.

The reader needs to know where each quantity is said, and nothing else. It learns that from a
*sentinel rendering*: the same family renders the same instance with every distinct quantity
replaced by a unique large number (monotone in the original, so equal quantities stay equal and
every order comparison a renderer might make goes the same way), from the same random state, so
the wording, sentence order and merges are the ones of the real text. Both texts are read with
spelled-out numbers turned into digits and split into words and numbers; the words must be
identical, every sentinel must appear, and the number of the real text at each place a sentinel
stands is the value read back for it (every place must give the same value). The model built from
the values read back must then equal the gold model: the same variables, bounds, integrality,
objective and rows.

What it rejects: a quantity that the text leaves out or states in another form than the model
uses (rounded, scaled, summed), and a rendering whose words depend on the numbers in a way the
reader cannot follow. The values 0 and 1 keep their value in the sentinel rendering (renderers
leave a zero unsaid and make a 1 singular) and are read as themselves. Keys a family renders
through a word table (``Family.verbatim_keys``, "twice as many") keep their value too; the
every-number check covers them.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from trex.training.or_data.numbers_text import digits_for_words
from trex.training.or_data.solver import LinearModel

SENTINEL_BASE = 7_300_000          # far above every quantity a family draws
SENTINEL_STEP = 10
RELATIVE_TOLERANCE = 1e-9
# Values renderers treat specially (a zero supply is not mentioned, "1 hired service" is singular):
# they keep their value in the sentinel rendering and are read as themselves.
SELF_READ = frozenset({0.0, 1.0})

_NUMBER = re.compile(r"(?<![\d.])(-?\d+(?:\.\d+)?)(?!\d)(?!\.\d)")


@dataclass
class RoundTrip:
    ok: bool
    reason: str = ""


def _leaves(value, path=()):
    if isinstance(value, dict):
        for k, sub in value.items():
            yield from _leaves(sub, path + (k,))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            yield from _leaves(sub, path + (i,))
    elif isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        yield path, value


def _replace(value, mapping):
    if isinstance(value, dict):
        return {k: _replace(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace(v, mapping) for v in value]
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        return value if float(value) in SELF_READ else mapping[float(value)]
    return value


def _quantities(fam, data: dict, mapping: dict) -> dict:
    fixed = set(fam.structure_keys) | set(fam.verbatim_keys)
    return {k: (sub if k in fixed else _replace(sub, mapping)) for k, sub in data.items()}


def sentinel_data(fam, data: dict) -> tuple[dict, dict[int, float]]:
    """``data`` with every quantity replaced by its sentinel, and sentinel -> original value."""
    fixed = set(fam.structure_keys) | set(fam.verbatim_keys)
    values = sorted({float(v) for k, sub in data.items() if k not in fixed for _, v in _leaves(sub)} - SELF_READ)
    to_sentinel = {v: SENTINEL_BASE + SENTINEL_STEP * rank for rank, v in enumerate(values)}
    fake = _quantities(fam, data, to_sentinel)
    return fake, {s: v for v, s in to_sentinel.items()}


_TIMES = re.compile(r"(\d) times\b")


def _pieces(text: str) -> tuple[list[str], list[str]]:
    # "two times" reads as 2 (a multiplier word) while "7300000 times" keeps its "times": drop it
    parts = _NUMBER.split(_TIMES.sub(r"\1", digits_for_words(text)))
    return parts[0::2], parts[1::2]


def models_equal(a: LinearModel, b: LinearModel) -> str:
    """'' when ``a`` and ``b`` are the same model, else what differs."""
    def close(x, y):
        return x == y or (math.isfinite(x) and math.isfinite(y)
                          and abs(x - y) <= RELATIVE_TOLERANCE * max(1.0, abs(x), abs(y)))

    if a.var_names != b.var_names or a.maximize != b.maximize or a.integer != b.integer:
        return "variables or sense"
    for name in ("lb", "ub", "obj"):
        if not all(map(close, getattr(a, name), getattr(b, name))):
            return name
    if not close(a.obj_const, b.obj_const) or a.quad.keys() != b.quad.keys() \
            or not all(close(a.quad[k], b.quad[k]) for k in a.quad):
        return "objective"
    if len(a.rows) != len(b.rows):
        return "rows"
    for ra, rb in zip(a.rows, b.rows):
        if ra.sense != rb.sense or ra.group != rb.group or ra.coeffs.keys() != rb.coeffs.keys() \
                or not close(ra.rhs, rb.rhs) or not all(close(ra.coeffs[j], rb.coeffs[j]) for j in ra.coeffs) \
                or ra.quad.keys() != rb.quad.keys() or not all(close(ra.quad[k], rb.quad[k]) for k in ra.quad):
            return f"row {ra.group}"
    return ""


def round_trip(fam, data: dict, options: dict, text: str, render) -> RoundTrip:
    """Read ``data``'s quantities back from ``text`` and rebuild the model. ``render(data)`` renders
    a data dict exactly as ``text`` was rendered (same family, skin and random state)."""
    fake, originals = sentinel_data(fam, data)
    try:
        template = render(fake)
    except (KeyError, IndexError, ValueError, TypeError) as exc:
        return RoundTrip(False, f"the rendering depends on the numbers ({type(exc).__name__})")
    words, numbers = _pieces(text)
    t_words, t_numbers = _pieces(template)
    if words != t_words:
        return RoundTrip(False, "the wording depends on the numbers")
    read: dict[int, float] = {}
    for token, slot in zip(numbers, t_numbers):
        s = float(slot)
        if s.is_integer() and int(s) in originals:
            value = float(token)
            value = int(value) if value.is_integer() else value
            if read.setdefault(int(s), value) != value:
                return RoundTrip(False, "one quantity is stated with two values")
    unread = set(originals) - set(read)
    if unread:
        return RoundTrip(False, f"{len(unread)} quantities are not stated")
    rebuilt = fam.build(_quantities(fam, fake, {float(s): v for s, v in read.items()}), options)
    differs = models_equal(rebuilt, fam.build(data, options))
    return RoundTrip(not differs, f"the model read back differs ({differs})" if differs else "")
