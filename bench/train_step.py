"""One training step of the `small` DeepSeek-V4 config on one GPU (H200): eager vs default
torch.compile (inductor) vs backend="trex" vs trex's fusions + Inductor (trex_inductor).
Tokens/s, MFU, peak memory, compile time separately from step time, and what trex fused.

    python bench/train_step.py [--modes eager,trex,inductor,trex_inductor] [--steps 8] [--warmup 3]
                               [--n-layers 0] [--budget-s 170] [--out bench/results/train_step.json]
    python bench/train_step.py --device cpu --model tiny --seq-len 64 --micro-batch 2   # CPU smoke run

Each mode is one run of the real train loop (trex.training.train on configs/small_h200.toml: bf16
autocast, AdamW, this repository's sources as byte-level CPT data) in its own process, so modes do
not share compile caches, counters or allocator state. The whole benchmark keeps to --budget-s:
each mode gets the time left minus a reserve for the modes after it, ends its loop before a step
that would pass its share (train.max_seconds), and is killed and reported as "timeout" (with the
phase it was in) if compilation alone overruns. compile_s = time above the steady step time summed
over the steps (the first step's compile plus any recompile); the medians skip --warmup steps.
Prints a table and writes --out.
"""
from __future__ import annotations

import argparse
import time

from _train_common import (add_model_args, check_device, launch, model_overrides, print_table, scratch_dir,
                           step_stats, write_results)

MODES = ("eager", "inductor", "trex", "trex_inductor")


def run_mode(mode: str, args, timeout_s: float, workdir) -> dict:
    overrides = {**model_overrides(args), "model.compile": mode, "train.steps": args.steps,
                 "schedule.warmup_steps": 2, "train.max_seconds": round(max(1.0, timeout_s - args.exit_margin_s), 1)}
    run = launch(mode, overrides, timeout_s=timeout_s, workdir=workdir)
    result = {"mode": mode, "status": run["status"], "wall_s": run["wall_s"], "timeout_s": round(timeout_s, 1),
              **step_stats(run["records"], args.warmup), "summary": run["summary"], "phases": run["phases"],
              "per_step": run["records"]}
    if run["status"] != "ok":
        result["error"] = run.get("tail", "")[-4000:]
    if run["records"]:
        result["first_step_s"] = run["records"][0]["step_time_s"]
        result["loss_first"], result["loss_last"] = run["records"][0]["loss"], run["records"][-1]["loss"]
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
    add_model_args(ap, "train_step", seq_len=1024, micro_batch=8)
    args = ap.parse_args()
    modes = args.modes.split(",")
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        ap.error(f"--modes: unknown {unknown}; choose from {list(MODES)}")
    if args.warmup >= args.steps:
        ap.error(f"--warmup {args.warmup} must be < --steps {args.steps}")
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
                     r["step_time_s"] * 1e3 if r.get("step_time_s") else None, s.get("compile_s"),
                     r.get("peak_mem_gib"), fused, comp.get("triton_kernels_compiled"),
                     comp.get("dynamo", {}).get("graph_breaks"), rel("eager"), rel("inductor")])
    layers = f"{args.n_layers} trunk layers" if args.n_layers else "all layers"
    print_table(f"{args.model} config ({layers}), one step = {args.micro_batch} x {args.seq_len} tokens, "
                f"{'bf16' if args.device == 'cuda' else 'fp32 (CPU smoke)'}",
                ["mode", "status", "tokens/s", "MFU", "step ms", "compile s", "peak GiB", "trex fused",
                 "triton kernels", "graph breaks", "vs eager", "vs inductor"], rows)
    path = write_results("train_step", {"args": vars(args), "reduced_layers": bool(args.n_layers),
                                        "wall_s": round(time.perf_counter() - t0, 1), "results": results},
                         args.out)
    print(f"wrote {path} ({time.perf_counter() - t0:.0f} s)")
    return 0 if all(r["status"] == "ok" for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
