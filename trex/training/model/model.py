"""DeepSeek-V4 Transformer: embedding -> n mHC streams -> blocks -> hc_head -> norm -> head, plus MTP.

Module names equal the official checkpoint names (``embed``, ``layers.{i}.attn.wq_a``,
``layers.{i}.hc_attn_fn``, ``mtp.0.e_proj``, ``hc_head_fn``, ...), so ``state_dict()`` keys are
the official tensor names (checkpoint.py).
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from .args import ModelArgs
from .attention import Attention, Compressor
from .functional import rope_frequencies, rope_table
from .layers import Linear, RMSNorm
from .mhc import hc_head, hc_post, mhc_pre
from .moe import Gate, MoE

# rope table keys: SWA-only layers use rope_theta without YaRN, compressed layers
# compress_rope_theta with YaRN (spec §3)
ROPE_WINDOW, ROPE_COMPRESSED = "window", "compressed"


def rope_key(ratio: int) -> str:
    return ROPE_COMPRESSED if ratio else ROPE_WINDOW


def rope_tables(args: ModelArgs, seq_len: int, device) -> dict[str, torch.Tensor]:
    """Complex rotations ``[seq_len, rope_head_dim // 2]`` for both layer families."""
    window = rope_frequencies(args.rope_head_dim, args.rope_theta, yarn=False, device=device)
    compressed = rope_frequencies(args.rope_head_dim, args.compress_rope_theta, yarn=True,
                                  factor=args.rope_factor, original_seq_len=args.original_seq_len,
                                  beta_fast=args.beta_fast, beta_slow=args.beta_slow, device=device)
    return {ROPE_WINDOW: rope_table(window, seq_len), ROPE_COMPRESSED: rope_table(compressed, seq_len)}


class Block(nn.Module):
    """One layer: an mHC site around attention and one around the MoE (spec §1 ``block``)."""

    def __init__(self, args: ModelArgs, layer_id: int):
        super().__init__()
        self.layer_id = layer_id
        self.rope_key = rope_key(args.compress_ratios[layer_id])
        self.hc_mult = args.hc_mult
        self.hc_iters = args.hc_sinkhorn_iters
        self.hc_eps = args.hc_eps
        self.norm_eps = args.norm_eps
        self.attn_norm = RMSNorm(args.dim, args.norm_eps)
        self.attn = Attention(args, layer_id)
        self.ffn_norm = RMSNorm(args.dim, args.norm_eps)
        self.ffn = MoE(args, layer_id)
        n, mixes = args.hc_mult, (2 + args.hc_mult) * args.hc_mult
        for site in ("attn", "ffn"):
            setattr(self, f"hc_{site}_fn", nn.Parameter(torch.empty(mixes, n * args.dim, dtype=torch.float32)))
            setattr(self, f"hc_{site}_base", nn.Parameter(torch.empty(mixes, dtype=torch.float32)))
            setattr(self, f"hc_{site}_scale", nn.Parameter(torch.empty(3, dtype=torch.float32)))

    def forward(self, x: torch.Tensor, token_ids: torch.Tensor | None,
                rope: dict[str, torch.Tensor]) -> torch.Tensor:
        """x ``[B, T, n, dim]`` streams -> new streams."""
        return self.run_with_attention(x, token_ids, lambda h: self.attn(h, rope[self.rope_key]))

    def run_with_attention(self, x: torch.Tensor, token_ids: torch.Tensor | None,
                           attend: Callable[[torch.Tensor], torch.Tensor]) -> torch.Tensor:
        """``forward`` with the attention sub-layer given as ``attend(normed input) -> output``
        (``forward``'s is ``self.attn`` over the whole sequence; the incremental decoder's reads its
        cache: trex.training.model.decode)."""
        layer_input, post, comb = mhc_pre(x, self.hc_attn_fn, self.hc_attn_scale, self.hc_attn_base,
                                          self.hc_iters, self.hc_eps, self.norm_eps)
        x = hc_post(attend(self.attn_norm(layer_input)), x, post, comb)
        layer_input, post, comb = mhc_pre(x, self.hc_ffn_fn, self.hc_ffn_scale, self.hc_ffn_base,
                                          self.hc_iters, self.hc_eps, self.norm_eps)
        x = hc_post(self.ffn(self.ffn_norm(layer_input), token_ids), x, post, comb)
        return x


class MTPBlock(Block):
    """Multi-token prediction, depth 1 (spec §6): predicts token t+2 from the trunk streams at t and
    the embedding of token t+1; own hc_head and norm, shared embed and head."""

    def __init__(self, args: ModelArgs, layer_id: int):
        super().__init__(args, layer_id)
        self.e_proj = Linear(args.dim, args.dim)
        self.h_proj = Linear(args.dim, args.dim)
        self.enorm = RMSNorm(args.dim, args.norm_eps)
        self.hnorm = RMSNorm(args.dim, args.norm_eps)
        self.norm = RMSNorm(args.dim, args.norm_eps)
        self.hc_head_fn = nn.Parameter(torch.empty(args.hc_mult, args.hc_mult * args.dim, dtype=torch.float32))
        self.hc_head_base = nn.Parameter(torch.empty(args.hc_mult, dtype=torch.float32))
        self.hc_head_scale = nn.Parameter(torch.empty(1, dtype=torch.float32))

    def forward(self, trunk: torch.Tensor, next_embed: torch.Tensor,
                rope: dict[str, torch.Tensor]) -> torch.Tensor:
        """trunk ``[B, T, n, dim]``, next_embed ``[B, T, dim]`` -> normed hidden ``[B, T, dim]``."""
        e = self.e_proj(self.enorm(next_embed))
        x = self.h_proj(self.hnorm(trunk)) + e.unsqueeze(-2)      # embedding broadcast to all streams
        x = super().forward(x, None, rope)
        return self.norm(hc_head(x, self.hc_head_fn, self.hc_head_scale, self.hc_head_base,
                                 self.hc_eps, self.norm_eps))


class Transformer(nn.Module):
    def __init__(self, args: ModelArgs):
        super().__init__()
        if args.n_mtp_layers > 1:
            raise ValueError(f"n_mtp_layers={args.n_mtp_layers}: only MTP depth 0 or 1 is implemented "
                             "(DeepSeek-V4 uses 1)")
        self.args = args
        self.embed = nn.Embedding(args.vocab_size, args.dim, _weight=torch.empty(args.vocab_size, args.dim))
        self.layers = nn.ModuleList(Block(args, i) for i in range(args.n_layers))
        self.norm = RMSNorm(args.dim, args.norm_eps)
        self.head = Linear(args.dim, args.vocab_size)
        self.hc_head_fn = nn.Parameter(torch.empty(args.hc_mult, args.hc_mult * args.dim, dtype=torch.float32))
        self.hc_head_base = nn.Parameter(torch.empty(args.hc_mult, dtype=torch.float32))
        self.hc_head_scale = nn.Parameter(torch.empty(1, dtype=torch.float32))
        self.mtp = nn.ModuleList(MTPBlock(args, args.n_layers + j) for j in range(args.n_mtp_layers))
        if not any(p.is_meta for p in self.parameters()):
            self.init_weights()

    # ------------------------------------------------------------------------------- init
    @torch.no_grad()
    def init_weights(self, seed: int | None = None) -> None:
        """Initialise every parameter and buffer (choices in docs/model.md: DeepSeek's are unpublished).

        Linear / embedding ``N(0, init_std)``; norm weights 1; mHC ``fn ~ N(0, init_std)``,
        ``base = 0``, ``scale = 1`` (HF's choice); sinks, ``ape`` and router biases 0; hash tables
        drawn by ``hash_table``."""
        std = self.args.init_std
        generator = torch.Generator().manual_seed(seed) if seed is not None else None
        for name, module in self.named_modules():
            if isinstance(module, (Linear, nn.Embedding)):
                module.weight.copy_(torch.randn(module.weight.shape, generator=generator) * std)
            elif isinstance(module, RMSNorm):
                module.weight.fill_(1.0)
            elif isinstance(module, Compressor):
                module.ape.zero_()
            elif isinstance(module, MoE):
                module.expert_load.zero_()
            elif isinstance(module, Gate):
                module.weight.copy_(torch.randn(module.weight.shape, generator=generator) * std)
                if module.hash_routed:
                    module.tid2eid.copy_(hash_table(self.args.vocab_size, module.n_experts, module.topk,
                                                    seed=module_seed(name)))
                else:
                    module.bias.zero_()
        for name, param in self.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if leaf.startswith("hc_") and leaf.endswith("_fn"):
                param.copy_(torch.randn(param.shape, generator=generator) * std)
            elif leaf.startswith("hc_") and leaf.endswith("_base"):
                param.zero_()
            elif leaf.startswith("hc_") and leaf.endswith("_scale"):
                param.fill_(1.0)
            elif leaf == "attn_sink":
                param.zero_()

    # ---------------------------------------------------------------------------- forward
    def forward(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """tokens ``[B, T]`` -> (logits ``[B, T, V]``, MTP logits ``[B, T, V]`` or None).

        ``mtp_logits[:, t]`` predicts token ``t + 2``; its last position has no next token to
        embed (a filler is used) and must be excluded from the loss (``lm_loss`` does)."""
        args = self.args
        _, seq_len = tokens.shape
        rope = rope_tables(args, seq_len, tokens.device)
        x = self.embed_streams(tokens)
        for layer in self.layers:
            x = self._run(layer, x, tokens, rope)
        logits = self.head_logits(x)
        if not self.mtp:
            return logits, None
        next_tokens = torch.cat([tokens[:, 1:], tokens[:, -1:]], dim=1)
        mtp_hidden = self._run(self.mtp[0], x, self.embed(next_tokens), rope)
        return logits, self.head(mtp_hidden)

    def embed_streams(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens ``[B, T]`` -> the ``hc_mult`` residual streams ``[B, T, n, dim]`` (copies of the embedding)."""
        return self.embed(tokens).unsqueeze(-2).repeat(1, 1, self.args.hc_mult, 1)

    def head_logits(self, x: torch.Tensor) -> torch.Tensor:
        """Trunk streams ``[B, T, n, dim]`` -> logits ``[B, T, V]`` (hc_head, final norm, LM head)."""
        args = self.args
        out = hc_head(x, self.hc_head_fn, self.hc_head_scale, self.hc_head_base, args.hc_eps, args.norm_eps)
        return self.head(self.norm(out))

    def _run(self, block: nn.Module, *inputs):
        if self.args.activation_checkpointing and torch.is_grad_enabled():
            return checkpoint(block, *inputs, use_reentrant=False)
        return block(*inputs)

    # --------------------------------------------------------------------------- routing
    def moe_layers(self) -> list[MoE]:
        return [m for m in self.modules() if isinstance(m, MoE)]


def module_seed(name: str) -> int:
    """Stable per-module seed (hash tables must not change between runs or processes)."""
    seed = 0
    for ch in name.encode():
        seed = (seed * 131 + ch) % (2 ** 31 - 1)
    return seed


def hash_table(vocab_size: int, n_experts: int, topk: int, seed: int) -> torch.Tensor:
    """Token-id -> ``topk`` distinct expert ids, uniform at random with a fixed seed.

    DeepSeek does not publish how its ``tid2eid`` was built (spec §6, §10.5); this is our choice.
    Checkpoints carry the table, so loaded models route exactly as saved."""
    # on the CPU even inside a `with torch.device("cuda")` build: the table must not depend on the device
    generator = torch.Generator().manual_seed(seed)
    table = torch.empty(vocab_size, topk, dtype=torch.int64, device="cpu")
    chunk = 1 << 14          # bounded memory for the 129k x 384 vocabulary of Pro
    for start in range(0, vocab_size, chunk):
        rows = min(chunk, vocab_size - start)
        table[start:start + rows] = torch.rand(rows, n_experts, generator=generator, device="cpu").argsort(-1)[:, :topk]
    return table


def _masked_ce(logits: torch.Tensor, labels: torch.Tensor, mask: torch.Tensor | None,
               ignore_index: int) -> torch.Tensor:
    ce = F.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), reduction="none",
                         ignore_index=ignore_index)
    weight = (labels.flatten() != ignore_index).float()
    if mask is not None:
        weight = weight * mask.flatten().float()
    return (ce * weight).sum() / weight.sum().clamp(min=1.0)


def lm_loss(logits: torch.Tensor, mtp_logits: torch.Tensor | None, labels: torch.Tensor,
            loss_mask: torch.Tensor | None = None, mtp_weight: float = 0.3,
            ignore_index: int = -100) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Next-token loss plus ``mtp_weight`` times the MTP loss.

    labels ``[B, T]`` are the next tokens (``labels[:, t] = tokens[:, t + 1]``); the MTP head at t
    predicts ``labels[:, t + 1]``, so it is scored on positions ``0..T-2``. ``loss_mask`` (1 =
    count) and ``ignore_index`` labels drop positions; both losses are token means. The MTP
    weight of V4 is not published (spec §6); 0.3 is DeepSeek-V3's early-training value."""
    lm = _masked_ce(logits, labels, loss_mask, ignore_index)
    parts = {"lm": lm.detach()}
    if mtp_logits is None or labels.shape[1] < 2:
        return lm, parts
    mtp_mask = loss_mask[:, 1:] if loss_mask is not None else None
    mtp = _masked_ce(mtp_logits[:, :-1], labels[:, 1:], mtp_mask, ignore_index)
    parts["mtp"] = mtp.detach()
    return lm + mtp_weight * mtp, parts
