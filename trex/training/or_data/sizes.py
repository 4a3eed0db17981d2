"""Problem sizes of the public benchmarks, and drawing generated sizes from them.

Only two benchmarks come with a reference formulation to count from: Bench4Opt (each item's
``model.lp`` statistics, in the normalised jsonl) and NL4OPT (the competition's
``generation_data/test.jsonl`` declarations, linked from each record's ``nl4opt_competition_ref``;
not in ../shared/data, so the counts are measured once and committed in ``benchmark_sizes.json``).
Mamo, OptiBench and OptMATH-Bench ship text and answers only; ``stats`` compares their
numbers-in-text instead.

The generator's target is the equal-weight mixture of the measured benchmarks, binned with
``stats.SIZE_BINS``: each instance draws a bin, then up to ``SIZE_DRAWS`` shapes of its family at
its difficulty, and keeps the first inside the bin (else the closest on a log scale). A family
whose shapes cannot reach the bin (a TSP never has 2 variables) keeps its nearest size, so the
generated histogram follows the target only as far as the families allow; ``trex or-data stats``
prints both and their total-variation distance.

Regenerate the committed file (needs the NL4OPT competition checkout)::

    python -m trex.training.or_data.sizes --data-root ../shared/data/or_benchmarks \\
        --nl4opt-competition nl4opt-competition/generation_data/test.jsonl
"""
from __future__ import annotations

import argparse
import ast
import json
import math
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np

SIZES_FILE = Path(__file__).with_name("benchmark_sizes.json")
SIZE_BINS = (1, 2, 3, 5, 10, 20, 50, 100, 200)       # upper edges; the last bin is everything above
SIZE_DRAWS = 24          # shapes tried per instance to land in the drawn bin
NL4OPT_COMPETITION = "nl4opt/nl4opt-competition@49f1e0d66b7fdcd33305a7f281c2a7c13f5620ea generation_data/test.jsonl"


def bin_labels(bins=SIZE_BINS) -> list[str]:
    labels, lo = [], 1
    for hi in bins:
        labels.append(str(hi) if hi == lo else f"{lo}-{hi}")
        lo = hi + 1
    return labels + [f">{bins[-1]}"]


def bin_index(value: int, bins=SIZE_BINS) -> int:
    return next((k for k, hi in enumerate(bins) if value <= hi), len(bins))


def bin_range(index: int, bins=SIZE_BINS) -> tuple[int, float]:
    lo = 1 if index == 0 else bins[index - 1] + 1
    return lo, (bins[index] if index < len(bins) else math.inf)


def _stats_field(record: dict) -> dict:
    s = record["model_stats"]
    return s if isinstance(s, dict) else ast.literal_eval(s)


def measure(root: str | Path, nl4opt_competition: str | Path | None) -> dict:
    """Counts of variables and constraints per benchmark item, from the reference formulations."""
    root = Path(root)
    out = {}
    with (root / "bench4opt" / "bench4opt.jsonl").open() as fh:
        stats = [_stats_field(json.loads(line)) for line in fh if line.strip()]
    out["bench4opt"] = {"source": "bench4opt.jsonl model_stats (the upstream model.lp)",
                        "variables": [s["num_vars"] for s in stats], "constraints": [s["num_constrs"] for s in stats]}
    if nl4opt_competition is not None:
        docs = {}
        with Path(nl4opt_competition).open() as fh:
            for line in fh:
                if line.strip():
                    docs.update(json.loads(line))
        variables, constraints = [], []
        with (root / "nl4opt" / "nl4opt.jsonl").open() as fh:
            for line in fh:
                ref = json.loads(line).get("nl4opt_competition_ref") if line.strip() else None
                if ref:
                    doc = docs[ref.split("#", 1)[1]]
                    variables.append(len(doc["vars"]))
                    constraints.append(len(doc["const_declarations"]))   # bounds x >= 0 are not declared
        out["nl4opt"] = {"source": f"{NL4OPT_COMPETITION}: len(vars), len(const_declarations)",
                         "variables": variables, "constraints": constraints}
    return {name: {"source": b["source"], "n": len(b["variables"]),
                   "variables": dict(sorted(Counter(b["variables"]).items())),
                   "constraints": dict(sorted(Counter(b["constraints"]).items()))} for name, b in out.items()}


@lru_cache(maxsize=1)
def benchmark_sizes() -> dict:
    """The committed measurement: {benchmark: {"variables": {count: items}, "constraints": ...}}."""
    raw = json.loads(SIZES_FILE.read_text())
    return {name: {**b, "variables": {int(k): v for k, v in b["variables"].items()},
                   "constraints": {int(k): v for k, v in b["constraints"].items()}} for name, b in raw.items()}


def binned_shares(counts: dict[int, int], bins=SIZE_BINS) -> list[float]:
    total = sum(counts.values()) or 1
    shares = [0.0] * (len(bins) + 1)
    for value, n in counts.items():
        shares[bin_index(value, bins)] += n / total
    return shares


@lru_cache(maxsize=2)
def target_shares(kind: str = "variables") -> tuple[float, ...]:
    """The equal-weight mixture of the measured benchmarks' binned ``kind`` histograms."""
    per = [binned_shares(b[kind]) for b in benchmark_sizes().values()]
    return tuple(sum(col) / len(per) for col in zip(*per))


def total_variation(a, b) -> float:
    return 0.5 * sum(abs(x - y) for x, y in zip(a, b))


def draw_bin(rng: np.random.Generator) -> int:
    shares = np.asarray(target_shares("variables"))
    return int(rng.choice(len(shares), p=shares / shares.sum()))


def size_distance(num_vars: int, index: int) -> float:
    """0 inside bin ``index``, else the log-distance to its nearest edge."""
    lo, hi = bin_range(index)
    if num_vars < lo:
        return math.log(lo / num_vars)
    return 0.0 if num_vars <= hi else math.log(num_vars / hi)


REACH_DRAWS = 48          # shapes per family and difficulty that measure which bins it reaches


@lru_cache(maxsize=None)
def reach(family: str, difficulty: int) -> frozenset[int]:
    """The size bins ``family`` reaches at ``difficulty`` (from REACH_DRAWS seeded shapes)."""
    from trex.training.or_data.families import get_family

    fam = get_family(family)
    rng = np.random.default_rng([difficulty, sum(map(ord, family))])
    return frozenset(bin_index(fam.build(*fam.sample(rng, difficulty)).num_vars) for _ in range(REACH_DRAWS))


def choose(families, difficulties, index: int, target: int) -> tuple[str, int]:
    """The (family, difficulty) of sample ``index`` whose drawn size bin is ``target``: the pairs
    that reach the bin (else the nearest ones), taken in turn by index."""
    able = _able(tuple(families), tuple(difficulties), target)
    return able[index % len(able)]


@lru_cache(maxsize=256)
def _able(families: tuple, difficulties: tuple, target: int) -> tuple[tuple[str, int], ...]:
    """The (family, difficulty) pairs that reach bin ``target``, else the nearest ones."""
    pairs = [(f, d) for d in difficulties for f in families]

    def gap(pair):
        return min(abs(b - target) for b in reach(*pair))

    best = min(map(gap, pairs))
    return tuple(p for p in pairs if gap(p) == best)


def sample_sized(fam, rng: np.random.Generator, difficulty: int, target: int | None = None) -> tuple[dict, dict]:
    """A (data, options) draw of ``fam`` whose variable count lands in bin ``target`` (drawn from
    the benchmarks' mixture when None), else the nearest of SIZE_DRAWS draws."""
    target = draw_bin(rng) if target is None else target
    best, best_d = None, math.inf
    for _ in range(SIZE_DRAWS):
        data, options = fam.sample(rng, difficulty)
        d = size_distance(fam.build(data, options).num_vars, target)
        if d < best_d:
            best, best_d = (data, options), d
        if d == 0.0:
            break
    return best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m trex.training.or_data.sizes",
                                description="measure the benchmarks' sizes into benchmark_sizes.json")
    p.add_argument("--data-root", required=True, help="the or_benchmarks folder")
    p.add_argument("--nl4opt-competition", help="nl4opt-competition's generation_data/test.jsonl")
    p.add_argument("--out", default=str(SIZES_FILE))
    args = p.parse_args(argv)
    if not (Path(args.data_root) / "bench4opt" / "bench4opt.jsonl").is_file():
        print(f"--data-root {args.data_root}: no bench4opt/bench4opt.jsonl there; pass the or_benchmarks folder",
              file=sys.stderr)
        return 2
    if args.nl4opt_competition and not Path(args.nl4opt_competition).is_file():
        print(f"--nl4opt-competition {args.nl4opt_competition}: not a file; pass generation_data/test.jsonl of "
              f"{NL4OPT_COMPETITION.split()[0]}", file=sys.stderr)
        return 2
    from trex.training.or_data.export import atomic_write_json

    atomic_write_json(Path(args.out), measure(args.data_root, args.nl4opt_competition))
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
