"""`trex or-eval`: greedy Pass@1 of a trained checkpoint on one OR benchmark.

    trex or-eval --benchmark nl4opt --model runs/or/sft_only/ckpt [--limit 20] [--out results.json]

Prints one table (rows: scoring rules, each labelled; columns: Pass@1 with its Wilson interval,
items scored) and writes the full JSON report (per-item verdicts and responses). ``--benchmark``
also accepts ``generated:PATH`` for a JSONL of problems from trex/training/or_data (the sft.jsonl of
``trex or-data generate`` or its output folder; the experiment's test.jsonl). Bad arguments exit
with status 2 and a message naming the argument and the fix.
"""
from __future__ import annotations

import argparse
import io
import os
import sys
from pathlib import Path

from trex.training.or_eval.benchmarks import (BENCHMARKS, DATA_ENV, default_data_root, load_benchmark,
                                         load_generated, resolve_name)

DEVICES = ("auto", "cpu", "cuda")


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (argparse names the option in its message)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer; pass a whole number >= 1")
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is below 1; pass a whole number >= 1")
    return value


_positive_int.__name__ = "positive integer"


def _device(text: str) -> str:
    """argparse type: auto, cpu, cuda or cuda:N."""
    name = text.strip().lower()
    base, _, index = name.partition(":")
    if base not in DEVICES or (index and (base != "cuda" or not index.isdigit())):
        raise argparse.ArgumentTypeError(f"{text!r} is not a device here; pass one of {', '.join(DEVICES)} "
                                         f"(or cuda:N)")
    return name


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trex or-eval", description=__doc__.split("\n\n")[0])
    p.add_argument("--benchmark", required=True,
                   help=f"one of {sorted(BENCHMARKS)}, or generated:PATH (the sft.jsonl of `trex or-data "
                        f"generate`, its output folder, or the experiment's test.jsonl)")
    p.add_argument("--model", required=True,
                   help="checkpoint directory written by `trex train` (holding tokenizer.json)")
    p.add_argument("--limit", type=_positive_int, default=None, help="evaluate only the first N problems")
    p.add_argument("--out", default=None, help="JSON report path (default: or_eval_<benchmark>.json)")
    p.add_argument("--data-root", default=None, help=f"or_benchmarks folder (default: ${DATA_ENV} "
                                                      "or shared/data/or_benchmarks)")
    p.add_argument("--max-new-tokens", type=_positive_int, default=512)
    p.add_argument("--workers", type=_positive_int, default=4, help="programs executed in parallel")
    p.add_argument("--device", type=_device, default="auto", help="auto | cpu | cuda | cuda:N")
    p.add_argument("--allow-weak-sandbox", action="store_true",
                   help="run the model's programs even where this host lacks a kernel sandbox layer "
                        "(see `trex doctor`); the report records which layers held")
    p.add_argument("--quiet", action="store_true", help="no progress bar and no per-item FAILED lines")
    return p


def load_problems(spec: str, data_root: str | None, limit: int | None):
    if spec.startswith("generated:"):
        return load_generated(spec.split(":", 1)[1], limit=limit)
    folder = BENCHMARKS[resolve_name(spec)].folder
    fix = f"pass --data-root DIR (the or_benchmarks folder, holding {folder}/{folder}.jsonl) or set ${DATA_ENV}"
    if data_root is None:
        try:
            root = default_data_root()
        except FileNotFoundError:
            raise FileNotFoundError(f"no benchmark data: --data-root not given, ${DATA_ENV} unset and no "
                                    f"shared/data/or_benchmarks in or next to the repository; {fix}") from None
        source = f"${DATA_ENV}" if os.environ.get(DATA_ENV) else "the default folder"
    else:
        root, source = Path(data_root), "--data-root"
    if not (root / folder / f"{folder}.jsonl").is_file():
        raise FileNotFoundError(f"{root / folder / (folder + '.jsonl')} not found (data root from {source}); {fix}")
    return load_benchmark(spec, root, limit=limit)


def render_table(report: dict, title: str) -> str:
    """The summary as a rich table (text), one row per scoring rule."""
    from rich.console import Console
    from rich.table import Table

    summary = report["summary"]["overall"]
    table = Table(title=title)
    for col in ("rule", "Pass@1", "95% Wilson", "correct / scored", "n/a"):
        table.add_column(col, justify="left" if col == "rule" else "right")
    for name, block in summary["rules"].items():
        rate = block["pass_at_1"]
        table.add_row(f"{name}\n[dim]{report['rule_labels'][name]}[/dim]",
                      "-" if rate is None else f"{100 * rate:.1f}%",
                      "-" if rate is None else f"[{100 * block['wilson_low']:.1f}, {100 * block['wilson_high']:.1f}]",
                      f"{block['correct']} / {block['scored']}", str(block["not_applicable"]))
    orgeval = report["summary"].get("orgeval")   # Bench4Opt's formulation-graph metric, beside Pass@1
    if orgeval:
        rate = orgeval["orgeval"]
        table.add_row("ORGEval (bench4opt)\n[dim]built model's graph equivalent to the reference formulation[/dim]",
                      "-" if rate is None else f"{100 * rate:.1f}%",
                      "-" if rate is None else f"[{100 * orgeval['wilson_low']:.1f}, {100 * orgeval['wilson_high']:.1f}]",
                      f"{orgeval['equivalent']} / {orgeval['scored']}", str(orgeval["not_determinable"]))
    console = Console(record=True, width=120, file=io.StringIO())   # render off-screen, export text
    console.print(table)
    fmt, exe = summary["format_rate"], summary["execution_rate"]
    console.print(f"items {summary['n']}  format-pass {100 * fmt:.1f}%  executed {100 * exe:.1f}%  "
                  f"native rules: {report['native_rules']}")
    return console.export_text()


class ProgressReporter:
    """rich progress for `trex or-eval`: a spinner while responses are generated, a bar while the
    programs run, and one ``FAILED <id>: <reason>`` line per item its native rule scores wrong."""

    def __init__(self, total: int, enabled: bool = True):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.total, self.enabled = total, enabled
        self.console = Console(stderr=True)
        self.progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=self.console, disable=not enabled, transient=True)
        self._run_task = None
        self.failed = 0

    def __enter__(self) -> "ProgressReporter":
        self.progress.start()
        return self

    def __exit__(self, *exc) -> None:
        self.progress.stop()

    def phase(self, description: str):
        import contextlib

        @contextlib.contextmanager
        def spinner():
            task = self.progress.add_task(description, total=None)
            try:
                yield
            finally:
                self.progress.remove_task(task)
        return spinner()

    def item(self, problem, item_score, outcome) -> None:
        from trex.training.or_eval.evaluate import failure_reason
        from trex.training.or_eval.scoring import native_rule

        if self._run_task is None:
            self._run_task = self.progress.add_task("running programs", total=self.total)
        self.progress.advance(self._run_task)
        if item_score.correct.get(native_rule(problem.benchmark)) is False:
            self.failed += 1
            if self.enabled:
                self.progress.console.print(f"FAILED {problem.id}: {failure_reason(problem, outcome)}",
                                            markup=False, highlight=False)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    import torch

    from trex.training.or_eval.evaluate import EvalConfig, SandboxExecutor, evaluate
    from trex.training.or_eval.model_io import load_for_eval
    from trex.training.or_eval.generate import generate_responses

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        parser.error(f"argument --device: {args.device!r} but this machine has no CUDA device; pass --device cpu "
                     f"(or auto)")
    try:
        problems = load_problems(args.benchmark, args.data_root, args.limit)
        if not problems:
            raise ValueError(f"--benchmark {args.benchmark}: no problems to evaluate; check the file")
        model, tokenizer, info = load_for_eval(args.model, device=args.device)
        executor = SandboxExecutor(workers=args.workers, allow_weak_sandbox=args.allow_weak_sandbox)
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        print(f"trex or-eval: {exc}", file=sys.stderr)
        return 2
    config = EvalConfig(max_new_tokens=args.max_new_tokens, workers=args.workers)
    name = args.benchmark.replace(":", "_").replace("/", "_")
    out = Path(args.out or f"or_eval_{name}.json")
    with executor, ProgressReporter(len(problems), enabled=not args.quiet) as progress:
        def respond(questions):
            with progress.phase(f"generating {len(questions)} responses"):
                return generate_responses(model, tokenizer, questions, args.max_new_tokens)

        report = evaluate(problems, respond, executor, config, out=out, on_item=progress.item, data_root=args.data_root,
                          meta={"model": str(args.model), "checkpoint": info, "benchmark_arg": args.benchmark})
    print(render_table(report, f"OR Pass@1 (greedy) - {args.benchmark} - {args.model}"))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
