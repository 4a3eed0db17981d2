"""Seeded instance generation, the informativeness filter, and the every-number-in-the-text check."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import numpy as np

from trex.training.or_data.families import DIFFICULTIES, Family, fmt, get_family
from trex.training.or_data.skins import SKINS, phrase, pick_skin
from trex.training.or_data.solver import LinearModel, SolveResult, objectives_agree, solve

# A dropped or flipped constraint group must move the optimum by more than this (relative, same
# scale as the acceptance tolerance) or change the status; otherwise the group is redundant.
INFORMATIVE_MARGIN = 1e-5

# A number token in text: digits with an optional decimal part, not glued to other digits/dots.
_NUMBER_TOKEN = re.compile(r"(?<![\d.])-?\d+(?:\.\d+)?(?![\d])(?!\.\d)")


@dataclass
class Instance:
    family: str
    seed: int
    difficulty: int
    skin: str
    data: dict
    options: dict
    text: str
    status: str
    objective: float | None
    solver: str
    solver_fallback: str | None = None
    attempts: int = 1
    informative: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Instance":
        return cls(**d)

    @property
    def uid(self) -> str:
        return f"{self.family}-d{self.difficulty}-s{self.seed}"


def flatten_numbers(obj, skip_keys=()) -> list[float]:
    """All numeric leaves of a data dict (in order), ignoring keys in ``skip_keys``."""
    out: list[float] = []

    def walk(v, key=None):
        if key in skip_keys:
            return
        if isinstance(v, dict):
            for k, sub in v.items():
                walk(sub, k)
        elif isinstance(v, (list, tuple)):
            for sub in v:
                walk(sub, key)
        elif isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
            out.append(v)

    for k, v in obj.items():
        walk(v, k)
    return out


def quantity_numbers(family: Family, data: dict) -> list[float]:
    return flatten_numbers(data, skip_keys=family.structure_keys)


def missing_numbers(text: str, numbers) -> list[str]:
    """Numbers (formatted as in problem text) that do not appear in ``text`` as whole tokens."""
    present = set(_NUMBER_TOKEN.findall(text))
    return sorted({fmt(v) for v in numbers} - present)


def _differs(base: SolveResult, other: SolveResult) -> bool:
    if other.status != base.status:
        return True
    return not objectives_agree(other.objective, base.objective, tol=INFORMATIVE_MARGIN)


def informativeness(model: LinearModel, base: SolveResult) -> dict:
    """For each constraint group: does dropping it / flipping its sense change the optimum?"""
    report = {}
    for group in model.groups:
        dropped = solve(model.without_group(group), backend="highs", time_limit=10)
        flipped = solve(model.with_flipped_group(group), backend="highs", time_limit=10)
        report[group] = {"drop": _differs(base, dropped), "flip": _differs(base, flipped)}
    return report


def generate_instance(family: str | Family, seed: int, difficulty: int | None = None, skin: str | None = None,
                      max_attempts: int = 40, require_informative: bool = True,
                      backend: str = "auto") -> Instance | None:
    """Sample (seeded) until the instance is optimal, every number survives rendering and, when
    ``require_informative``, every constraint group is essential (dropping or flipping it changes
    the optimum).  Returns None if no such instance is found in ``max_attempts`` draws."""
    fam = get_family(family) if isinstance(family, str) else family
    rng = np.random.default_rng([seed, sum(map(ord, fam.name))])
    if difficulty is None:
        difficulty = int(rng.choice(DIFFICULTIES))
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty={difficulty}: use one of {DIFFICULTIES}")
    skin_obj = SKINS[skin] if skin else pick_skin(rng)
    for attempt in range(1, max_attempts + 1):
        data, options = fam.sample(rng, difficulty)
        model = fam.build(data, options)
        quick = solve(model, backend="highs", time_limit=10)
        if quick.status != "optimal":
            continue
        info = informativeness(model, quick) if require_informative else {}
        if require_informative and not all(v["drop"] and v["flip"] for v in info.values()):
            continue
        framing = phrase(rng, "framing")  # an optional opening sentence (surface variety, no numbers)
        text = (framing + "\n" if framing else "") + fam.render(data, options, skin_obj, rng)
        if missing_numbers(text, quantity_numbers(fam, data)):
            continue
        ref = solve(model, backend=backend, time_limit=30)
        if ref.status != "optimal":
            continue
        return Instance(fam.name, seed, difficulty, skin_obj.name, data, options, text, ref.status,
                        ref.objective, ref.backend, ref.fallback_reason, attempt, info)
    return None


def reference_solve(instance: Instance, data: dict | None = None, backend: str = "auto") -> SolveResult:
    fam = get_family(instance.family)
    return solve(fam.build(data if data is not None else instance.data, instance.options), backend=backend)
