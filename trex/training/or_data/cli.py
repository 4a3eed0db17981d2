"""`trex or-data ...`: generate verified OR training data, show one instance, train the BPE tokenizer.

    trex or-data generate --n 1000 --out data/or [--seed 0] [--workers 2] [--families a,b]
    trex or-data show --family transportation --seed 3 [--difficulty 2]
    trex or-data backends
    trex or-data stats data/or [--data-root DIR] [--out stats.json]
    trex or-data tokenizer --corpus data/or/cpt.jsonl data/or/sft.jsonl --vocab-size 8192 --out tok/tokenizer.json

Bad arguments exit with status 2 and a message naming the argument and the fix.
"""
from __future__ import annotations

import argparse
import json
import sys

from trex.training.or_data.families import DIFFICULTIES, FAMILIES


def _csv(value: str) -> tuple:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def _int_at_least(minimum: int):
    """argparse type: an integer >= minimum (argparse names the option in its message)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer; pass a whole number >= {minimum}")
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum}; pass a whole number >= {minimum}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def _families(text: str) -> tuple:
    names = _csv(text)
    if not names:
        raise argparse.ArgumentTypeError(f"empty list; pass a comma list from {sorted(FAMILIES)}")
    unknown = [n for n in names if n not in FAMILIES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown families {unknown}; pass a comma list from {sorted(FAMILIES)}")
    return names


def _difficulties(text: str) -> tuple:
    try:
        levels = tuple(int(v) for v in _csv(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: pass a comma list of integers from {list(DIFFICULTIES)}")
    bad = [d for d in levels if d not in DIFFICULTIES]
    if not levels or bad:
        raise argparse.ArgumentTypeError(f"{text!r}: pass a comma list from {list(DIFFICULTIES)}")
    return levels


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trex or-data", description="OR-CPT data pipeline")
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="generate N accepted samples into DIR (resumable)")
    g.add_argument("--n", type=_int_at_least(1), required=True, help="number of accepted samples wanted")
    g.add_argument("--out", required=True, help="output directory (re-run the same command to resume; it records "
                                                "the corpus's options in corpus.json and refuses other ones)")
    g.add_argument("--force", action="store_true",
                   help="delete the corpus files in --out first (another --seed/--families into the same folder)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--workers", type=_int_at_least(1), default=2, help="worker processes (each with its own sandbox)")
    g.add_argument("--chunk", type=_int_at_least(1), default=48, help="samples per shard")
    g.add_argument("--families", type=_families, default=tuple(FAMILIES), help=f"comma list from {sorted(FAMILIES)}")
    g.add_argument("--difficulties", type=_difficulties, default=DIFFICULTIES,
                   help=f"comma list from {list(DIFFICULTIES)}")
    g.add_argument("--perturbations", type=_int_at_least(0), default=2, help="perturbed re-solves per sample")
    g.add_argument("--no-decontam", action="store_true", help="skip benchmark decontamination")
    g.add_argument("--data-root", default=None, metavar="DIR",
                   help="or_benchmarks folder to decontaminate against (default: $TREX_OR_BENCHMARKS, else the "
                        "checkout's shared/data/or_benchmarks)")
    g.add_argument("--no-progress", action="store_true")
    s = sub.add_parser("show", help="print one instance, its gold formulation and the validation report")
    s.add_argument("--family", required=True, choices=sorted(FAMILIES))
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--difficulty", type=int, choices=DIFFICULTIES)
    sub.add_parser("backends", help="which solver backends and sandbox layers work here")
    st = sub.add_parser("stats", help="how the corpus reads against the benchmarks: distinct sentences, "
                                      "infeasible/unbounded share, size histograms, samples/s")
    st.add_argument("corpus", help="the --out folder of `trex or-data generate` (or its sft.jsonl)")
    st.add_argument("--data-root", default=None, metavar="DIR",
                    help="or_benchmarks folder to compare with (default: $TREX_OR_BENCHMARKS, else the checkout's "
                         "shared/data/or_benchmarks); without one only the corpus is measured")
    st.add_argument("--out", default=None, help="write the full statistics as JSON here")
    t = sub.add_parser("tokenizer", help="train the byte-level BPE tokenizer (trex/training/or_tokenizer.py) "
                                         "offline on corpus files and save its tokenizer.json")
    t.add_argument("--corpus", nargs="+", required=True, metavar="FILE",
                   help="JSONL files (a row gives its 'text', else its 'prompt' + 'response': the cpt.jsonl "
                        "and sft.jsonl of `trex or-data generate`) or plain-text files (one document each)")
    t.add_argument("--vocab-size", type=_int_at_least(1), required=True,
                   help="vocabulary size, special tokens included (at least the 256-byte alphabet + 5 specials)")
    t.add_argument("--min-frequency", type=_int_at_least(1), default=2, help="least count of a pair to merge")
    t.add_argument("--out", required=True,
                   help="tokenizer.json path, or a folder (a checkpoint dir) to write tokenizer.json into")
    return p


def _generate(args) -> int:
    from trex.resources import BENCHMARKS_FIX, benchmark_root_or_none
    from trex.training.or_data.pipeline import CorpusError, PipelineConfig, run_pipeline

    benchmark_root = None
    if not args.no_decontam:
        benchmark_root, source = benchmark_root_or_none(args.data_root)
        if benchmark_root is None or not benchmark_root.is_dir():
            where = f"{benchmark_root} (from {source}) is not a folder" if benchmark_root is not None else \
                f"no benchmark folder: {source}"
            print(f"trex or-data generate: --data-root: {where}; {BENCHMARKS_FIX}, or pass --no-decontam",
                  file=sys.stderr)
            return 2
    try:
        cfg = PipelineConfig(n=args.n, seed=args.seed, families=args.families, difficulties=args.difficulties,
                             workers=args.workers, chunk=args.chunk, perturbations=args.perturbations,
                             decontaminate=not args.no_decontam,
                             benchmark_root=str(benchmark_root) if benchmark_root is not None else None)
    except ValueError as exc:
        print(f"trex or-data generate: {exc}", file=sys.stderr)
        return 2
    bar = None
    if not args.no_progress:
        from tqdm import tqdm

        bar = tqdm(total=cfg.n, unit="sample", desc="accepted")
    tried = {"samples": 0, "rejected": 0}

    def progress(done: int, total: int) -> None:      # a shard is written: the accepted count is final
        if bar is not None:
            bar.n = done
            bar.refresh()

    def on_sample(result: dict) -> None:             # per sample: provisional until dedup at the shard's end
        tried["samples"] += 1
        if bar is not None:
            if result["outcome"] == "accepted" and bar.n < cfg.n:
                bar.update(1)
            bar.set_postfix(tried=tried["samples"], rejected=tried["rejected"], refresh=False)

    def on_reject(result: dict) -> None:
        tried["rejected"] += 1
        line = (f"sample {result['index']} ({result['family']}) FAILED: {result['outcome']}: "
                f"{result['reason']}")
        (bar.write if bar is not None else lambda text: print(text, file=sys.stderr))(line)

    try:
        state = run_pipeline(cfg, args.out, progress=progress, force=getattr(args, "force", False),
                             on_sample=on_sample, on_reject=on_reject)
    except CorpusError as exc:
        print(f"trex or-data generate: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"\ninterrupted; finished shards are kept in {args.out}: re-run the same command to resume",
              file=sys.stderr)
        return 130
    finally:
        if bar is not None:
            bar.close()
    print(json.dumps({"accepted": state.accepted, "counts": state.counts, "wall_s": round(state.wall_s, 2),
                      "out": args.out}))
    return 0


def _show(args) -> int:
    from trex.training.or_data.contract import gold_formulation
    from trex.training.or_data.instances import generate_instance
    from trex.training.or_data.validate import validate

    inst = generate_instance(args.family, args.seed, args.difficulty)
    if inst is None:
        print(f"no valid instance for {args.family} seed {args.seed}", file=sys.stderr)
        return 1
    formulation = gold_formulation(inst)
    report = validate(inst, formulation)
    print(f"# {inst.uid}  skin={inst.skin}  reference: {inst.status} {inst.objective} ({inst.solver})\n")
    print(inst.text + "\n")
    print(formulation)
    print(json.dumps(report.to_dict(), indent=2))
    return 0 if report.accepted else 1


def _backends(args) -> int:
    from trex.training.or_data.sandbox import probe_backends, unshare_available
    from trex.training.or_data.solver import gurobi_available

    print(json.dumps({"sandbox": probe_backends(), "unshare_net": unshare_available(),
                      "reference_gurobipy": gurobi_available()}, indent=2))
    return 0


def _stats(args) -> int:
    from pathlib import Path

    from trex.resources import benchmark_root_or_none
    from trex.training.or_data.export import atomic_write_json
    from trex.training.or_data.stats import benchmark_stats, check_targets, corpus_records, corpus_stats, render, \
        size_comparison, throughput

    try:
        records = corpus_records(args.corpus)
    except FileNotFoundError as exc:
        print(f"trex or-data stats: corpus: {exc}", file=sys.stderr)
        return 2
    if not records:
        print(f"trex or-data stats: corpus: {args.corpus} holds no samples; generate some first", file=sys.stderr)
        return 2
    root, _ = benchmark_root_or_none(args.data_root)
    corpus = corpus_stats(records)
    benchmarks = benchmark_stats(root) if root is not None and Path(root).is_dir() else {}
    speed = throughput(args.corpus) if Path(args.corpus).is_dir() else None
    print(render(corpus, benchmarks, speed))
    if args.out:
        atomic_write_json(Path(args.out), {"corpus": corpus, "benchmarks": benchmarks, "throughput": speed,
                                           "sizes": size_comparison(corpus), "targets_met": check_targets(corpus)})
        print(f"wrote {args.out}")
    return 0


def _tokenizer(args) -> int:
    from pathlib import Path

    from trex.training.or_tokenizer import (LARGEST_VOCAB_SIZE, ORTokenizer, corpus_texts, smallest_vocab_size,
                                            writable_or_error)

    def fail(message: str) -> int:
        print(f"trex or-data tokenizer: {message}", file=sys.stderr)
        return 2

    if args.vocab_size < smallest_vocab_size():
        return fail(f"--vocab-size {args.vocab_size} is below the byte alphabet plus the special tokens; "
                    f"pass --vocab-size >= {smallest_vocab_size()}")
    if args.vocab_size > LARGEST_VOCAB_SIZE:
        return fail(f"--vocab-size {args.vocab_size} is above {LARGEST_VOCAB_SIZE}; pass --vocab-size in "
                    f"[{smallest_vocab_size()}, {LARGEST_VOCAB_SIZE}]")
    unwritable = writable_or_error(args.out)
    if unwritable:
        return fail(f"--out {args.out}: {unwritable}; pass a writable path")
    missing = [f for f in args.corpus if not Path(f).is_file()]
    if missing:
        return fail(f"--corpus: {missing} not found; pass existing JSONL or text files")
    counted = {"texts": 0, "chars": 0}

    def texts():
        for text in corpus_texts(args.corpus):
            counted["texts"] += 1
            counted["chars"] += len(text)
            yield text

    try:
        tokenizer = ORTokenizer.train(texts(), vocab_size=args.vocab_size, min_frequency=args.min_frequency)
    except (FileNotFoundError, ValueError) as exc:
        return fail(f"--corpus: {exc}")
    if counted["chars"] == 0:
        return fail(f"--corpus {' '.join(args.corpus)}: no text found; pass the cpt.jsonl / sft.jsonl of "
                    f"`trex or-data generate` or non-empty text files")
    path = tokenizer.save(args.out)
    print(json.dumps({"out": str(path), "vocab_size": tokenizer.vocab_size, "asked_vocab_size": args.vocab_size,
                      "corpus": list(args.corpus), **counted}))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return {"generate": _generate, "show": _show, "backends": _backends, "stats": _stats,
            "tokenizer": _tokenizer}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
