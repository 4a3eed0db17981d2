"""First-step (compile) time of transformers' tiny DeepseekV4ForCausalLM on the host CPU, cold and warm,
whole-model vs regional compilation, trex vs Inductor, split by phase.

Each measurement runs in a fresh process (so "warm" means what a user's second run sees: the on-disk
caches of the first process, nothing in memory). Caches: TORCHINDUCTOR_CACHE_DIR (Inductor's FX graph,
AOTAutograd and C++ kernel caches), TREX_CACHE_DIR and TREX_TRITON_CACHE (trex's own), TRITON_CACHE_DIR,
all under one directory per (backend, layers, compile) that starts empty: run 1 is cold, run 2 warm.
Inductor compiles in-process (TORCHINDUCTOR_COMPILE_THREADS=1), so ``first_step_cpu_s`` (CPU seconds of
the process and its reaped children, i.e. g++) counts all compile work; on a loaded machine it is the
steadier number, ``first_step_s`` the wall time.

    python bench/compile_regional.py --layers 1,2,4 --backends trex,inductor --compile whole,regional \
        --out bench/results/compile_regional_cpu.json

Phases (seconds, from torch._dynamo.utils.compilation_time_metrics and trex's GraphReport.seconds):
dynamo = Dynamo's bytecode tracing (everything under _compile.compile_inner minus the backend call);
backend = the backend call; trex_fusion = trex's re-trace + canonicalisation + patterns (inside backend);
aot = AOTAutograd (joint graph, partition); inductor = Inductor's lowering + codegen + C++ compile
(compile_fx's fw/bw compilers). ``backend_calls`` counts the graphs the backend compiled.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)


def _tiny_v4(layers: int):
    sys.path.insert(0, os.path.join(REPO_ROOT, "bench"))
    from compile_time import _transformers_v4   # the tiny config of tests/compiler/test_hf_deepseek_v4.py

    model, step = _transformers_v4(layers, __import__("torch").float32, 2, 8)
    model.config.use_cache = False      # a training step: no KV cache (each layer's cache slot is its own guard)
    return model, step


def _metric(metrics: dict, *suffixes: str) -> float:
    return round(sum(sum(v) for k, v in metrics.items() if any(k.endswith(s) for s in suffixes)), 3)


# bench names that are a backend with options: trex with Inductor for the rest of the graph on the CPU
# (the GPU's default path; there the fused ops stay extern calls of their reference)
BACKEND_OPTIONS = {"trex_inductor": {"rest": "inductor"}}


def _cpu_seconds() -> float:
    """CPU time of this process and its reaped children (Inductor's C++ compiler runs): on a loaded
    machine a steadier measure of compile work than wall time."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def measure_one(backend: str, layers: int, how: str) -> dict:
    """One first step in this process (the caches are whatever the environment points at)."""
    import torch

    import trex.compiler.backend  # noqa: F401 - registers backend="trex"
    from trex.compiler import logs

    torch.manual_seed(0)
    model, step = _tiny_v4(layers)
    calls = []
    torch._dynamo.reset()

    def counting(gm, example_inputs, **kw):
        calls.append(len(gm.graph.nodes))
        return torch._dynamo.lookup_backend(backend.split("_")[0])(gm, example_inputs, **kw)

    options = BACKEND_OPTIONS.get(backend)
    kwargs = {"backend": counting, **({"options": options} if options else {})}
    if how == "regional":
        from trex.compiler import regional
        compiled = regional.compile(model, **kwargs)
    else:
        compiled = torch.compile(model, **kwargs)
    with logs.capture() as reports:
        start, cpu_start = time.perf_counter(), _cpu_seconds()
        step(compiled)
        first, first_cpu = time.perf_counter() - start, _cpu_seconds() - cpu_start
    start, cpu_start = time.perf_counter(), _cpu_seconds()
    step(compiled)
    steady, steady_cpu = time.perf_counter() - start, _cpu_seconds() - cpu_start
    metrics = dict(torch._dynamo.utils.compilation_time_metrics)
    compile_inner = _metric(metrics, "compile_inner")
    backend_s = _metric(metrics, "call_user_compiler")
    matches = {}
    for r in reports:
        for name, n in r.match_counts().items():
            matches[name] = matches.get(name, 0) + n
    return {
        "backend": backend, "layers": layers, "compile": how, "first_step_s": round(first, 3),
        "first_step_cpu_s": round(first_cpu, 3),
        "steady_step_s": round(steady, 4), "steady_step_cpu_s": round(steady_cpu, 3), "backend_calls": len(calls), "graph_nodes": calls,
        "phases_s": {"dynamo": round(compile_inner - backend_s, 3), "backend": backend_s,
                     "trex_fusion": round(sum(r.seconds.get("fusion", 0.0) for r in reports), 3),
                     "aot": _metric(metrics, "create_aot_dispatcher_function", "aot_module_simplified"),
                     "inductor": _metric(metrics, "fw_compiler_base", "bw_compiler",
                                         "compile_fx_inner")},
        "fused_sites": matches,
        "cache_counters": {f"{group}.{k}": v for group in ("aot_autograd", "inductor")
                           for k, v in torch._dynamo.utils.counters[group].items() if "cache" in k},
        "metrics_s": {k: round(sum(v), 3) for k, v in sorted(metrics.items()) if sum(v) > 0.05},
    }


def _child(backend: str, layers: int, how: str, cache: str) -> dict:
    env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=os.path.join(cache, "inductor"),
               TREX_CACHE_DIR=os.path.join(cache, "trex"), TREX_TRITON_CACHE=os.path.join(cache, "trex_triton"),
               TRITON_CACHE_DIR=os.path.join(cache, "triton"), TORCHINDUCTOR_COMPILE_THREADS="1")
    out = subprocess.run([sys.executable, __file__, "--child", backend, str(layers), how], env=env,
                         capture_output=True, text=True, cwd=REPO_ROOT)
    if out.returncode != 0:
        return {"backend": backend, "layers": layers, "compile": how, "error": out.stderr[-2000:]}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--layers", default="1,2,4")
    p.add_argument("--backends", default="trex,inductor")
    p.add_argument("--compile", default="whole,regional", help="whole, regional or both (comma list)")
    p.add_argument("--out", default=None, help="JSON file (written atomically after every row)")
    p.add_argument("--child", nargs=3, metavar=("BACKEND", "LAYERS", "COMPILE"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        backend, layers, how = args.child
        print(json.dumps(measure_one(backend, int(layers), how)), flush=True)
        return 0
    try:
        layer_counts = [int(x) for x in args.layers.split(",")]
    except ValueError:
        p.error(f"--layers must be a comma list of integers, got {args.layers!r}")
    hows = args.compile.split(",")
    if set(hows) - {"whole", "regional"}:
        p.error(f"--compile takes whole and/or regional, got {args.compile!r}")
    import torch

    import trex.compiler.backend  # noqa: F401 - registers backend="trex"
    backends = args.backends.split(",")
    known = set(torch._dynamo.list_backends(exclude_tags=())) | set(BACKEND_OPTIONS)
    if set(backends) - known:
        p.error(f"--backends names unknown backend(s) {sorted(set(backends) - known)}; known: {sorted(known)}")
    record = {"benchmark": "compile_regional", "torch": torch.__version__, "cpu_count": os.cpu_count(),
              "load_avg": os.getloadavg(), "rows": [],
              "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                                       cwd=REPO_ROOT).stdout.strip()}
    for backend in backends:
        for layers in layer_counts:
            for how in hows:
                with tempfile.TemporaryDirectory(prefix="trex-compile-regional-") as cache:
                    for temperature in ("cold", "warm"):
                        row = dict(_child(backend, layers, how, cache), caches=temperature)
                        record["rows"].append(row)
                        print(json.dumps({k: v for k, v in row.items() if k != "metrics_s"}), flush=True)
                        if args.out:
                            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(args.out)))
                            with os.fdopen(fd, "w") as f:
                                json.dump(record, f, indent=1)
                            os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
