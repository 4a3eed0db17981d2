"""mHC pre-projection kernels on the GPU, one program at a time (issue 17): the projection layout (the reduce
pass as the split-K `mhc_pre_proj` host step, the per-row math as a program of its own: what the cuda target
runs) against the split one (reduce pass with the row math, apply pass), forward and backward, at the bench shape
(16384 tokens, 4 streams, d = 7168, 20 Sinkhorn iterations, bf16). Device time per candidate tiling by
CUDA-graph replay (bench/gpu_patterns.py's graph_ms); every candidate's outputs against the fp64
reference. Writes $OUT/h17_mhc_kernels.json; prints one line per point and a summary.

  python3 bench/h200_h17_mhc.py [--tokens 16384] [--budget-s 90]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SMS = 132


def _tilings(d: int = 7168):
    from trex.codegen_triton.printer import Tiling

    def t(r, c, w, **kw):
        return Tiling(rows_per_tile=r, col_chunk=c, num_warps=w, **kw)
    # the projection layout's coefficient programs (no pass over x: the per-row math from partial sums)
    proj = {"coeff_proj": [t(16, None, 1), t(32, None, 2), t(64, None, 4), t(16, None, 2), t(128, None, 4), t(8, None, 1)],
            "bwd_coeff_proj": [t(16, None, 1, programs=4 * SMS), t(32, None, 2, programs=4 * SMS), t(8, None, 1, programs=8 * SMS),
                               t(16, None, 2, programs=2 * SMS), t(64, None, 4, programs=2 * SMS), t(4, None, 1, programs=8 * SMS)]}
    return dict(_split_tilings(d, t), **proj)


def _split_tilings(d: int, t):
    dot = dict(prefetch=True, dot_bf16_split=True)
    if d <= 2048:
        # short rows (the e2e model's d = 1024, run 11: 0.38 / 0.98 ms per call against ~20 / 34 us floors at
        # the model's 16 x 128 x 16-warp tiles): few warps, so the per-tile coefficient math and its
        # reductions stay inside a warp or two
        split = dict(dot_bf16_split=True)
        return {
            "fused": [t(32, 64, 4, num_stages=3, **split), t(64, 64, 4, num_stages=3, **split), t(32, 128, 4, num_stages=3, **split)],
            "coeff": [t(32, 64, 4, num_stages=3, **split), t(64, 64, 4, num_stages=3, **split), t(32, 128, 4, num_stages=3, **split),
                      t(16, 128, 2, num_stages=3, **split), t(64, 32, 4, num_stages=3, **split)],
            "apply": [t(2, 1024, 4), t(4, 1024, 4), t(8, 512, 4), t(1, 1024, 2)],
            "bwd_fused": [t(32, 64, 4, programs=4 * SMS, **split), t(16, 64, 4, programs=4 * SMS, **split)],
            "bwd_coeff": [t(32, 64, 4, programs=4 * SMS, **split), t(16, 64, 4, programs=4 * SMS, **split),
                          t(64, 32, 4, programs=2 * SMS, **split), t(32, 128, 4, programs=4 * SMS, **split)],
        }
    return {
        # the reduce pass: wide row tiles (fn re-read from L2 per tile), all four streams' loads in flight
        # ptxas -v for sm_90a on the CPU: 64 x 32 x 4 warps and 64 x 32 x 8 warps (no prefetch) do not spill,
        # 128 x 32 x 8 spills 8 bytes, the register-prefetch tilings 0.3-2.9 KB
        "coeff": [t(64, 32, 4, num_stages=3, dot_bf16_split=True), t(64, 32, 8, num_stages=3, dot_bf16_split=True),
                  t(128, 32, 8, num_stages=3, dot_bf16_split=True), t(128, 32, 8, num_stages=4, dot_bf16_split=True),
                  t(128, 32, 8, num_stages=3, **dot), t(64, 64, 8, num_stages=3, dot_bf16_split=True),
                  t(64, 32, 4, num_stages=3, **dot)],
        # the apply pass: a stream, no dot
        "apply": [t(2, 1024, 4), t(1, 2048, 8), t(4, 512, 4), t(8, 256, 4), t(1, 1024, 4, num_stages=1)],
        # ptxas: 64 x 32 x 8 warps spills 144 bytes, 128 x 32 x 8 and 64 x 32 x 4 ~1.4 KB
        "bwd_coeff": [t(64, 32, 8, programs=2 * SMS, dot_bf16_split=True), t(128, 32, 8, programs=SMS, **dot),
                      t(32, 32, 8, programs=4 * SMS, dot_bf16_split=True), t(64, 32, 8, programs=2 * SMS, **dot)],
    }


def _proj_launches(d: int):
    """mhc_proj_triton launches (block_t, block_k, num_warps, num_stages, slices or None: its own choice)."""
    if d <= 2048:
        return [(64, 64, 4, 3, None), (32, 64, 4, 3, None), (128, 64, 8, 3, None), (64, 128, 4, 3, None),
                (32, 128, 4, 3, 1), (64, 64, 4, 4, 2), (128, 128, 8, 3, 1)]
    return [(128, 64, 8, 3, None), (128, 64, 4, 3, None), (64, 64, 4, 3, None), (128, 128, 8, 3, None),
            (64, 128, 4, 4, None), (128, 64, 8, 4, 4), (256, 64, 8, 3, None), (64, 64, 4, 3, 4)]


def _wall_ms(fn) -> float:
    """--cpu-smoke's stand-in for graph_ms: one call's wall time (the flow, not a measurement)."""
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--d", type=int, default=7168, help="hidden size per stream (the e2e model: 1024)")
    ap.add_argument("--budget-s", type=float, default=90.0, help="skip the remaining candidates past this many seconds")
    ap.add_argument("--cpu-smoke", action="store_true", help="the whole flow at a tiny shape on the CPU under Triton's "
                    "interpreter (TRITON_INTERPRET=1; times are not measurements)")
    args = ap.parse_args(argv)
    if args.cpu_smoke and os.environ.get("TRITON_INTERPRET") != "1":
        print("bench/h200_h17_mhc.py: --cpu-smoke needs TRITON_INTERPRET=1", file=sys.stderr)
        return 2
    if not args.cpu_smoke and not torch.cuda.is_available():
        print("bench/h200_h17_mhc.py: needs a CUDA GPU (none found; --cpu-smoke runs the flow on the CPU)", file=sys.stderr)
        return 2
    import gpu_patterns as G
    from trex.codegen_triton import tiling as tiling_mod
    from trex.codegen_triton.launcher import run_program
    from trex.codegen_triton.printer import Tiling
    from trex.codegen_triton.target import TritonExecutor
    from trex.compiler import registry
    from trex.compiler.kernel_ir import bind_sizes
    from trex.compiler.kernels import Executor

    t0 = time.time()
    T, n, d, iters, eps = args.tokens, 4, args.d, 20, 1e-6
    dev = "cpu" if args.cpu_smoke else "cuda"
    if args.cpu_smoke:
        T, d, iters = 37, 64, 3
        G.graph_ms = _wall_ms
    gen = torch.Generator(device=dev).manual_seed(0)
    m = (2 + n) * n
    x = torch.randn(T, n, d, device=dev, generator=gen).bfloat16()
    fn = torch.randn(m, n * d, device=dev, generator=gen) * (n * d) ** -0.5
    scale = torch.rand(3, device=dev, generator=gen) + 0.5
    base = torch.randn(m, device=dev, generator=gen) * 0.1
    dli = torch.randn(T, d, device=dev, generator=gen).bfloat16()
    dpost = torch.randn(T, n, device=dev, generator=gen)
    dcomb = torch.randn(T, n, n, device=dev, generator=gen)
    fwd_args = (x, fn, scale, base, iters, eps, eps)
    bwd_args = (dli, dpost, dcomb) + fwd_args
    calls = {"mhc_pre": fwd_args, "mhc_pre_bwd": bwd_args}
    specs = {op: registry.kernel_spec(op) for op in calls}
    layouts = ("cuda", "cuda_split")     # the projection layout, the split one (trex/passes/mhc_pre/kernel.py)
    chosen: dict = {}                    # program name -> tiling the runners launch with

    def launch(p, i, s, out=None, record=None):
        if record is not None and p.name not in record:
            record[p.name] = (p, i, s)
        return run_program(p, i, s, chosen.get(p.name), out=out)

    # every program each layout launches, with the inputs it launches with (one real run each)
    programs: dict = {}
    for op, a in calls.items():
        for lay in layouts:
            specs[op].run(a, TritonExecutor(lambda p, i, s, out=None: launch(p, i, s, out, programs)), lay)
    extra = _tilings(d)
    role = {"fwd_streams": "fused", "coeff_streams": "coeff", "apply_streams": "apply", "bwd_streams": "bwd_fused",
            "bwd_coeff_streams": "bwd_coeff", "coeff_proj": "coeff_proj", "bwd_coeff_proj": "bwd_coeff_proj"}
    report = {"tokens": T, "d": d, "device": torch.cuda.get_device_name() if dev == "cuda" else "cpu (interpreter)",
              "points": {}, "best": {}}
    cands, base_out = {}, {}
    for name, (p, pins, psc) in programs.items():
        kind = next((v for k, v in role.items() if name.startswith(f"mhc_pre_{k}")), "other")
        first = tiling_mod.choose(p, bind_sizes(p, pins, psc))
        cands[name] = [first] + [t for t in extra.get(kind, []) if t != first]
        report["points"][name] = []
    # round robin over the programs (every program's i-th candidate before any (i+1)-th), so the budget
    # cuts the tail of every sweep rather than the last programs'
    for i in range(max(len(c) for c in cands.values())):
        for name, (p, pins, psc) in programs.items():
            if i >= len(cands[name]):
                continue
            tl_, pts = cands[name][i], report["points"][name]
            if time.time() - t0 > args.budget_s and pts:
                pts.append({"tiling": dataclasses.asdict(tl_), "skipped": "budget"})
                continue
            try:
                got = run_program(p, pins, psc, tl_)
                base_out.setdefault(name, got)
                err = max(G.rel_err(got[k], v) for k, v in base_out[name].items())
                ms = G.graph_ms(lambda: run_program(p, pins, psc, tl_))
                pt = {"tiling": dataclasses.asdict(tl_), "us": ms * 1e3, "rel_err_vs_first": err,
                      "predicted_us": tiling_mod.predict(p, bind_sizes(p, pins, psc), tl_).time_us}
            except Exception as e:  # noqa: BLE001 - a candidate that fails to compile is recorded
                pt = {"tiling": dataclasses.asdict(tl_), "error": f"{type(e).__name__}: {e}"[:300]}
            pts.append(pt)
            print(json.dumps({"program": name, **pt}), flush=True)
    for name, pts in report["points"].items():
        ok = [q for q in pts if "us" in q and q["rel_err_vs_first"] <= 1e-2]
        if ok:
            report["best"][name] = min(ok, key=lambda q: q["us"])
            # the calibration's measured_tilings key, so a sweep's best pastes into calibration_h200.json
            report["best"][name]["measured_key"] = tiling_mod.measured_key(programs[name][0], bind_sizes(*programs[name]))
            chosen[name] = Tiling(**report["best"][name]["tiling"])
    # the backward's dx + dfn host step (one read of x), per launch configuration
    from trex.codegen_triton.mhc_dx_dfn import mhc_dx_dfn_triton
    bc_name = next(k for k in programs if k.startswith("mhc_pre_bwd_coeff_streams"))
    p, pins, psc = programs[bc_name]
    co = run_program(p, pins, psc, chosen.get(bc_name))
    step = (x.reshape(T, n * d), dli, fn, co["dh"].reshape(T, -1), co["dss2"], co["pre_mix"])
    want = Executor(None).mhc_pre_dx_dfn(*step)      # the torch reference of the host step
    pts = []
    # run 12: (64, 4 warps, 3 stages) 1.48 ms, (32, 4, 3) 2.07, (64, 8, 3) 2.79, (16, 4, 4) 2.98, (32, 8, 4) 3.74
    # session 14: pipe=True is the counted tl.range row loop (software-pipelined), False the while loop
    for bt, w, st, bk, pipe in ((64, 4, 3, 128, False), (64, 4, 3, 128, True), (64, 4, 4, 128, True),
                                (128, 8, 3, 128, True), (128, 4, 3, 64, True), (32, 4, 4, 128, True),
                                (64, 8, 3, 128, True), (128, 8, 2, 128, True), (64, 4, 2, 64, True)):
        try:
            got = mhc_dx_dfn_triton(*step, block_t=bt, num_warps=w, num_stages=st, block_k_max=bk, pipeline=pipe)
            pt = {"block_t": bt, "num_warps": w, "num_stages": st, "block_k": bk, "pipeline": pipe,
                  "us": G.graph_ms(lambda: mhc_dx_dfn_triton(*step, block_t=bt, num_warps=w, num_stages=st,
                                                             block_k_max=bk, pipeline=pipe)) * 1e3,
                  "rel_err_vs_torch": [G.rel_err(a, b_) for a, b_ in zip(got, want)]}
        except Exception as e:  # noqa: BLE001 - recorded
            pt = {"block_t": bt, "num_warps": w, "num_stages": st, "block_k": bk, "pipeline": pipe,
                  "error": f"{type(e).__name__}: {e}"[:300]}
        pts.append(pt)
        print(json.dumps({"program": "mhc_dx_dfn", **pt}), flush=True)
    report["points"]["mhc_dx_dfn"] = pts
    # the projection layout's reduce pass (the mhc_pre_proj host step), forward (no dli) and backward, per launch
    from trex.codegen_triton import target as cuda_target
    from trex.codegen_triton.mhc_proj import mhc_proj_triton
    x2, fn2 = x.reshape(T, n * d), fn.float().reshape(m, n * d)
    for with_dli in (False, True):
        dl = dli if with_dli else None
        want = Executor(None).mhc_pre_proj(x2, fn2, n, dl)
        pts, label = [], "mhc_proj_bwd" if with_dli else "mhc_proj"
        for bt, bk, w, st, sl in _proj_launches(d):
            kw = dict(block_t=bt, block_k=bk, num_warps=w, num_stages=st, slices=sl)
            try:
                got = mhc_proj_triton(x2, fn2, n, dl, **kw)
                # the partial sums added: h [T, M], ss [T], d(pre) [T, n]
                errs = [G.rel_err(got[0].sum(1), want[0].sum(1)), G.rel_err(got[1].sum(1), want[1].sum(1))]
                if with_dli:
                    errs.append(G.rel_err(got[2].sum(-1), want[2].sum(-1)))
                pt = dict(kw, parts=got[1].shape[1], us=G.graph_ms(lambda: mhc_proj_triton(x2, fn2, n, dl, **kw)) * 1e3,
                          rel_err_vs_torch=errs)
            except Exception as e:  # noqa: BLE001 - recorded
                pt = dict(kw, error=f"{type(e).__name__}: {e}"[:300])
            pts.append(pt)
            print(json.dumps({"program": label, **pt}), flush=True)
        report["points"][label] = pts
        ok = [q for q in pts if "us" in q and max(q["rel_err_vs_torch"]) <= 1e-3]
        if ok:
            best = min(ok, key=lambda q: q["us"])
            report["best"][label] = {"us": best["us"], "tiling": {k: best[k] for k in
                                                                  ("block_t", "block_k", "num_warps", "num_stages", "slices")}}
            cuda_target._PROJ_LAUNCH[with_dli] = dict(report["best"][label]["tiling"])
    # end to end through each layout's runner with the best tilings, against the op's fp64 reference
    ex = TritonExecutor(lambda p, i, s, out=None: launch(p, i, s, out))
    e2e = {}
    for lay in layouts:
        e2e[lay] = {}
        for op, a in calls.items():
            ref = registry.fused_ops()[op].reference(*(v.double() if torch.is_tensor(v) else v for v in a))
            got = specs[op].run(a, ex, lay)
            e2e[lay][op] = {"us": G.graph_ms(lambda: specs[op].run(a, ex, lay)) * 1e3,
                            "rel_err": [G.rel_err(o, r) for o, r in zip(got, ref)]}
        print(json.dumps({"e2e": lay, **e2e[lay]}), flush=True)
    report["e2e"] = e2e
    report["elapsed_s"] = time.time() - t0
    out = os.environ.get("OUT")
    if out:
        path = os.path.join(out, f"h17_mhc_kernels_{T}x{d}.json")
        with open(path + ".tmp", "w") as f:
            json.dump(report, f, indent=1)
        os.replace(path + ".tmp", path)
    for k, v in report["best"].items():
        print(f"best {k:34s} {v['us']:8.1f} us  {v['tiling']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
