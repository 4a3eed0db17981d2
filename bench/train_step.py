"""One training step of the `small` DeepSeek-V4 config on one GPU (H200): eager vs default
torch.compile (inductor) vs backend="trex". Tokens/s, MFU, peak memory, first-step (compile) time.

    python bench/train_step.py [--steps 12] [--warmup 4] [--seq-len 1024] [--micro-batch 8] [--modes eager,inductor,trex]

Each mode runs the real train loop (training.train.train, configs/small_h200.toml: bf16 autocast,
AdamW, this repository's sources as byte-level CPT data) for --steps steps; the first --warmup
steps (compilation, allocator warm-up) are excluded from the medians. A mode that fails is
recorded with its error and the others still run. Prints a table, writes bench/results/train_step.json.
"""
from __future__ import annotations

import argparse
import gc
import traceback

import torch

from _train_common import REPO, median, print_table, require_cuda, write_results

from training.config import load_config  # noqa: E402
from training.train import train  # noqa: E402


def run_mode(mode: str, args) -> dict:
    cfg = load_config(REPO / "configs" / "small_h200.toml", [
        ("model.compile", mode), ("train.steps", args.steps), ("schedule.warmup_steps", 2),
        ("data.seq_len", args.seq_len), ("data.micro_batch", args.micro_batch),
        ("checkpoint.dir", ""), ("log.jsonl", ""), ("log.progress", False)])
    torch._dynamo.reset()
    gc.collect()
    torch.cuda.empty_cache()
    try:
        records = train(cfg).records
    except Exception as e:  # noqa: BLE001 - a failing compiler is a result, not a crash of the bench
        return {"mode": mode, "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-4000:]}
    timed = records[args.warmup:]
    return {"mode": mode, "tokens_per_s": median([r["tokens_per_s"] for r in timed]),
            "mfu": median([r["mfu"] for r in timed if r["mfu"] is not None]),
            "step_time_s": median([r["step_time_s"] for r in timed]),
            "first_step_s": records[0]["step_time_s"],
            "peak_mem_gib": max(r["peak_mem_bytes"] for r in records) / 2**30,
            "loss_first": records[0]["loss"], "loss_last": records[-1]["loss"],
            "tokens_per_step": records[0]["tokens"], "per_step": records}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--modes", default="eager,inductor,trex")
    args = ap.parse_args()
    if args.warmup >= args.steps:
        ap.error(f"--warmup {args.warmup} must be < --steps {args.steps}")
    require_cuda("bench/train_step.py")
    results = [run_mode(m, args) for m in args.modes.split(",")]
    eager = next((r for r in results if r["mode"] == "eager" and "error" not in r), None)
    rows = []
    for r in results:
        if "error" in r:
            rows.append([r["mode"], None, None, None, None, None, r["error"][:60]])
            continue
        speedup = r["tokens_per_s"] / eager["tokens_per_s"] if eager else None
        rows.append([r["mode"], r["tokens_per_s"], r["mfu"], r["step_time_s"] * 1e3, r["first_step_s"],
                     r["peak_mem_gib"], f"x{speedup:.2f}" if speedup else ""])
    print_table(f"small config, one step = {args.micro_batch} x {args.seq_len} tokens, bf16",
                ["mode", "tokens/s", "MFU", "step ms", "first step s", "peak GiB", "vs eager"], rows)
    path = write_results("train_step", {"args": vars(args), "results": results})
    print(f"wrote {path}")
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
