"""Surface variety applied to a rendered problem, none of which changes what the text says:

- parallel sentences ("Each unit of A brings $5. Each unit of B brings $7.") become one sentence
  with lists and "respectively", as benchmark problems write them;
- independent parallel sentences that stay separate are put in a random order;
- whole numbers up to ``WORDS_UP_TO`` are sometimes spelled out ("forty-five");
- the integrality of the decisions is said explicitly, in one of several wordings.

Table rows (lines starting with ``|``) are left alone. Every transform keeps every number of the
instance recoverable from the text (``numbers_text.digits_for_words`` reads the words back), which
``instances.missing_numbers`` checks after rendering.
"""
from __future__ import annotations

import re

import numpy as np

from trex.training.or_data.numbers_text import to_words

WORDS_UP_TO = 100
SPELL_SHARE = 0.5          # instances whose small whole numbers may be spelled out
SPELL_EACH = 0.6           # in such an instance, the chance each eligible number is
MERGE_SHARE = 0.9          # chance a run of parallel sentences is merged into one

_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")
_TOKEN = re.compile(r"\$?\d+(?:\.\d+)?%?|[A-Z][\w'-]*(?: [A-Z][\w'-]*)*|[\w'-]+|[^\w\s]")
_SLOT = re.compile(r"\$?\d+(?:\.\d+)?%?$|[A-Z]")
_SMALL_INT = re.compile(r"(?<![\d.$,])\b(\d{1,3})\b(?![\d.,]\d|%)")

# Text that already says whether quantities are whole (a family's own sentence, a yes/no decision).
INTEGRALITY_CUES = re.compile(r"\bwhole\b|integer|fraction|indivisible|cannot be split|partial|binary|"
                              r"either .{0,40} or not|yes-or-no", re.IGNORECASE)

# Fixed sentences of the families, each with wordings of the same meaning (one is drawn per problem).
PARAPHRASES = {
    "Only whole units can be produced.": ("Production happens in whole units only.", "Fractional units cannot be made.",
                                          "Only complete units can be produced."),
    "Units of each resource used per unit produced:": ("Resource needs per unit produced:",
                                                       "One unit of each product requires:",
                                                       "Resource use per unit of each product:",
                                                       "What one unit of each product takes from each resource:",
                                                       "Each unit produced uses these amounts:"),
    "Fractions are non-negative (no short selling) and together may not exceed the whole reserve; anything not "
    "invested earns nothing.": (
        "No fraction may be negative (short selling is not allowed), the fractions sum to at most the whole reserve, "
        "and money left uninvested earns nothing.",
        "Short selling is ruled out, so every fraction is at least zero; together they may not exceed the reserve, "
        "and what is not invested earns nothing.",
        "Fractions cannot be negative and may add up to at most the whole reserve; uninvested money earns no return."),
    "Travel distances in kilometres (the same in both directions):": (
        "Distances in kilometres, equal in both directions:", "Road distances (km, symmetric):",
        "How far apart the locations are, in kilometres (either direction):"),
    "Amount each serving contributes to each requirement:": ("Per serving, each one supplies:",
                                                             "Nutrient content of one serving:",
                                                             "What one serving of each provides:",
                                                             "Content per serving:", "Each serving supplies:"),
    "Percentage of each measure contained in each input:": ("Share (in percent) of each measure in each input:",
                                                            "Composition of the inputs, in percent:",
                                                            "Each input contains, in percent:"),
    "Shipping cost in dollars per unit:": ("Cost of shipping one unit, in dollars:", "Per-unit shipping costs ($):",
                                           "Shipping one unit costs (dollars):"),
    "Cost in dollars of each pairing:": ("What each pairing costs, in dollars:", "Pairing costs ($):",
                                         "The cost of each possible pairing (dollars):"),
    "Amount each one consumes of each budget (thousand dollars):": (
        "What each one costs against each budget (thousand dollars):", "Draw on each budget, in thousand dollars:",
        "Use of each budget by each one, in thousand dollars:", "Budget consumption (thousand dollars):",
        "How much of each budget each one takes (thousand dollars):"),
    "What is the maximum total return?": ("What is the largest total return that can be achieved?",
                                          "Find the maximum total return.", "Determine the highest total return."),
    "Delivery cost in dollars per unit:": ("Cost of delivering one unit, in dollars:", "Per-unit delivery costs ($):",
                                           "Delivering one unit costs (dollars):"),
    "Available one-way links:": ("The one-way links that can be used:", "One-way connections available:",
                                 "Links (one direction each):"),
    "Covariance of returns:": ("How the returns co-vary (covariances):", "Covariance between each pair of returns:",
                               "The covariance matrix of the returns:", "Return covariances:",
                               "Covariances between the returns:"),
    "What is the best achievable value of this objective?": ("How high can this objective go?",
                                                             "What is the largest value this objective can reach?",
                                                             "What is the best value of this objective?",
                                                             "Find the optimal value of this objective.",
                                                             "Report the best objective value that can be reached."),
    "Spending (thousand dollars) needed in each period:": ("Money needed in each period (thousand dollars):",
                                                           "Outlays per period, in thousand dollars:",
                                                           "Each period requires (thousand dollars):"),
    "What is the maximum total net present value?": ("Find the largest total net present value.",
                                                     "What is the highest achievable total net present value?",
                                                     "Determine the maximum total net present value."),
    "Fractional servings are allowed.": ("Servings may be fractional.", "Partial servings are fine.",
                                         "Servings need not be whole."),
    "Each is either fully funded or not at all.": ("Each one is funded completely or not at all.",
                                                   "Partial funding is not possible.",
                                                   "A project is either taken in full or rejected."),
    "Flows may be fractional.": ("Flows need not be whole numbers.", "Fractional flows are allowed.",
                                 "Any non-negative flow, whole or fractional, is possible."),
    "Staff numbers must be whole.": ("Only whole numbers of people can be assigned.", "People cannot be split.",
                                     "Staff counts are whole numbers."),
}

INTEGRAL = ("All decision quantities must be whole numbers.", "Fractional amounts are not allowed: every quantity "
            "is a whole number.", "Only integer quantities make sense here.", "Each decision must take an "
            "integer value.", "Quantities cannot be split into fractions.")
FRACTIONAL = ("Quantities may be fractional.", "Fractional amounts are allowed.", "Non-integer amounts are fine.",
              "Any non-negative real amount may be chosen.", "Decisions may take fractional values.",
              "The decisions are continuous: any non-negative amount, whole or fractional, can be chosen.",
              "Amounts need not be whole numbers.",
              "Partial quantities are acceptable.")


def _join(items: list[str]) -> str:
    return ", ".join(items[:-1]) + " and " + items[-1]


def _merge(sentences: list[str]) -> str | None:
    """One sentence for a run of sentences that differ only in names and numbers, else None."""
    toks = [_TOKEN.findall(s) for s in sentences]
    if len({len(t) for t in toks}) != 1 or len(toks) < 2:
        return None
    out, varied = [], 0
    for position in zip(*toks):
        if len(set(position)) == 1:
            out.append(position[0])
        elif all(_SLOT.match(p) for p in position):
            heads = {p.split(" ", 1)[0] for p in position}
            if len(heads) == 1 and all(" " in p for p in position):   # "The Oak, Elm and Ash project"
                out.append(heads.pop() + " " + _join([p.split(" ", 1)[1] for p in position]))
            else:
                out.append(_join(list(position)))
            varied += 1
        else:
            return None
    if varied < 2 or out[-1] not in ".!":
        return None
    text = " ".join(out[:-1])
    text = re.sub(r" ([,.;:!?%)])", r"\1", text).replace("$ ", "$").replace("( ", "(")
    return text + ", respectively" + out[-1]


def _same_phrases(parts: list[str]) -> list[str]:
    """Sentences that differ only in which wording of "at most" / "at least" / "exactly" they use
    say it the first sentence's way (same meaning), so the run can merge."""
    from trex.training.or_data.skins import PHRASES

    out = list(parts)
    for key in ("<=", ">=", "=="):
        pattern = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, PHRASES[key]), key=len, reverse=True)) + r")\b")
        first = pattern.search(out[0])
        if first and all(pattern.search(p) for p in out):
            out = [pattern.sub(first.group(0), p, count=1) for p in out]
    return out


def _paraphrase(sentence: str, rng: np.random.Generator) -> str:
    options = PARAPHRASES.get(sentence)
    if options is None:
        return sentence
    pick = int(rng.integers(len(options) + 1))
    return sentence if pick == len(options) else options[pick]


def vary_line(line: str, rng: np.random.Generator) -> str:
    if line.lstrip().startswith("|"):
        return line
    parts = [_paraphrase(p[:1].upper() + p[1:], rng)                 # "the Oak project ..." -> "The Oak ..."
             for p in _SENTENCE_END.split(line.strip())]
    if len(parts) < 2:
        return " ".join(parts)
    skeletons = [re.sub(r"\$?\d+(?:\.\d+)?|[A-Z][\w'-]*", "_", p) for p in parts]
    if len(set(skeletons)) != 1:
        same = _same_phrases(parts)
        if len({re.sub(r"\$?\d+(?:\.\d+)?|[A-Z][\w'-]*", "_", p) for p in same}) == 1 and rng.random() < MERGE_SHARE \
                and (merged := _merge(same)):
            return merged
    else:                                 # all parallel: merge, or shuffle their order
        if rng.random() < MERGE_SHARE and (merged := _merge(parts)):
            return merged
        order = rng.permutation(len(parts))
        return " ".join(parts[i] for i in order)
    return " ".join(parts)


def spell_numbers(text: str, rng: np.random.Generator) -> str:
    if rng.random() >= SPELL_SHARE:
        return text

    def spell(m: re.Match) -> str:
        n = int(m.group(1))
        return to_words(n) if 0 < n <= WORDS_UP_TO and rng.random() < SPELL_EACH else m.group(0)

    return "\n".join(line if line.lstrip().startswith("|") else _SMALL_INT.sub(spell, line)
                     for line in text.split("\n"))


def integrality_sentence(integer_flags, rng: np.random.Generator) -> str:
    """Say whether quantities are whole numbers (only for models that are all one or the other; a
    mixed model's yes/no decisions are told by its family)."""
    flags = list(integer_flags)
    if flags and all(flags):
        return INTEGRAL[int(rng.integers(len(INTEGRAL)))]
    if flags and not any(flags):
        return FRACTIONAL[int(rng.integers(len(FRACTIONAL)))]
    return ""


def vary(text: str, integer_flags, rng: np.random.Generator) -> str:
    lines = [vary_line(line, rng) for line in text.split("\n")]
    note = "" if INTEGRALITY_CUES.search(text) else integrality_sentence(integer_flags, rng)
    if note:
        # before the closing question (the last line), where benchmark problems state it
        lines.insert(max(len(lines) - 1, 1), note)
    return spell_numbers("\n".join(lines), rng)
