"""`trex demo`: the whole stack, top to bottom, on a CPU in a few minutes.

1. Compile the tiny DeepSeek-V4 with ``torch.compile(model, backend="trex")``, run one forward +
   backward, and show what fused in the forward and backward graphs (against the counts the model's
   structure predicts) and how far the compiled loss and gradients are from eager.
2. Verify the generated AscendC: every fused op, forward and backward, runs through its generated
   kernel in the host emulator (``target="emulate"``) and is compared with the fp64 reference; the
   cost model's predicted GM bytes are compared with the bytes the emulator counted.
3. Train the compiled tiny model for a few steps (CPT on this repository's docs, byte tokens).

The demo lives in ``trex/training/`` (the last layer) because it uses every layer below it.
"""
from __future__ import annotations

import argparse
import collections
import statistics
import tempfile
import time
from pathlib import Path

import torch
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from trex.resources import CONFIGS_DIR

console = Console()


def _section(title: str) -> None:
    console.rule(f"[bold]{title}")


def compile_tiny_model(seq_len: int) -> str | None:
    """Part 1; returns None when it worked, else why not (as every part does)."""
    from trex.compiler import logs
    from trex.compiler.testing import trex_op_counts
    from trex.training.model import Transformer, get_config, lm_loss
    from trex.training.model.structure import expected_fused_ops

    _section("1. torch.compile(tiny DeepSeek-V4, backend='trex')")
    torch.manual_seed(0)
    args = get_config("tiny")
    model = Transformer(args)
    tokens = torch.randint(0, args.vocab_size, (2, seq_len + 1))
    inp, labels = tokens[:, :-1], tokens[:, 1:]

    def step(m):
        m.zero_grad(set_to_none=True)
        logits, mtp = m(inp)
        loss, _ = lm_loss(logits, mtp, labels)
        loss.backward()
        # `compiled` shares its parameters with `model`: read the gradients through the eager names
        return loss.detach(), {n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None}

    eager_loss, eager_grads = step(model)
    compiled = torch.compile(model, backend="trex")
    t0 = time.perf_counter()
    with logs.capture() as reports:
        trex_loss, trex_grads = step(compiled)
    seconds = time.perf_counter() - t0

    counts = {"forward": {}, "backward": {}}
    for report in reports:
        for stage, gm in report.compiled_graphs.items():
            key = "backward" if stage == "backward" else "forward"
            for op, n in trex_op_counts(gm).items():
                op = op.removesuffix("_bwd")  # a pattern's backward op counts under its pattern
                counts[key][op] = counts[key].get(op, 0) + n
    expected = expected_fused_ops(args, seq_len)
    table = Table(title=f"fused trex ops in {len(reports)} captured graph(s), compile+step {seconds:.1f} s")
    for col in ("pattern", "forward", "expected", "backward", "expected "):
        table.add_column(col, justify="right")
    ok = True
    for op, exp in expected.items():
        fwd, bwd = counts["forward"].get(op, 0), counts["backward"].get(op, 0)
        ok &= fwd == exp["forward"] and bwd == exp["backward"]
        table.add_row(op, str(fwd), str(exp["forward"]), str(bwd), str(exp["backward"]))
    console.print(table)
    worst = max((trex_grads[n] - g).abs().max().item() / (g.abs().max().item() + 1e-12)
                for n, g in eager_grads.items())
    console.print(f"loss eager {eager_loss.item():.6f}  trex {trex_loss.item():.6f}  "
                  f"(|diff| {abs(eager_loss - trex_loss).item():.2e}); worst relative gradient diff {worst:.2e}")
    near = collections.Counter(nm.pattern for report in reports for nm in report.near_misses)
    if near:  # e.g. hc_post / hc_head sums that start like an mHC collapse but are not one
        console.print("near-misses (TREX_LOGS=matches prints each with its reason): "
                      + ", ".join(f"{p} x{n}" for p, n in sorted(near.items())))
    for report in reports:
        for fb in report.fallbacks:
            console.print(f"  [yellow]fell back to eager: {fb}")
    problems = []
    if not ok:
        problems.append("the fused op counts differ from the ones the model's structure predicts (table above)")
    if worst >= 1e-3:
        problems.append(f"the compiled gradients differ from eager by {worst:.2e} (relative; limit 1e-3)")
    return "; ".join(problems) or None


def verify_generated_ascendc() -> str | None:
    from trex.codegen_ascendc.target import launch_counts
    from trex.compiler.registry import fused_ops
    from trex.compiler.targets import resolve_target, use_target
    from trex.compiler.testing import assert_close_to_reference, to_fp64

    _section("2. generated AscendC, run in the host emulator (target='emulate')")
    try:
        resolve_target("emulate", fallback=False)
    except Exception as exc:  # no g++ on this host: say so, do not fail the demo
        console.print(f"[yellow]emulate target unavailable: {exc}")
        return None
    table = Table(title="every fused op through its generated kernel vs the fp64 reference")
    for col in ("fused op", "dtype", "inputs", "ran as", "result"):
        table.add_column(col)
    failed = []
    cases = [(name, fop, dtype) for name, fop in sorted(fused_ops().items())
             for dtype in (torch.bfloat16, torch.float32)]
    # a cold emulator cache compiles every kernel with g++ first (tens of seconds): show where it is
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                        console=console, transient=True)
    with progress:
        task = progress.add_task("emulating", total=len(cases))
        for name, fop, dtype in cases:
            progress.update(task, description=f"compiling and emulating {name} ({str(dtype).removeprefix('torch.')})")
            args = fop.sample_inputs(dtype)[0]
            shapes = " ".join("x".join(map(str, a.shape)) for a in args if isinstance(a, torch.Tensor))
            launches = launch_counts()[name]
            try:
                with use_target("emulate"):
                    out = fop.op(*args)
                # ops without a Kernel IR program run the reference
                ran = "generated AscendC" if launch_counts()[name] > launches else "reference (no kernel)"
                eager = fop.reference(*args)
                ref = fop.reference(*to_fp64(args))
                assert_close_to_reference(out, eager, ref)
                table.add_row(name, str(dtype).removeprefix("torch."), shapes, ran, "[green]ok")
            except Exception as exc:
                failed.append(f"{name} ({str(dtype).removeprefix('torch.')}): {type(exc).__name__}: {exc}")
                table.add_row(name, str(dtype).removeprefix("torch."), shapes, "",
                              f"[red]{type(exc).__name__}: {exc}"[:120])
            progress.advance(task)
    console.print(table)
    if failed:
        return f"{len(failed)} of {len(cases)} kernels failed, first {failed[0]}"[:300]
    return None


# the least --steps for which "the loss fell" is a test: the mean of the last half of the steps
# against the first step
MIN_TRAIN_STEPS = 2


def train_a_few_steps(steps: int) -> str | None:
    from trex.training.config import ConfigError, load_config
    from trex.training.train import TrainingStopped, train

    _section(f"3. {steps} training steps of the compiled tiny model (CPT, byte tokens)")
    config = CONFIGS_DIR / "tiny_cpt.toml"
    with tempfile.TemporaryDirectory() as tmp:
        overrides = [("train.steps", steps), ("model.compile", "trex"), ("log.progress", True),
                     ("checkpoint.dir", f"{tmp}/ckpt"), ("checkpoint.every", steps),
                     ("log.jsonl", f"{tmp}/log.jsonl"), ("schedule.warmup_steps", 2)]
        try:
            result = train(load_config(config, overrides))
        except (ConfigError, TrainingStopped) as exc:
            return f"{type(exc).__name__}: {exc}"
    for r in result.records:
        console.print(f"  step {r['step']:3d}  loss {r['loss']:.4f}  tokens/s {r.get('tokens_per_s', 0):.0f}")
    losses = result.losses
    if len(losses) != steps:
        return f"ran {len(losses)} of {steps} steps (stopped: {result.stop_reason})"
    later = statistics.fmean(losses[len(losses) // 2:])
    if not later < losses[0]:
        return (f"the loss did not fall: step 1 {losses[0]:.4f}, mean of the last {len(losses) - len(losses) // 2} "
                f"steps {later:.4f}")
    return None


def _at_least(minimum: int, why: str):
    """argparse type: an integer >= minimum; argparse's message names the option."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer; pass a whole number >= {minimum}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is below {minimum} ({why}); pass a whole number >= {minimum}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="trex demo", description=__doc__.splitlines()[0])
    parser.add_argument("--seq-len", type=_at_least(1, "tokens per sequence"), default=64,
                        help="tokens per sequence for the compile step")
    parser.add_argument("--steps", type=_at_least(MIN_TRAIN_STEPS, "the demo checks that the loss falls"), default=6,
                        help=f"training steps in part 3 (>= {MIN_TRAIN_STEPS})")
    parser.add_argument("--skip", choices=("compile", "emulate", "train"), action="append", default=[])
    opts = parser.parse_args(argv)
    torch.set_num_threads(max(1, min(4, torch.get_num_threads())))
    parts = {"compile": lambda: compile_tiny_model(opts.seq_len), "emulate": verify_generated_ascendc,
             "train": lambda: train_a_few_steps(opts.steps)}
    results = {}
    for part, run in parts.items():
        if part in opts.skip:
            continue
        try:
            results[part] = run()
        except Exception as exc:      # a part that breaks is reported as that part's failure, with why
            console.print_exception(max_frames=5)
            results[part] = f"{type(exc).__name__}: {exc}"
    _section("summary")
    for part, problem in results.items():
        if problem is None:
            console.print(f"  {part:8s} [green]ok")
        else:
            console.print(f"  {part:8s} [red]FAILED[/red]: {escape(problem)}", highlight=False)
    return 0 if all(problem is None for problem in results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
