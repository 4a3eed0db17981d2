"""Where one training step's copies come from: transformers' V4 (bench/e2e_hf.py's model and config), one
profiled step with Python stacks, the ops behind the step's copy kernels and DtoD memcpys, and the
source (with Inductor's "Original ATen" comments) of the step's largest Inductor kernels.

    LAYERS=2 EXPERTS=grouped_mm python3 bench/trace_step.py --out $OUT [--mode trex]

Run without CUDA graphs (mode trex, the default): inside a graph replay kernels have no launching op.
Writes $OUT/trace_step_<mode>.json; prints the copy table.
"""
from __future__ import annotations

import argparse
import collections
import glob
import json
import os
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_hf  # noqa: E402  (the model, config and compile modes measured there)

COPY = re.compile(r"copy|Memcpy|clone|_to_copy|contiguous|cat", re.I)


def ops_with_stacks(prof, limit: int = 40) -> list[dict]:
    rows = []
    for avg in prof.key_averages(group_by_stack_n=12):
        dev = getattr(avg, "self_device_time_total", 0.0)
        if dev <= 0:
            continue
        rows.append({"op": avg.key, "calls": avg.count, "self_device_ms": dev / 1e3,
                     "stack": [f for f in avg.stack if "torch/" not in f or "_inductor" in f][:8]})
    rows.sort(key=lambda r: -r["self_device_ms"])
    copies = [r for r in rows if COPY.search(r["op"])]
    return rows[:limit], copies[:limit]


def kernel_sources(names: list[str]) -> dict[str, str]:
    """The generated source of each named Inductor kernel, from the on-disk cache (its comment lines
    name the FX nodes and ATen ops it was fused from)."""
    root = os.environ.get("TORCHINDUCTOR_CACHE_DIR") or f"/tmp/torchinductor_{os.environ.get('USER', 'root')}"
    found = {}
    for path in glob.glob(os.path.join(root, "**", "*.py"), recursive=True):
        try:
            text = open(path, errors="replace").read()
        except OSError:
            continue
        for name in names:
            if name not in found and f"def {name}(" in text:
                start = text.find(f"def {name}(")
                head = text.rfind("@triton", 0, start)
                found[name] = text[max(0, head - 1500):start + 2500]
    return found


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.environ.get("OUT", "bench_out"))
    p.add_argument("--mode", default="trex", choices=[m for m in e2e_hf.MODES if not m.endswith("_ro")])
    a = p.parse_args(argv)
    from transformers import DeepseekV4ForCausalLM
    torch.manual_seed(0)
    cfg = e2e_hf.config()
    model = DeepseekV4ForCausalLM(cfg).to("cuda", torch.bfloat16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    fwd = e2e_hf.compile_model(model, a.mode)
    ids = torch.randint(0, cfg.vocab_size, (e2e_hf.B, e2e_hf.T), device="cuda")

    def step():
        out = fwd(input_ids=ids, labels=ids, use_cache=False)
        out.loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA],
                                with_stack=True, record_shapes=True) as prof:
        step()
        torch.cuda.synchronize()
    kernels = collections.defaultdict(lambda: [0, 0.0])
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA and e.device_time > 0:
            kernels[e.name][0] += 1
            kernels[e.name][1] += e.device_time / 1e3
    top_kernels = sorted(kernels.items(), key=lambda kv: -kv[1][1])[:40]
    top_ops, copy_ops = ops_with_stacks(prof)
    triton_top = [k for k, _ in top_kernels if k.startswith("triton_")][:8]
    result = {"mode": a.mode, "layers": cfg.num_hidden_layers, "commit": e2e_hf.git_commit(),
              "top_kernels": [{"name": k[:200], "launches": n, "ms": ms} for k, (n, ms) in top_kernels],
              "top_ops": top_ops, "copy_ops": copy_ops, "kernel_sources": kernel_sources(triton_top)}
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, f"trace_step_{a.mode}.json")
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    for r in copy_ops[:25]:
        print(f"{r['self_device_ms']:8.3f} ms {r['calls']:4d}x {r['op'][:70]}")
        for frame in r["stack"][:4]:
            print("        ", frame[:150])
    print("wrote", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
