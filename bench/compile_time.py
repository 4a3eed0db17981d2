"""Compile time of a stack of DeepSeek-V4-style blocks, or of transformers' tiny DeepseekV4ForCausalLM
(``--model transformers-v4``): trex vs default torch.compile (Inductor) or ``aot_eager`` (the same
Dynamo + AOTAutograd work without trex's matching and canonicalisation).

For each backend: a fresh process-level Dynamo cache, then the first training step (forward +
backward, where compilation happens) and the mean of a few further steps. The compile time reported
is first step minus steady step. Compiles are cold: Inductor's on-disk caches (FX graph cache, AOT
autograd cache, compiled C++ kernels) point at a fresh temporary directory unless --warm-cache.
Result: bench/results/compile_time.json (written atomically) with
the hardware, torch version and git commit.

    python bench/compile_time.py [--depth 2] [--dtype bf16] [--steps 3] [--out bench/results/compile_time.json]
    python bench/compile_time.py --model transformers-v4 --backends trex,trex-nomatch,aot_eager --out ...

``trex-nomatch`` is trex with no patterns (``options={"patterns": []}``): the same pipeline without
matching. For the trex backends the first step's time in matching and canonicalisation is timed
phase by phase (``matching_s``: canonicalising the model graph, the patterns including their one-time
chain tracing, restoring unfused originals) and reported against the compile time.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import torch

_DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=True,
                              cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _blocks(depth: int, dtype: torch.dtype, batch: int, seq: int):
    from trex.compiler.examples import Config, Stack, make_streams, rope_table

    cfg = Config()
    model = Stack(depth, cfg, dtype)
    x = make_streams(batch, seq, cfg, dtype).requires_grad_()
    freqs = rope_table(seq, cfg.rope_dim)

    def step(compiled):
        compiled.zero_grad(set_to_none=True)
        compiled(x, freqs).float().square().mean().backward()
    return model, step


def _transformers_v4(depth: int, dtype: torch.dtype, batch: int, seq: int):
    """The tiny config of tests/compiler/test_hf_deepseek_v4.py (sliding-attention layers)."""
    import transformers

    config = transformers.DeepseekV4Config(
        vocab_size=64, hidden_size=32, intermediate_size=24, moe_intermediate_size=24, num_hidden_layers=depth,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, qk_rope_head_dim=8, q_lora_rank=16,
        o_lora_rank=8, o_groups=2, num_local_experts=2, num_experts_per_tok=1, hc_mult=4, hc_sinkhorn_iters=3,
        layer_types=["sliding_attention"] * depth, mlp_layer_types=["moe"] * depth, sliding_window=16,
        max_position_embeddings=max(64, seq), swiglu_limit=7.0)
    config._attn_implementation = "eager"
    model = transformers.DeepseekV4ForCausalLM(config).to(dtype)
    ids = torch.randint(0, config.vocab_size, (batch, seq))

    def step(compiled):
        compiled.zero_grad(set_to_none=True)
        compiled(ids, labels=ids).loss.backward()
    return model, step


MODELS = {"blocks": _blocks, "transformers-v4": _transformers_v4}
# bench name -> (torch.compile backend, options)
BACKENDS = {"trex-nomatch": ("trex", {"patterns": []})}


class _PhaseTimer:
    """Seconds spent in named functions of trex.compiler.backend while active (wrapped in place)."""

    PHASES = {"canonicalize": "model graph canonicalisation", "run_patterns": "patterns incl. chain tracing",
              "restore_unfused": "restoring unfused originals"}

    def __init__(self):
        import trex.compiler.backend as backend
        self.backend, self.seconds, self.saved = backend, dict.fromkeys(self.PHASES, 0.0), {}

    def __enter__(self):
        for name in self.PHASES:
            original = self.saved[name] = getattr(self.backend, name)

            def timed(*args, _name=name, _original=original, **kwargs):
                start = time.perf_counter()
                try:
                    return _original(*args, **kwargs)
                finally:
                    self.seconds[_name] += time.perf_counter() - start
            setattr(self.backend, name, timed)
        return self

    def __exit__(self, *exc):
        for name, original in self.saved.items():
            setattr(self.backend, name, original)


def measure(backend: str, model_name: str, depth: int, dtype: torch.dtype, steps: int, batch: int,
            seq: int) -> dict:
    from trex.compiler import logs

    torch._dynamo.reset()
    torch.manual_seed(0)
    model, step = MODELS[model_name](depth, dtype, batch, seq)
    compile_backend, options = BACKENDS.get(backend, (backend, None))
    compiled = torch.compile(model, backend=compile_backend, options=options)
    with logs.capture() as reports, _PhaseTimer() as phases:
        start = time.perf_counter()
        step(compiled)
        first = time.perf_counter() - start
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        step(compiled)
        times.append(time.perf_counter() - start)
    steady = sum(times) / len(times)
    result = {"first_step_s": round(first, 3), "steady_step_s": round(steady, 4),
              "compile_s": round(first - steady, 3), "graphs": len(reports) if compile_backend == "trex" else None}
    if compile_backend == "trex":
        result["trex_fusion_s"] = round(sum(r.seconds.get("fusion", 0.0) for r in reports), 3)
        result["fused_chains"] = sum(len(r.matches) for r in reports)
        result["matching_phases_s"] = {k: round(v, 3) for k, v in phases.seconds.items()}
        result["matching_s"] = round(sum(phases.seconds.values()), 3)
        # what matching adds to the rest of the compile (the budget: at most 0.10)
        result["matching_added_fraction"] = round(
            result["matching_s"] / max(result["compile_s"] - result["matching_s"], 1e-9), 4)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="blocks")
    parser.add_argument("--depth", type=int, default=2, help="number of blocks (decoder layers)")
    parser.add_argument("--dtype", choices=sorted(_DTYPES), default="bf16")
    parser.add_argument("--steps", type=int, default=3, help="steady-state steps averaged")
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--seq", type=int, default=64)
    parser.add_argument("--backends", default="trex,inductor")
    parser.add_argument("--warm-cache", action="store_true", help="reuse Inductor's on-disk caches")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                                      "compile_time.json"))
    args = parser.parse_args(argv)

    cache_dir = None
    if not args.warm_cache:
        cache_dir = tempfile.mkdtemp(prefix="trex-bench-inductor-")
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = cache_dir   # read when Inductor first compiles
    import trex.compiler.backend  # noqa: F401 - registers backend="trex"

    dtype = _DTYPES[args.dtype]
    results = {}
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        print(f"compiling {args.depth} blocks with backend={backend} ...", file=sys.stderr, flush=True)
        results[backend] = measure(backend, args.model, args.depth, dtype, args.steps, args.batch, args.seq)
        print(f"  {backend}: {results[backend]}", file=sys.stderr, flush=True)
    record = {
        "benchmark": "compile_time",
        "model": (f"{args.depth} DeepSeek-V4-style blocks (trex/compiler/examples.py Stack)"
                  if args.model == "blocks" else f"transformers' DeepseekV4ForCausalLM, tiny, {args.depth} layers")
                 + f", batch {args.batch}, seq {args.seq}, {args.dtype}, training step (fwd+bwd)",
        "results": results,
        "inductor_caches": "warm (existing on-disk caches)" if args.warm_cache else "cold (fresh cache dir)",
        "hardware": {"cpu": _cpu_name(), "logical_cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
                     "platform": platform.platform(), "cuda": torch.cuda.is_available()},
        "torch": torch.__version__,
        "python": platform.python_version(),
        "commit": _commit(),
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(args.out), prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        json.dump(record, f, indent=2)
        f.write("\n")
    os.replace(tmp, args.out)
    if cache_dir is not None:
        shutil.rmtree(cache_dir, ignore_errors=True)
    print(json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
