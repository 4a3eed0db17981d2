"""FSDP2 + expert parallelism over N GPUs of one host (torchrun, NCCL; NVLink multicast off).

    python bench/train_multi.py [--nproc 2] [--ep 0] [--steps 12] [--warmup 4] [--loss-steps 6]
                                [--micro-batch 4] [--seq-len 1024] [--compile trex] [--n-layers 0]
                                [--budget-s 280] [--out bench/results/train_multi.json]
    python bench/train_multi.py --device cpu --model tiny --seq-len 32 --micro-batch 2 --steps 4 \\
        --warmup 1 --loss-steps 3            # CPU smoke run: 2 gloo processes

Three runs of the real train loop on configs/small_h200.toml, each in its own process tree:
  1gpu       1 GPU, micro-batch m                   -> tokens/s baseline
  1gpu_ref   1 GPU, micro-batch m, grad_accum N      -> the same global batch (and samples) as the
                                                        N-GPU run; --loss-steps steps of the same schedule
  Ngpu       N GPUs, micro-batch m each, EP degree E -> tokens/s, MFU, a profiler window
On CUDA with >= 2 GPUs the two 1-GPU runs run at the same time on GPUs 0 and 1 (separate GPUs and
processes), then the N-GPU run. Every run has a wall-clock limit taken from --budget-s: its loop
ends before a step that would pass it (train.max_seconds), and a run still alive at its limit
(compilation, NCCL set-up or a hang) is stopped and reported with the phase it was in.
Reported: tokens/s and MFU of each, weak-scaling efficiency tokens/s(N) / (N x tokens/s(1)), the
all-to-all share (device time of the NCCL send/recv (all-to-all) kernels on rank 0 / wall time of
the profiled steps, which follow the warm-up; an upper bound: a kernel's time includes waiting for
the peer), and loss agreement of Ngpu with 1gpu_ref (max relative difference per step).
NCCL_NVLS_ENABLE=0 and TORCH_SYMM_MEM_DISABLE_MULTICAST=1 are set for every run.
Prints a table and writes --out (+ the per-run step records inside it).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time

from _train_common import (NCCL_ENV, add_model_args, check_device, model_overrides, print_table, scratch_dir,
                           start_run, step_stats, write_results)

# NCCL kernels that carry the MoE all-to-all (NCCL runs all_to_all_single as grouped send/recv)
ALL_TO_ALL_KERNELS = re.compile(r"nccl.*(SendRecv|AllToAll)", re.IGNORECASE)
NCCL_KERNELS = re.compile(r"^nccl(Dev)?Kernel", re.IGNORECASE)
PROFILE_STEPS = 2


GLOO_ALL_TO_ALL = re.compile(r"^gloo:all_to_all$")


def all_to_all_share(profile: dict | None) -> tuple[float | None, dict, str | None]:
    """(share, NCCL kernel device us, source): device time of the NCCL all-to-all kernels / wall time
    of the window; without NCCL kernels (gloo on the CPU) the CPU time of gloo's all_to_all."""
    if not profile:
        return None, {}, None
    nccl = {k: v["device_us"] for k, v in profile["ops"].items() if NCCL_KERNELS.search(k) and v["device_us"]}
    if nccl:
        a2a_us = sum(us for k, us in nccl.items() if ALL_TO_ALL_KERNELS.search(k))
        return a2a_us / (profile["wall_s"] * 1e6), nccl, "nccl kernels, device time"
    gloo_us = sum(v["cpu_us"] for k, v in profile["ops"].items() if GLOO_ALL_TO_ALL.search(k))
    return gloo_us / (profile["wall_s"] * 1e6), {}, "gloo:all_to_all, CPU time"


def summarize(run: dict, warmup: int, exclude_steps: set[int] = frozenset()) -> dict:
    records = run["records"]
    timed = [r for r in records[warmup:] if r["step"] not in exclude_steps]
    stats = step_stats(records[:warmup] + timed, warmup) if records else {}
    s = run["summary"] or {}
    comp = s.get("compile", {})
    return {"status": run["status"], "wall_s": run["wall_s"], "timeout_s": run["timeout_s"], **stats,
            "steps_run": len(records), "stop_reason": s.get("stop_reason"), "compile_s": s.get("compile_s"),
            "setup_s": s.get("setup_s"), "trex_fused": comp.get("trex_fused_total"),
            "triton_kernels": comp.get("triton_kernels_compiled"),
            "graph_breaks": comp.get("dynamo", {}).get("graph_breaks"),
            "losses": [r["loss"] for r in records], "phases": run["phases"], "error": run.get("tail"),
            "run_summary": s or None, "per_step": records}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nproc", type=int, default=0, help="processes / GPUs (default: all visible GPUs; 2 on CPU)")
    ap.add_argument("--ep", type=int, default=0, help="expert-parallel degree (default: nproc)")
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--warmup", type=int, default=4, help="steps excluded from the medians (compile, recompiles)")
    ap.add_argument("--loss-steps", type=int, default=6, help="steps of the 1-GPU same-global-batch loss reference")
    ap.add_argument("--compile", default="trex", choices=["eager", "inductor", "trex", "trex_inductor"])
    ap.add_argument("--budget-s", type=float, default=280.0, help="wall-clock limit of all three runs")
    ap.add_argument("--exit-margin-s", type=float, default=20.0,
                    help="a run's loop ends this long before its limit (process exit, NCCL teardown)")
    ap.add_argument("--serial", action="store_true", help="run the two 1-GPU runs one after the other")
    ap.add_argument("--loss-rtol", type=float, default=2e-2,
                    help="max relative loss difference accepted between Ngpu and 1gpu_ref (bf16 on the GPU)")
    add_model_args(ap, "train_multi", seq_len=1024, micro_batch=4)
    args = ap.parse_args()
    check_device("bench/train_multi.py", args.device)
    if args.device == "cuda":
        import torch
        gpus = torch.cuda.device_count()
        n = args.nproc or gpus
        if n < 2 or n > gpus:
            print(f"bench/train_multi.py: --nproc {n} needs 2..{gpus} visible GPUs", file=sys.stderr)
            return 2
    else:
        n = args.nproc or 2
    ep = args.ep or n
    t0 = time.perf_counter()
    workdir = scratch_dir("train_multi")
    # 4 threads per process for the CPU-side work on the GPU host; 1 for the gloo smoke run on a small CPU
    env = {**NCCL_ENV, "OMP_NUM_THREADS": "4" if args.device == "cuda" else "1"}
    # under EP the dispatcher runs eagerly whatever --moe-dispatch says (trex/training/distributed.py); its
    # default, eager, makes the 1-GPU runs do the same, so all three compile the same parts of the model
    common = {**model_overrides(args), "train.steps": args.steps, "model.compile": args.compile,
              "schedule.warmup_steps": 2}
    parallel = args.device == "cuda" and not args.serial

    def limits(share: float) -> tuple[float, float]:
        left = args.budget_s - (time.perf_counter() - t0)
        timeout = max(20.0, left * share)
        return timeout, round(max(1.0, timeout - args.exit_margin_s), 1)

    # phase 1: the two single-GPU runs (at once on GPUs 0 and 1, else one after the other)
    runs = {}
    one_share = 0.45 if parallel else 0.25
    timeout, budget = limits(one_share)
    single = start_run("1gpu", {**common, "train.max_seconds": budget}, timeout_s=timeout, workdir=workdir,
                       env={**env, **({"CUDA_VISIBLE_DEVICES": "0"} if parallel else {})})
    if not parallel:
        runs["1gpu"] = single.finish()
        timeout, budget = limits(0.3)
    ref = start_run("1gpu_ref", {**common, "train.grad_accum": n, "train.stop_after": args.loss_steps,
                                 "train.max_seconds": budget}, timeout_s=timeout, workdir=workdir,
                    env={**env, **({"CUDA_VISIBLE_DEVICES": "1"} if parallel else {})})
    if parallel:
        runs["1gpu"] = single.finish()
    runs["1gpu_ref"] = ref.finish()

    # phase 2: N processes, FSDP2 + EP, a profiler window right after the warm-up
    timeout, budget = limits(1.0)
    prof_first = args.warmup + 1
    multi_name = f"{n}gpu"
    runs[multi_name] = start_run(multi_name, {
        **common, "distributed.ep": ep, "train.max_seconds": budget,
        "log.profile_steps": [prof_first, PROFILE_STEPS], "log.profile_dir": str(workdir / "profile"),
        "log.profile_trace": False},
        nproc=n, timeout_s=timeout, workdir=workdir, env=env).finish()

    result = {"1gpu": summarize(runs["1gpu"], args.warmup), "1gpu_ref": summarize(runs["1gpu_ref"], args.warmup),
              multi_name: summarize(runs[multi_name], args.warmup,
                                    set(range(prof_first, prof_first + PROFILE_STEPS)))}
    multi = result[multi_name]
    profile_path = workdir / "profile" / "rank_0.json"
    profile = json.loads(profile_path.read_text()) if profile_path.is_file() else None
    share, nccl, source = all_to_all_share(profile)
    multi["all_to_all_share"], multi["nccl_kernel_us"], multi["all_to_all_share_source"] = share, nccl, source
    multi["profile_window"] = ({"first_step": profile["first_step"], "steps": profile["steps"],
                                "wall_s": profile["wall_s"]} if profile else None)
    base = result["1gpu"].get("tokens_per_s")
    multi["scaling_efficiency"] = (multi["tokens_per_s"] / (n * base)
                                   if base and multi.get("tokens_per_s") else None)
    ref_losses = result["1gpu_ref"]["losses"]
    rel = [abs(a - b) / abs(b) for a, b in zip(multi["losses"], ref_losses)]
    multi["loss_rel_diff_per_step"] = rel
    multi["loss_max_rel_diff_vs_1gpu_ref"] = max(rel) if rel else None
    multi["loss_agrees"] = bool(rel) and max(rel) <= args.loss_rtol

    rows = [[name, r["status"], r.get("tokens_per_s"), r.get("mfu"),
             r["step_time_s"] * 1e3 if r.get("step_time_s") else None, r.get("compile_s"), r.get("peak_mem_gib"),
             r.get("tokens_per_step"), r["steps_run"], r.get("trex_fused"), r["losses"][-1] if r["losses"] else None]
            for name, r in result.items()]
    print_table(f"{args.model} config{f' ({args.n_layers} trunk layers)' if args.n_layers else ''}, "
                f"{args.compile}, FSDP2 + EP={ep} over {n} {'GPUs' if args.device == 'cuda' else 'gloo processes'}",
                ["run", "status", "tokens/s", "MFU", "step ms", "compile s", "peak GiB", "tokens/step", "steps",
                 "trex fused", "last loss"], rows)
    fmt = (lambda v: "-" if v is None else f"{v:.3g}")
    print(f"scaling efficiency {fmt(multi['scaling_efficiency'])}; all-to-all share {fmt(share)} ({source}); max rel loss "
          f"diff vs 1 GPU (same global batch, {len(rel)} steps) {fmt(multi['loss_max_rel_diff_vs_1gpu_ref'])} "
          f"(agrees within {args.loss_rtol:g}: {multi['loss_agrees']})")
    path = write_results("train_multi", {"args": vars(args), "nproc": n, "ep": ep, "parallel_1gpu_runs": parallel,
                                         "reduced_layers": bool(args.n_layers), "nccl_env": NCCL_ENV,
                                         "wall_s": round(time.perf_counter() - t0, 1), "runs": result}, args.out)
    print(f"wrote {path} ({time.perf_counter() - t0:.0f} s)")
    ok = all(r["status"] == "ok" for r in result.values()) and multi["loss_agrees"]
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
