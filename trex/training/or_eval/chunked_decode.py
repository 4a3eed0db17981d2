"""Greedy KV-cached decoding of every prompt in ONE batch, the prefill run in row chunks.

A cached decode step costs about the same whatever the batch (the GPU is launch-bound at this model
size), so the number of decode steps, one batch's ``max_new_tokens``, is the decoding time, and
every prompt should be in one batch. What bounds the batch is the prefill: ``sink_attention`` holds
dense fp32 scores ``[B, H, T, T]`` (several live copies; 1168 prompts of up to ~1030 tokens is ~90
GB), while a decode step holds ``[B, H, 1, window]``. So the prompts are prefilled in row chunks
of at most ``prefill_elements`` score elements each, the chunks' caches are concatenated along the
batch, and the decode loop runs once over all rows (the loop of ``generate._decode_cached``, the
same tokens: tested against ``generate.greedy_generate_padded``).

Only models whose layers keep no compressed entries (every ``compress_ratio`` 0, as the
ablation's ``WIDE_V4``) are chunked: their per-layer cache is one K=V tensor, concatenated along
rows. Any other model is prefilled in one chunk.
"""
from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from trex.training.or_tokenizer import format_prompt


def _chunkable(base) -> bool:
    return all(block.attn.compressor is None and block.attn.indexer is None for block in base.layers)


def chunked_prefill(base, tokens: torch.Tensor, last: torch.Tensor, capacity: int, rows_per_chunk: int):
    """``decode.prefill`` over row chunks of ``tokens`` (all of the same padded width), merged: the
    logits ``[B, V]`` and one ``DecodeCache`` for every row."""
    from trex.training.model.decode import DecodeCache, prefill
    if rows_per_chunk >= tokens.shape[0] or not _chunkable(base):
        return prefill(base, tokens, last, capacity)
    logits, caches = [], []
    for start in range(0, tokens.shape[0], rows_per_chunk):
        lg, cache = prefill(base, tokens[start:start + rows_per_chunk], last[start:start + rows_per_chunk], capacity)
        logits.append(lg)
        caches.append(cache)
    merged = caches[0]
    for k, layer in enumerate(merged.layers):
        layer.kv = torch.cat([c.layers[k].kv for c in caches], dim=0)
    return torch.cat(logits, dim=0), DecodeCache(merged.layers, capacity, merged.device)


def rows_per_prefill_chunk(base, n_rows: int, width: int, prefill_elements: float) -> int:
    """Rows whose prefill attention scores ``[rows, heads, width, width]`` stay within the budget."""
    per_row = base.args.n_heads * width * width
    return max(1, min(n_rows, int(prefill_elements // per_row)))


@torch.inference_mode()
def greedy_decode_one_batch(model, prompts: Sequence[Sequence[int]], max_new_tokens: int, eos_id: int | None,
                            pad_id: int = 0, deadline: float | None = None,
                            prefill_elements: float = 1.5e9) -> list[list[int] | None]:
    """Greedy new tokens of every prompt (eos included when produced), all rows in one cached batch.
    Every prompt plus ``max_new_tokens`` must fit the model's window. ``deadline`` (a
    ``time.monotonic()`` value): rows not complete when it passes get ``None``."""
    from trex.training.or_eval.generate import _transformer_base, context_limit, greedy_decode_loop
    base = _transformer_base(model)
    if base is None:
        raise ValueError("greedy_decode_one_batch needs a trex.training.model.Transformer (compiled or not)")
    window = context_limit(model)
    lengths = [len(p) for p in prompts]
    if window is not None and max(lengths) + max_new_tokens - 1 > window:
        raise ValueError(f"a prompt of {max(lengths)} tokens plus {max_new_tokens} new ones passes the "
                         f"{window}-token window; lower max_new_tokens (experiment.plan_max_new_tokens)")
    new: list[list[int] | None] = [[] for _ in prompts]
    if max_new_tokens == 0 or not prompts:
        return new
    if deadline is not None and time.monotonic() > deadline:
        return [None] * len(prompts)
    was_training = base.training
    base.eval()
    try:
        device = next(base.parameters()).device
        tokens = torch.full((len(prompts), max(lengths)), pad_id, dtype=torch.long, device=device)
        for r, p in enumerate(prompts):
            tokens[r, :len(p)] = torch.tensor(p, dtype=torch.long)
        last = torch.tensor([n - 1 for n in lengths], device=device)
        rows = rows_per_prefill_chunk(base, len(prompts), max(lengths), prefill_elements)
        logits, cache = chunked_prefill(base, tokens, last, max(lengths) + max_new_tokens, rows)
        next_ids = logits.argmax(-1).tolist()
        del logits
        return greedy_decode_loop(base, cache, next_ids, lengths, new, max_new_tokens, eos_id, deadline)
    finally:
        if was_training:
            base.train()


def generate_texts(model, tokenizer, questions: Sequence[str], max_new_tokens: int, deadline: float | None = None,
                   prefill_elements: float = 1.5e9) -> list[str | None]:
    """Response text per question (eos stripped; ``None`` where the deadline cut it), from the
    prompt ``generate.generate_responses`` builds: ``bos + encode(format_prompt(q))``."""
    prompts = [[tokenizer.bos_id] + tokenizer.encode(format_prompt(q)) for q in questions]
    outs = greedy_decode_one_batch(model, prompts, max_new_tokens, tokenizer.eos_id,
                                   pad_id=getattr(tokenizer, "pad_id", 0) or 0, deadline=deadline,
                                   prefill_elements=prefill_elements)
    texts: list[str | None] = []
    for ids in outs:
        if ids is None:
            texts.append(None)
            continue
        if ids and ids[-1] == tokenizer.eos_id:
            ids = ids[:-1]
        texts.append(tokenizer.decode(ids))
    return texts
