"""Benchmark of the OR-CPT data pipeline (trex/training/or_data), recorded as JSON.

Measures, on 2 cores by default (the process pins itself and its children to the first 2 CPUs):

1. throughput: accepted samples per second, end to end (benchmark-matched sizes, generation,
   reference solve, informativeness filter, rendering, the text -> model round trip, gold
   formulation, sandboxed execution + 2 perturbed re-solves, dedup, decontamination against every
   benchmark question, sharded JSONL export), and how that corpus reads (``trex or-data stats``'s
   distinct sentences, no-optimum share, size histograms and their distance to the target);
2. gold pass rate per family (acceptance >= 99% in every family);
3. corruption rejection rate per corruption kind (acceptance >= 99%).

    python bench/or_pipeline.py                       # full run, writes bench/results/or_pipeline.json
    python bench/or_pipeline.py --n 100 --gold-per-family 10 --corrupt-per-family 5   # quick
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from trex.training.or_data.contract import gold_formulation  # noqa: E402
from trex.training.or_data.corrupt import CORRUPTIONS  # noqa: E402
from trex.training.or_data.export import atomic_write_json, git_commit  # noqa: E402
from trex.training.or_data.families import FAMILIES  # noqa: E402
from trex.training.or_data.instances import generate_instance  # noqa: E402
from trex.training.or_data.pipeline import PipelineConfig, hardware_info, run_pipeline  # noqa: E402
from trex.training.or_data.sandbox import probe_backends, unshare_available  # noqa: E402
from trex.training.or_data.stats import corpus_records, corpus_stats, size_comparison  # noqa: E402
from trex.training.or_data.validate import ValidationConfig, validate  # noqa: E402

# The same validation with the two non-outcome checks off: how many corruptions the solver
# outcome alone (status, objective, perturbed re-solves) rejects.
OUTCOME_ONLY = ValidationConfig(data_fidelity=False, strict_structure=False)

_SANDBOX = None


def _init() -> None:
    global _SANDBOX
    from trex.training.or_data.sandbox import Sandbox

    _SANDBOX = Sandbox(workers=1)


def _rates_job(job: tuple) -> dict:
    """(family, seed, n_corruptions) -> gold outcome and the outcome of each corruption."""
    family, seed, with_corruptions = job
    inst = generate_instance(family, seed)
    if inst is None:
        return {"family": family, "seed": seed, "generated": False}
    gold = gold_formulation(inst)
    report = validate(inst, gold, _SANDBOX)
    out = {"family": family, "seed": seed, "generated": True, "gold_accepted": report.accepted,
           "gold_reason": report.reason, "corruptions": {}}
    if with_corruptions:
        rng = np.random.default_rng(seed)
        for name, corrupt in CORRUPTIONS.items():
            bad = corrupt(gold, rng, inst)
            if bad is not None:
                r = validate(inst, bad, _SANDBOX)
                r_outcome = validate(inst, bad, _SANDBOX, OUTCOME_ONLY)
                out["corruptions"][name] = {"rejected": not r.accepted, "reason": r.reason,
                                            "rejected_by_outcome_only": not r_outcome.accepted,
                                            "outcome_only_reason": r_outcome.reason}
    return out


def measure_rates(gold_per_family: int, corrupt_per_family: int, workers: int) -> dict:
    jobs = [(f, 10_000 + s, s < corrupt_per_family) for f in FAMILIES for s in range(gold_per_family)]
    t0 = time.perf_counter()
    with ProcessPoolExecutor(workers, mp_context=mp.get_context("spawn"), initializer=_init) as pool:
        results = list(pool.map(_rates_job, jobs, chunksize=4))
    gold = defaultdict(lambda: {"generated": 0, "accepted": 0, "generation_failed": 0, "failures": []})
    corr = defaultdict(lambda: {"total": 0, "rejected": 0, "accepted_cases": [], "rejected_by_check": defaultdict(int),
                                "outcome_only_rejected": 0, "outcome_only_by_check": defaultdict(int)})
    corr_by_family = defaultdict(lambda: {"total": 0, "rejected": 0})
    for r in results:
        g = gold[r["family"]]
        if not r["generated"]:
            g["generation_failed"] += 1
            continue
        g["generated"] += 1
        g["accepted"] += int(r["gold_accepted"])
        if not r["gold_accepted"]:
            g["failures"].append({"seed": r["seed"], "reason": r["gold_reason"]})
        for name, c in r["corruptions"].items():
            corr[name]["total"] += 1
            corr[name]["rejected"] += int(c["rejected"])
            if c["rejected"]:
                corr[name]["rejected_by_check"][c["reason"].split(":")[0]] += 1
            corr[name]["outcome_only_rejected"] += int(c["rejected_by_outcome_only"])
            if c["rejected_by_outcome_only"]:
                corr[name]["outcome_only_by_check"][c["outcome_only_reason"].split(":")[0]] += 1
            corr_by_family[r["family"]]["total"] += 1
            corr_by_family[r["family"]]["rejected"] += int(c["rejected"])
            if not c["rejected"]:
                corr[name]["accepted_cases"].append({"family": r["family"], "seed": r["seed"]})
    for g in gold.values():
        g["pass_rate"] = g["accepted"] / g["generated"] if g["generated"] else None
    for c in list(corr.values()) + list(corr_by_family.values()):
        c["rejection_rate"] = c["rejected"] / c["total"] if c["total"] else None
    for c in corr.values():
        c["outcome_only_rejection_rate"] = c["outcome_only_rejected"] / c["total"] if c["total"] else None
    total_c = sum(c["total"] for c in corr.values())
    return {
        "gold": dict(gold),
        "gold_min_family_pass_rate": min(g["pass_rate"] for g in gold.values() if g["pass_rate"] is not None),
        "corruptions": dict(corr),
        "corruptions_by_family": dict(corr_by_family),
        "corruption_rejection_rate": sum(c["rejected"] for c in corr.values()) / total_c if total_c else None,
        "corruption_outcome_only_rejection_rate":
            sum(c["outcome_only_rejected"] for c in corr.values()) / total_c if total_c else None,
        "wall_s": time.perf_counter() - t0,
    }


CPUACCT = Path("/sys/fs/cgroup/cpuacct")     # cgroup v1's CPU accounting controller


def _rusage_cpu_s() -> dict:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"self": own.ru_utime + own.ru_stime, "children": children.ru_utime + children.ru_stime}


@contextmanager
def cpu_accounting():
    """CPU seconds of this process and every process it starts while the block runs, two ways:
    ``cgroup``, where this host has a writable cgroup v1 cpuacct controller (root): everything that
    ran in a cgroup this process moves itself into for the block; ``rusage``: this process and the
    descendants reaped through it, which leaves out the sandbox zygotes under bubblewrap and every
    program they forked (measured: 0.58 s against 1.42 s in the cgroup for 60 programs), so it is a
    lower bound. Yields a dict filled when the block ends."""
    out: dict = {}
    for stale in CPUACCT.glob("trex-or-bench-*"):    # earlier runs' groups, once their processes are gone
        try:
            stale.rmdir()
        except OSError:
            pass
    group = CPUACCT / f"trex-or-bench-{os.getpid()}"
    try:
        group.mkdir()
        (group / "cgroup.procs").write_text(str(os.getpid()))
        start_ns = int((group / "cpuacct.usage").read_text())
    except OSError as exc:
        group, out["cgroup_unavailable"] = None, f"{type(exc).__name__}: {exc}"
    r0 = _rusage_cpu_s()
    try:
        yield out
    finally:
        r1 = _rusage_cpu_s()
        out["rusage_self_s"] = r1["self"] - r0["self"]
        out["rusage_children_s"] = r1["children"] - r0["children"]
        out["rusage_s"] = out["rusage_self_s"] + out["rusage_children_s"]
        if group is not None:
            out["cgroup_s"] = (int((group / "cpuacct.usage").read_text()) - start_ns) / 1e9
            try:   # (multiprocessing's resource tracker stays in the group until this process ends:
                # the next run removes the group)
                (CPUACCT / "cgroup.procs").write_text(str(os.getpid()))
                group.rmdir()
            except OSError:
                pass


def measure_throughput(n: int, workers: int, chunk: int, cores: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="or-bench-") as tmp:
        t0 = time.perf_counter()
        with cpu_accounting() as cpu:
            state = run_pipeline(PipelineConfig(n=n, workers=workers, chunk=chunk), tmp)
        wall = time.perf_counter() - t0
        sizes = {k: os.path.getsize(Path(tmp) / f"{k}.jsonl") for k in ("cpt", "sft")}
        corpus = corpus_stats(corpus_records(tmp))
    shapes = size_comparison(corpus)
    return {"accepted": state.accepted, "counts": state.counts, "per_family": state.per_family,
            "end_to_end_wall_s": wall, "accepted_per_s": state.accepted / wall,
            "loop_wall_s": state.wall_s, "accepted_per_s_excluding_startup": state.accepted / state.wall_s,
            "bytes": sizes,
            # CPU seconds of the generator and all its processes: on a loaded machine the wall clock
            # says little, accepted per CPU-second x cores is the estimate for that many idle cores
            "cpu": {**cpu, "accepted_per_cpu_s": state.accepted / (cpu.get("cgroup_s") or cpu["rusage_s"]),
                    "cores": cores, "idle_cores_estimate_accepted_per_s":
                        cores * state.accepted / (cpu.get("cgroup_s") or cpu["rusage_s"])},
            # how the same corpus reads (trex or-data stats): the data targets beside the speed
            "corpus": {"distinct_sentence_share_skeleton": corpus["distinct_sentence_share"]["skeleton"],
                       "infeasible_or_unbounded_share": corpus["infeasible_or_unbounded_share"],
                       "roundtrip_rejected": corpus["rejections"].get("roundtrip", 0), "draws": corpus["draws"],
                       "variables": corpus["variables"], "constraints": corpus["constraints"],
                       "variables_tv_to_target": shapes["variables"]["total_variation_to_target"],
                       "constraints_tv_to_target": shapes["constraints"]["total_variation_to_target"]}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=400, help="accepted samples for the throughput run")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--cores", type=int, default=2, help="pin to this many CPUs (0 = do not pin)")
    p.add_argument("--chunk", type=int, default=48)
    p.add_argument("--gold-per-family", type=int, default=50)
    p.add_argument("--corrupt-per-family", type=int, default=25)
    p.add_argument("--skip-rates", action="store_true")
    p.add_argument("--out", default=str(REPO / "bench" / "results" / "or_pipeline.json"))
    args = p.parse_args(argv)
    if args.cores and hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))[: args.cores]
        os.sched_setaffinity(0, cpus)
    record = {
        "benchmark": "or_pipeline", "commit": git_commit(), "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "hardware": hardware_info(), "pinned_cpus": sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_average_before": os.getloadavg(), "sandbox_backends": probe_backends(), "unshare_net": unshare_available(),
        "config": vars(args),
    }
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    record["throughput"] = measure_throughput(args.n, args.workers, args.chunk, cores)
    tp = record["throughput"]
    print(f"throughput: {tp['accepted_per_s']:.2f} accepted/s end to end ({tp['accepted']} in "
          f"{tp['end_to_end_wall_s']:.1f} s); CPU {tp['cpu'].get('cgroup_s', tp['cpu']['rusage_s']):.1f} s "
          f"(rusage {tp['cpu']['rusage_s']:.1f} s): {tp['cpu']['idle_cores_estimate_accepted_per_s']:.2f} "
          f"accepted/s on {cores} idle cores by CPU time", flush=True)
    if not args.skip_rates:
        record["rates"] = measure_rates(args.gold_per_family, args.corrupt_per_family, args.workers)
        print(f"gold: min family pass rate {record['rates']['gold_min_family_pass_rate']:.4f}; "
              f"corruptions rejected {record['rates']['corruption_rejection_rate']:.4f} "
              f"(outcome checks alone: {record['rates']['corruption_outcome_only_rejection_rate']:.4f})", flush=True)
    record["load_average_after"] = os.getloadavg()
    atomic_write_json(Path(args.out), record)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
