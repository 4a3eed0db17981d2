"""One training step (forward, backward, fused AdamW) of transformers' DeepseekV4ForCausalLM on one GPU,
per compile mode, in ONE run: tokens/s, MFU, first-step (compile) time cold and warm, fused-op counts per
family, kernel launches and device-busy share per step, peak memory, loss.

    PYTHONUNBUFFERED=1 LAYERS=2 EXPERTS=grouped_mm python3 bench/e2e_hf.py --out $OUT eager inductor trex

Modes: eager; inductor (torch.compile default); inductor_ro (mode="reduce-overhead": CUDA graphs);
trex_aten (backend="trex", options={"rest": "aten"}: trex's fusions, everything else op by op from
Python, the old default); trex (backend="trex": trex's fusions, Inductor for the rest, the printed Triton
kernels inlined into Inductor's graph); trex_ro (the same with mode="reduce-overhead"). A mode named
with a "+warm" suffix (e.g. trex+warm) compiles again after torch._dynamo.reset() in the same process:
its first step is the warm one (Inductor's FX-graph and autotune caches hit).

REGIONAL=1 compiles every mode with trex.compiler.regional.compile (the same keywords as the mode's
torch.compile): each decoder layer's forward is compiled on its own, so one graph per layer variant
(V4: the hash-routed first layer, the compressed-sparse and the heavily-compressed layers) is traced,
fused and compiled whatever the layer count, and the modules beside the layers (embedding, rotary
tables, final norms, head) are compiled one by one; the glue (layer loop, mask, loss) runs eagerly.
Inductor modes get the same regions as trex's, so the comparison stays fair; rows say "regional".

--cache-dir DIR points Inductor's, Triton's and trex's on-disk caches (TORCHINDUCTOR_CACHE_DIR,
TRITON_CACHE_DIR, TREX_TRITON_CACHE, TREX_CACHE_DIR) under DIR, for one mode per process: the row says
"caches": "cold" when DIR was empty at the start, "warm" when a previous process filled it (a user's
second run: nothing in memory, everything on disk). Run the same command twice for cold then warm.
The step passes use_cache=False (a training step needs no KV cache; with one, each layer's cache
slot is read by the layer's code, so regional compilation would trace every layer again).

Model: the config of ../shared/anchors/e2e_hf_v4.py (hidden 1024, 16 experts top-2, B=4, T=2048, bf16)
so the numbers compare with the issue's. Env: LAYERS (2), EXPERTS (e.g. grouped_mm), B (4), T (2048),
PEAK_TFLOPS (989, the H200's dense bf16 datasheet rate). FLOPs per token: 6 x activated parameters
(embedding excluded) + the attention term over the sliding window, as the anchor counts them.
Each mode runs in a process of its own with empty on-disk caches (--same-process: all modes in this one,
caches as found, the order charging the first mode with the process's one-time costs: CUDA and cuBLAS
initialisation, Inductor's imports, its compile pool's start). FIRST_STEP_PROFILE=1 writes a cProfile of
each mode's first step beside the JSON (first_step_<mode>.txt: the top functions by cumulative and own time).
Needs a transformers with DeepSeek-V4 (>= 5.18). Writes <out>/e2e_hf.json after every mode.
"""
from __future__ import annotations

import argparse
import collections
import cProfile
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import torch

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

PEAK = float(os.environ.get("PEAK_TFLOPS", "989")) * 1e12
B, T = int(os.environ.get("B", 4)), int(os.environ.get("T", 2048))
DEVICE = "cuda"          # --dry-run: "cpu"
MODES = ("eager", "inductor", "inductor_ro", "trex_aten", "trex", "trex_ro")


def config():
    from transformers import DeepseekV4Config
    L = int(os.environ.get("LAYERS", 2))
    return DeepseekV4Config(
        vocab_size=32000, hidden_size=1024, moe_intermediate_size=512, num_hidden_layers=L,
        num_attention_heads=8, num_key_value_heads=1, head_dim=128, q_lora_rank=512,
        num_experts_per_tok=2, n_routed_experts=16, n_shared_experts=1,
        layer_types=(["sliding_attention"] + ["compressed_sparse_attention", "heavily_compressed_attention"] * L)[:L],
        mlp_layer_types=["hash_moe"] + ["moe"] * (L - 1),
        compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 128},
        sliding_window=128, o_groups=2, o_lora_rank=256, index_n_heads=8, index_head_dim=64, index_topk=128,
        num_nextn_predict_layers=0, partial_rotary_factor=0.5, max_position_embeddings=8192,
        **({"experts_implementation": os.environ["EXPERTS"]} if os.environ.get("EXPERTS") else {}),
    )


def active_params(model, cfg) -> tuple[int, float]:
    total = sum(p.numel() for p in model.parameters())
    expert = sum(p.numel() for n, p in model.named_parameters()
                 if ".experts." in n or "experts.gate_up" in n or "experts.down" in n)
    act = total - expert + expert * cfg.num_experts_per_tok / cfg.n_routed_experts
    return total, act - model.get_input_embeddings().weight.numel()


# torch.compile keywords per mode (also trex.compiler.regional.compile's, under REGIONAL=1)
COMPILE = {
    "eager": None,
    "inductor": {},
    "inductor_ro": {"mode": "reduce-overhead"},
    "trex_aten": {"backend": "trex", "options": {"rest": "aten"}},
    "trex": {"backend": "trex"},
    "trex_ro": {"backend": "trex", "mode": "reduce-overhead"},
}
CACHE_ENV = {"TORCHINDUCTOR_CACHE_DIR": "inductor", "TRITON_CACHE_DIR": "triton", "TREX_TRITON_CACHE": "trex_triton",
             "TREX_CACHE_DIR": "trex"}


def regional() -> bool:
    return os.environ.get("REGIONAL") == "1"


def compile_model(model, base: str):
    """``model`` compiled as mode ``base`` says: whole (torch.compile) or region by region (REGIONAL=1)."""
    kwargs = COMPILE[base]
    if kwargs is None:
        return model
    if regional():
        from trex.compiler import regional as regional_compile
        return regional_compile.compile(model, **kwargs)
    return torch.compile(model, **kwargs)


def use_cache_dir(path: str) -> str:
    """Point the on-disk compile caches under ``path``; "cold" when it held nothing yet, else "warm"."""
    state = "warm" if os.path.isdir(path) and any(os.scandir(path)) else "cold"
    for var, sub in CACHE_ENV.items():
        os.environ[var] = os.path.join(path, sub)
        os.makedirs(os.environ[var], exist_ok=True)
    return state


def profile_step(step) -> dict:
    """Launches, summed kernel time, wall time and device-busy share of one step (the anchor's method);
    the launches of trex's printed kernels, and the torch.ops.trex.* calls dispatched from Python
    (none where Inductor inlines the kernels)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) * 1e3
    kernels = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA and e.device_time > 0]
    dev = sum(e.device_time for e in kernels) / 1e3
    from trex.codegen_triton import kernel_report
    printed = {name.removesuffix("_interpret") for name in kernel_report()}   # the printed kernels' names
    host_trex = collections.Counter(e.name for e in prof.events() if e.name.startswith("trex::"))
    per_name = collections.defaultdict(lambda: [0, 0.0])
    per_family = collections.defaultdict(lambda: [0, 0.0])
    for e in kernels:
        per_name[e.name][0] += 1
        per_name[e.name][1] += e.device_time / 1e3
        fam = kernel_family(e.name, printed)
        per_family[fam][0] += 1
        per_family[fam][1] += e.device_time / 1e3
    top = sorted(per_name.items(), key=lambda kv: -kv[1][1])[:60]
    return {"launches": len(kernels), "kernel_ms": dev, "profiled_wall_ms": wall, "busy": dev / wall,
            "trex_op_dispatches": dict(host_trex),
            "trex_kernel_launches": sum(1 for e in kernels if e.name in printed),
            "per_family": {k: {"launches": n, "ms": ms} for k, (n, ms) in sorted(per_family.items())},
            "top_kernels": [{"name": k[:160], "launches": n, "ms": ms} for k, (n, ms) in top]}


# Kernel families of one step, first match wins: trex's printed kernels, Inductor's generated Triton,
# GEMMs (cuBLAS/CUTLASS/nvjet and grouped_mm), attention, and the ATen rest.
KERNEL_FAMILIES = (
    ("gemm", re.compile(r"nvjet|gemm|cutlass|sm90_|sm80_|cublas|grouped_mm|matmul", re.I)),
    ("attention", re.compile(r"flash|fmha|attention|sdpa", re.I)),
    ("inductor_triton", re.compile(r"^triton_")),
    ("optimizer", re.compile(r"adam|multi_tensor|foreach", re.I)),
    ("copy_cast", re.compile(r"copy|cast|cat|index|gather|scatter|fill", re.I)),
    ("reduce", re.compile(r"reduce|sum|softmax|norm", re.I)),
)


TREX_NAMES = re.compile(r"^(trex_|rms_norm|add_rms_norm|swiglu|rope|mhc|rows_matmul)")


def kernel_family(name: str, printed: set) -> str:
    if name in printed or TREX_NAMES.match(name):
        return "trex_printed"
    return next((fam for fam, pat in KERNEL_FAMILIES if pat.search(name)), "aten_other")


def compile_phases() -> dict:
    """Seconds spent so far per compile phase Dynamo times (``dynamo_timed``: Dynamo's trace, AOTAutograd,
    Inductor's lowering, code generation, async kernel compiles...), summed over calls; the first step's
    share is the difference across it. Phases nest, so they do not add up to the step."""
    metrics = getattr(torch._dynamo.utils, "compilation_time_metrics", {})
    return {k: float(sum(v)) for k, v in metrics.items()}


LOSS_RTOL = 0.01   # a mode's final loss against the first mode's (main: every mode, same seed and steps)


def declared_writes() -> int:
    """How many times torch's "which arguments does this launch write" was answered from trex's
    declaration (trex/codegen_triton/writes.py) instead of a TTIR analysis, so far in this process."""
    from trex.codegen_triton import writes
    return writes.counters["declared"]


def run(mode: str, caches: str) -> dict:
    from transformers import DeepseekV4ForCausalLM

    from trex.compiler import logs

    base = mode.split("+")[0]
    torch.manual_seed(0)
    cfg = config()
    model = DeepseekV4ForCausalLM(cfg).to(DEVICE, torch.bfloat16)
    total, act = active_params(model, cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=DEVICE == "cuda")
    if mode.endswith("+warm"):
        torch._dynamo.reset()
    fwd = compile_model(model, base)
    ids = torch.randint(0, cfg.vocab_size, (B, T), device=DEVICE)
    graphs = base.endswith("_ro")

    def step():
        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        out = fwd(input_ids=ids, labels=ids, use_cache=False)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        return out.loss.detach()

    sync = torch.cuda.synchronize if DEVICE == "cuda" else (lambda: None)
    if DEVICE == "cuda":
        torch.cuda.reset_peak_memory_stats()
    phases_before = compile_phases()
    profiler = cProfile.Profile() if os.environ.get("FIRST_STEP_PROFILE") == "1" else None
    with logs.capture() as reports:
        t0 = time.perf_counter()
        if profiler:
            profiler.enable()
        step()
        sync()
        if profiler:
            profiler.disable()
        first = time.perf_counter() - t0
    if profiler:
        write_profile(profiler, os.path.join(PROFILE_DIR or ".", f"first_step_{mode}.txt"), first)
    phases = {k: round(v - phases_before.get(k, 0.0), 3) for k, v in compile_phases().items()
              if v - phases_before.get(k, 0.0) >= 0.05}
    for _ in range(3 if DEVICE == "cuda" else 0):
        step()
    sync()
    n = 10 if DEVICE == "cuda" else 1
    t0 = time.perf_counter()
    for _ in range(n):
        loss = step()
    sync()
    dt = (time.perf_counter() - t0) / n
    tok_s = B * T / dt
    flops_tok = 6 * act + 6 * 2 * cfg.num_attention_heads * cfg.head_dim * 2 * min(T, cfg.sliding_window) \
        * cfg.num_hidden_layers
    fused = collections.Counter()
    fallbacks = []
    for r in reports:
        fused.update(r.match_counts())
        fallbacks += r.fallbacks
    stats = torch._dynamo.utils.counters
    row = {"mode": mode, "layers": cfg.num_hidden_layers, "regional": regional(), "experts": os.environ.get("EXPERTS", "default"),
           "caches": caches, "first_step_s": first, "dynamo_graphs": stats["stats"]["unique_graphs"],
           "cache_counters": {f"{group}.{k}": v for group in ("aot_autograd", "inductor")
                              for k, v in stats[group].items() if "cache" in k}, "step_ms": dt * 1e3, "tokens_per_s": tok_s, "mfu": flops_tok * tok_s / PEAK,
           "flops_per_token": flops_tok, "params_total": total, "params_active": act, "loss": float(loss),
           "peak_mem_gb": torch.cuda.max_memory_allocated() / 2 ** 30 if DEVICE == "cuda" else None,
           "graphs": len(reports),
           "fused_per_family": dict(fused), "fallbacks": fallbacks[:10],
           "trex_seconds": [r.seconds for r in reports][:4],
           "first_step_phases_s": phases, "declared_kernel_writes": declared_writes()}
    if DEVICE == "cuda":
        row.update(profile_step(step))
        torch.cuda.empty_cache()
    return row


PROFILE_DIR = None   # main() sets it to --out


def write_profile(profiler, path: str, first_s: float) -> None:
    """The first step's cProfile as text: top 70 by cumulative time, top 50 by own time, then trex's own
    functions by cumulative time (cProfile slows Python ~1.5x, so read the shares, not the seconds); the
    raw profile beside it (<name>.prof, for pstats' callers and callees)."""
    import io
    import pstats
    buf = io.StringIO()
    buf.write(f"first step {first_s:.2f} s under cProfile\n")
    stats = pstats.Stats(profiler, stream=buf)
    stats.sort_stats("cumulative").print_stats(70)
    stats.sort_stats("tottime").print_stats(50)
    stats.sort_stats("cumulative").print_stats(r"/trex/", 60)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    profiler.dump_stats(os.path.splitext(path)[0] + ".prof")
    with open(path, "w") as f:
        f.write(buf.getvalue())


def run_in_own_process(mode: str, out: str, extra_args: list) -> dict:
    """One mode in a fresh Python process with empty on-disk compile caches: a user's cold first run."""
    with tempfile.TemporaryDirectory(prefix=f"e2e_{mode}_") as tmp:
        row_path = os.path.join(tmp, "row.json")
        cmd = [sys.executable, os.path.abspath(__file__), mode, "--out", out, "--cache-dir",
               os.path.join(tmp, "caches"), "--row-json", row_path, *extra_args]
        proc = subprocess.run(cmd)
        if proc.returncode != 0 or not os.path.isfile(row_path):
            return {"mode": mode, "error": f"the mode's process exited with {proc.returncode} (its log is above)"}
        with open(row_path) as f:
            row = json.load(f)
    row["process"] = "own"
    return row


def git_commit() -> str:
    if os.environ.get("TREX_COMMIT"):
        return os.environ["TREX_COMMIT"]
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True,
                              timeout=10).stdout.strip() or "unknown"
    except Exception:  # noqa: BLE001 - the device copy may carry no .git
        return "unknown"


def atomic_write_json(path: str, obj) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def main(argv=None):
    p = argparse.ArgumentParser(description="transformers' DeepSeek-V4 training step per compile mode")
    p.add_argument("modes", nargs="*", default=["eager", "inductor", "trex"],
                   help=f"modes, in order: {', '.join(MODES)} (a '+warm' suffix: compile again, caches warm)")
    p.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    p.add_argument("--cache-dir", help="on-disk compile caches under this folder (one mode per process: "
                                       "empty folder = cold first step, a previous run's = warm)")
    p.add_argument("--same-process", action="store_true",
                   help="run every mode in this process (caches as found; the first mode pays the process's "
                        "one-time costs) instead of one fresh process per mode with empty caches")
    p.add_argument("--row-json", help=argparse.SUPPRESS)   # a child of run_in_own_process: write its row here
    p.add_argument("--dry-run", action="store_true",
                   help="on the CPU, one step per mode (set B, T and LAYERS small): checks the script, measures nothing")
    args = p.parse_args(argv)
    bad = [m for m in args.modes if m.split("+")[0] not in MODES or m.count("+") > 1
           or ("+" in m and not m.endswith("+warm"))]
    if bad:
        p.error(f"unknown mode(s) {bad}; choose from {list(MODES)}, optionally with the suffix '+warm'")
    global PROFILE_DIR
    PROFILE_DIR = args.out
    if args.cache_dir and len(args.modes) != 1:
        p.error(f"--cache-dir measures one mode per process (cold, then warm in a second process); got "
                f"{len(args.modes)} modes: run one mode per command")
    caches = use_cache_dir(args.cache_dir) if args.cache_dir else "unmanaged"
    global DEVICE
    if args.dry_run:
        DEVICE = "cpu"
    elif not torch.cuda.is_available():
        sys.exit("bench/e2e_hf.py needs a CUDA GPU (torch.cuda.is_available() is False)")
    try:
        from transformers import DeepseekV4Config  # noqa: F401
    except ImportError as err:
        sys.exit(f"bench/e2e_hf.py needs transformers with DeepSeek-V4 (>= 5.18): {err}")
    import trex.compiler.backend  # noqa: F401 - registers backend="trex" in-process
    import transformers

    result = {"commit": git_commit(), "torch": torch.__version__, "transformers": transformers.__version__,
              "device": torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (--dry-run)", "B": B, "T": T, "peak_tflops": PEAK / 1e12,
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"), "rows": []}
    path = os.path.join(args.out, f"e2e_hf_L{os.environ.get('LAYERS', 2)}_{os.environ.get('EXPERTS', 'loop')}"
                                  f"{'_regional' if regional() else ''}"
                                  f"{f'_{args.modes[0]}_{caches}' if args.cache_dir else ''}.json")
    if args.row_json:
        try:
            row = run(args.modes[0], caches)
        except Exception as err:  # noqa: BLE001 - reported to the parent as the mode's error
            import traceback
            traceback.print_exc()
            row = {"mode": args.modes[0], "error": f"{type(err).__name__}: {err}"[:600]}
        atomic_write_json(args.row_json, row)
        return
    # a "+warm" mode recompiles in the process that compiled it once: it needs the shared process
    own_process = not args.same_process and not args.cache_dir and not any("+" in m for m in args.modes)
    for mode in args.modes:
        if own_process:
            row = run_in_own_process(mode, args.out, ["--dry-run"] if args.dry_run else [])
        else:
            try:
                row = run(mode, caches)
            except Exception as err:  # noqa: BLE001 - one broken mode must not lose the others' numbers
                import traceback
                traceback.print_exc()
                row = {"mode": mode, "error": f"{type(err).__name__}: {err}"[:600]}
            row["process"] = "shared" if len(args.modes) > 1 else "own"
        first_ok = next((r for r in result["rows"] if "loss" in r), None)
        if "loss" in row and first_ok is not None:
            # every mode trains the same model from the same seed for the same steps: a loss that drifts
            # from the first mode's is a wrong compiled program, whatever its speed (bf16 runs agree to ~0.1%)
            row["loss_ok"] = abs(row["loss"] - first_ok["loss"]) <= LOSS_RTOL * abs(first_ok["loss"])
            if not row["loss_ok"]:
                print(f"bench/e2e_hf.py: WRONG RESULT: {mode}'s loss {row['loss']:.4f} differs from "
                      f"{first_ok['mode']}'s {first_ok['loss']:.4f} by more than {LOSS_RTOL:.0%}", flush=True)
        result["rows"].append(row)
        print(json.dumps(row), flush=True)
        atomic_write_json(path, result)
    print(f"\n{'mode':14s} {'ms/step':>8s} {'tok/s':>9s} {'MFU':>6s} {'first s':>8s} {'caches':>9s} {'regions':>8s} "
          f"{'graphs':>6s} {'launch':>7s} {'busy':>5s} {'loss':>7s}  fused")
    for r in result["rows"]:
        if "error" in r:
            print(f"{r['mode']:14s} error: {r['error'][:100]}")
            continue
        print(f"{r['mode']:14s} {r['step_ms']:8.2f} {r['tokens_per_s']:9.0f} {100 * r['mfu']:5.1f}% "
              f"{r['first_step_s']:8.1f} {r['caches']:>9s} {'regional' if r['regional'] else 'whole':>8s} "
              f"{r['dynamo_graphs']:6d} {r.get('launches', 0):7d} {100 * r.get('busy', 0):4.0f}% "
              f"{r['loss']:7.4f}{'' if r.get('loss_ok', True) else ' WRONG'}  {r['fused_per_family']}")


if __name__ == "__main__":
    main()
