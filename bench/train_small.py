"""Train the `small` DeepSeek-V4 config for a few hundred steps on one GPU (H200) with trex.

    python bench/train_small.py [--steps 300] [--compile trex] [--optim adamw|swap_adamw]

Runs configs/small_h200.toml through the real train loop (bf16 autocast, warmup + cosine, JSONL
log in bench/results/train_small_log.jsonl, checkpoints under runs/). Reports the loss curve
(first/last/min), median tokens/s and MFU after the first 10 steps, peak memory and skipped steps.
Prints a table and writes bench/results/train_small.json (summary + loss per step).
"""
from __future__ import annotations

import argparse
import shutil

from _train_common import REPO, RESULTS, median, print_table, require_cuda, write_results

from training.config import load_config  # noqa: E402
from training.train import train  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--compile", default="trex", choices=["eager", "inductor", "trex"])
    ap.add_argument("--optim", default="adamw", choices=["adamw", "swap_adamw"])
    ap.add_argument("--warmup-steps-excluded", type=int, default=10)
    args = ap.parse_args()
    require_cuda("bench/train_small.py")
    log = RESULTS / "train_small_log.jsonl"
    log.unlink(missing_ok=True)
    ckpt = REPO / "runs" / "bench_train_small"
    shutil.rmtree(ckpt, ignore_errors=True)            # a fresh run, not a resume
    cfg = load_config(REPO / "configs" / "small_h200.toml", [
        ("train.steps", args.steps), ("model.compile", args.compile), ("optim.name", args.optim),
        ("log.jsonl", str(log)), ("log.progress", True), ("checkpoint.dir", str(ckpt)),
        ("checkpoint.every", max(100, args.steps // 3))])
    records = train(cfg).records
    timed = records[args.warmup_steps_excluded:] or records
    losses = [r["loss"] for r in records]
    summary = {"steps": len(records), "loss_first": losses[0], "loss_last": losses[-1], "loss_min": min(losses),
               "loss_last10_mean": sum(losses[-10:]) / len(losses[-10:]),
               "tokens_per_s": median([r["tokens_per_s"] for r in timed]),
               "mfu": median([r["mfu"] for r in timed if r["mfu"] is not None]),
               "step_time_s": median([r["step_time_s"] for r in timed]),
               "peak_mem_gib": max(r["peak_mem_bytes"] for r in records) / 2**30,
               "skipped_steps": sum(r["skipped"] for r in records), "tokens_per_step": records[0]["tokens"]}
    print_table(f"small config, {args.steps} steps, compile={args.compile}, optim={args.optim}",
                ["metric", "value"], [[k, v] for k, v in summary.items()])
    path = write_results("train_small", {"args": vars(args), "config": cfg.to_dict(), "summary": summary,
                                         "loss": losses, "grad_norm": [r["grad_norm"] for r in records]})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
