"""DeepSeek-V4 attention (spec §5): shared-KV MQA over a sliding window, plus compressed entries.

Layer kinds by ``compress_ratios[layer]``: 0 -> SWA (window only); 4 -> CSA (window + the
lightning indexer's top-k of overlapping compressed entries); other -> HCA (window + every
causally visible compressed entry). One softmax over window and compressed keys, with a per-head
sink logit in the denominator; K == V (one 512-dim head in the real models); the output's rope
channels are rotated back; grouped low-rank output projection.

The core attention here is plain masked dense PyTorch (correctness first): scores for every
(query, key) pair are computed and the invisible ones masked. ``flops.py`` counts only the
useful work.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .args import CSA_RATIO, ModelArgs, attention_kind
from .functional import apply_rope, rms_norm_noweight
from .layers import Linear, RMSNorm


# ----------------------------------------------------------------------------- visibility masks
def window_visibility(seq_len: int, window: int, device=None) -> torch.Tensor:
    """bool ``[T, T]``: query t sees token s iff ``t - window < s <= t`` (the window includes t)."""
    t = torch.arange(seq_len, device=device).unsqueeze(-1)
    s = torch.arange(seq_len, device=device).unsqueeze(0)
    return (s <= t) & (s > t - window)


def compressed_visibility(seq_len: int, ratio: int, device=None) -> torch.Tensor:
    """bool ``[T, T // ratio]``: query t sees compressed entry w iff its window
    ``[w*ratio, (w+1)*ratio)`` is complete at or before t, i.e. ``w < (t + 1) // ratio``."""
    t = torch.arange(seq_len, device=device).unsqueeze(-1)
    w = torch.arange(seq_len // ratio, device=device).unsqueeze(0)
    return w < torch.div(t + 1, ratio, rounding_mode="floor")


def topk_selection(index_scores: torch.Tensor, topk: int) -> torch.Tensor:
    """bool mask of the ``topk`` highest scores along the last dim (all of them if fewer)."""
    k = min(topk, index_scores.shape[-1])
    chosen = index_scores.topk(k, dim=-1).indices
    return torch.zeros_like(index_scores, dtype=torch.bool).scatter(-1, chosen, True)


# ------------------------------------------------------------------------------ core attention
def sink_attention(q: torch.Tensor, kv: torch.Tensor, visible: torch.Tensor, sink: torch.Tensor,
                   softmax_scale: float, return_probs: bool = False):
    """Softmax attention with K == V and a per-head sink logit (spec §5.2).

    q ``[B, T, H, D]``, kv ``[B, S, D]``, visible bool broadcastable to ``[B, T, S]`` (every query
    must see at least one key), sink ``[H]``. The sink adds ``exp(sink_h)`` to the softmax
    denominator and has no value vector (HF's form: an extra logit column, dropped afterwards).
    Returns ``[B, T, H, D]`` in kv's dtype (and the fp32 probabilities ``[B, H, T, S]`` with
    ``return_probs``).
    """
    batch, seq_len, n_heads, _ = q.shape
    scores = torch.einsum("bthd,bsd->bhts", q, kv).float() * softmax_scale
    visible = visible.expand(batch, seq_len, visible.shape[-1])
    scores = scores.masked_fill(~visible.unsqueeze(1), float("-inf"))
    sink_logits = sink.float().view(1, n_heads, 1, 1).expand(batch, n_heads, seq_len, 1)
    probs = torch.softmax(torch.cat([scores, sink_logits], dim=-1), dim=-1)[..., :-1]
    out = torch.einsum("bhts,bsd->bthd", probs.to(kv.dtype), kv)
    return (out, probs) if return_probs else out


def indexer_kl(index_scores: torch.Tensor, entry_probs: torch.Tensor, selected: torch.Tensor) -> torch.Tensor:
    """KL(target || indexer) over each query's selected entries, mean over queries that have any.

    target: the main attention's probability mass on each selected compressed entry, summed over
    heads and renormalised (detached); indexer: softmax of its scores over the same entries. This is
    DeepSeek-V3.2's indexer objective in its sparse stage (spec §5.3 background [V3.2]); index_scores
    ``[B, T, W]``, entry_probs ``[B, H, T, W]``, selected bool ``[B, T, W]``."""
    target = entry_probs.detach().sum(1).masked_fill(~selected, 0.0)
    mass = target.sum(-1, keepdim=True)
    has_entries = mass.squeeze(-1) > 0
    target = target / mass.clamp(min=1e-30)
    scores = index_scores.float().masked_fill(~selected, float("-inf"))
    scores = scores.masked_fill(~has_entries.unsqueeze(-1), 0.0)      # keep empty rows finite (no NaN grads)
    log_q = torch.log_softmax(scores, dim=-1).masked_fill(~selected, 0.0)
    terms = target * (torch.log(target.clamp(min=1e-30)) - log_q)     # target is 0 off the selection
    per_query = terms.sum(-1)
    return (per_query * has_entries).sum() / has_entries.sum().clamp(min=1)


class AddAuxiliaryLoss(torch.autograd.Function):
    """Identity on ``x`` whose backward also sends gradient 1 into ``aux_loss`` (the device
    DeepSeek-V2/V3's modeling code uses for auxiliary losses), so a loss computed inside a layer
    trains its parameters without changing the model's outputs or the forward API."""

    @staticmethod
    def forward(ctx, x, aux_loss):
        ctx.aux_dtype, ctx.aux_device = aux_loss.dtype, aux_loss.device
        return x

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output, torch.ones((), dtype=ctx.aux_dtype, device=ctx.aux_device)


# --------------------------------------------------------------------------------- compressor
def _shift_windows(t: torch.Tensor, fill: float) -> torch.Tensor:
    """``[B, W, m, c]`` -> window i holds window i-1's values; window 0 holds ``fill``."""
    return torch.cat([torch.full_like(t[:, :1], fill), t[:, :-1]], dim=1)


class Compressor(nn.Module):
    """Pools each block of ``ratio`` tokens into one KV entry (spec §5.3).

    Gated per-channel softmax pooling over the window's token slots with a learned position bias
    ``ape`` on the gate logits; with ``overlap`` (CSA, ratio 4) the projections are twice as wide
    and entry i pools channels ``[:c]`` of window i-1 together with channels ``[c:]`` of window i.
    Then the weighted RMSNorm and RoPE at the entry's first position ``i * ratio``.
    """

    def __init__(self, dim: int, head_dim: int, ratio: int, eps: float):
        super().__init__()
        self.ratio = ratio
        self.head_dim = head_dim
        self.overlap = ratio == CSA_RATIO
        width = (1 + self.overlap) * head_dim
        self.wkv = Linear(dim, width)
        self.wgate = Linear(dim, width)
        self.ape = nn.Parameter(torch.empty(ratio, width))
        self.norm = RMSNorm(head_dim, eps)

    def forward(self, x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
        """x ``[B, T, dim]``, freqs_cis ``[T, r/2]`` -> entries ``[B, T // ratio, head_dim]``."""
        m = self.ratio
        n_windows = x.shape[1] // m
        kv, gate = self.project(x[:, :n_windows * m], windows=(n_windows, m))
        entries = self.pool(kv, gate, x.dtype)
        return apply_rope(entries, freqs_cis[: n_windows * m: m])

    def project(self, x: torch.Tensor, windows: tuple[int, int] | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """The fp32 projections ``(kv, gate)`` ``[B, T, width]`` of x ``[B, T, dim]`` (gate without
        ``ape``), or ``[B, W, ratio, width]`` with ``windows = (W, ratio)`` (T = W * ratio)."""
        # pooling math in fp32 (spec §5.3; under torch.autocast the two GEMMs run in bf16)
        xf = x.float()
        kv = F.linear(xf, self.wkv.weight.float())
        kv = (kv if windows is None else kv.unflatten(1, windows)).float()
        gate = F.linear(xf, self.wgate.weight.float())
        gate = (gate if windows is None else gate.unflatten(1, windows)).float()
        return kv, gate

    def pool(self, kv: torch.Tensor, gate: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """Normed, not yet rotated entries ``[B, W, head_dim]`` in ``dtype`` from the projections of W
        consecutive complete windows, kv and gate ``[B, W, ratio, width]`` (``project``'s). With
        ``overlap`` window w also pools the first half of window w-1's channels; window 0 has none
        (the incremental decoder, trex.training.model.decode, passes each window with the one before)."""
        c = self.head_dim
        gate = gate + self.ape.float()
        if self.overlap:
            kv = torch.cat([_shift_windows(kv[..., :c], 0.0), kv[..., c:]], dim=2)
            gate = torch.cat([_shift_windows(gate[..., :c], float("-inf")), gate[..., c:]], dim=2)
        entries = (kv * gate.softmax(dim=2)).sum(dim=2)
        return self.norm(entries.to(dtype))


# ---------------------------------------------------------------------------- lightning indexer
class Indexer(nn.Module):
    """Lightning indexer of CSA layers (spec §5.3): ``I[t, s] = sum_h w[t, h] * relu(qI[t, h] . KI[s])``
    with low-rank queries from the shared ``q_norm`` latent and its own overlapping compressor."""

    def __init__(self, args: ModelArgs):
        super().__init__()
        self.n_heads = args.index_n_heads
        self.head_dim = args.index_head_dim
        self.wq_b = Linear(args.q_lora_rank, self.n_heads * self.head_dim)
        self.weights_proj = Linear(args.dim, self.n_heads)
        self.compressor = Compressor(args.dim, self.head_dim, CSA_RATIO, args.norm_eps)
        self.weight_scale = self.head_dim ** -0.5 * self.n_heads ** -0.5

    def forward(self, x: torch.Tensor, q_latent: torch.Tensor, freqs_cis: torch.Tensor,
                visible: torch.Tensor) -> torch.Tensor:
        """Index scores ``[B, T, T // 4]`` fp32, ``-inf`` where not causally visible."""
        q = self.queries(q_latent, freqs_cis)
        keys = self.compressor(x, freqs_cis)
        return self.scores(x, q, keys, visible)

    def queries(self, q_latent: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
        """Rotated indexer queries ``[B, T, n_heads, head_dim]`` (freqs_cis broadcastable to ``[B, T, r/2]``)."""
        q = self.wq_b(q_latent).unflatten(-1, (self.n_heads, self.head_dim))
        return apply_rope(q, freqs_cis.unsqueeze(-2))

    def scores(self, x: torch.Tensor, q: torch.Tensor, keys: torch.Tensor, visible: torch.Tensor) -> torch.Tensor:
        """Index scores ``[B, T, S]`` of the queries ``q`` at x ``[B, T, dim]`` over the indexer entries
        ``keys [B, S, head_dim]`` (``forward``'s own, or the incremental decoder's cached ones),
        ``-inf`` where not ``visible``."""
        weights = self.weights_proj(x).float() * self.weight_scale
        scores = torch.einsum("bthd,bsd->bths", q.float(), keys.float())
        index = (F.relu(scores) * weights.unsqueeze(-1)).sum(dim=2)
        return index.masked_fill(~visible, float("-inf"))


# ---------------------------------------------------------------------------------- attention
class Attention(nn.Module):
    def __init__(self, args: ModelArgs, layer_id: int):
        super().__init__()
        self.layer_id = layer_id
        self.ratio = args.compress_ratios[layer_id]
        self.kind = attention_kind(self.ratio)
        self.n_heads = args.n_heads
        self.head_dim = args.head_dim
        self.window = args.window_size
        self.o_groups = args.o_groups
        self.o_lora_rank = args.o_lora_rank
        self.index_topk = args.index_topk
        self.eps = args.norm_eps
        self.softmax_scale = args.head_dim ** -0.5

        self.wq_a = Linear(args.dim, args.q_lora_rank)
        self.q_norm = RMSNorm(args.q_lora_rank, args.norm_eps)
        self.wq_b = Linear(args.q_lora_rank, args.n_heads * args.head_dim)
        self.wkv = Linear(args.dim, args.head_dim)
        self.kv_norm = RMSNorm(args.head_dim, args.norm_eps)
        self.wo_a = Linear(args.n_heads * args.head_dim // args.o_groups, args.o_groups * args.o_lora_rank)
        self.wo_b = Linear(args.o_groups * args.o_lora_rank, args.dim)
        self.attn_sink = nn.Parameter(torch.empty(args.n_heads))
        self.compressor = (Compressor(args.dim, args.head_dim, self.ratio, args.norm_eps)
                           if self.ratio else None)
        self.indexer = Indexer(args) if self.kind == "csa" else None
        self.indexer_loss_weight = args.indexer_loss_weight

    def forward(self, x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
        """x ``[B, T, dim]``; freqs_cis ``[T, rope_dim/2]`` complex (this layer's base / YaRN)."""
        batch, seq_len, _ = x.shape
        q_latent, q = self.queries(x, freqs_cis)
        kv = self.shared_kv(x, freqs_cis)

        keys = kv
        visible = window_visibility(seq_len, self.window, x.device).expand(batch, seq_len, seq_len)
        index = None
        if self.compressor is not None and seq_len >= self.ratio:
            entries = self.compressor(x, freqs_cis)
            entry_visible = compressed_visibility(seq_len, self.ratio, x.device)
            if self.indexer is not None:
                # The indexer gets no LM gradient: its inputs are detached and the top-k choice is
                # not differentiable (docs/model.md, "indexer training").
                index = self.indexer(x.detach(), q_latent.detach(), freqs_cis, entry_visible)
                entry_visible = self.select_entries(index, entry_visible)
            entry_visible = entry_visible.expand(batch, seq_len, entries.shape[1])
            keys = torch.cat([kv, entries], dim=1)
            visible = torch.cat([visible, entry_visible], dim=-1)

        train_indexer = index is not None and self.indexer_loss_weight > 0 and torch.is_grad_enabled()
        if train_indexer:
            o, probs = sink_attention(q, keys, visible, self.attn_sink, self.softmax_scale, return_probs=True)
            kl = indexer_kl(index, probs[..., seq_len:], entry_visible)
            o = AddAuxiliaryLoss.apply(o, kl * self.indexer_loss_weight)
        else:
            o = sink_attention(q, keys, visible, self.attn_sink, self.softmax_scale)
        return self.output(o, freqs_cis)

    # The pieces of ``forward`` that the incremental decoder (trex.training.model.decode) runs on one new
    # position per row; freqs_cis there is ``[B, 1, r/2]`` (each row's own position).
    def queries(self, x: torch.Tensor, freqs_cis: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(q_latent ``[B, T, q_lora_rank]``, rotated per-head-normed queries ``[B, T, H, D]``)."""
        q_latent = self.q_norm(self.wq_a(x))
        q = self.wq_b(q_latent).unflatten(-1, (self.n_heads, self.head_dim))
        q = rms_norm_noweight(q, self.eps)
        return q_latent, apply_rope(q, freqs_cis.unsqueeze(-2))

    def shared_kv(self, x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
        """The rotated shared K=V ``[B, T, D]`` of every position of x."""
        kv = self.kv_norm(self.wkv(x))
        return apply_rope(kv, freqs_cis)

    def select_entries(self, index: torch.Tensor, entry_visible: torch.Tensor) -> torch.Tensor:
        """The CSA selection: the indexer's top-``index_topk`` entries among the visible ones."""
        return topk_selection(index, self.index_topk) & entry_visible

    def output(self, o: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
        """Rotate the attention output ``[B, T, H, D]`` back, then the output projection."""
        o = apply_rope(o, freqs_cis.unsqueeze(-2), inverse=True)
        return self.output_projection(o)

    def output_projection(self, o: torch.Tensor) -> torch.Tensor:
        """Grouped low-rank projection: ``g`` groups of ``H/g`` heads, each through its own slice of
        ``wo_a`` (``[g * r, (H/g) * D]`` viewed as ``[g, r, (H/g) * D]``), concat, then ``wo_b``."""
        o = o.flatten(2).unflatten(-1, (self.o_groups, -1))
        wo_a = self.wo_a.weight.view(self.o_groups, self.o_lora_rank, -1)
        o = torch.einsum("btgd,grd->btgr", o, wo_a)
        return self.wo_b(o.flatten(2))
