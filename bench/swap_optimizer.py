"""SwapAdamW against on-device AdamW on one GPU (H200): memory saved, step-time overhead, overlap.

    python bench/swap_optimizer.py [--params-m 1500] [--tensor-m 50] [--chunk-mb 512] [--steps 10] [--out FILE]

For a synthetic set of fp32 parameters (like a model's weight matrices) with fixed random gradients:
* device memory held by optimizer state: AdamW's two fp32 moments per parameter vs SwapAdamW's two
  chunk-sized slots (the moments stay in pinned host memory);
* step time (median of --steps, CUDA-synchronised): torch AdamW foreach and fused, SwapAdamW;
* overlap: the copy-in, update and copy-out phases timed alone (SwapAdamW.phase_times) against the
  pipelined step: hidden = (sum - step) / (sum - max phase), 1.0 = everything but the longest
  phase hidden, 0 = serial;
* equivalence on the GPU: max |param difference| to torch AdamW after the same steps.
Prints a table and writes --out (default bench/results/swap_optimizer.json).
"""
from __future__ import annotations

import argparse
import gc
import time

import torch

from _train_common import median, print_table, require_cuda, write_results

from trex.training.optim import SwapAdamW  # noqa: E402  (_train_common puts the repo on sys.path)

HYPER = dict(lr=1e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)


def make_params(total_m: float, tensor_m: float, device) -> list[torch.nn.Parameter]:
    sizes, left = [], int(total_m * 1e6)
    while left > 0:
        n = min(int(tensor_m * 1e6), left)
        sizes.append(n)
        left -= n
    g = torch.Generator(device=device).manual_seed(0)
    params = []
    for n in sizes:
        p = torch.nn.Parameter(torch.randn(n, generator=g, device=device) * 0.02)
        p.grad = torch.randn(n, generator=g, device=device) * 1e-3
        params.append(p)
    return params


def time_steps(opt, steps: int) -> tuple[float, int]:
    """Median step seconds; device bytes the optimizer added (state and buffers) after its first step."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    opt.step()                               # allocates states / slots
    torch.cuda.synchronize()
    added = torch.cuda.memory_allocated() - before
    times = []
    for _ in range(steps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        opt.step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return median(times), added


def release(*objs) -> None:
    for o in objs:
        del o
    gc.collect()
    torch.cuda.empty_cache()


@torch.no_grad()
def equivalence(device, steps: int = 5) -> float:
    a = make_params(20, 4, device)
    b = [torch.nn.Parameter(p.detach().clone()) for p in a]
    for pa, pb in zip(a, b):
        pb.grad = pa.grad.clone()
    ref, swp = torch.optim.AdamW(a, **HYPER), SwapAdamW(b, chunk_bytes=16 << 20, **HYPER)
    for _ in range(steps):
        ref.step()
        swp.step()
    torch.cuda.synchronize()
    return max(float((pa - pb).abs().max()) for pa, pb in zip(a, b))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--params-m", type=float, default=1500, help="parameters, millions")
    ap.add_argument("--tensor-m", type=float, default=50, help="parameters per tensor, millions")
    ap.add_argument("--chunk-mb", type=float, default=512, help="SwapAdamW chunk (MB of state)")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--out", default=None, help="result JSON (default bench/results/swap_optimizer.json)")
    args = ap.parse_args()
    require_cuda("bench/swap_optimizer.py")
    device = torch.device("cuda")

    rows, results = [], {}
    for name, build in (("adamw_foreach", lambda ps: torch.optim.AdamW(ps, foreach=True, **HYPER)),
                        ("adamw_fused", lambda ps: torch.optim.AdamW(ps, fused=True, **HYPER)),
                        ("swap_adamw", lambda ps: SwapAdamW(ps, chunk_bytes=int(args.chunk_mb * 2**20), **HYPER))):
        params = make_params(args.params_m, args.tensor_m, device)
        opt = build(params)
        step_s, added = time_steps(opt, args.steps)
        entry = {"step_s": step_s, "device_state_bytes": added}
        if isinstance(opt, SwapAdamW):
            phases = opt.phase_times()
            serial, longest = sum(phases.values()), max(phases.values())
            entry.update(phases_s=phases, chunks=opt.num_chunks, host_state_bytes=opt.host_state_bytes(),
                         serial_s=serial,
                         overlap_hidden_fraction=max(0.0, min(1.0, (serial - step_s) / (serial - longest)))
                         if serial > longest else None,
                         speedup_vs_serial=serial / step_s)
        results[name] = entry
        release(opt, params)
    base = results["adamw_foreach"]
    swap = results["swap_adamw"]
    swap["overhead_vs_adamw_foreach"] = swap["step_s"] / base["step_s"]
    swap["overhead_vs_adamw_fused"] = swap["step_s"] / results["adamw_fused"]["step_s"]
    swap["device_bytes_saved_vs_adamw"] = base["device_state_bytes"] - swap["device_state_bytes"]
    swap["max_abs_param_diff_vs_adamw"] = equivalence(device)

    for name, e in results.items():
        rows.append([name, e["step_s"] * 1e3, e["device_state_bytes"] / 2**30,
                     e.get("overlap_hidden_fraction"), e.get("speedup_vs_serial")])
    print_table(f"optimizer step, {args.params_m:.0f}M fp32 params", 
                ["optimizer", "step ms", "device state GiB", "overlap hidden", "x vs serial"], rows)
    print(f"swap: phases {', '.join(f'{k} {v * 1e3:.1f} ms' for k, v in swap['phases_s'].items())}; "
          f"overhead x{swap['overhead_vs_adamw_foreach']:.2f} vs foreach; saved "
          f"{swap['device_bytes_saved_vs_adamw'] / 2**30:.2f} GiB; max |diff| vs AdamW "
          f"{swap['max_abs_param_diff_vs_adamw']:.2e}")
    path = write_results("swap_optimizer", {"args": vars(args), "results": results}, args.out)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
