"""Sink attention as transformers' DeepSeek-V4 spells it (eager_attention_forward: repeat_kv, QK^T * scale + mask,
cat the per-head sink logit, subtract the max, fp32 softmax, drop the sink, PV), against the same mathematics
as ONE scaled_dot_product_attention call over augmented keys, on the device: fp64 error and device / wall time
of each variant, forward and forward+backward, in one run.

The augmented form (value-preserving): a sink is a key every query sees with logit s_h and value 0. Give q two
extra channels holding s_h / scale split hi + lo in q's dtype, give each real key zeros there and one extra key
ones there (and zeros elsewhere, value 0), mask column 0 for it; pad the head dim to a multiple of 8 and the
key count to a multiple of 16 (padding keys masked -inf). SDPA then computes softmax over [scores, s_h]
exactly as the chain does, with the sink's probability mass going to a zero value.

  python bench/attn_sink_probe.py --out bench/results/attn_sink_probe.json
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))


def eager_chain(query, kv, mask, sinks, scaling):
    """transformers 5.18's eager_attention_forward with key = value = kv (one KV head)."""
    n_rep = query.shape[1]
    b, _, s, d = kv.shape
    k = kv[:, :, None, :, :].expand(b, 1, n_rep, s, d).reshape(b, n_rep, s, d)
    attn_weights = torch.matmul(query, k.transpose(2, 3)) * scaling
    attn_weights = attn_weights + mask
    sk = sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], -1)
    combined = torch.cat([attn_weights, sk], dim=-1)
    combined = combined - combined.max(dim=-1, keepdim=True).values
    probs = F.softmax(combined, dim=-1, dtype=combined.dtype)
    scores = probs[..., :-1].to(k.dtype)
    return torch.matmul(scores, k).transpose(1, 2).contiguous()


def sdpa_augmented(query, kv, mask, sinks, scaling, dp=None):
    b, h, t, d = query.shape
    s = kv.shape[2]
    dp = dp or (d + 2 + 7) // 8 * 8
    sp = (s + 1 + 15) // 16 * 16
    sink_q = (sinks.float() / scaling).reshape(1, h, 1, 1).expand(b, h, t, 1)
    hi = sink_q.to(query.dtype)
    lo = (sink_q - hi.float()).to(query.dtype)
    q2 = torch.cat([query, hi, lo, query.new_zeros(b, h, t, dp - d - 2)], dim=-1)
    k_real = F.pad(kv, (0, dp - d))                                       # [b, 1, s, dp]
    k_sink = kv.new_zeros(b, 1, sp - s, dp)
    k_sink[:, :, 0, d:d + 2] = 1.0
    k2 = torch.cat([k_real, k_sink], dim=2).expand(b, h, sp, dp)
    v2 = F.pad(kv, (0, dp - d, 0, sp - s)).expand(b, h, sp, dp)
    pad_bias = mask.new_full((b, 1, t, sp - s), float("-inf"))
    pad_bias[..., 0] = 0.0
    m2 = torch.cat([mask, pad_bias], dim=-1).expand(b, h, t, sp)
    out = F.scaled_dot_product_attention(q2, k2, v2, attn_mask=m2, scale=scaling)
    return out[..., :d].transpose(1, 2).contiguous()


def sdpa_head_mask(query, kv, mask, sinks, scaling):
    """The sink as an extra zero key whose mask column holds sinks[h] (head dim stays 128; the mask becomes
    per head, [B, H, T, S'] in q's dtype, so the sink logit is rounded to bf16)."""
    b, h, t, d = query.shape
    s = kv.shape[2]
    sp = (s + 1 + 15) // 16 * 16
    k2 = F.pad(kv, (0, 0, 0, sp - s)).expand(b, h, sp, d)
    m = mask.expand(b, h, t, s)
    sink_col = sinks.to(query.dtype).reshape(1, h, 1, 1).expand(b, h, t, 1)
    m2 = torch.cat([m, sink_col, m.new_full((b, h, t, sp - s - 1), float("-inf"))], dim=-1)
    out = F.scaled_dot_product_attention(query, k2, k2, attn_mask=m2, scale=scaling)
    return out.transpose(1, 2).contiguous()


def sdpa_no_sink(query, kv, mask, sinks, scaling):
    """NOT the chain's function (no sink): the lower bound of a D = 128 masked SDPA call, for scale."""
    b, h, t, d = query.shape
    k = kv.expand(b, h, kv.shape[2], d)
    return F.scaled_dot_product_attention(query, k, k, attn_mask=mask.expand(b, h, t, kv.shape[2]),
                                          scale=scaling).transpose(1, 2).contiguous() + 0 * sinks.sum()


def make_inputs(batch, heads, t, compressed, d, window, device, seed=0):
    g = torch.Generator(device="cpu").manual_seed(seed)
    q = (torch.randn(batch, heads, t, d, generator=g)).to(device, torch.bfloat16)
    s = t + compressed
    kv = (torch.randn(batch, 1, s, d, generator=g)).to(device, torch.bfloat16)
    sinks = torch.randn(heads, generator=g).to(device)
    i = torch.arange(t)[:, None]
    j = torch.arange(t)[None, :]
    allowed = (j <= i) & (j > i - window)
    mask = torch.where(allowed, 0.0, torch.finfo(torch.bfloat16).min).expand(batch, 1, t, t)
    if compressed:
        # the compressor's block bias: per query, up to 128 causal compressed slots marked valid by the indexer
        rate = t // compressed
        score = torch.rand(batch, t, compressed, generator=g)
        causal = torch.arange(compressed)[None, :] * rate + rate - 1 <= torch.arange(t)[:, None]
        score = torch.where(causal, score, -1.0)
        top = score.topk(min(128, compressed), dim=-1)
        bias = torch.full((batch, t, compressed), float("-inf"))
        bias.scatter_(-1, top.indices, torch.where(top.values >= 0, 0.0, float("-inf")))
        mask = torch.cat([mask, bias.unsqueeze(1)], dim=-1)
    return q, kv, mask.to(device, torch.bfloat16).contiguous(), sinks


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--t", type=int, default=2048)
    p.add_argument("--variants", default="eager,inductor,trex,sdpa,sdpa_inductor,sdpa_head_mask,sdpa_no_sink")
    p.add_argument("--cases", default="0,4", help="compressed entries as T // k (0: none)")
    args = p.parse_args(argv)
    from gpu_patterns import time_variant
    from torch.nn.attention import SDPBackend, sdpa_kernel
    dev = "cuda"
    torch.backends.cuda.matmul.allow_tf32 = False
    rows = []
    scaling = 128 ** -0.5

    def with_backend(fn, backend):
        def call(*a):
            with sdpa_kernel([backend]):
                return fn(*a)
        return call

    makers = {
        "eager": lambda: eager_chain,
        "inductor": lambda: torch.compile(eager_chain),
        "sdpa": lambda: sdpa_augmented,
        "sdpa_eff": lambda: with_backend(sdpa_augmented, SDPBackend.EFFICIENT_ATTENTION),
        "sdpa_cudnn": lambda: with_backend(sdpa_augmented, SDPBackend.CUDNN_ATTENTION),
        "sdpa_inductor": lambda: torch.compile(sdpa_augmented),
        "sdpa_head_mask": lambda: sdpa_head_mask,
        # trex's CUDA lowering called directly: one cuDNN call at head dim 128, the sink through its logsumexp
        "cudnn_lse": lambda: (lambda q_, kv_, m_, s_, sc: __import__(
            "trex.passes.sink_attention.pattern", fromlist=["x"]).sink_attention(q_, kv_, kv_, m_, s_, sc)
            .transpose(1, 2).contiguous()),
        "sdpa_d192": lambda: (lambda *a: sdpa_augmented(*a, dp=192)),
        "sdpa_d256": lambda: (lambda *a: sdpa_augmented(*a, dp=256)),
        "sdpa_no_sink": lambda: sdpa_no_sink,
        # the pattern (trex/passes/sink_attention) rewriting the eager chain, Inductor for the rest
        "trex": lambda: torch.compile(eager_chain, backend="trex"),
    }
    for compressed in [args.t // int(k) if int(k) else 0 for k in args.cases.split(",")]:
        q, kv, mask, sinks = make_inputs(args.batch, 8, args.t, compressed, 128, 128, dev)
        ref_inputs = [q.double().requires_grad_(), kv.double().requires_grad_(), mask.double(),
                      sinks.double().requires_grad_()]
        ref = eager_chain(*ref_inputs[:3], ref_inputs[3], scaling)
        gout = torch.randn(ref.shape, generator=torch.Generator().manual_seed(3)).to(dev)
        ref.backward(gout.double())
        ref_grads = [ref_inputs[0].grad, ref_inputs[1].grad, ref_inputs[3].grad]
        for name in args.variants.split(","):
            row = {"case": f"S={args.t + compressed}", "variant": name}
            try:
                fn = makers[name]()
                ins = [q.clone().requires_grad_(), kv.clone().requires_grad_(), mask, sinks.clone().requires_grad_()]
                out = fn(*ins[:3], ins[3], scaling)
                out.backward(gout.to(out.dtype))
                grads = [ins[0].grad, ins[1].grad, ins[3].grad]

                def err(a, r):
                    return float((a.double() - r).abs().max() / r.abs().max().clamp_min(1e-30))
                row["err_out"] = err(out, ref)
                row["err_dq"], row["err_dkv"], row["err_dsink"] = (err(g_, r) for g_, r in zip(grads, ref_grads))

                def call(a, b_, c):
                    return fn(a, b_, mask, c, scaling)
                for bwd in (False, True):
                    wall, dev_ms, kern = time_variant(call, [q, kv, sinks], [True, True, True], bwd, [gout.to(out.dtype)])
                    key = "fwdbwd" if bwd else "fwd"
                    row[f"{key}_wall_ms"], row[f"{key}_device_ms"], row[f"{key}_kernels"] = wall, dev_ms, kern
            except Exception as e:  # noqa: BLE001 - a variant the device lacks is a row with its reason
                import traceback
                row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
                row["traceback"] = traceback.format_exc()[-3000:]
            print(json.dumps(row), flush=True)
            rows.append(row)
    result = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "batch": args.batch, "t": args.t,
              "heads": 8, "head_dim": 128, "window": 128, "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "rows": rows}
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out + ".tmp", "w") as f:
            json.dump(result, f, indent=1)
        os.replace(args.out + ".tmp", args.out)


if __name__ == "__main__":
    main()
