"""Corpus statistics: how much the generated problems read like the benchmarks.

``trex or-data stats DIR`` measures a generated corpus (the sft.jsonl of ``trex or-data generate``)
against the public benchmarks:

- distinct-sentence share: distinct sentences / all sentences, measured on the same number of
  problems from every source (``SHARE_SAMPLE``: the share falls as a corpus grows), on three
  readings of a sentence: ``raw``; ``numbers_masked`` (every number, in digits or in words, becomes
  ``#``); ``skeleton`` (numbers and capitalised words after the first masked: the sentence template
  once entity names are taken out too; the headline, target >= 50%);
- the share of infeasible and unbounded instances (target >= 5%);
- the share of problems that say whether quantities must be whole numbers;
- size histograms: decision variables and constraints (generated: rebuilt from each record's data;
  Bench4Opt and NL4OPT: their reference formulations, ``sizes.benchmark_sizes``; the generator's
  target is their equal-weight mixture, and the total-variation distance to it is reported) and
  numbers in the problem text (every benchmark; a size proxy that needs no formulation);
- the round trip (``roundtrip``): draws whose text did not determine the model, rejected before
  the accepted ones (each record's ``provenance.rejections``).
Table rows (markdown tables) are not sentences and are left out.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from trex.training.or_data.numbers_text import NUMBER_WORD_PATTERN
from trex.training.or_data.sizes import SIZE_BINS, benchmark_sizes, bin_labels, binned_shares, target_shares, \
    total_variation
from trex.training.or_data.surface import INTEGRALITY_CUES

TARGETS = {"distinct_sentence_share": 0.50, "infeasible_or_unbounded_share": 0.05}
SHARE_SAMPLE = 150       # problems per source the distinct-sentence share is measured on
BENCHMARK_FILES = ("nl4opt", "mamo_easy", "mamo_complex", "optibench", "optmath_bench", "bench4opt")

_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z\"'(])")
_NUMBER = re.compile(r"\$?-?\d[\d,]*(?:\.\d+)?%?")
_NUMBER_WORDS = re.compile(NUMBER_WORD_PATTERN, re.IGNORECASE)
_CAPITALISED = re.compile(r"(?<=\s)[A-Z][\w'-]*")
def sentences(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("|"):
            continue
        out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def mask_numbers(sentence: str) -> str:
    return _NUMBER_WORDS.sub("#", _NUMBER.sub("#", sentence))


def skeleton(sentence: str) -> str:
    return _CAPITALISED.sub("N", mask_numbers(sentence))


def numbers_in(text: str) -> int:
    return len(_NUMBER.findall(text)) + len(_NUMBER_WORDS.findall(text))


def distinct_shares(texts: Sequence[str], sample: int = SHARE_SAMPLE) -> dict:
    import random

    texts = list(texts)
    if len(texts) > sample:
        texts = random.Random(0).sample(texts, sample)
    all_sentences = [s for t in texts for s in sentences(t)]
    n = len(all_sentences)
    readings = {"raw": lambda s: s, "numbers_masked": mask_numbers, "skeleton": skeleton}
    out = {name: (len({f(s) for s in all_sentences}) / n if n else None) for name, f in readings.items()}
    out["sentences"] = n
    out["problems"] = len(texts)
    return out


def histogram(values: Sequence[int], bins: Sequence[int] = SIZE_BINS) -> dict:
    shares = binned_shares(Counter(values), bins)
    return {lab: round(v, 4) for lab, v in zip(bin_labels(bins), shares)} | {"n": len(values),
                                                                              "median": _median(values)}


def counts_histogram(counts: dict[int, int]) -> dict:
    return histogram([v for v, n in counts.items() for _ in range(n)])


def _shares(hist: dict) -> list[float]:
    return [hist[lab] for lab in bin_labels()]


def size_comparison(corpus: dict) -> dict:
    """The generated size histograms against each measured benchmark and the generator's target."""
    out = {}
    for kind in ("variables", "constraints"):
        target = {lab: round(v, 4) for lab, v in zip(bin_labels(), target_shares(kind))}
        out[kind] = {"target": target,
                     "benchmarks": {name: counts_histogram(b[kind]) for name, b in benchmark_sizes().items()},
                     "total_variation_to_target": round(total_variation(_shares(corpus[kind]), target_shares(kind)), 4)}
    return out


def _median(values: Sequence[int]) -> float | None:
    s = sorted(values)
    if not s:
        return None
    mid = len(s) // 2
    return float(s[mid]) if len(s) % 2 else (s[mid - 1] + s[mid]) / 2


def corpus_records(path: str | Path) -> list[dict]:
    """The SFT records of a generated corpus (a folder holding sft.jsonl, or the file itself)."""
    path = Path(path)
    file = path / "sft.jsonl" if path.is_dir() else path
    if not file.is_file():
        raise FileNotFoundError(f"{file} not found; pass the --out folder of `trex or-data generate` or its sft.jsonl")
    with file.open() as fh:
        return [json.loads(line) for line in fh if line.strip()]


def corpus_stats(records: Sequence[dict]) -> dict:
    from trex.training.or_data.families import get_family

    texts = [r["problem"] for r in records]
    statuses = Counter(r["provenance"]["status"] for r in records)
    models = [get_family(r["provenance"]["family"]).build(r["provenance"]["data"], r["provenance"]["options"])
              for r in records]
    rejections = Counter()
    for r in records:
        rejections.update(r["provenance"].get("rejections", {}))
    draws = len(records) + sum(rejections.values())
    n = len(records) or 1
    return {"n": len(records), "distinct_sentence_share": distinct_shares(texts),
            "rejections": dict(rejections), "draws": draws,
            "roundtrip_rejected_share": round(rejections["roundtrip"] / (draws or 1), 4),
            "status": dict(statuses),
            "infeasible_or_unbounded_share": round((statuses["infeasible"] + statuses["unbounded"]) / n, 4),
            "states_integrality_share": round(sum(bool(INTEGRALITY_CUES.search(t)) for t in texts) / n, 4),
            "families": dict(Counter(r["provenance"]["family"] for r in records)),
            "variables": histogram([m.num_vars for m in models]),
            "constraints": histogram([len(m.rows) for m in models]),
            "numbers_in_text": histogram([numbers_in(t) for t in texts])}


def benchmark_stats(root: str | Path) -> dict:
    """The same measures on each public benchmark found under ``root`` (the or_benchmarks folder)."""
    out = {}
    for name in BENCHMARK_FILES:
        file = Path(root) / name / f"{name}.jsonl"
        if not file.is_file():
            continue
        with file.open() as fh:
            recs = [json.loads(line) for line in fh if line.strip()]
        texts = [r["question"] for r in recs]
        statuses = Counter(str(r.get("status")) for r in recs)
        block = {"n": len(recs), "distinct_sentence_share": distinct_shares(texts), "status": dict(statuses),
                 "infeasible_or_unbounded_share": round(
                     sum(v for k, v in statuses.items() if k != "optimal") / (len(recs) or 1), 4),
                 "states_integrality_share": round(sum(bool(INTEGRALITY_CUES.search(t)) for t in texts)
                                                   / (len(recs) or 1), 4),
                 "numbers_in_text": histogram([numbers_in(t) for t in texts])}
        if name in benchmark_sizes():
            block["variables"] = counts_histogram(benchmark_sizes()[name]["variables"])
            block["constraints"] = counts_histogram(benchmark_sizes()[name]["constraints"])
        out[name] = block
    return out


def check_targets(stats: dict) -> dict:
    share = stats["distinct_sentence_share"]["skeleton"]
    return {"distinct_sentence_share": share is not None and share >= TARGETS["distinct_sentence_share"],
            "infeasible_or_unbounded_share": stats["infeasible_or_unbounded_share"]
            >= TARGETS["infeasible_or_unbounded_share"]}


def throughput(folder: str | Path) -> dict | None:
    """Accepted samples per second of the run that wrote ``folder`` (its manifest.json)."""
    meta = Path(folder) / "manifest.json"
    if not meta.is_file():
        return None
    info = json.loads(meta.read_text())
    state, config = info.get("state", {}), info.get("config", {})
    if not state.get("accepted") or not state.get("wall_s"):
        return None
    return {"accepted": state["accepted"], "wall_s": round(state["wall_s"], 2),
            "samples_per_s": round(state["accepted"] / state["wall_s"], 2), "workers": config.get("workers")}


def render(corpus: dict, benchmarks: dict, speed: dict | None) -> str:
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    table = Table(title="generated corpus vs benchmarks")
    cols = ("source", "n", "distinct sent. (skeleton)", "numbers masked", "raw", "infeas/unbd", "says integrality",
            "median vars", "median numbers")
    for c in cols:
        table.add_column(c, justify="left" if c == "source" else "right")

    def pct(v):
        return "-" if v is None else f"{100 * v:.1f}%"

    for name, s in [("generated", corpus)] + list(benchmarks.items()):
        d = s["distinct_sentence_share"]
        table.add_row(name, str(s["n"]), pct(d["skeleton"]), pct(d["numbers_masked"]), pct(d["raw"]),
                      pct(s["infeasible_or_unbounded_share"]), pct(s["states_integrality_share"]),
                      "-" if "variables" not in s else str(s["variables"]["median"]),
                      str(s["numbers_in_text"]["median"]))
    console = Console(record=True, width=150, file=StringIO())
    console.print(table)
    sizes = size_comparison(corpus)
    for kind in ("variables", "constraints"):
        hist = Table(title=f"{kind} per problem (share); target: the equal-weight mixture of the benchmarks "
                           f"with formulations")
        hist.add_column("source")
        for lab in bin_labels():
            hist.add_column(lab, justify="right")
        hist.add_column("median", justify="right")
        rows = [("generated", corpus[kind])] + list(sizes[kind]["benchmarks"].items())
        for name, h in rows:
            hist.add_row(name, *[pct(h[lab]) for lab in bin_labels()], str(h["median"]))
        hist.add_row("target", *[pct(sizes[kind]["target"][lab]) for lab in bin_labels()], "-")
        console.print(hist)
        console.print(f"{kind}: total-variation distance generated vs target "
                      f"{sizes[kind]['total_variation_to_target']:.3f}")
    console.print(f"round trip: {corpus['rejections'].get('roundtrip', 0)} of {corpus['draws']} draws rejected "
                  f"({pct(corpus['roundtrip_rejected_share'])}): the text did not determine the model")
    if speed:
        console.print(f"pipeline: {speed['accepted']} accepted in {speed['wall_s']} s = {speed['samples_per_s']}/s")
    targets = check_targets(corpus)
    console.print("targets: " + ", ".join(f"{k} {'met' if ok else 'MISSED'}" for k, ok in targets.items()))
    return console.export_text()
