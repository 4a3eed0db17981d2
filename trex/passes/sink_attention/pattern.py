"""The eager sink-attention chains the backend replaces by one fused attention call.

Spellings: transformers' (below; DeepSeek-V4's shared KV, gpt-oss's grouped heads, one KV head per query
head) and trex's own model's (einsum products, a bool visibility mask, no max subtraction).

The chain (transformers' ``eager_attention_forward`` for gpt-oss and DeepSeek-V4)::

    k, v = repeat_kv(key), repeat_kv(value)                 # expand + reshape (DeepSeek-V4: key is value)
    logits = matmul(q, k^T) * scaling + mask                # [B, H, T, S]
    combined = cat([logits, sinks.reshape(1, H, 1, 1).expand(B, H, T, 1)], -1)
    combined = combined - combined.max(-1, keepdim=True)    # (softmax is shift-invariant: no-op in value)
    probs = softmax(combined, -1)[..., :-1]                 # drop the sink's column
    out = matmul(probs.to(v.dtype), v)                      # [B, H, T, D]

materialises the [B, H, T, S] logits several times per direction (transformers' V4 at B 4, T 2048, S 2560:
168 M elements, ~5.9 ms of a 19.7 ms H200 training step under Inductor, bench/NOTES_gpu.md session 14).

The replacement is the same function as one SDPA call (value-preserving, not an approximation): a sink is a
key that every query sees with logit ``sinks[h]`` and value 0. q gets two extra channels holding
``sinks[h] / scaling`` split hi + lo in q's dtype (so the logit is the fp32 sink to ~2^-16 relative, not
rounded to bf16), every real key zeros there, one extra key ones there and value 0, mask 0 for it; the head
dim is padded to a multiple of 8 and the key count to a multiple of 16 (padding keys masked -inf, an
alignment the fused kernels want). Softmax over [logits, sink] is then exactly the chain's, and the sink's
probability goes to a zero value. Gradients (dq, dk, dv, dsinks through the extra channels) come from
SDPA's own backward kernel. The kernel PyTorch picks (cuDNN, memory-efficient) is its business; the fp64
error of the result is at or below the eager chain's (fp32 softmax and accumulation inside one kernel).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from trex.compiler.graph import same_size
from trex.compiler.pattern import Pattern
from trex.compiler.registry import register_pattern

from .cuda import cudnn_attention_available, sink_attention_cuda


def _repeat_kv(x, n_rep):
    b, kv_heads, s, d = x.shape
    return x[:, :, None, :, :].expand(b, kv_heads, n_rep, s, d).reshape(b, kv_heads * n_rep, s, d)


def _sink_softmax(logits, sinks, query):
    sk = sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], -1)
    combined = torch.cat([logits, sk], dim=-1)
    combined = combined - combined.max(dim=-1, keepdim=True).values
    return F.softmax(combined, dim=-1, dtype=combined.dtype)[..., :-1]


def sink_attention_shared_kv_chain(query, kv, mask, sinks, *, scaling):
    """DeepSeek-V4 (transformers): one KV head that is key and value, repeated over the query heads."""
    k = _repeat_kv(kv, query.shape[1] // kv.shape[1])
    probs = _sink_softmax(torch.matmul(query, k.transpose(2, 3)) * scaling + mask, sinks, query)
    return torch.matmul(probs.to(k.dtype), k)


def sink_attention_gqa_chain(query, key, value, mask, sinks, *, scaling):
    """gpt-oss (transformers): grouped key/value heads, repeated over the query heads."""
    n_rep = query.shape[1] // key.shape[1]
    k, v = _repeat_kv(key, n_rep), _repeat_kv(value, n_rep)
    probs = _sink_softmax(torch.matmul(query, k.transpose(2, 3)) * scaling + mask, sinks, query)
    return torch.matmul(probs.to(v.dtype), v)


def sink_attention_mha_chain(query, key, value, mask, sinks, *, scaling):
    """One key/value head per query head (repeat_kv's n_rep == 1 returns its input)."""
    probs = _sink_softmax(torch.matmul(query, key.transpose(2, 3)) * scaling + mask, sinks, query)
    return torch.matmul(probs.to(value.dtype), value)


def sink_attention_bool_mask_chain(query, kv, visible, sinks, *, scaling):
    """trex's own DeepSeek-V4 (trex/training/model/attention.py): [B, T, H, D] queries, one [B, S, D] KV, a bool
    visibility mask, einsum products, no max subtraction."""
    batch, seq_len, n_heads, _ = query.shape
    scores = torch.einsum("bthd,bsd->bhts", query, kv).float() * scaling
    scores = scores.masked_fill(~visible.unsqueeze(1), float("-inf"))
    sink_logits = sinks.float().view(1, n_heads, 1, 1).expand(batch, n_heads, seq_len, 1)
    probs = torch.softmax(torch.cat([scores, sink_logits], dim=-1), dim=-1)[..., :-1]
    return torch.einsum("bhts,bsd->bthd", probs.to(kv.dtype), kv)


def sink_attention(query, key, value, mask, sinks, scaling):
    """softmax([q k^T * scaling + mask, sinks[h]]) without the sink's column, times v: [B, H, T, Dv] in q's
    dtype, as one scaled_dot_product_attention call over augmented keys (module docstring). key / value:
    [B, KVH, S, D] with KVH dividing H (expanded, not copied, over the query heads); mask broadcastable to
    [B, H, T, S]; sinks [H]."""
    if cudnn_attention_available(query) and key.shape[-1] == value.shape[-1] == query.shape[-1]:
        return sink_attention_cuda(query, key, value, mask, sinks, scaling)
    # elsewhere (the CPU's math kernel, Ascend's SDPA) in fp32 at least: a bf16 score would round the sink
    # logit that eager keeps in fp32 (the gradient of the sinks is the most sensitive to it)
    out_dtype = query.dtype
    if query.dtype in (torch.bfloat16, torch.float16):
        query, key, value = query.float(), key.float(), value.float()
    b, h, t, d = query.shape
    s, dv = key.shape[2], value.shape[3]
    n_rep = h // key.shape[1]
    dp = (d + 2 + 7) // 8 * 8
    dvp = (dv + 7) // 8 * 8
    sp = (s + 1 + 15) // 16 * 16
    wide = torch.promote_types(query.dtype, torch.float32)   # the sink logit as eager has it (fp32, fp64)
    sink_q = (sinks.to(wide) / scaling).reshape(1, h, 1, 1).expand(b, h, t, 1)
    hi = sink_q.to(query.dtype)
    lo = (sink_q - hi.to(wide)).to(query.dtype)
    q2 = torch.cat([query, hi, lo, query.new_zeros(b, h, t, dp - d - 2)], dim=-1)
    kvh = key.shape[1]
    # the sink key (ones where q holds the sink logit) and the padding keys, built without in-place writes
    # (the replacement is traced into the graph: no lifted constants)
    sink_key = torch.cat([key.new_zeros(b, kvh, 1, d), key.new_ones(b, kvh, 1, 2),
                          key.new_zeros(b, kvh, 1, dp - d - 2)], dim=-1)
    k2 = torch.cat([F.pad(key, (0, dp - d)), sink_key, key.new_zeros(b, kvh, sp - s - 1, dp)], dim=2)
    v2 = F.pad(value, (0, dvp - dv, 0, sp - s))
    if n_rep > 1:
        k2 = k2[:, :, None].expand(b, kvh, n_rep, sp, dp).reshape(b, h, sp, dp)
        v2 = v2[:, :, None].expand(b, kvh, n_rep, sp, dvp).reshape(b, h, sp, dvp)
    mh = mask.shape[1]
    m = mask.to(query.dtype).expand(b, mh, t, s)
    m2 = torch.cat([m, m.new_zeros(b, mh, t, 1), m.new_full((b, mh, t, sp - s - 1), float("-inf"))],
                   dim=-1).expand(b, h, t, sp)
    out = F.scaled_dot_product_attention(q2, k2, v2, attn_mask=m2, scale=scaling)
    return out[..., :dv].to(out_dtype)


def _replace(query, kv, key, value, mask, sinks, *, scaling, out_dtype):
    if kv is not None:                    # the shared-KV chain: key is value
        key = value = kv
    return sink_attention(query, key, value, mask, sinks, scaling).to(out_dtype)


def _replace_bool_mask(query, kv, visible, sinks, *, scaling, out_dtype):
    mask = torch.where(visible, 0.0, float("-inf")).to(query.dtype).unsqueeze(1)      # [B, 1, T, S]
    kv4 = kv.unsqueeze(1)
    return sink_attention(query.transpose(1, 2), kv4, kv4, mask, sinks, scaling).transpose(1, 2).to(out_dtype)


def _extra_check_bool_mask(match) -> str | None:
    q, kv, visible, sinks = (match.input_val(n) for n in ("query", "kv", "visible", "sinks"))
    if q.dim() != 4 or kv.dim() != 3 or visible.dim() != 3:
        return f"query {tuple(q.shape)} / kv {tuple(kv.shape)} / visible {tuple(visible.shape)}: [B, T, H, D], [B, S, D], [B, T, S] are fused"
    if visible.dtype != torch.bool:
        return f"visible has dtype {visible.dtype}; a bool mask is fused"
    if not (q.is_floating_point() and q.dtype != torch.float64) or kv.dtype != q.dtype:
        return f"query/kv dtypes {q.dtype}/{kv.dtype}: one of bf16, fp16, fp32 for both is fused"
    if sinks.dim() != 1 or not same_size(sinks.shape[0], q.shape[2]):
        return f"sinks has shape {tuple(sinks.shape)}; one sink logit per query head ({q.shape[2]}) is fused"
    return None


def _extra_check(match) -> str | None:
    q, mask, sinks = match.input_val("query"), match.input_val("mask"), match.input_val("sinks")
    kv = match.input_val("kv") if "kv" in match.inputs else match.input_val("key")
    value = match.input_val("kv") if "kv" in match.inputs else match.input_val("value")
    if q.dim() != 4 or kv.dim() != 4 or value.dim() != 4:
        return f"query {tuple(q.shape)} / key {tuple(kv.shape)}: the fused attention takes [B, H, T, D] tensors"
    if not (q.is_floating_point() and q.dtype != torch.float64):
        return f"query has dtype {q.dtype}; the fused attention takes bf16, fp16 or fp32"
    if kv.dtype != q.dtype or value.dtype != q.dtype:
        return f"key/value dtype {kv.dtype}/{value.dtype} differs from the query's {q.dtype}"
    if sinks.dim() != 1 or not same_size(sinks.shape[0], q.shape[1]):
        return f"sinks has shape {tuple(sinks.shape)}; one sink logit per query head ({q.shape[1]}) is fused"
    if mask.dim() != 4 or not (same_size(mask.shape[1], 1) or same_size(mask.shape[1], q.shape[1])):
        return f"mask {tuple(mask.shape)} is not [B, 1 or H, T, S]"
    if not mask.is_floating_point():
        return f"mask has dtype {mask.dtype}; an additive float mask is fused"
    return None


def _examples(dtype, kv_heads=None):
    """The chains' example inputs: 4 query heads; ``kv_heads`` grouped key/value heads (None: one shared KV)."""
    ex = {"query": torch.randn(2, 4, 8, 16, dtype=dtype), "mask": torch.zeros(2, 1, 8, 12, dtype=dtype),
          "sinks": torch.randn(4, dtype=torch.float32)}
    if kv_heads is None:
        ex["kv"] = torch.randn(2, 1, 12, 16, dtype=dtype)
    else:
        ex["key"], ex["value"] = (torch.randn(2, kv_heads, 12, 16, dtype=dtype) for _ in range(2))
    return ex


# one pattern per signature (a pattern's example inputs serve all its chains); the shared-KV one runs first,
# so DeepSeek-V4's key-is-value graph binds one input rather than key and value to one node
for _name, _chain, _kv_heads in (("sink_attention", sink_attention_shared_kv_chain, None),
                                 ("sink_attention_gqa", sink_attention_gqa_chain, 2),
                                 ("sink_attention_mha", sink_attention_mha_chain, 4)):
    register_pattern(Pattern(
        name=_name, chains=[_chain], replacement=_replace,
        example_inputs=lambda dtype, _h=_kv_heads: _examples(dtype, _h), extra_check=_extra_check,
        near_miss_depth=8,   # past the PV product's view/bmm/expand, which every 4-D matmul shares
        description="attention with a per-head sink logit (gpt-oss, DeepSeek-V4): one SDPA call over "
                    "augmented keys"))

register_pattern(Pattern(
    name="sink_attention_bool_mask", chains=[sink_attention_bool_mask_chain], replacement=_replace_bool_mask,
    example_inputs=lambda dtype: {"query": torch.randn(2, 8, 4, 16, dtype=dtype), "kv": torch.randn(2, 12, 16, dtype=dtype),
                                  "visible": torch.rand(2, 8, 12) < 0.7, "sinks": torch.randn(4)},
    extra_check=_extra_check_bool_mask, near_miss_depth=14,   # past the einsum's permute/view/bmm prefix
    description="trex's own model's sink attention (einsum, bool visibility): one fused attention call"))
