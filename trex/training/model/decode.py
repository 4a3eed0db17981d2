"""Incremental (KV-cached) decoding of a batch of right-padded prompts through a ``Transformer``.

``prefill(model, tokens, last, capacity)`` runs the prompts through the model once (the blocks' own
forward) and returns the logits at each row's last prompt position and a ``DecodeCache``;
``decode_step(model, cache, rows, tokens, positions)`` then feeds one new token per listed row at
that row's own next position and returns its logits. Rows advance independently (a finished row
simply stops being listed), so one cache serves a batch whose rows have different prompt lengths.

Every token-local part of a block (mHC, norms, projections, MoE) runs the module's own code on the
new positions (``Block.run_with_attention``); only attention reads the cache, through the pieces
``Attention.forward`` is made of (``queries``, ``shared_kv``, ``select_entries``, ``output``;
``Indexer.queries`` / ``scores``; ``Compressor.project`` / ``pool``). Per layer the cache holds the
rotated shared K=V of every position and, for compressed layers, each compressor's fp32 projections of every
position and the entries built so far; an entry is built at the step that completes its window.
A step costs O(window + compressed entries) per row instead of a forward over the sequence.

The logits equal the full forward's at the same positions up to floating-point reduction order
(tests/model/test_decode_cache.py), with one caveat that comes from the model, not the cache: the
CSA indexer's top-k chooses among exactly tied scores in an order ``torch.topk`` leaves unspecified,
which may differ with the number of entries scored. Decoding never slides the window: every position
must be below ``capacity`` (at most the model's ``max_seq_len`` for positions it was trained on).

``logits_at`` is the cache-free counterpart: the trunk over whole sequences, the head only at one
position per row (no MTP block, no ``[B, T, V]`` logits).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from .attention import Attention, Compressor, sink_attention
from .functional import apply_rope
from .model import Transformer, rope_tables


def logits_at(model: Transformer, tokens: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
    """Logits ``[B, V]`` at position ``last[b]`` of each row of ``tokens [B, T]``: the same layers, in
    the same order, as ``Transformer.forward``, with the head applied to the gathered positions only."""
    rope = rope_tables(model.args, tokens.shape[1], tokens.device)
    x = model.embed_streams(tokens)
    for block in model.layers:
        x = block(x, tokens, rope)
    rows = torch.arange(tokens.shape[0], device=tokens.device)
    return model.head_logits(x[rows, last].unsqueeze(1))[:, 0]


class CompressorCache:
    """One ``Compressor``'s decoding state: its fp32 projections ``kv``, ``gate`` ``[B, capacity,
    width]`` of every position written so far, and the entries built so far (``entries[b, w]``).

    Entry ``w`` pools positions ``[w*m, (w+1)*m)`` (with overlap, also the first half of the channels
    of the window before); it is built once, at the step that writes position ``(w+1)*m - 1``, by
    ``Compressor.pool`` from the cached projections, as ``Compressor.forward`` builds it from the
    whole sequence. Entries of windows that were incomplete in a (right-padded) prompt hold padding
    until then, and no query sees them before (``compressed_visibility``)."""

    def __init__(self, compressor: Compressor, x_prompt: torch.Tensor, freqs: torch.Tensor, capacity: int):
        self.compressor, self.freqs = compressor, freqs
        m = compressor.ratio
        batch, prompt_len, _ = x_prompt.shape
        kv, gate = compressor.project(x_prompt)
        self.kv = kv.new_zeros(batch, capacity, kv.shape[-1])
        self.gate = gate.new_zeros(batch, capacity, gate.shape[-1])
        self.kv[:, :prompt_len], self.gate[:, :prompt_len] = kv, gate
        # allocated at the first entry built: its dtype is the pooling's result dtype
        self.entries: torch.Tensor | None = None
        self.n_slots = capacity // m + 1
        n_windows = prompt_len // m
        if n_windows:
            windows = (n_windows, m)
            entries = compressor.pool(kv[:, :n_windows * m].unflatten(1, windows),
                                      gate[:, :n_windows * m].unflatten(1, windows), x_prompt.dtype)
            entries = apply_rope(entries, freqs[: n_windows * m: m])
            self._store(torch.arange(batch, device=x_prompt.device).unsqueeze(1),
                        torch.arange(n_windows, device=x_prompt.device).unsqueeze(0), entries)

    def _store(self, rows: torch.Tensor, windows: torch.Tensor, entries: torch.Tensor) -> None:
        if self.entries is None:
            self.entries = entries.new_zeros(self.kv.shape[0], self.n_slots, entries.shape[-1])
        self.entries[rows, windows] = entries.to(self.entries.dtype)

    def write(self, rows: torch.Tensor, positions: list[int], pos: torch.Tensor, x_step: torch.Tensor) -> None:
        """Store the projections of ``x_step[k]`` (``[R, 1, dim]``) at ``positions[k]`` (``pos``: the
        same on the device) of row ``rows[k]`` and build every entry whose window this completes."""
        kv, gate = self.compressor.project(x_step)
        self.kv[rows, pos], self.gate[rows, pos] = kv[:, 0], gate[:, 0]
        m = self.compressor.ratio
        done = [k for k, p in enumerate(positions) if (p + 1) % m == 0]
        if not done:
            return
        device = rows.device
        completing = rows[torch.tensor(done, device=device)]
        window = torch.tensor([(positions[k] + 1) // m - 1 for k in done], device=device)
        # pool each completed window together with the one before it, in Compressor.forward's
        # layout [R', W=2, m, width], and keep the second; window 0 has no window before it
        pair = torch.stack([window - 1, window], dim=1).clamp(min=0)                # [R', 2]
        slots = (pair * m).unsqueeze(-1) + torch.arange(m, device=device)             # [R', 2, m]
        kv_pair = self.kv[completing.view(-1, 1, 1), slots]
        gate_pair = self.gate[completing.view(-1, 1, 1), slots]
        if self.compressor.overlap:
            # what Compressor.forward's _shift_windows puts before window 0
            no_previous = ((window == 0).view(-1, 1, 1, 1)
                           & (torch.arange(2, device=device) == 0).view(1, 2, 1, 1))
            kv_pair = kv_pair.masked_fill(no_previous, 0.0)
            gate_pair = gate_pair.masked_fill(no_previous, float("-inf"))
        entries = self.compressor.pool(kv_pair, gate_pair, x_step.dtype)
        entries = apply_rope(entries, self.freqs[pair * m])[:, 1]
        self._store(completing, window, entries)


class AttentionCache:
    """One attention layer's decoding state: the rotated shared K=V ``[B, capacity, D]`` of every
    position, plus the compressor (and the CSA indexer's compressor) caches of compressed layers.
    ``freqs`` is the layer's rotation table to ``capacity``."""

    def __init__(self, attn: Attention, x_prompt: torch.Tensor, freqs: torch.Tensor, capacity: int):
        self.attn, self.freqs = attn, freqs
        prompt_len = x_prompt.shape[1]
        kv = attn.shared_kv(x_prompt, freqs[:prompt_len])
        self.kv = kv.new_zeros(kv.shape[0], capacity, kv.shape[-1])
        self.kv[:, :prompt_len] = kv
        self.compressed = (CompressorCache(attn.compressor, x_prompt, freqs, capacity)
                           if attn.compressor is not None else None)
        self.index = (CompressorCache(attn.indexer.compressor, x_prompt, freqs, capacity)
                      if attn.indexer is not None else None)

    def step(self, x: torch.Tensor, rows: torch.Tensor, positions: list[int], pos: torch.Tensor) -> torch.Tensor:
        """``Attention.forward`` for one new position per row: x ``[R, 1, dim]`` of rows ``rows`` at
        ``positions`` (``pos``: the same on the device) -> ``[R, 1, dim]``."""
        attn = self.attn
        f = self.freqs[pos].unsqueeze(1)                                        # [R, 1, r/2]
        q_latent, q = attn.queries(x, f)
        self.kv[rows, pos] = attn.shared_kv(x, f)[:, 0].to(self.kv.dtype)
        # the window: positions t - window + 1 .. t (window_visibility), those >= 0
        back = torch.arange(attn.window - 1, -1, -1, device=x.device)
        window_pos = pos.unsqueeze(1) - back                                    # [R, window]
        keys = self.kv[rows.unsqueeze(1), window_pos.clamp(min=0)]
        visible = (window_pos >= 0).unsqueeze(1)                                # [R, 1, window]
        if self.compressed is not None:
            self.compressed.write(rows, positions, pos, x)
            if self.index is not None:
                self.index.write(rows, positions, pos, x)
            n_entries = max((p + 1) // attn.ratio for p in positions)
            if n_entries:
                entries = self.compressed.entries[rows, :n_entries]
                entry_visible = (torch.arange(n_entries, device=x.device)
                                 < torch.div(pos + 1, attn.ratio, rounding_mode="floor").unsqueeze(1)).unsqueeze(1)
                if self.index is not None:
                    index = attn.indexer.scores(x, attn.indexer.queries(q_latent, f),
                                                self.index.entries[rows, :n_entries], entry_visible)
                    entry_visible = attn.select_entries(index, entry_visible)
                keys = torch.cat([keys, entries], dim=1)
                visible = torch.cat([visible, entry_visible], dim=-1)
        o = sink_attention(q, keys, visible, attn.attn_sink, attn.softmax_scale)
        return attn.output(o, f)


@dataclass
class DecodeCache:
    """The decoding state of one batch of rows (``prefill`` builds it): one ``AttentionCache`` per
    block of the model, each holding positions ``0 .. capacity - 1``."""
    layers: list[AttentionCache]
    capacity: int
    device: torch.device


def prefill(model: Transformer, tokens: torch.Tensor, last: torch.Tensor,
            capacity: int) -> tuple[torch.Tensor, DecodeCache]:
    """Run right-padded prompts ``tokens [B, P]`` through the model and cache them for positions up
    to ``capacity - 1``. Returns the logits ``[B, V]`` at ``last[b]`` (each row's last prompt
    position) and the ``DecodeCache``. Padding after ``last[b]`` is overwritten as row b advances."""
    prompt_len = tokens.shape[1]
    if capacity < prompt_len:
        raise ValueError(f"capacity={capacity} is below the prompt width {prompt_len}; pass at least the "
                         f"longest prompt plus the tokens to generate")
    rope = rope_tables(model.args, capacity, tokens.device)
    layers: list[AttentionCache] = []
    x = model.embed_streams(tokens)
    for block in model.layers:
        freqs = rope[block.rope_key]

        def attend(h: torch.Tensor, block=block, freqs=freqs) -> torch.Tensor:
            layers.append(AttentionCache(block.attn, h, freqs, capacity))
            return block.attn(h, freqs[:prompt_len])

        x = block.run_with_attention(x, tokens, attend)
    rows = torch.arange(tokens.shape[0], device=tokens.device)
    logits = model.head_logits(x[rows, last].unsqueeze(1))[:, 0]
    return logits, DecodeCache(layers, capacity, tokens.device)


def decode_step(model: Transformer, cache: DecodeCache, rows: list[int], tokens: list[int],
                positions: list[int]) -> torch.Tensor:
    """Logits ``[R, V]`` after feeding ``tokens[k]`` at ``positions[k]`` of row ``rows[k]`` of the
    cached batch (each listed row once; its earlier positions must all have been fed)."""
    if not len(rows) == len(tokens) == len(positions):
        raise ValueError(f"rows, tokens and positions must have one entry per row: got {len(rows)}, "
                         f"{len(tokens)} and {len(positions)}")
    if len(cache.layers) != len(model.layers) or any(
            layer.attn is not block.attn for layer, block in zip(cache.layers, model.layers)):
        raise ValueError("cache was built by prefill for a different model; prefill with this model")
    if max(positions) >= cache.capacity or min(positions) < 0:
        raise ValueError(f"positions must lie in [0, capacity={cache.capacity}), got {min(positions)}.."
                         f"{max(positions)}; prefill with a larger capacity")
    row_ids = torch.tensor(rows, device=cache.device)
    pos = torch.tensor(positions, device=cache.device)
    token_ids = torch.tensor(tokens, device=cache.device).unsqueeze(1)         # [R, 1]
    x = model.embed_streams(token_ids)
    for block, layer in zip(model.layers, cache.layers):
        x = block.run_with_attention(x, token_ids, lambda h, layer=layer: layer.step(h, row_ids, positions, pos))
    return model.head_logits(x)[:, 0]
