"""Parameter counts (from the built meta model) and training FLOPs per token (spec §9).

Counting convention (spec §7, §9, §10.4): "activated" parameters exclude the input-embedding
lookup, include the LM head, and count ``n_activated_experts`` of the routed experts per layer
(plus the shared expert); the main-model figures exclude the MTP block, which is reported
separately.
"""
from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass

import torch

from .args import ModelArgs, attention_kind

_ROUTED_EXPERT = re.compile(r"\.ffn\.experts\.\d+\.")


@dataclass(frozen=True)
class ParameterCount:
    total: int                 # main model (embedding, trunk, head), without MTP
    activated: int             # per token: without input embedding and MTP, k routed experts per layer
    embedding: int
    routed_experts: int        # all routed-expert weights of the main model
    mtp_total: int
    mtp_activated: int         # the MTP block's per-token parameters (the shared head not included)

    @property
    def total_with_mtp(self) -> int:
        return self.total + self.mtp_total

    @property
    def activated_with_mtp(self) -> int:
        return self.activated + self.mtp_activated


def count_parameters(args: ModelArgs) -> ParameterCount:
    """Count the parameters of ``Transformer(args)`` built on the meta device (no memory used)."""
    return _count_parameters_cached(dataclasses.astuple(args))


@functools.lru_cache(maxsize=16)
def _count_parameters_cached(fields: tuple) -> ParameterCount:
    from .model import Transformer   # model imports nothing from here; keep the import local anyway

    args = ModelArgs(*fields)
    with torch.device("meta"):
        model = Transformer(args)
    sums = {"main": 0, "main_routed": 0, "embedding": 0, "mtp": 0, "mtp_routed": 0}
    for name, param in model.named_parameters():
        part = "mtp" if name.startswith("mtp.") else "main"
        sums[part] += param.numel()
        if _ROUTED_EXPERT.search(name):
            sums[part + "_routed"] += param.numel()
        if name.startswith("embed."):
            sums["embedding"] += param.numel()
    active_fraction = args.n_activated_experts / args.n_routed_experts

    def activated(total: int, routed: int) -> int:
        return total - routed + round(routed * active_fraction)

    return ParameterCount(
        total=sums["main"],
        activated=activated(sums["main"], sums["main_routed"]) - sums["embedding"],
        embedding=sums["embedding"],
        routed_experts=sums["main_routed"],
        mtp_total=sums["mtp"],
        mtp_activated=activated(sums["mtp"], sums["mtp_routed"]),
    )


# ------------------------------------------------------------------------ attention key counts
def mean_attended_keys(args: ModelArgs, ratio: int, seq_len: int) -> float:
    """Mean over query positions t = 0..T-1 of the keys a query really attends to (spec §9 n̄_kv):
    window ``min(t+1, W)`` plus, for CSA, ``min(topk, (t+1)//4)`` and, for HCA, ``(t+1)//ratio``."""
    t1 = torch.arange(1, seq_len + 1, dtype=torch.float64)
    keys = t1.clamp(max=args.window_size)
    kind = attention_kind(ratio)
    if kind == "csa":
        keys = keys + torch.div(t1, ratio, rounding_mode="floor").clamp(max=args.index_topk)
    elif kind == "hca":
        keys = keys + torch.div(t1, ratio, rounding_mode="floor")
    return float(keys.mean())


def mean_indexed_entries(ratio: int, seq_len: int) -> float:
    """Mean number of compressed entries the indexer scores per query: ``mean_t (t+1)//ratio``."""
    t1 = torch.arange(1, seq_len + 1, dtype=torch.float64)
    return float(torch.div(t1, ratio, rounding_mode="floor").mean())


def flops_breakdown(args: ModelArgs, seq_len: int, indexer_trained: bool | None = None) -> dict[str, float]:
    """Training FLOPs per token by part (spec §9).

    ``dense``: 6 x activated parameters (excl. input embedding, incl. head, gate, mHC fn, compressor
    and indexer projections); ``attention``: 6 x (QK^T + PV) MACs over the keys really attended,
    K = V = head_dim; ``indexer``: 2 FLOPs/MAC (forward only, no LM gradient: this model's choice)
    or 6 if ``indexer_trained`` (default: ``args.indexer_loss_weight > 0``), over every visible
    compressed entry; ``mtp``: the MTP block's
    activated parameters, its second pass through the head, and its SWA attention (all x 6).
    Norms, softmax, RoPE, pooling and the mHC mixing (< 0.1 %) are not counted.
    """
    counts = count_parameters(args)
    if indexer_trained is None:
        indexer_trained = args.indexer_loss_weight > 0
    per_key = 2 * args.n_heads * args.head_dim            # MACs of QK^T plus PV for one key
    trunk_ratios = args.compress_ratios[:args.n_layers]
    attention = sum(6 * per_key * mean_attended_keys(args, r, seq_len) for r in trunk_ratios)
    index_factor = 6 if indexer_trained else 2
    index_macs = args.index_n_heads * args.index_head_dim
    indexer = sum(index_factor * index_macs * mean_indexed_entries(r, seq_len)
                  for r in trunk_ratios if attention_kind(r) == "csa")
    mtp = 0.0
    for r in args.compress_ratios[args.n_layers:]:
        mtp += 6 * per_key * mean_attended_keys(args, r, seq_len)
    if args.n_mtp_layers:
        mtp += 6 * counts.mtp_activated + 6 * args.dim * args.vocab_size
    return {"dense": 6.0 * counts.activated, "attention": attention, "indexer": indexer, "mtp": mtp}


def flops_per_token(args: ModelArgs, seq_len: int, include_mtp: bool = True,
                    indexer_trained: bool | None = None) -> float:
    """Model FLOPs per trained token at sequence length ``seq_len`` (no recompute, no masked work)."""
    parts = flops_breakdown(args, seq_len, indexer_trained)
    if not include_mtp:
        parts.pop("mtp")
    return sum(parts.values())
