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
over the steps (the first step's compile plus any recompile); the medians skip --warmup steps and the
profiled step.
Step --profile-step runs under torch.profiler (log.profile_steps): its kernels give launches, busy
share, the sub-20-us tail and the family shares (trex.training.profile.anatomy_from_totals).
Prints a table and writes --out, with the loss curves (JSON) and a plot of them beside it (.png).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
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
              **step_stats(run["records"], args.warmup, exclude_steps=(args.profile_step,)), "summary": run["summary"], "phases": run["phases"],
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
    ap.add_argument("--merge", nargs="+", metavar="JSON", default=None,
                    help="no run: combine result files of earlier runs (per mode the last ok one) into --out, "
                         "with the table, loss plot and anatomy plot redrawn")
    add_model_args(ap, "train_step", seq_len=None, micro_batch=None)
    args = ap.parse_args()
    if args.merge:
        return merge(args.merge, args.out)
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

    path = write_results("train_step", {"args": vars(args), "reduced_layers": bool(args.n_layers),
                                        "wall_s": round(time.perf_counter() - t0, 1), "loss_curves": loss_curves(results),
                                        "results": results}, args.out)
    report(results, path, args.model, args.n_layers, args.device)
    return 0 if all(r["status"] == "ok" for r in results) else 1


def merge(files: list[str], out: str | None) -> int:
    """One result from several runs of this script (e.g. one device call ran eager and trex, a second one
    Inductor, whose compile did not fit in the first): per mode the last file's ok result (else its last
    result), the loss curves recomputed, the table and both plots redrawn. The merged file keeps every
    source's time, commit, hardware and arguments under "merged_from" instead of this machine's stamp."""
    by_mode: dict[str, dict] = {}
    sources = []
    for f in files:
        try:
            rec = json.loads(Path(f).read_text())
        except (OSError, json.JSONDecodeError) as e:
            print(f"bench/train_step.py: --merge {f}: cannot read it as a train_step result ({e}); "
                  f"pass the JSON files the runs wrote", file=sys.stderr)
            return 2
        if rec.get("benchmark") != "train_step":
            print(f"bench/train_step.py: --merge {f}: not a train_step result (benchmark = "
                  f"{rec.get('benchmark')!r}); pass the JSON files this script wrote", file=sys.stderr)
            return 2
        sources.append({"file": Path(f).name, **{k: rec.get(k) for k in ("time_utc", "commit", "hardware", "args")}})
        for r in rec["results"]:
            if r["status"] == "ok" or by_mode.get(r["mode"], {}).get("status") != "ok":
                by_mode[r["mode"]] = {**r, "source": Path(f).name}
    results = list(by_mode.values())
    model = sources[-1]["args"]["model"]
    n_layers = sources[-1]["args"].get("n_layers", 0)
    device = sources[-1]["args"].get("device", "cuda")
    path = Path(out) if out else Path(files[-1]).with_name(Path(files[-1]).stem + "_merged.json")
    record = {"benchmark": "train_step", "merged_from": sources, "reduced_layers": bool(n_layers),
              "loss_curves": loss_curves(results), "results": results}
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1, default=str))
    os.replace(tmp, path)
    report(results, path, model, n_layers, device)
    return 0


def report(results: list[dict], path: Path, model: str, n_layers: int, device: str) -> None:
    """The table, the loss plot (<path>.png) and the step anatomy of every profiled mode side by side
    (<path>_anatomy.png, the paper's Figure 6 form)."""
    from trex.training.profile import plot_anatomies
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
    layers = f"{n_layers} trunk layers" if n_layers else "all layers"
    tokens = next((r["tokens_per_step"] for r in results if r.get("tokens_per_step")), None)
    print_table(f"{model} config ({layers}), one step = {tokens} tokens, "
                f"{'bf16' if device == 'cuda' else 'fp32 (CPU smoke)'}",
                ["mode", "status", "tokens/s", "MFU", "step ms", "first step s", "compile s", "peak GiB",
                 "launches", "busy", "trex fused", "graph breaks", "vs eager", "vs inductor"], rows)
    curves = loss_curves(results)
    anatomies = {r["mode"]: r["anatomy"] for r in results if r.get("anatomy")}
    why = [w for w in (plot_losses(curves, path.with_suffix(".png"), f"{model}: loss per step"),
                       plot_anatomies(anatomies, path.with_name(path.stem + "_anatomy.png"),
                                      f"{model}: one step's kernels by family ({layers})") if anatomies else None) if w]
    for mode, c in curves.get("vs_eager", {}).items():
        print(f"{mode} vs eager over {c['steps']} steps: max |loss diff| {c['max_abs_diff']:.4g}, "
              f"last {c['last_abs_diff']:.4g} (eager last loss {curves['eager'][-1]:.4f})")
    print(f"wrote {path}{''.join('; ' + w for w in why)}")


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
