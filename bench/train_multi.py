"""FSDP2 + expert parallelism over N GPUs of one host (torchrun, NCCL; NVLink multicast off).

    python bench/train_multi.py [--nproc 8] [--ep 8] [--steps 30] [--micro-batch 4] [--seq-len 1024] [--compile trex]

Three runs of the real train loop on configs/small_h200.toml (each `torchrun -m training.train`):
  1gpu       1 GPU, micro-batch m                   -> tokens/s baseline
  1gpu_ref   1 GPU, micro-batch m, grad_accum N      -> the same global batch as the N-GPU run
  Ngpu       N GPUs, micro-batch m each, EP degree E -> tokens/s, MFU, profiler window
Reported: tokens/s and MFU of each, weak-scaling efficiency tokens/s(N) / (N x tokens/s(1)), the
all-to-all share (device time of NCCL send/recv (all-to-all) kernels on rank 0 / wall time of the
profiled steps), and loss agreement of Ngpu with 1gpu_ref (max relative difference per step).
NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 are set for every run.
Prints a table and writes bench/results/train_multi.json (+ per-run logs next to it).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys

from _train_common import NCCL_ENV, REPO, RESULTS, median, print_table, require_cuda, write_results

# NCCL kernels that carry the MoE all-to-all (NCCL runs all_to_all_single as grouped send/recv)
ALL_TO_ALL_KERNELS = re.compile(r"nccl.*(SendRecv|AllToAll)", re.IGNORECASE)
NCCL_KERNELS = re.compile(r"^nccl(Dev)?Kernel", re.IGNORECASE)


def launch(name: str, nproc: int, overrides: dict, timeout: int) -> tuple[list[dict], dict | None]:
    log = RESULTS / f"train_multi_{name}.jsonl"
    log.unlink(missing_ok=True)
    prof_dir = RESULTS / f"train_multi_{name}_profile"
    overrides = {**overrides, "log.jsonl": str(log), "log.progress": False, "checkpoint.dir": ""}
    if overrides.get("log.profile_steps"):
        overrides["log.profile_dir"] = str(prof_dir)
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
            "-m", "training.train", "--config", str(REPO / "configs" / "small_h200.toml")]
    for key, value in overrides.items():
        argv += [f"--{key}", json.dumps(value)]
    env = {**os.environ, **NCCL_ENV, "OMP_NUM_THREADS": "4"}
    print(f"[{name}] {' '.join(argv[2:])}", flush=True)
    proc = subprocess.run(argv, cwd=REPO, env=env, timeout=timeout, capture_output=True, text=True)
    if proc.returncode != 0:
        # the workers' own tracebacks ("[rank0]: ...") say why; torchrun's summary after them does not
        rank_lines = [l for l in proc.stderr.splitlines() if l.startswith("[rank")]
        detail = "\n".join(rank_lines[-60:]) if rank_lines else proc.stderr[-6000:]
        raise RuntimeError(f"run {name} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{detail}")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    profile = None
    if (prof_dir / "rank_0.json").is_file():
        profile = json.loads((prof_dir / "rank_0.json").read_text())
    return records, profile


def summarize(records: list[dict], warmup: int) -> dict:
    timed = records[warmup:] or records
    return {"tokens_per_s": median([r["tokens_per_s"] for r in timed]),
            "mfu": median([r["mfu"] for r in timed if r["mfu"] is not None]),
            "step_time_s": median([r["step_time_s"] for r in timed]),
            "peak_mem_gib": max(r["peak_mem_bytes"] for r in records) / 2**30,
            "tokens_per_step": records[0]["tokens"], "losses": [r["loss"] for r in records]}


def all_to_all_share(profile: dict | None) -> tuple[float | None, dict]:
    if not profile:
        return None, {}
    nccl = {k: v["device_us"] for k, v in profile["ops"].items() if NCCL_KERNELS.search(k) and v["device_us"]}
    a2a_us = sum(us for k, us in nccl.items() if ALL_TO_ALL_KERNELS.search(k))
    return a2a_us / (profile["wall_s"] * 1e6), nccl


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nproc", type=int, default=0, help="GPUs (default: all visible)")
    ap.add_argument("--ep", type=int, default=0, help="expert-parallel degree (default: nproc)")
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=8, help="steps excluded from the medians")
    ap.add_argument("--loss-steps", type=int, default=6, help="steps of the 1-GPU loss reference run")
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--compile", default="trex", choices=["eager", "inductor", "trex"])
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per run")
    args = ap.parse_args()
    require_cuda("bench/train_multi.py")
    import torch
    n = args.nproc or torch.cuda.device_count()
    ep = args.ep or n
    if n < 2:
        print(f"bench/train_multi.py: needs >= 2 GPUs, found {n}", file=sys.stderr)
        return 2
    common = {"train.steps": args.steps, "data.micro_batch": args.micro_batch, "data.seq_len": args.seq_len,
              "model.compile": args.compile, "schedule.warmup_steps": 5}
    profile_at = [max(1, args.steps - 4), 3]
    runs = {}
    recs, _ = launch("1gpu", 1, common, args.timeout)
    runs["1gpu"] = summarize(recs, args.warmup)
    # same schedule (train.steps) as the others, stopped early: only the first steps are compared
    recs, _ = launch("1gpu_ref", 1, {**common, "train.grad_accum": n, "train.stop_after": args.loss_steps},
                     args.timeout)
    runs["1gpu_ref"] = summarize(recs, args.warmup)
    recs, profile = launch(f"{n}gpu", n, {**common, "distributed.ep": ep, "log.profile_steps": profile_at},
                           args.timeout)
    multi = runs[f"{n}gpu"] = summarize(recs, args.warmup)
    share, nccl = all_to_all_share(profile)
    multi["all_to_all_share"] = share
    multi["nccl_kernel_us"] = nccl
    multi["scaling_efficiency"] = multi["tokens_per_s"] / (n * runs["1gpu"]["tokens_per_s"])
    ref = runs["1gpu_ref"]["losses"]
    rel = [abs(a - b) / abs(b) for a, b in zip(multi["losses"], ref)]
    multi["loss_max_rel_diff_vs_1gpu_ref"] = max(rel)
    multi["loss_rel_diff_per_step"] = rel

    rows = [[name, r["tokens_per_s"], r["mfu"], r["step_time_s"] * 1e3, r["peak_mem_gib"], r["tokens_per_step"],
             r["losses"][-1]] for name, r in runs.items()]
    print_table(f"small config, {args.compile}, FSDP2 + EP={ep} over {n} GPUs",
                ["run", "tokens/s", "MFU", "step ms", "peak GiB", "tokens/step", "last loss"], rows)
    print(f"scaling efficiency {multi['scaling_efficiency']:.3f}; all-to-all share "
          f"{share if share is None else f'{share:.3f}'}; max rel loss diff vs 1 GPU (same global batch) "
          f"{multi['loss_max_rel_diff_vs_1gpu_ref']:.2e}")
    path = write_results("train_multi", {"args": vars(args), "nproc": n, "ep": ep, "runs": runs})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
