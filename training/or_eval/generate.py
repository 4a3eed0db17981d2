"""Greedy decoding for the training/model Transformer (Pass@1 = one greedy sample).

No KV cache: each step re-runs the forward over the whole (window of the) sequence. For the small
models and short answers of the OR experiment this costs seconds, and it needs nothing from the
model beyond ``forward(tokens[B, T]) -> logits[B, T, V]`` (or a tuple whose first item is the
logits, as training.model.Transformer returns ``(logits, mtp_logits)``).
"""
from __future__ import annotations

from collections.abc import Sequence

import torch

from training.or_eval.tokenizer import format_prompt


def context_limit(model) -> int | None:
    """The model's maximum sequence length, if it declares one (ModelArgs.max_seq_len & co.)."""
    base = getattr(model, "_orig_mod", model)   # torch.compile wraps the module
    args = getattr(base, "args", None)
    for owner in (args, base):
        for name in ("max_seq_len", "seq_len", "block_size", "max_position_embeddings"):
            value = getattr(owner, name, None)
            if isinstance(value, int) and value > 0:
                return value
    return None


def _logits(output) -> torch.Tensor:
    return output[0] if isinstance(output, (tuple, list)) else output


@torch.no_grad()
def greedy_generate(model, prompt_ids: Sequence[int], max_new_tokens: int, eos_id: int | None,
                    max_context: int | None = None, device: torch.device | str | None = None) -> list[int]:
    """Append up to ``max_new_tokens`` argmax tokens to ``prompt_ids``; stop after ``eos_id``.

    Returns only the new tokens (the eos included when it was produced). When the sequence grows
    past ``max_context`` (default: the model's own limit) only the last ``max_context`` tokens
    are fed, so a model with learned positions never sees positions it was not built for.
    """
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if not prompt_ids:
        raise ValueError("prompt_ids is empty; start generation from at least a bos token")
    if device is None:
        try:
            device = next(model.parameters()).device
        except (StopIteration, AttributeError):
            device = torch.device("cpu")
    window = max_context or context_limit(model)
    was_training = getattr(model, "training", False)
    if hasattr(model, "eval"):
        model.eval()
    try:
        seq = torch.tensor([list(prompt_ids)], dtype=torch.long, device=device)
        new: list[int] = []
        for _ in range(max_new_tokens):
            feed = seq if window is None else seq[:, -window:]
            next_id = int(_logits(model(feed))[0, -1].argmax())
            new.append(next_id)
            if eos_id is not None and next_id == eos_id:
                break
            seq = torch.cat([seq, seq.new_tensor([[next_id]])], dim=1)
        return new
    finally:
        if was_training and hasattr(model, "train"):
            model.train()


@torch.no_grad()
def greedy_generate_batch(model, prompts: Sequence[Sequence[int]], max_new_tokens: int, eos_id: int | None,
                          max_context: int | None = None, batch_size: int = 16,
                          device: torch.device | str | None = None) -> list[list[int]]:
    """``greedy_generate`` for many prompts, batching those that are fed at the same length.

    Without a padding mask, a batch is only exact when every row has the same length. Prompts of
    equal length stay equal as they grow one token per step, and prompts at least ``max_context``
    long are all fed as the last ``max_context`` tokens, so grouping by (length, or "full window")
    gives the same computation as one-by-one decoding (up to floating-point reduction order).
    Finished rows leave the batch.
    """
    if device is None:
        try:
            device = next(model.parameters()).device
        except (StopIteration, AttributeError):
            device = torch.device("cpu")
    window = max_context or context_limit(model)
    groups: dict[int, list[int]] = {}
    for i, p in enumerate(prompts):
        if not p:
            raise ValueError(f"prompt {i} is empty; start generation from at least a bos token")
        key = len(p) if window is None or len(p) < window else -1
        groups.setdefault(key, []).append(i)
    results: list[list[int]] = [[] for _ in prompts]
    was_training = getattr(model, "training", False)
    if hasattr(model, "eval"):
        model.eval()
    try:
        for members in groups.values():
            for start in range(0, len(members), batch_size):
                rows = members[start:start + batch_size]
                seq = torch.tensor([list(prompts[i])[-window:] if window else list(prompts[i]) for i in rows],
                                   dtype=torch.long, device=device)
                live = list(range(len(rows)))
                for _ in range(max_new_tokens):
                    if not live:
                        break
                    feed = seq[live] if window is None else seq[live][:, -window:]
                    next_ids = _logits(model(feed))[:, -1].argmax(-1).tolist()
                    step = torch.zeros(len(rows), 1, dtype=torch.long, device=device)
                    still = []
                    for r, tok in zip(live, next_ids):
                        results[rows[r]].append(tok)
                        step[r, 0] = tok
                        if eos_id is None or tok != eos_id:
                            still.append(r)
                    seq = torch.cat([seq, step], dim=1)
                    live = still
                    if window is not None and seq.shape[1] > window:
                        seq = seq[:, -window:]
        return results
    finally:
        if was_training and hasattr(model, "train"):
            model.train()


def generate_responses(model, tokenizer, questions: Sequence[str], max_new_tokens: int = 512,
                       max_context: int | None = None, batch_size: int = 16) -> list[str]:
    """Greedy response text for each question, eos stripped.

    The prompt is ``bos + encode(format_prompt(q))``, exactly the prompt part of the training
    loop's SFT rows when the SFT data's prompt field holds ``format_prompt(q)`` (for the BPE
    tokenizer this is ``ORTokenizer.encode_prompt``; any training-loop tokenizer works).
    """
    prompts = [[tokenizer.bos_id] + tokenizer.encode(format_prompt(q)) for q in questions]
    outs = greedy_generate_batch(model, prompts, max_new_tokens, tokenizer.eos_id, max_context=max_context,
                                 batch_size=batch_size)
    texts = []
    for ids in outs:
        if ids and ids[-1] == tokenizer.eos_id:
            ids = ids[:-1]
        texts.append(tokenizer.decode(ids))
    return texts
