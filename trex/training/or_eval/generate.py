"""Greedy decoding for the trex/training/model Transformer (Pass@1 = one greedy sample).

``greedy_generate`` and ``greedy_generate_batch`` need nothing from the model beyond
``forward(tokens[B, T]) -> logits[B, T, V]`` (or a tuple whose first item is the logits, as
trex.training.model.Transformer returns ``(logits, mtp_logits)``): each step re-runs the forward over the
whole (window of the) sequence. They are the reference the faster paths are tested against.

``greedy_generate_batch`` groups prompts of equal length (bit-for-bit the one-by-one computation);
``greedy_generate_padded`` (what the experiment uses) right-pads prompts of any length into one
batch. For a trex.training.model.Transformer it decodes with the model's KV cache
(``trex.training.model.decode``: ``prefill`` over the prompts, then ``decode_step``, one new position per
row per step; the per-step cost no longer grows with the sequence, which on the H200 took a 640-token
decode of 156 rows from minutes to seconds);
otherwise, and for rows that would slide the window, it feeds each step up to the longest live row
and reads each row's logits at its own last position. Right padding is exact for a causal model (a
position never sees later positions), and so is the cache; trex.training.model's one departure is the
CSA indexer's top-k, whose choice among exactly tied scores (e.g. several entries whose relu'd
scores are all 0) may differ with the number of entries scored (torch.topk's order among ties is
unspecified either way): a tie at the k-th place can change a token, not the greedy rule.
"""
from __future__ import annotations

import time
import warnings
from collections.abc import Sequence

import torch

from trex.training.or_tokenizer import format_prompt


def _model_device(model, device):
    """`device`, else the model's (its first parameter's), else the CPU."""
    if device is not None:
        return device
    try:
        return next(model.parameters()).device
    except (StopIteration, AttributeError):
        return torch.device("cpu")


def _same_device(a: torch.device, b: torch.device) -> bool:
    """``cuda`` and ``cuda:0`` name the same device when the current one is 0 (and so on)."""
    if a.type != b.type:
        return False
    if a.type == "cuda" and (a.index is None or b.index is None):
        current = torch.cuda.current_device()
        return (a.index if a.index is not None else current) == (b.index if b.index is not None else current)
    return a.index == b.index or a.type == "cpu"


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

    For trex.training.model.Transformer this is ``trex.training.model.decode.logits_at``: the trunk only, the
    head at the gathered positions (the MTP block and the ``[B, T, V]`` logits of a full forward are
    most of a decode step's memory traffic and are not needed to pick the next token; a test checks
    it agrees with ``Transformer.forward``). Any other model: its full forward."""
    base = _transformer_base(model)
    if base is not None:
        from trex.training.model.decode import logits_at
        return logits_at(base, tokens, last)
    rows = torch.arange(tokens.shape[0], device=tokens.device)
    return _logits(model(tokens))[rows, last]


@torch.inference_mode()
def greedy_generate_padded(model, prompts: Sequence[Sequence[int]], max_new_tokens: int, eos_id: int | None,
                           pad_id: int = 0, max_context: int | None = None, batch_size: int = 64,
                           device: torch.device | str | None = None,
                           deadline: float | None = None, kv_cache: bool = True) -> list[list[int] | None]:
    """Greedy decoding of many prompts of any length, right-padded into batches of ``batch_size``.

    Batches are taken in the order of ``prompts`` (put the items that matter most first); finished
    rows leave the batch and a batch ends when every row has (eos or ``max_new_tokens``).

    With ``kv_cache`` (default) and a trex.training.model.Transformer (compiled or not: the eager
    module is used), a row whose prompt plus response fits the window is decoded incrementally:
    one forward over the padded prompts, then one new position per row per step
    (``trex.training.model.decode.prefill`` / ``decode_step``): a step costs O(window + compressed entries) per row instead of a
    forward over the whole sequence. Other rows (those that would slide the window, or any row of
    another model) take the cache-free path: each step feeds the live rows up to the longest live
    row and reads each row's logits at its own end; a row that reaches ``max_context`` tokens
    (default: the model's limit) slides the window, as ``greedy_generate`` does, batched with the
    other rows at the window (they all feed exactly ``max_context`` tokens). Both give the tokens
    of one-by-one ``greedy_generate`` (tested). ``deadline`` (a ``time.monotonic()`` value) bounds
    the wall time: once it has passed, no batch starts and no decode step runs; every prompt whose
    response was not complete by then (eos or ``max_new_tokens``) gets ``None``, never a response
    cut short by the clock (a caller scores ``None`` as "not evaluated", not as wrong).
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
    base = _transformer_base(model) if kv_cache else None
    if base is not None and not _same_device(next(base.parameters()).device, torch.device(device)):
        base = None   # the cache lives on the model's device; an explicit other device takes the old path
    results: list[list[int] | None] = [None] * len(prompts)
    was_training = getattr(model, "training", False)
    if hasattr(model, "eval"):
        model.eval()
    try:
        for start in range(0, len(prompts), batch_size):
            if deadline is not None and time.monotonic() > deadline:
                break
            members = list(range(start, min(start + batch_size, len(prompts))))
            fed = {i: list(prompts[i])[-window:] if window else list(prompts[i]) for i in members}
            # a row fits when its last fed position (prompt + max_new_tokens - 1 tokens) is in the window
            cached = [i for i in members if base is not None
                      and (window is None or len(fed[i]) + max_new_tokens - 1 <= window)]
            if cached:
                try:
                    outs = _decode_cached(base, [fed[i] for i in cached], max_new_tokens, eos_id, pad_id, deadline)
                except Exception as exc:    # noqa: BLE001 - the cache-free path computes the same tokens
                    # a cache that fails on a new device or dtype must not cost a whole evaluation:
                    # say so, and decode these rows and every later batch without it
                    warnings.warn(f"KV-cached decoding failed ({type(exc).__name__}: {exc}); decoding without "
                                  f"the cache from here on", RuntimeWarning, stacklevel=2)
                    base, cached = None, []
                else:
                    for i, out in zip(cached, outs):
                        results[i] = out
            rest = [i for i in members if i not in set(cached)]
            if rest:
                outs = _decode_uncached(model, [fed[i] for i in rest], max_new_tokens, eos_id, pad_id, window,
                                        device, deadline)
                for i, out in zip(rest, outs):
                    results[i] = out
        return results
    finally:
        if was_training and hasattr(model, "train"):
            model.train()


def _decode_uncached(model, fed: list[list[int]], max_new_tokens: int, eos_id: int | None, pad_id: int,
                     window: int | None, device, deadline: float | None) -> list[list[int] | None]:
    """One right-padded batch without a cache (see ``greedy_generate_padded``)."""
    lengths = [len(p) for p in fed]
    width = max(lengths) + max_new_tokens
    if window is not None:
        width = min(width, window)
    seq = torch.full((len(fed), width), pad_id, dtype=torch.long, device=device)
    for r, p in enumerate(fed):
        seq[r, :len(p)] = torch.tensor(p, dtype=torch.long)
    new: list[list[int] | None] = [[] for _ in fed]
    live = [r for r in range(len(fed)) if max_new_tokens > 0]
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
    return new
# ------------------------------------------------------------------------------ cached decoding
def _transformer_base(model):
    """The trex.training.model.Transformer behind ``model`` (unwrapping torch.compile), else None.

    Decoding always runs the eager module: a compiled wrapper would recompile (or guard-fail)
    for every new batch size and width a decode loop produces."""
    base = getattr(model, "_orig_mod", model)
    try:
        from trex.training.model.model import Transformer
    except ImportError:
        return None
    return base if isinstance(base, Transformer) else None


def _decode_cached(base, prompts: list[list[int]], max_new_tokens: int, eos_id: int | None, pad_id: int,
                   deadline: float | None) -> list[list[int] | None]:
    """Greedy responses of one batch of prompts with the KV cache (every prompt plus its response
    must fit the model's window: no sliding). ``None`` for the rows the deadline cut."""
    device = next(base.parameters()).device
    lengths = [len(p) for p in prompts]
    capacity = max(lengths) + max_new_tokens
    tokens = torch.full((len(prompts), max(lengths)), pad_id, dtype=torch.long, device=device)
    for r, p in enumerate(prompts):
        tokens[r, :len(p)] = torch.tensor(p, dtype=torch.long)
    new: list[list[int] | None] = [[] for _ in prompts]
    if max_new_tokens == 0:
        return new
    if deadline is not None and time.monotonic() > deadline:
        return [None] * len(prompts)
    from trex.training.model.decode import prefill
    logits, cache = prefill(base, tokens, torch.tensor([n - 1 for n in lengths], device=device), capacity)
    return greedy_decode_loop(base, cache, logits.argmax(-1).tolist(), lengths, new, max_new_tokens, eos_id,
                              deadline)


def greedy_decode_loop(base, cache, next_ids: list[int], lengths: list[int], new: list[list[int]],
                       max_new_tokens: int, eos_id: int | None, deadline: float | None) -> list[list[int] | None]:
    """The cached greedy loop after a prefill: ``next_ids`` are the prefill's argmax tokens, ``new``
    the (empty) response lists it appends to; rows stop at eos or ``max_new_tokens``, and the rows
    still live when ``deadline`` passes become ``None``."""
    from trex.training.model.decode import decode_step
    live = list(range(len(new)))
    while True:
        still = []
        for r, tok in zip(live, next_ids):
            new[r].append(tok)
            if not ((eos_id is not None and tok == eos_id) or len(new[r]) >= max_new_tokens):
                still.append(r)
        live = still
        if not live:
            return new
        if deadline is not None and time.monotonic() > deadline:
            for r in live:
                new[r] = None
            return new
        # feed each live row's newest token at its own next position
        positions = [lengths[r] + len(new[r]) - 1 for r in live]
        next_ids = decode_step(base, cache, live, [new[r][-1] for r in live], positions).argmax(-1).tolist()


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
