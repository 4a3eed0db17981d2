"""One training step's anatomy (the DeepSeek-V4 paper's Figure 6) and a step-time / memory probe, for
eager, Inductor and trex side by side.

    python bench/profile_step.py [--model flash_h200] [--modes eager,inductor,trex] [--steps 4]
                                 [--seq-len 1024] [--micro-batch 4] [--out DIR]
    python bench/profile_step.py --merge DIR/profile_eager.json DIR/profile_trex.json --out DIR
    python bench/profile_step.py --device cpu --model tiny --seq-len 32 --micro-batch 2 --steps 2   # CPU

Per mode (one process each with --modes of one mode, or all in this one; torch._dynamo.reset() in
between): the model is built on the device (init_weights there: no host-side init of billions of
weights), AdamW (foreach), bf16 autocast on CUDA; --steps synthetic steps (random tokens), the
first timed alone (compile), the last one captured with torch.profiler. Writes
DIR/profile_<mode>.json: step times, tokens/s, MFU (trex.training.model.flops), peak memory, and
the anatomy (trex.training.profile.anatomy: kernel families by device share, launches, the sub-20-us
tail, idle); and DIR/profile_anatomy.json + .png for all modes given (or merged).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from _train_common import REPO, check_device, git_commit, hardware, write_results  # noqa: F401  (sys.path)

import torch

MODES = ("eager", "inductor", "trex", "trex_inductor")


def build(mode: str, args, device: torch.device, adamw: str = "foreach"):
    from trex.training.model import Transformer
    from trex.training.train import COMPILERS
    with torch.device(device):
        model = Transformer(args)          # init_weights runs its randn on the device
    forward = COMPILERS[mode](model, device)
    # foreach: the train loop's (trex.training.optim.build_optimizer); fused: one kernel pass per tensor list
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), weight_decay=0.1,
                                  **{adamw: True})
    return model, forward, optimizer


def run_mode(mode: str, opts) -> dict:
    from trex.training import mfu as mfu_lib
    from trex.training.model import count_parameters, flops_breakdown, get_config, lm_loss
    from trex.training.profile import profile_anatomy

    device = torch.device(opts.device)
    over = {"max_seq_len": opts.seq_len}
    if opts.n_layers:
        base = get_config(opts.model)
        over.update(n_layers=opts.n_layers, n_hash_layers=min(base.n_hash_layers, opts.n_layers),
                    compress_ratios=base.compress_ratios[:opts.n_layers] + base.compress_ratios[base.n_layers:])
    if opts.experts:
        over["n_routed_experts"] = opts.experts
    if opts.moe_dispatch:
        over["moe_dispatch"] = opts.moe_dispatch
    args = get_config(opts.model, **over)
    torch._dynamo.reset()
    torch.manual_seed(0)
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
    t0 = time.perf_counter()
    model, forward, optimizer = build(mode, args, device, opts.adamw)
    build_s = time.perf_counter() - t0
    print(f"[{mode}] built in {build_s:.1f} s ({sum(p.numel() for p in model.parameters()) / 1e9:.3f} B parameters)",
          flush=True)
    gen = torch.Generator(device=device).manual_seed(1)
    tokens = torch.randint(0, args.vocab_size, (opts.micro_batch, opts.seq_len + 1), device=device, generator=gen)
    inputs, labels = tokens[:, :-1], tokens[:, 1:]
    sync = (lambda: torch.cuda.synchronize(device)) if cuda else (lambda: None)
    amp = torch.autocast("cuda", dtype=torch.bfloat16) if cuda else torch.autocast("cpu", enabled=False)

    def step() -> float:
        with amp:
            logits, mtp = forward(inputs)
            loss, _ = lm_loss(logits, mtp, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    times, losses = [], []
    prof_report = None
    for i in range(opts.steps):
        last = i == opts.steps - 1
        prof = None
        if last:
            from torch.profiler import ProfilerActivity, profile
            prof = profile(activities=[ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else []))
            prof.start()
        sync()
        s = time.perf_counter()
        loss = step()
        sync()
        dt = time.perf_counter() - s
        if prof is not None:
            prof.stop()
            prof_report = profile_anatomy(prof, wall_us=dt * 1e6)
        else:
            times.append(dt)
        losses.append(float(loss))
        mem = f", peak {torch.cuda.max_memory_allocated(device) / 2**30:.1f} GiB" if cuda else ""
        print(f"[{mode}] step {i + 1}{' (profiled)' if last else ''}: {dt:.3f} s, loss {losses[-1]:.4f}{mem}", flush=True)
    steady = times[1:] or times
    step_s = sorted(steady)[len(steady) // 2]
    n_tok = opts.micro_batch * opts.seq_len
    counts = count_parameters(args)
    flops = flops_breakdown(args, opts.seq_len)
    key = mfu_lib.detect_device() if cuda else None
    tps = n_tok / step_s
    return {
        "mode": mode, "model": opts.model, "adamw": opts.adamw, "model_args": {k: (list(v) if isinstance(v, tuple) else v)
                                                           for k, v in vars(args).items()},
        "params_total_with_mtp": counts.total_with_mtp, "params_activated_with_mtp": counts.activated_with_mtp,
        "flops_per_token": sum(flops.values()), "flops_breakdown": flops,
        "tokens_per_step": n_tok, "build_s": round(build_s, 2), "first_step_s": round(times[0], 3) if times else None,
        "step_times_s": [round(t, 4) for t in times], "step_s": step_s, "tokens_per_s": tps,
        "mfu": mfu_lib.mfu(sum(flops.values()), tps, device=key) if key else None,
        "peak_mem_gib": torch.cuda.max_memory_allocated(device) / 2**30 if cuda else None,
        "losses": losses, "profiled_step_s": prof_report["wall_us"] / 1e6 if prof_report else None,
        "anatomy": prof_report,
    }


def write_json(path: Path, payload: dict) -> None:
    import os
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(payload, indent=1, default=str))
    os.replace(tmp, path)


def combine(results: list[dict], out: Path) -> None:
    from trex.training.profile import plot_anatomies
    ok = [r for r in results if r.get("anatomy")]
    summary = {"time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "commit": git_commit(),
               "hardware": hardware(),
               "modes": {r["mode"]: {k: r.get(k) for k in ("tokens_per_s", "mfu", "step_s", "first_step_s",
                                                            "peak_mem_gib", "tokens_per_step")}
                         | {"launches": r["anatomy"]["launches"], "busy_share": r["anatomy"]["busy_share"],
                            "tail": r["anatomy"]["tail"],
                            "family_share": {f: v["share"] for f, v in r["anatomy"]["families"].items()}}
                         for r in ok},
               "anatomy": {r["mode"]: r["anatomy"] for r in ok},
               "failed": [{"mode": r["mode"], "error": r.get("error")} for r in results if not r.get("anatomy")]}
    write_json(out / "profile_anatomy.json", summary)
    if ok:
        first = ok[0]
        title = (f"{first['model']} one training step ({first['tokens_per_step']} tokens), "
                 f"{summary['hardware'].get('gpu', 'CPU')}")
        why = plot_anatomies({r["mode"]: r["anatomy"] for r in ok}, out / "profile_anatomy.png", title)
        if why:
            print(why)
    for mode, m in summary["modes"].items():
        shares = ", ".join(f"{f} {s:.0%}" for f, s in sorted(m["family_share"].items(), key=lambda kv: -kv[1]))
        mfu = f"{m['mfu']:.1%}" if m["mfu"] is not None else "-"
        print(f"{mode:14s} {m['step_s'] * 1e3:8.1f} ms  {m['tokens_per_s']:9.0f} tok/s  MFU {mfu}  "
              f"launches {m['launches']}  busy {m['busy_share']:.0%}  tail {m['tail']['launches']} "
              f"({m['tail']['device_share']:.1%} of device time)  | {shares}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="flash_h200")
    ap.add_argument("--modes", default="eager,inductor,trex")
    ap.add_argument("--steps", type=int, default=4, help="steps per mode; the last one is profiled")
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--n-layers", type=int, default=0, help="trunk layers (0: the config's)")
    ap.add_argument("--experts", type=int, default=0, help="routed experts (0: the config's)")
    ap.add_argument("--moe-dispatch", default=None, choices=("sparse", "dense", "grouped"))
    ap.add_argument("--adamw", default="foreach", choices=("foreach", "fused"),
                    help="torch AdamW implementation (foreach: the train loop's)")
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--out", default=str(REPO / "bench" / "results"), help="output folder")
    ap.add_argument("--merge", nargs="*", default=None, help="profile_<mode>.json files to combine (no run)")
    opts = ap.parse_args()
    out = Path(opts.out)
    if opts.merge is not None:
        opts.merge = [p for p in opts.merge if Path(p).name != "profile_anatomy.json"]     # a glob's own output
        missing = [p for p in opts.merge if not Path(p).is_file()]
        results = [json.loads(Path(p).read_text()) for p in opts.merge if Path(p).is_file()]
        results += [{"mode": Path(p).stem.removeprefix("profile_"), "error": "no result file (the run did not finish)"} for p in missing]
        combine(results, out)
        return 0 if not missing else 1
    modes = opts.modes.split(",")
    bad = [m for m in modes if m not in MODES]
    if bad:
        ap.error(f"--modes: unknown {bad}; choose from {list(MODES)}")
    if opts.steps < 2:
        ap.error(f"--steps {opts.steps}: needs >= 2 (a timed step, then the profiled one)")
    check_device("bench/profile_step.py", opts.device)
    results = []
    for mode in modes:
        try:
            r = run_mode(mode, opts)
        except Exception as e:      # one mode failing (OOM, compile error) still reports the others
            r = {"mode": mode, "error": f"{type(e).__name__}: {str(e)[:2000]}"}
            print(f"[{mode}] failed: {r['error'][:500]}", file=sys.stderr)
        if opts.adamw == "fused":                # its own label beside the foreach runs
            r["mode"] = f"{mode}_fusedadam"
        write_json(out / f"profile_{r['mode']}.json", r)
        results.append(r)
        if opts.device == "cuda":
            torch.cuda.empty_cache()
    combine(results, out)
    return 0 if all("error" not in r for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
