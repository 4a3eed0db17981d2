"""Greedy decoding for the training/model Transformer (Pass@1 = one greedy sample).

No KV cache: each step re-runs the forward over the whole (window of the) sequence. It needs
nothing from the model beyond ``forward(tokens[B, T]) -> logits[B, T, V]`` (or a tuple whose first
item is the logits, as training.model.Transformer returns ``(logits, mtp_logits)``).

Two batchings: ``greedy_generate_batch`` groups prompts of equal length (bit-for-bit the one-by-one
computation); ``greedy_generate_padded`` right-pads prompts of any length into one batch and reads
each row's logits at its own last position. The second is what makes evaluation affordable on a
GPU, where a decode step of a small model costs about the same for 1 row or 100 (launch-bound):
with prompts of distinct lengths the first needs one decode loop per length. Right padding is exact
for a causal model (a position never sees later positions); training.model's only departure is the
CSA indexer's top-k, whose choice among exactly tied scores may differ with the row's padded
length (torch.topk's order among ties is unspecified either way).
"""
from __future__ import annotations

import time
from collections.abc import Sequence

import torch

from training.or_eval.tokenizer import format_prompt


def _model_device(model, device):
    """`device`, else the model's (its first parameter's), else the CPU."""
    if device is not None:
        return device
    try:
        return next(model.parameters()).device
    except (StopIteration, AttributeError):
        return torch.device("cpu")


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
    device = _model_device(model, device)
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
    device = _model_device(model, device)
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


def last_position_logits(model, tokens: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
    """Logits ``[B, V]`` at position ``last[b]`` of each row of ``tokens[B, T]``.

    For training.model.Transformer this runs the trunk only and applies the head to the gathered
    positions: the MTP block and the ``[B, T, V]`` logits of a full forward are most of a decode
    step's memory traffic and are not needed to pick the next token (the same layers, in the same
    order, as ``Transformer.forward``; a test checks the two agree). Any other model: full forward."""
    base = getattr(model, "_orig_mod", model)
    rows = torch.arange(tokens.shape[0], device=tokens.device)
    try:
        from training.model.mhc import hc_head
        from training.model.model import Transformer, rope_tables
    except ImportError:
        Transformer = None
    if Transformer is not None and isinstance(base, Transformer):
        args = base.args
        rope = rope_tables(args, tokens.shape[1], tokens.device)
        x = base.embed(tokens).unsqueeze(-2).repeat(1, 1, args.hc_mult, 1)
        for layer in base.layers:
            x = layer(x, tokens, rope)
        x = x[rows, last].unsqueeze(1)                                  # [B, 1, n, dim]
        out = hc_head(x, base.hc_head_fn, base.hc_head_scale, base.hc_head_base, args.hc_eps, args.norm_eps)
        return base.head(base.norm(out))[:, 0]
    return _logits(model(tokens))[rows, last]


@torch.no_grad()
def greedy_generate_padded(model, prompts: Sequence[Sequence[int]], max_new_tokens: int, eos_id: int | None,
                           pad_id: int = 0, max_context: int | None = None, batch_size: int = 64,
                           device: torch.device | str | None = None,
                           deadline: float | None = None) -> list[list[int] | None]:
    """Greedy decoding of many prompts of any length, right-padded into batches of ``batch_size``.

    Batches are taken in the order of ``prompts`` (put the items that matter most first). Each step
    feeds the live rows up to the longest live row and appends each row's argmax at its own end;
    finished rows leave the batch. A row that reaches ``max_context`` tokens (default: the model's
    limit) leaves the padded batch and slides the window, as ``greedy_generate`` does, batched with
    the other rows at the window (they all feed exactly ``max_context`` tokens). ``deadline`` (a ``time.monotonic()`` value) bounds the wall time: once
    it has passed, no batch starts and no decode step runs; every prompt whose response was not
    complete by then (eos or ``max_new_tokens``) gets ``None``, never a response cut short by the
    clock (a caller scores ``None`` as "not evaluated", not as wrong).
    """
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    device = _model_device(model, device)
    window = max_context or context_limit(model)
    for i, p in enumerate(prompts):
        if not p:
            raise ValueError(f"prompt {i} is empty; start generation from at least a bos token")
    results: list[list[int] | None] = [None] * len(prompts)
    was_training = getattr(model, "training", False)
    if hasattr(model, "eval"):
        model.eval()
    try:
        for start in range(0, len(prompts), batch_size):
            if deadline is not None and time.monotonic() > deadline:
                break
            members = list(range(start, min(start + batch_size, len(prompts))))
            fed = [list(prompts[i])[-window:] if window else list(prompts[i]) for i in members]
            lengths = [len(p) for p in fed]
            width = max(lengths) + max_new_tokens
            if window is not None:
                width = min(width, window)
            seq = torch.full((len(members), width), pad_id, dtype=torch.long, device=device)
            for r, p in enumerate(fed):
                seq[r, :len(p)] = torch.tensor(p, dtype=torch.long)
            new: list[list[int] | None] = [[] for _ in members]
            live = [r for r in range(len(members)) if max_new_tokens > 0]
            # Rows at the window slide it: each feeds exactly its last `window` tokens, so they form
            # their own exact batch (``sliding`` rows, ``slide_seq[k]`` = row sliding[k]'s window).
            sliding = [r for r in live if window is not None and lengths[r] >= window]
            live = [r for r in live if r not in sliding]
            slide_seq = seq[sliding, :window] if sliding else None
            while live or sliding:
                if deadline is not None and time.monotonic() > deadline:
                    for r in live + sliding:
                        new[r] = None
                    break
                joining: list[tuple[int, int]] = []   # (row, token) reaching the window this step
                if live:
                    rows = torch.tensor(live, device=device)
                    last = torch.tensor([lengths[r] - 1 for r in live], device=device)
                    feed = seq[rows, :int(last.max()) + 1]
                    next_ids = last_position_logits(model, feed, last).argmax(-1).tolist()
                    still = []
                    for r, tok in zip(live, next_ids):
                        new[r].append(tok)
                        if (eos_id is not None and tok == eos_id) or len(new[r]) >= max_new_tokens:
                            continue
                        if window is not None and lengths[r] >= window:
                            joining.append((r, tok))
                            continue
                        seq[r, lengths[r]] = tok
                        lengths[r] += 1
                        still.append(r)
                    live = still
                if sliding:
                    last = torch.full((len(sliding),), window - 1, device=device)
                    next_ids = last_position_logits(model, slide_seq, last).argmax(-1).tolist()
                    keep = []
                    for k, (r, tok) in enumerate(zip(sliding, next_ids)):
                        new[r].append(tok)
                        if not ((eos_id is not None and tok == eos_id) or len(new[r]) >= max_new_tokens):
                            keep.append(k)
                    step = torch.tensor(next_ids, device=device).unsqueeze(1)
                    slide_seq = torch.cat([slide_seq[:, 1:], step], dim=1)[keep]
                    sliding = [sliding[k] for k in keep]
                if joining:
                    rows = torch.tensor([r for r, _ in joining], device=device)
                    step = torch.tensor([t for _, t in joining], device=device).unsqueeze(1)
                    joined = torch.cat([seq[rows, 1:window], step], dim=1)
                    slide_seq = joined if not sliding else torch.cat([slide_seq, joined], dim=0)
                    sliding += [r for r, _ in joining]
            for r, i in enumerate(members):
                results[i] = new[r]
        return results
    finally:
        if was_training and hasattr(model, "train"):
            model.train()


def generate_responses(model, tokenizer, questions: Sequence[str], max_new_tokens: int = 512,
                       max_context: int | None = None, batch_size: int = 16, padded: bool = False,
                       deadline: float | None = None) -> list[str | None]:
    """Greedy response text for each question, eos stripped (``None`` for a question whose batch
    the ``deadline`` left unstarted; only with ``padded``, see ``greedy_generate_padded``).

    The prompt is ``bos + encode(format_prompt(q))``, exactly the prompt part of the training
    loop's SFT rows when the SFT data's prompt field holds ``format_prompt(q)`` (for the BPE
    tokenizer this is ``ORTokenizer.encode_prompt``; any training-loop tokenizer works).
    """
    prompts = [[tokenizer.bos_id] + tokenizer.encode(format_prompt(q)) for q in questions]
    if padded:
        outs = greedy_generate_padded(model, prompts, max_new_tokens, tokenizer.eos_id,
                                      pad_id=getattr(tokenizer, "pad_id", 0) or 0, max_context=max_context,
                                      batch_size=batch_size, deadline=deadline)
    else:
        outs = greedy_generate_batch(model, prompts, max_new_tokens, tokenizer.eos_id, max_context=max_context,
                                     batch_size=batch_size)
    texts: list[str | None] = []
    for ids in outs:
        if ids is None:   # not generated: the deadline passed before its batch started
            texts.append(None)
            continue
        if ids and ids[-1] == tokenizer.eos_id:
            ids = ids[:-1]
        texts.append(tokenizer.decode(ids))
    return texts
