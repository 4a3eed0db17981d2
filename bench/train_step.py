"""Training steps of a DeepSeek-V4 config on one GPU (H200): eager vs default torch.compile
(inductor) vs backend="trex" vs trex's fusions + Inductor (trex_inductor). Tokens/s, MFU, peak
memory, first-step time, compile time separately from step time, launches and device-busy share of
one profiled step, what trex fused, and the loss curve of every mode against eager's.

    python bench/train_step.py [--model small|flash_h200] [--modes eager,trex,inductor,trex_inductor]
                               [--steps 8] [--warmup 3] [--n-layers 0] [--budget-s 170]
                               [--out bench/results/train_step.json]
    python bench/train_step.py --model flash_h200 --modes eager,trex --steps 100   # the 100-step loss curves
    python bench/train_step.py --device cpu --model tiny --seq-len 64 --micro-batch 2   # CPU smoke run

Each mode is one run of the real train loop (trex.training.train on the model's shipped config,
configs/small_h200.toml or configs/flash_h200.toml: bf16 autocast, AdamW, this repository's sources
as byte-level CPT data, the same seed and batches in every mode) in its own process, so modes do
not share compile caches, counters or allocator state. The whole benchmark keeps to --budget-s:
each mode gets the time left minus a reserve for the modes after it, ends its loop before a step
that would pass its share (train.max_seconds), and is killed and reported as "timeout" (with the
phase it was in) if compilation alone overruns. compile_s = time above the steady step time summed
over the steps (the first step's compile plus any recompile); the medians skip --warmup steps.
Step --profile-step runs under torch.profiler (log.profile_steps): its kernels give launches, busy
share, the sub-20-us tail and the family shares (trex.training.profile.anatomy_from_totals).
Prints a table and writes --out, with the loss curves (JSON) and a plot of them beside it (.png).
"""
from __future__ import annotations

import argparse
import time

import json
from pathlib import Path

from _train_common import (add_model_args, check_device, config_for, launch, model_overrides, print_table,
                           scratch_dir, step_stats, write_results)

MODES = ("eager", "inductor", "trex", "trex_inductor")


def run_mode(mode: str, args, timeout_s: float, workdir) -> dict:
    prof_dir = workdir / f"{mode}_profile"
    overrides = {**model_overrides(args), "model.compile": mode, "train.steps": args.steps,
                 "schedule.warmup_steps": 2, "train.max_seconds": round(max(1.0, timeout_s - args.exit_margin_s), 1)}
    if args.profile_step:
        overrides.update({"log.profile_steps": [args.profile_step, 1], "log.profile_dir": str(prof_dir),
                          "log.profile_trace": False})
    run = launch(mode, overrides, timeout_s=timeout_s, workdir=workdir, config=config_for(args.model))
    result = {"mode": mode, "status": run["status"], "wall_s": run["wall_s"], "timeout_s": round(timeout_s, 1),
              **step_stats(run["records"], args.warmup), "summary": run["summary"], "phases": run["phases"],
              "per_step": run["records"]}
    if run["status"] != "ok":
        result["error"] = run.get("tail", "")[-4000:]
    if run["records"]:
        result["first_step_s"] = run["records"][0]["step_time_s"]
        result["loss_first"], result["loss_last"] = run["records"][0]["loss"], run["records"][-1]["loss"]
    window = prof_dir / "rank_0.json"
    if window.is_file():
        from trex.training.profile import anatomy_from_totals
        prof = json.loads(window.read_text())
        anatomy = anatomy_from_totals(prof["ops"], prof["wall_s"], prof["steps"])
        if anatomy:
            result.update(anatomy=anatomy, launches=anatomy["launches"], busy_share=anatomy["busy_share"],
                          profiled_step=args.profile_step)
    if len(run["records"]) <= args.warmup:
        result["note"] = (f"only {len(run['records'])} steps ran (<= --warmup {args.warmup}): medians include "
                          f"compile steps")
    return result


def main() -> int:
    ap = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=3, help="steps excluded from the medians (compile, recompiles)")
    ap.add_argument("--modes", default="eager,trex,inductor,trex_inductor")
    ap.add_argument("--budget-s", type=float, default=170.0, help="wall-clock limit of the whole benchmark")
    ap.add_argument("--reserve-s", type=float, default=30.0,
                    help="seconds kept back for each mode still to run when a mode's limit is set")
    ap.add_argument("--exit-margin-s", type=float, default=15.0,
                    help="a mode's loop ends this long before its limit (process exit, summary)")
    ap.add_argument("--profile-step", type=int, default=-1,
                    help="the step (1-based) run under torch.profiler for launches and busy share "
                         "(-1: the first step after --warmup; 0: none)")
    add_model_args(ap, "train_step", seq_len=None, micro_batch=None)
    args = ap.parse_args()
    modes = args.modes.split(",")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        ap.error(f"--modes: unknown {unknown}; choose from {list(MODES)}")
    if args.warmup >= args.steps:
        ap.error(f"--warmup {args.warmup} must be < --steps {args.steps}")
    if args.profile_step == -1:
        args.profile_step = min(args.warmup + 1, args.steps)
    check_device("bench/train_step.py", args.device)
    t0 = time.perf_counter()
    workdir = scratch_dir("train_step")
    results = []
    for i, mode in enumerate(modes):
        left = args.budget_s - (time.perf_counter() - t0)
        timeout_s = left - args.reserve_s * (len(modes) - i - 1)
        if timeout_s < 20:
            results.append({"mode": mode, "status": "skipped",
                            "error": f"{left:.0f} s of --budget-s {args.budget_s:g} left, {timeout_s:.0f} s for this mode"})
            continue
        results.append(run_mode(mode, args, timeout_s, workdir))

    base = {r["mode"]: r for r in results if r.get("tokens_per_s")}
    rows = []
    for r in results:
        s = r.get("summary") or {}
        comp = s.get("compile", {})
        fused = comp.get("trex_fused_total")
        rel = (lambda ref: f"x{r['tokens_per_s'] / base[ref]['tokens_per_s']:.2f}"
               if r.get("tokens_per_s") and ref in base else "-")
        rows.append([r["mode"], r["status"], r.get("tokens_per_s"), r.get("mfu"),
                     r["step_time_s"] * 1e3 if r.get("step_time_s") else None, r.get("first_step_s"),
                     s.get("compile_s"), r.get("peak_mem_gib"), r.get("launches"), r.get("busy_share"), fused,
                     comp.get("dynamo", {}).get("graph_breaks"), rel("eager"), rel("inductor")])
    layers = f"{args.n_layers} trunk layers" if args.n_layers else "all layers"
    tokens = next((r["tokens_per_step"] for r in results if r.get("tokens_per_step")), None)
    print_table(f"{args.model} config ({layers}), one step = {tokens} tokens, "
                f"{'bf16' if args.device == 'cuda' else 'fp32 (CPU smoke)'}",
                ["mode", "status", "tokens/s", "MFU", "step ms", "first step s", "compile s", "peak GiB",
                 "launches", "busy", "trex fused", "graph breaks", "vs eager", "vs inductor"], rows)
    curves = loss_curves(results)
    path = write_results("train_step", {"args": vars(args), "reduced_layers": bool(args.n_layers),
                                        "wall_s": round(time.perf_counter() - t0, 1), "loss_curves": curves,
                                        "results": results}, args.out)
    why = plot_losses(curves, path.with_suffix(".png"), f"{args.model}: loss per step")
    for mode, c in curves.get("vs_eager", {}).items():
        print(f"{mode} vs eager over {c['steps']} steps: max |loss diff| {c['max_abs_diff']:.4g}, "
              f"last {c['last_abs_diff']:.4g} (eager last loss {curves['eager'][-1]:.4f})")
    print(f"wrote {path} ({time.perf_counter() - t0:.0f} s){'; ' + why if why else ''}")
    return 0 if all(r["status"] == "ok" for r in results) else 1


def loss_curves(results: list[dict]) -> dict:
    """{mode: [loss per step]} and, against eager's over the steps both ran, the largest and the last
    absolute difference."""
    curves = {r["mode"]: [rec["loss"] for rec in r.get("per_step", [])] for r in results if r.get("per_step")}
    eager = curves.get("eager")
    if eager:
        curves["vs_eager"] = {}
        for mode, losses in list(curves.items()):
            if mode in ("eager", "vs_eager"):
                continue
            n = min(len(eager), len(losses))
            if n:
                diffs = [abs(a - b) for a, b in zip(eager[:n], losses[:n])]
                curves["vs_eager"][mode] = {"steps": n, "max_abs_diff": max(diffs), "last_abs_diff": diffs[-1]}
    return curves


def plot_losses(curves: dict, path: Path, title: str) -> str | None:
    """The loss curves as a PNG beside the JSON (atomic); returns why not where matplotlib is missing."""
    try:
        import matplotlib
    except ImportError:
        return "matplotlib is not installed here; loss plot skipped (the JSON holds the curves)"
    import os
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    modes = [m for m in curves if m != "vs_eager"]
    if not modes:
        return "no mode logged a step; loss plot skipped"
    fig, ax = plt.subplots(figsize=(8, 4.5))
    for mode in modes:
        ax.plot(range(1, len(curves[mode]) + 1), curves[mode], label=mode, lw=1.2)
    ax.set_xlabel("step")
    ax.set_ylabel("loss (LM + 0.3 MTP)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    tmp = path.with_name(f".{path.stem}.tmp-{os.getpid()}.png")
    fig.savefig(tmp, dpi=110)
    plt.close(fig)
    os.replace(tmp, path)
    return None


if __name__ == "__main__":
    raise SystemExit(main())
