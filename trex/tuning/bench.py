"""Tune every pattern on one target and record cost-model choice vs tuned result (the acceptance
record "tuned kernels are never slower than the cost model's choice").

    python -m trex.tuning.bench --target cuda --out bench/results/tuning_h200.json        # on the H200
    python -m trex.tuning.bench --target ascend910b --out results/tuning_ascend910b.json  # modeled, CPU
    TRITON_INTERPRET=1 python -m trex.tuning.bench --target cuda --shapes tiny --out /tmp/t.json   # CPU smoke

--shapes: v4pro = DeepSeek-V4-Pro at 16384 tokens (issue 6: hidden 7168, expert width 3072, 128 heads
x head_dim 512 with 64 rope dims, mHC 4 x 7168 with 20 Sinkhorn iterations; default for cuda);
example = the patterns' own example sizes (8192 tokens, what `trex codegen` tiles for); small = sizes
the Ascend emulator runs in seconds (default for Ascend targets); tiny = sizes Triton's interpreter
runs in seconds (CPU smoke of the CUDA path).

One run has one time budget (--budget-s, counted from the start of the first search): each pattern's
search gets an equal share of what is left (an early-stopping pattern leaves its rest to the next
ones), less a reserve for the re-measurement. The patterns run in the order given, the fast row
kernels first, and the JSON, its .md table and the store are rewritten after every pattern, so a run
cut short still leaves every finished pattern on disk.

Per pattern the search (trex.tuning.search) starts from the cost model's choice; afterwards the cost
model's choice and the search's best are re-measured, interleaved, `--remeasure` rounds each, on
fresh inputs: the tuned configuration is kept only when its median is strictly faster (by more than
the search's min_gain); otherwise the row reports the cost model's choice as the tuned one. So
`ratio` = model time / tuned time is >= 1 by construction, on the re-measured numbers. The store file
(configs + skills; `<out stem>_store.json` next to the JSON unless --store) records those kept results.
One verifier process serves every pattern (started first, so its imports overlap the first compile).
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from . import harness, search, space
from .store import Store
from .verify import Verifier

# seconds kept back per pattern still to run, for its re-measurement and the last candidate's overrun
REMEASURE_RESERVE_S = 4.0
# a pattern starts only with at least this much budget left (its root alone: compile + verify + profile)
MIN_PATTERN_S = 3.0


def fastest_first() -> dict:
    """Every kernel spec, the op with the fewest IR statements in its forward program (the fastest to
    compile, verify and profile) first, each backward right after its forward: the default order of
    a budgeted run, so the row kernels finish before mHC takes what is left."""
    from trex.compiler import registry
    from trex.compiler.kernel_ir import walk

    specs, ops = registry.kernel_specs(), registry.fused_ops()

    def statements(name: str) -> int:
        p = specs[name].program("bf16")
        return sum(1 for stmts in (p.prologue, p.body, p.epilogue) for _ in walk(stmts))

    def key(item):
        name = item[0]
        forward = ops[name].backward_of or name
        return (statements(forward) if forward in specs else statements(name), forward, name != forward)
    return dict(sorted(specs.items(), key=key))


def sizes_for(pattern: str, shapes: str) -> dict:
    """The named size set `shapes` (trex.compiler.kernels.SIZE_SETS) of the pattern's kernel spec."""
    return harness.parse_shape(dict(harness.kernel_spec(pattern).sizes[shapes]), pattern)


def environment() -> dict:
    """What the record was measured on: host, versions, device, commit."""
    import torch
    env = {"python": platform.python_version(), "torch": torch.__version__, "cuda_runtime": torch.version.cuda,
           "host_cpus": os.cpu_count(), "triton_interpret": os.environ.get("TRITON_INTERPRET") == "1"}
    try:
        import triton
        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env["device"] = props.name
        env["sm_count"] = props.multi_processor_count
        env["device_memory_gib"] = round(props.total_memory / 2 ** 30, 1)
    else:
        env["device"] = "cpu"
    # the device tool's copy of the tree carries a .git of the session's first checkout (run 4 recorded
    # that stale commit, "dirty"): a commit passed in TREX_COMMIT (where the run was launched) wins
    if os.environ.get("TREX_COMMIT"):
        env["commit"], env["dirty"] = os.environ["TREX_COMMIT"], False
        return env
    root = Path(__file__).resolve().parent.parent
    for key, cmd in (("commit", ["git", "rev-parse", "HEAD"]), ("dirty", ["git", "status", "--porcelain"])):
        try:
            out = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=10)
            val = out.stdout.strip() if out.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired):
            val = None
        env[key] = bool(val) if key == "dirty" and val is not None else val
    return env


def remeasure(backend, model_config: dict, tuned_config: dict, rounds: int) -> tuple[list, list]:
    """Profile the cost model's choice and the tuned configuration `rounds` times each, interleaved
    (model, tuned, model, ...), fresh inputs per round: the numbers the row reports."""
    arts = {"model": backend.compile(model_config)}
    same = space.config_key(model_config) == space.config_key(tuned_config)
    arts["tuned"] = arts["model"] if same else backend.compile(tuned_config)
    model_s, tuned_s = [], []
    for r in range(rounds):
        model_s.append(backend.profile(arts["model"], seed=1000 + r)["time_s"])
        tuned_s.append(model_s[-1] if same else backend.profile(arts["tuned"], seed=1000 + r)["time_s"])
    return model_s, tuned_s


def tune_one(target: str, name: str, sizes: dict, store: Store, verifier: Verifier, *, time_budget_s: float,
             max_candidates: int, patience: int, checks: int, remeasure_rounds: int, min_gain: float,
             log=None) -> dict:
    t0 = time.perf_counter()
    res = search.tune(target, name, "bf16", sizes, store=store, use_store=False, save=False, verifier=verifier,
                      time_budget_s=time_budget_s, max_candidates=max_candidates, patience=patience,
                      checks=checks, min_gain=min_gain, log=log)
    search_s = time.perf_counter() - t0
    root = next(n for n in res.nodes if n.status == "root")
    statuses: dict = {}
    for n in res.nodes:
        statuses[n.status] = statuses.get(n.status, 0) + 1
    refused = [{"id": n.id, "move": n.move, "status": n.status, "config": n.config, "reason": n.reason[:400]}
               for n in res.nodes if n.status in ("rejected", "failed")]
    # the search's numbers came from one profile each; the row's come from the interleaved re-measurement
    measured = not res.profile_label.startswith("modeled")
    t1 = time.perf_counter()
    if measured and remeasure_rounds > 0:
        backend = search.make_backend(target, name, "bf16", sizes)
        model_each, tuned_each = remeasure(backend, res.baseline_config, res.config, remeasure_rounds)
    else:       # a modeled profile is deterministic: the search's numbers are the numbers
        model_each, tuned_each = [res.baseline_time_s], [res.time_s]
    model_s, tuned_s = statistics.median(model_each), statistics.median(tuned_each)
    kept = tuned_s < model_s * (1.0 - min_gain) and space.config_key(res.config) != space.config_key(res.baseline_config)
    if kept:
        verdict = "tuned: strictly faster than the cost model's choice on re-measurement"
        tuned_config = res.config
    else:
        verdict = ("the search's best is the cost model's choice" if res.config == res.baseline_config else
                   "the search's best was not strictly faster on re-measurement: the cost model's choice is kept")
        tuned_config, tuned_s, tuned_each = res.baseline_config, model_s, model_each
    program = harness.build_program(name, "bf16", target, sizes)     # what the target runs (cuda mHC: per-stream)
    store.put({"op": name, "sizes": dict(sizes), "dtype": "bf16", "target": target,
               "program": program.name, "fingerprint": program.fingerprint(),
               "config": tuned_config, "time_s": tuned_s, "profile": res.profile_label,
               "baseline": {"config": res.baseline_config, "time_s": model_s},
               "gain": 1.0 - tuned_s / model_s if model_s else 0.0, "candidates": res.compiled,
               "stop_reason": res.stop_reason})
    return {"pattern": name, "target": target, "sizes": sizes, "profile": res.profile_label,
            "model_config": res.baseline_config,
            "model_predicted_us": (root.profile or {}).get("predicted_time_s", float("nan")) * 1e6,
            "model_us": model_s * 1e6, "tuned_config": tuned_config, "tuned_us": tuned_s * 1e6,
            "ratio": model_s / tuned_s if tuned_s else 1.0, "gain": 1.0 - tuned_s / model_s if model_s else 0.0,
            "never_slower": tuned_s <= model_s, "kept": kept, "verdict": verdict,
            "remeasured_us": {"model": [t * 1e6 for t in model_each], "tuned": [t * 1e6 for t in tuned_each]},
            "search": {"model_us": res.baseline_time_s * 1e6, "best_us": res.time_s * 1e6, "best_config": res.config,
                       "compiled": res.compiled, "nodes": statuses, "rejected_by_verifier": statuses.get("rejected", 0),
                       "failed": statuses.get("failed", 0), "infeasible": statuses.get("infeasible", 0),
                       "refused": refused, "stop_reason": res.stop_reason, "time_budget_s": time_budget_s,
                       "search_s": search_s, "remeasure_s": time.perf_counter() - t1},
            "tree": [n.as_dict() for n in res.nodes]}


def table(rows: list[dict]) -> str:
    out = ["| pattern | sizes | cost model's choice | us | tuned | us | ratio | compiled / rejected | profile |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        sz = ",".join(f"{k}={v}" for k, v in r["sizes"].items())
        if r.get("skipped"):
            out.append(f"| {r['pattern']} | {sz} | skipped: {r['skipped']} | | | | | | |")
            continue
        s = r["search"]
        out.append(f"| {r['pattern']} | {sz} | {_short(r['model_config'])} | {r['model_us']:.3f} | "
                   f"{_short(r['tuned_config'])} | {r['tuned_us']:.3f} | {r['ratio']:.3f} | "
                   f"{s['compiled']} / {s['rejected_by_verifier']} | {r['profile']} |")
    return "\n".join(out)


def _short(config: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in config.items() if v is not None)


def _write(path: Path, text: str) -> None:
    fd, tmpf = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmpf, path)


def main(argv: list[str] | None = None) -> int:
    from trex.compiler.kernels import SIZE_SETS
    specs = fastest_first()
    ap = argparse.ArgumentParser(prog="python -m trex.tuning.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", required=True, choices=["cuda", "ascend910b", "ascend910c"])
    ap.add_argument("--patterns", default=",".join(specs), help="comma-separated, run in this order (default: all)")
    ap.add_argument("--shapes", choices=sorted(SIZE_SETS), help="default: small on Ascend, v4pro on cuda")
    ap.add_argument("--budget-s", type=float, help="seconds for all searches and re-measurements together "
                    "(default: 105 on cuda, none on Ascend)")
    ap.add_argument("--max-candidates", type=int, default=12, help="compiled candidates per pattern at most")
    ap.add_argument("--patience", type=int, default=8, help="candidates without an improvement before a pattern stops")
    ap.add_argument("--checks", type=int, help="verifier checks per candidate (default: 1 on cuda, 2 on Ascend)")
    ap.add_argument("--remeasure", type=int, default=3, help="interleaved re-measurement rounds of model vs tuned")
    ap.add_argument("--verify-timeout-s", type=float, default=60.0, help="one verifier answer at most (a rejection after)")
    ap.add_argument("--store", help="store file to record into (default: <out stem>_store.json next to --out, "
                    "else a private temporary one)")
    ap.add_argument("--out", help="write the rows as JSON here (and a .md table and the store next to it)")
    ap.add_argument("-v", "--verbose", action="store_true", help="log every candidate")
    a = ap.parse_args(argv)
    fam = space.family(a.target)
    shapes = a.shapes or ("small" if fam == "ascend" else "v4pro")
    budget_s = a.budget_s if a.budget_s is not None else (105.0 if fam == "cuda" else float("inf"))
    checks = a.checks or (1 if fam == "cuda" else 2)
    patterns = [p for p in a.patterns.split(",") if p]
    unknown = [p for p in patterns if p not in specs]
    if unknown:
        ap.error(f"--patterns: unknown {unknown}; choose from {sorted(specs)}")
    if fam == "cuda":
        from .cuda import available
        ok, why = available()
        if not ok:
            print(f"trex.tuning.bench: --target cuda skipped: {why}", file=sys.stderr)
            return 3
    out = Path(a.out) if a.out else None
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
    tmp = tempfile.TemporaryDirectory()
    store_path = Path(a.store) if a.store else (out.with_name(out.stem + "_store.json") if out else Path(tmp.name) / "store.json")
    if not a.store and store_path.exists():
        store_path.unlink()         # the record is a fresh search: no configs or skills of an earlier run
    store = Store(store_path)
    env = environment()
    print(f"trex.tuning.bench: {a.target}, shapes {shapes}, budget {budget_s} s, {env.get('device')}, torch {env['torch']}, "
          f"triton {env['triton']}, commit {env['commit']}", flush=True)
    log = (lambda s: print(s, flush=True)) if a.verbose else None
    rows: list[dict] = []
    t_start = time.monotonic()
    deadline = t_start + budget_s

    def save(done: bool) -> None:
        store.save()
        if out is None:
            return
        doc = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "target": a.target,
               "shapes": shapes, "environment": env, "complete": done, "budget_s": budget_s,
               "wall_s": time.monotonic() - t_start,
               "settings": {"max_candidates": a.max_candidates, "patience": a.patience, "checks": checks,
                            "remeasure_rounds": a.remeasure, "store": store_path.name},
               "never_slower_all": all(r.get("never_slower", True) for r in rows),
               "skipped": [r["pattern"] for r in rows if r.get("skipped")], "rows": rows}
        _write(out, json.dumps(doc, indent=2, default=str) + "\n")
        _write(out.with_suffix(".md"), table(rows) + "\n")

    with Verifier(timeout_s=a.verify_timeout_s) as verifier:
        verifier.start()
        for i, name in enumerate(patterns):
            sizes = sizes_for(name, shapes)
            left = len(patterns) - i
            remaining = deadline - time.monotonic()
            if remaining < MIN_PATTERN_S:
                rows.append({"pattern": name, "target": a.target, "sizes": sizes,
                             "skipped": f"time budget: {max(remaining, 0):.1f} s of {budget_s} s left"})
                print(f"{name:20s} skipped: budget used", flush=True)
                save(False)
                continue
            per = max(0.0, (remaining - REMEASURE_RESERVE_S * left) / left)
            try:
                r = tune_one(a.target, name, sizes, store, verifier, time_budget_s=per, max_candidates=a.max_candidates,
                             patience=a.patience, checks=checks, remeasure_rounds=a.remeasure, min_gain=1e-3, log=log)
            except Exception as e:  # noqa: BLE001 - one pattern's failure (its root failed) must not lose the others
                rows.append({"pattern": name, "target": a.target, "sizes": sizes,
                             "skipped": f"{type(e).__name__}: {str(e)[:600]}"})
                print(f"{name:20s} FAILED: {type(e).__name__}: {str(e)[:300]}", flush=True)
                save(False)
                continue
            rows.append(r)
            s = r["search"]
            print(f"{name:20s} model {r['model_us']:10.3f} us  tuned {r['tuned_us']:10.3f} us  ratio {r['ratio']:.3f}  "
                  f"{s['compiled']:2d} compiled, {s['rejected_by_verifier']} rejected, {s['infeasible']} infeasible  "
                  f"search {s['search_s']:.1f} s  [{s['stop_reason']}]  {_short(r['tuned_config'])}", flush=True)
            save(False)
    save(True)
    tmp.cleanup()
    print(table(rows))
    print(f"trex.tuning.bench: {time.monotonic() - t_start:.1f} s" + (f"; wrote {out}, {out.with_suffix('.md')}, {store_path}" if out else ""))
    if any(r.get("skipped") for r in rows):
        return 4
    return 0 if all(r["never_slower"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
