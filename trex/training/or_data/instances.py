"""Seeded instance generation, the informativeness filter, and the every-number-in-the-text check."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

import numpy as np

from trex.training.or_data.families import DIFFICULTIES, Family, fmt, get_family
from trex.training.or_data.numbers_text import digits_for_words
from trex.training.or_data.roundtrip import round_trip
from trex.training.or_data.sizes import sample_sized
from trex.training.or_data.skins import SKINS, phrase, pick_skin
from trex.training.or_data.solver import LinearModel, SolveResult, objectives_agree, solve
from trex.training.or_data.surface import vary

# A dropped or flipped constraint group must move the optimum by more than this (relative, same
# scale as the acceptance tolerance) or change the status; otherwise the group is redundant.
INFORMATIVE_MARGIN = 1e-5

# Instances deliberately without an optimum (benchmarks have 5-8%: NL4OPT's "No Best Solution").
# They come from a feasible draw with one quantity key stressed (scaled up, down, or to zero) until
# the reference says infeasible or unbounded; the text and the gold code render the stressed data.
NO_OPTIMUM_SHARE = 0.2
NO_OPTIMUM_STATUSES = ("infeasible", "unbounded")
STRESS_FACTORS = (0.1, 0.25, 0.5, 2.0, 3.0, 5.0)
STRESS_ATTEMPTS = 12     # then the instance is an ordinary one (a knapsack is never infeasible)

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
    rejections: dict = field(default_factory=dict)    # draws rejected before this one, by reason
    size_bin: int | None = None   # the benchmark size bin it was drawn for (with seed: reproducible)

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
    """Numbers (formatted as in problem text) that do not appear in ``text`` as whole tokens
    (spelled-out numbers and "twice"-style multipliers count as their digits)."""
    present = set(_NUMBER_TOKEN.findall(digits_for_words(text)))
    return sorted({fmt(v) for v in numbers} - present)


def _differs(base: SolveResult, other: SolveResult) -> bool:
    if other.status != base.status:
        return True
    return not objectives_agree(other.objective, base.objective, tol=INFORMATIVE_MARGIN)


def informativeness(model: LinearModel, base: SolveResult, stop_at_redundant: bool = False) -> dict:
    """For each constraint group: does dropping it / flipping its sense change the optimum?
    ``stop_at_redundant``: return at the first group where one of them does not (its other test
    is then None, the later groups are left out), sparing the solves of a draw that is rejected."""
    report = {}
    for group in model.groups:
        drop = _differs(base, solve(model.without_group(group), backend="highs", time_limit=10))
        if stop_at_redundant and not drop:
            report[group] = {"drop": False, "flip": None}
            break
        flip = _differs(base, solve(model.with_flipped_group(group), backend="highs", time_limit=10))
        report[group] = {"drop": drop, "flip": flip}
        if stop_at_redundant and not flip:
            break
    return report


def _stressed(fam: Family, data: dict, rng: np.random.Generator) -> dict:
    """``data`` with one quantity key scaled by a stress factor (whole numbers stay whole)."""
    # (a verbatim key is said through a word table, "twice": only the table's factors can be said)
    keys = [k for k in data if k not in fam.structure_keys and k not in fam.frozen_keys
            and k not in fam.verbatim_keys and flatten_numbers({k: data[k]})]
    key = keys[int(rng.integers(len(keys)))]
    factor = STRESS_FACTORS[int(rng.integers(len(STRESS_FACTORS)))]

    def scale(v):
        if isinstance(v, list):
            return [scale(x) for x in v]
        if isinstance(v, dict):
            return {k: scale(x) for k, x in v.items()}
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            return v
        out = v * factor
        return int(round(out)) if isinstance(v, (int, np.integer)) else round(float(out), 6)

    return {**data, key: scale(data[key])}


def render_text(fam: Family, data: dict, options: dict, skin, integer_flags, rng: np.random.Generator) -> str:
    """The problem statement: an optional framing sentence, the family's text, surface variety."""
    framing = phrase(rng, "framing")  # an optional opening sentence (surface variety, no numbers)
    text = (framing + "\n" if framing else "") + fam.render(data, options, skin, rng)
    return vary(text, integer_flags, rng)


def _replay(fam: Family, options: dict, skin, integer_flags, rng_state: dict):
    """render_text from the random state ``rng_state`` (the round trip's sentinel rendering)."""
    def render(data: dict) -> str:
        rng = np.random.default_rng()
        rng.bit_generator.state = rng_state
        return render_text(fam, data, options, skin, integer_flags, rng)
    return render


def generate_instance(family: str | Family, seed: int, difficulty: int | None = None, skin: str | None = None,
                      max_attempts: int = 40, require_informative: bool = True,
                      backend: str = "auto", no_optimum_share: float = NO_OPTIMUM_SHARE,
                      match_sizes: bool = True, rejections: dict | None = None,
                      size_bin: int | None = None) -> Instance | None:
    """Sample (seeded) until the instance is optimal, every number survives rendering, the text
    determines the model (``roundtrip``) and, when ``require_informative``, every constraint group
    is essential (dropping or flipping it changes the optimum).  With probability
    ``no_optimum_share`` the instance is instead one without an optimum (infeasible or unbounded;
    its expected answer is that status).  ``match_sizes`` draws each shape's size from the
    benchmarks' distribution (``sizes``; ``size_bin`` fixes the bin instead). Returns None if no such instance is found in
    ``max_attempts`` draws; ``rejections``, when given, is filled with the draws rejected, by reason
    (the returned instance carries the same counts)."""
    fam = get_family(family) if isinstance(family, str) else family
    rng = np.random.default_rng([seed, sum(map(ord, fam.name))])
    if difficulty is None:
        difficulty = int(rng.choice(DIFFICULTIES))
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty={difficulty}: use one of {DIFFICULTIES}")
    skin_obj = (SKINS[skin] if skin else pick_skin(rng)).with_names(rng)
    want_no_optimum = rng.random() < no_optimum_share
    rejections = {} if rejections is None else rejections

    def reject(reason: str) -> None:
        rejections[reason] = rejections.get(reason, 0) + 1

    for attempt in range(1, max_attempts + 1 + (STRESS_ATTEMPTS if want_no_optimum else 0)):
        want_no_optimum = want_no_optimum and attempt <= STRESS_ATTEMPTS
        data, options = sample_sized(fam, rng, difficulty, size_bin) if match_sizes else fam.sample(rng, difficulty)
        if want_no_optimum:
            data = _stressed(fam, data, rng)
        model = fam.build(data, options)
        quick = solve(model, backend="highs", time_limit=10)
        if quick.status not in (NO_OPTIMUM_STATUSES if want_no_optimum else ("optimal",)):
            reject("status")
            continue
        # (for an instance without an optimum: dropping or flipping any group must change the status,
        # so a formulation that leaves a group out cannot reach the same verdict)
        info = informativeness(model, quick, stop_at_redundant=True) if require_informative else {}
        if info and not all(v["drop"] and v["flip"] for v in info.values()):
            reject("uninformative")
            continue
        state = rng.bit_generator.state
        text = render_text(fam, data, options, skin_obj, model.integer, rng)
        if missing_numbers(text, quantity_numbers(fam, data)):
            reject("missing_numbers")
            continue
        if not round_trip(fam, data, options, text, _replay(fam, options, skin_obj, model.integer, state)).ok:
            reject("roundtrip")
            continue
        ref = solve(model, backend=backend, time_limit=30)
        if ref.status != quick.status:
            reject("reference_disagrees")
            continue
        return Instance(fam.name, seed, difficulty, skin_obj.name, data, options, text, ref.status,
                        ref.objective, ref.backend, ref.fallback_reason, attempt, info, rejections,
                        size_bin=size_bin)
    return None


def reference_solve(instance: Instance, data: dict | None = None, backend: str = "auto") -> SolveResult:
    fam = get_family(instance.family)
    return solve(fam.build(data if data is not None else instance.data, instance.options), backend=backend)
