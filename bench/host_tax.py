"""The host tax of trex's fused calls against Inductor's kernels (issue 22, item 3), on one CUDA GPU.

    python3 bench/host_tax.py --out $OUT                    # every pattern, ~2 min on the H200
    python3 bench/host_tax.py --cases swiglu_limited --steps 100

At a tiny token count (default 64 rows) every kernel takes a few microseconds, so one step is host-bound
and its wall time is its host time: the CPU cost of the compiled forward (one call) and of the forward
plus backward (the autograd engine, both compiled graphs). Each variant runs `--steps` steps back to
back without synchronising, timed with perf_counter over the whole loop after a synchronised start, in
`--rounds` interleaved rounds (median). Then each step is profiled with cProfile and the functions with
the most own time are listed per variant, so a difference between trex and Inductor names the Python
code that makes it. The device time per step (profiler, CUDA kernels) is recorded to show it is far
below the host time, i.e. that the measurement is of the host.

Writes `<out>/host_tax.json` (commit, torch/triton versions, device, per case and pass: host us per
step per variant, device us, kernel count, top functions) and prints a table.
"""
from __future__ import annotations

import argparse
import cProfile
import datetime
import os
import pstats
import statistics
import sys
import time

import torch

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gpu_patterns as gp  # noqa: E402 - the cases, variants and JSON helpers are gpu_patterns'

VARIANTS = ("inductor", "trex_compile", "trex_compile_triton_launcher", "inductor_ro", "trex_ro")


def _step_fn(fn, inputs, needs_grad, backward, grads_out):
    args = [a.detach().requires_grad_(bool(backward and g)) for a, g in zip(inputs, needs_grad)]
    if not backward:
        def step():
            with torch.no_grad():
                fn(*args)
        return step

    def step():
        for a in args:
            a.grad = None
        outs = gp.as_tuple(fn(*args))
        torch.autograd.backward(outs, grads_out[:len(outs)])
    return step


def host_us(step, steps: int) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    t1 = time.perf_counter()  # before the sync: the host's enqueue time, not the device's drain
    torch.cuda.synchronize()
    return (t1 - t0) / steps * 1e6


def device_us(step, steps: int = 20) -> tuple[float, float]:
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    dev = sum(e.self_device_time_total for e in prof.key_averages() if e.self_device_time_total > 0)
    n = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    return dev / steps, n / steps


def top_functions(step, steps: int, k: int) -> list[dict]:
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(steps):
        step()
    prof.disable()
    torch.cuda.synchronize()
    st = pstats.Stats(prof)
    rows = []
    for (file, line, name), (_cc, ncalls, tottime, cumtime, _callers) in st.stats.items():
        rows.append({"function": f"{os.path.relpath(file, REPO_ROOT) if file.startswith(REPO_ROOT) else file}:{line}({name})",
                     "calls_per_step": ncalls / steps, "own_us_per_step": tottime / steps * 1e6,
                     "cum_us_per_step": cumtime / steps * 1e6})
    rows.sort(key=lambda r: -r["own_us_per_step"])
    return rows[:k]


def main(argv=None):
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("--out", default=os.environ.get("OUT", "bench_out"), help="folder for host_tax.json")
    p.add_argument("--tokens", type=int, default=64, help="rows of the token-major inputs (small: host-bound)")
    p.add_argument("--cases", default="", help=f"comma-separated, from {list(gp.SWEEP_CASES)} (default: all)")
    p.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, from {list(VARIANTS)}")
    p.add_argument("--steps", type=int, default=300, help="steps per timing")
    p.add_argument("--rounds", type=int, default=5, help="interleaved timings per variant (median)")
    p.add_argument("--top", type=int, default=12, help="functions listed per variant from cProfile")
    args = p.parse_args(argv)
    for name in ("tokens", "steps", "rounds"):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    cases_wanted = set(filter(None, args.cases.split(","))) or set(gp.SWEEP_CASES)
    bad = sorted(cases_wanted - set(gp.SWEEP_CASES))
    if bad:
        p.error(f"--cases: unknown case(s) {bad}; choose from {list(gp.SWEEP_CASES)}")
    wanted = [v for v in filter(None, args.variants.split(","))]
    bad = sorted(set(wanted) - set(VARIANTS))
    if bad:
        p.error(f"--variants: unknown variant(s) {bad}; choose from {list(VARIANTS)}")
    if not torch.cuda.is_available():
        sys.exit("bench/host_tax.py needs a CUDA GPU (torch.cuda.is_available() is False)")
    import triton

    import trex.compiler.backend  # noqa: F401 - registers backend="trex"
    import trex.codegen_triton
    trex.codegen_triton.register_cuda_target()

    result = {"commit": gp.git_commit(), "torch": torch.__version__, "triton": triton.__version__,
              "device": torch.cuda.get_device_name(), "tokens": args.tokens, "steps": args.steps,
              "rounds": args.rounds, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(), "rows": []}
    torch._dynamo.config.recompile_limit = 64  # every variant compiles the same chain (gpu_patterns.py)
    gen = torch.Generator(device="cuda").manual_seed(0)
    for case in gp.build_cases(args.tokens, "cuda"):
        if case.name.split("[")[0] not in cases_wanted:
            continue
        variants, _ = gp.make_variants(case, set(wanted))
        inputs = case.make_inputs(gen)
        with torch.no_grad():
            outs = gp.as_tuple(case.chain(*inputs))
        grads_out = [torch.randn_like(o) for o in outs]
        for backward in (False, True):
            steps = {v: _step_fn(variants[v], inputs, case.needs_grad, backward, grads_out) for v in wanted}
            for s in steps.values():  # compile and warm up
                for _ in range(3):
                    s()
            times = {v: [] for v in wanted}
            for r in range(args.rounds):
                order = wanted[r % len(wanted):] + wanted[:r % len(wanted)]
                for v in order:
                    times[v].append(host_us(steps[v], args.steps))
            row = {"case": case.name, "pass": "fwd+bwd" if backward else "fwd"}
            for v in wanted:
                dev, nk = device_us(steps[v])
                row[v] = {"host_us": statistics.median(times[v]), "host_us_rounds": times[v], "dev_us": dev,
                          "kernels": nk, "top": top_functions(steps[v], min(args.steps, 100), args.top)}
            result["rows"].append(row)
            print(f"{case.name:34s} {row['pass']:8s} " + "  ".join(
                f"{v} {row[v]['host_us']:7.1f}us (dev {row[v]['dev_us']:5.1f}, {row[v]['kernels']:.0f}k)" for v in wanted),
                flush=True)
    path = os.path.join(args.out, "host_tax.json")
    gp.atomic_write_json(path, result)
    for row in result["rows"]:
        for v in wanted:
            print(f"\n{row['case']} {row['pass']} {v}: {row[v]['host_us']:.1f} us/step; top own time:")
            for t in row[v]["top"][:8]:
                print(f"   {t['own_us_per_step']:7.1f} us {t['calls_per_step']:5.1f}x  {t['function'][-110:]}")
    print(f"\nwrote {path}")


if __name__ == "__main__":
    main()
