"""``python -m trex.training.model CONFIG``: parameter counts and FLOPs per token of a config, and with
``--steps N`` a short synthetic training run (random tokens) reporting tokens/s, MFU and memory.

Example: ``python -m trex.training.model small --seq-len 2048 --batch 4 --steps 10 --device cuda``.
"""
from __future__ import annotations

import argparse
import json
import time

import torch

from .. import mfu as mfu_lib
from . import Transformer, count_parameters, flops_per_token, get_config, lm_loss
from .args import CONFIGS

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m trex.training.model", description=__doc__.splitlines()[0])
    parser.add_argument("config", choices=sorted(CONFIGS))
    parser.add_argument("--seq-len", type=int, default=4096)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--steps", type=int, default=0, help="synthetic training steps to time (0: counts only)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16", help="parameter dtype of the run")
    parser.add_argument("--activation-checkpointing", action="store_true")
    parser.add_argument("--moe-dispatch", choices=("sparse", "dense"), default=None)
    parser.add_argument("--compile", choices=("none", "inductor", "trex"), default="none")
    opts = parser.parse_args(argv)

    overrides = {"max_seq_len": max(opts.seq_len, 1), "activation_checkpointing": opts.activation_checkpointing}
    if opts.moe_dispatch:
        overrides["moe_dispatch"] = opts.moe_dispatch
    args = get_config(opts.config, **overrides)
    counts = count_parameters(args)
    report = {
        "config": opts.config, "total_params": counts.total, "activated_params": counts.activated,
        "total_params_with_mtp": counts.total_with_mtp, "activated_params_with_mtp": counts.activated_with_mtp,
        "seq_len": opts.seq_len, "flops_per_token": flops_per_token(args, opts.seq_len),
    }
    if opts.steps > 0:
        report.update(_time_training(args, opts))
    print(json.dumps(report, indent=2))
    return report


def _time_training(args, opts) -> dict:
    device = torch.device(opts.device)
    torch.manual_seed(0)
    model = Transformer(args).to(device=device, dtype=DTYPES[opts.dtype])
    step_fn = model
    if opts.compile == "trex":
        import trex.compiler.backend  # noqa: F401  (registers the backend)
        step_fn = torch.compile(model, backend="trex")
    elif opts.compile == "inductor":
        step_fn = torch.compile(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, args.vocab_size, (opts.batch, opts.seq_len + 1), device=device)
    inputs, labels = tokens[:, :-1], tokens[:, 1:]
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times, losses = [], []
    for _ in range(opts.steps):
        sync()
        start = time.perf_counter()
        logits, mtp = step_fn(inputs)
        loss, _ = lm_loss(logits, mtp, labels)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        sync()
        times.append(time.perf_counter() - start)
        losses.append(loss.item())
    steady = times[1:] or times                      # the first step includes warm-up / compilation
    tokens_per_s = opts.batch * opts.seq_len / (sum(steady) / len(steady))
    result = {"step_seconds": [round(t, 4) for t in times], "losses": [round(v, 4) for v in losses],
              "tokens_per_s": tokens_per_s}
    device_key = mfu_lib.detect_device() if device.type != "cpu" else None
    if device_key:
        result["mfu"] = mfu_lib.mfu(flops_per_token(args, opts.seq_len), tokens_per_s, 1, device=device_key)
    if device.type == "cuda":
        result["peak_memory_gib"] = torch.cuda.max_memory_allocated(device) / 2 ** 30
    return result


if __name__ == "__main__":
    main()
