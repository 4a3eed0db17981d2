"""Train the `small` DeepSeek-V4 config for a few hundred steps on one GPU (H200) with trex.

    python bench/train_small.py [--steps 200] [--max-seconds 170] [--compile trex] [--optim adamw]
                                [--n-layers 0] [--out bench/results/train_small.json]
    python bench/train_small.py --device cpu --model tiny --seq-len 64 --micro-batch 2 --steps 6   # CPU smoke

One run of the real train loop (trex.training.train on configs/small_h200.toml: bf16 autocast, warmup
+ cosine over --steps, this repository's sources as byte-level CPT data) in a child process. The
loop ends gracefully before a step that would pass --max-seconds (setup and compile included; the
schedule still spans --steps), and the child is killed and reported after --max-seconds + 30 s
if it hangs (e.g. in compilation). Reports the steps run and why it stopped, the loss curve
(first / last / min), median tokens/s and MFU after the first --warmup-steps-excluded steps,
compile time separately from step time, peak memory, skipped steps and what trex fused. Prints a
table and writes --out (summary + loss and grad norm per step).
"""
from __future__ import annotations

import argparse
import time

from _train_common import (add_model_args, check_device, launch, model_overrides, print_table, scratch_dir,
                           step_stats, write_results)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200, help="steps of the schedule (the run may stop earlier)")
    ap.add_argument("--max-seconds", type=float, default=170.0,
                    help="wall-clock budget of the training run, setup and compile included")
    ap.add_argument("--compile", default="trex", choices=["eager", "inductor", "trex", "trex_inductor"])
    ap.add_argument("--optim", default="adamw", choices=["adamw", "swap_adamw"])
    ap.add_argument("--lr", type=float, default=None, help="peak learning rate (default: the config's)")
    ap.add_argument("--warmup-steps-excluded", type=int, default=10)
    add_model_args(ap, "train_small", seq_len=1024, micro_batch=8)
    args = ap.parse_args()
    check_device("bench/train_small.py", args.device)
    t0 = time.perf_counter()
    overrides = {**model_overrides(args), "train.steps": args.steps, "model.compile": args.compile,
                 "optim.name": args.optim, "train.max_seconds": args.max_seconds,
                 "schedule.warmup_steps": min(30, max(1, args.steps // 10))}
    if args.lr is not None:
        overrides["optim.lr"] = args.lr
    run = launch("train_small", overrides, timeout_s=args.max_seconds + 30, workdir=scratch_dir("train_small"))
    records = run["records"]
    summary = {"status": run["status"], "wall_s": run["wall_s"]}
    if records:
        losses = [r["loss"] for r in records]
        run_summary = run["summary"] or {}
        comp = run_summary.get("compile", {})
        summary.update(
            steps_run=len(records), steps_planned=args.steps, stop_reason=run_summary.get("stop_reason"),
            loss_first=losses[0], loss_last=losses[-1], loss_min=min(losses),
            loss_last10_mean=sum(losses[-10:]) / len(losses[-10:]),
            **step_stats(records, args.warmup_steps_excluded),
            compile_s=run_summary.get("compile_s"), first_step_s=records[0]["step_time_s"],
            setup_s=sum((run_summary.get("setup_s") or {}).values()) or None,
            skipped_steps=sum(r["skipped"] for r in records), trex_fused=comp.get("trex_fused_total"),
            triton_kernels=comp.get("triton_kernels_compiled"), graph_breaks=comp.get("dynamo", {}).get("graph_breaks"))
    print_table(f"{args.model} config{f' ({args.n_layers} trunk layers)' if args.n_layers else ''}, "
                f"compile={args.compile}, optim={args.optim}, {args.micro_batch} x {args.seq_len} tokens/step",
                ["metric", "value"], [[k, v] for k, v in summary.items()])
    path = write_results("train_small", {
        "args": vars(args), "reduced_layers": bool(args.n_layers), "summary": summary,
        "run_summary": run["summary"], "phases": run["phases"], "error": run.get("tail"),
        "loss": [r["loss"] for r in records], "grad_norm": [r["grad_norm"] for r in records],
        "step_time_s": [r["step_time_s"] for r in records]}, args.out)
    print(f"wrote {path} ({time.perf_counter() - t0:.0f} s)")
    return 0 if run["status"] == "ok" and records else 1


if __name__ == "__main__":
    raise SystemExit(main())
