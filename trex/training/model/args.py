"""DeepSeek-V4 hyper-parameters (``ModelArgs``) and the named configurations.

Field names follow the official ``inference/model.py`` ``ModelArgs`` where one exists
(reference/deepseek_v4.md §7, [REF]/[INF-CFG]); values of ``flash`` and ``pro`` are the
shipped config.json values quoted there. ``tiny`` is the spec's §8 configuration; ``small``
is this project's single-H200 training size (see docs/model.md).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

# The reference keys the overlapping compressor and the lightning indexer on ratio == 4
# (spec §5.3, §8); ratio 0 is sliding-window only, every other ratio is HCA.
CSA_RATIO = 4
SCORE_FUNCS = ("sqrtsoftplus",)
MOE_DISPATCH_MODES = ("sparse", "dense", "grouped")


def attention_kind(ratio: int) -> str:
    """'swa' (window only), 'csa' (window + top-k compressed) or 'hca' (window + all compressed)."""
    if ratio == 0:
        return "swa"
    return "csa" if ratio == CSA_RATIO else "hca"


@dataclass
class ModelArgs:
    # vocabulary / widths
    vocab_size: int = 129280
    dim: int = 4096
    n_layers: int = 43
    n_mtp_layers: int = 1
    # attention
    n_heads: int = 64
    head_dim: int = 512
    rope_head_dim: int = 64
    q_lora_rank: int = 1024
    o_groups: int = 8
    o_lora_rank: int = 1024
    window_size: int = 128
    # one entry per trunk layer, then one per MTP layer (the MTP block is SWA-only: 0)
    compress_ratios: tuple[int, ...] = field(
        default_factory=lambda: (0, 0) + (4, 128) * 20 + (4,) + (0,))
    index_n_heads: int = 64
    index_head_dim: int = 128
    index_topk: int = 512
    # MoE
    n_routed_experts: int = 256
    n_activated_experts: int = 6
    n_shared_experts: int = 1
    moe_inter_dim: int = 2048
    n_hash_layers: int = 3
    score_func: str = "sqrtsoftplus"
    route_scale: float = 1.5
    swiglu_limit: float = 10.0
    # mHC
    hc_mult: int = 4
    hc_sinkhorn_iters: int = 20
    hc_eps: float = 1e-6
    norm_eps: float = 1e-6
    # RoPE: SWA layers use rope_theta without YaRN, compressed layers compress_rope_theta + YaRN
    rope_theta: float = 10000.0
    compress_rope_theta: float = 160000.0
    rope_factor: float = 16.0
    original_seq_len: int = 65536
    beta_fast: int = 32
    beta_slow: int = 1
    # training-port choices (not in the official config; see docs/model.md)
    max_seq_len: int = 4096
    init_std: float = 0.02
    activation_checkpointing: bool = False
    moe_dispatch: str = "sparse"
    # > 0: train the lightning indexer with DeepSeek-V3.2's KL objective (weight of that loss);
    # 0: the indexer gets no gradient at all (docs/model.md, "indexer training")
    indexer_loss_weight: float = 0.0

    def __post_init__(self) -> None:
        self.compress_ratios = tuple(int(r) for r in self.compress_ratios)
        problems = []
        want = self.n_layers + self.n_mtp_layers
        if len(self.compress_ratios) != want:
            problems.append(f"compress_ratios has {len(self.compress_ratios)} entries; it needs one per trunk "
                            f"layer plus one per MTP layer = {want}")
        if any(r < 0 for r in self.compress_ratios):
            problems.append(f"compress_ratios must be >= 0, got {self.compress_ratios}")
        if self.rope_head_dim % 2 or not 0 < self.rope_head_dim <= min(self.head_dim, self.index_head_dim):
            problems.append(f"rope_head_dim={self.rope_head_dim} must be even and <= head_dim ({self.head_dim}) "
                            f"and index_head_dim ({self.index_head_dim})")
        if self.n_heads % self.o_groups:
            problems.append(f"n_heads={self.n_heads} must be divisible by o_groups={self.o_groups}")
        if not 0 < self.n_activated_experts <= self.n_routed_experts:
            problems.append(f"n_activated_experts={self.n_activated_experts} must be in 1..n_routed_experts "
                            f"({self.n_routed_experts})")
        if self.n_hash_layers > self.n_layers:
            problems.append(f"n_hash_layers={self.n_hash_layers} exceeds n_layers={self.n_layers}")
        if self.score_func not in SCORE_FUNCS:
            problems.append(f"score_func={self.score_func!r} is not one of {SCORE_FUNCS}")
        if self.moe_dispatch not in MOE_DISPATCH_MODES:
            problems.append(f"moe_dispatch={self.moe_dispatch!r} is not one of {MOE_DISPATCH_MODES}")
        if self.indexer_loss_weight < 0:
            problems.append(f"indexer_loss_weight={self.indexer_loss_weight} must be >= 0")
        if self.hc_sinkhorn_iters < 1:
            problems.append(f"hc_sinkhorn_iters={self.hc_sinkhorn_iters} must be >= 1")
        if problems:
            raise ValueError("invalid ModelArgs: " + "; ".join(problems))

    @property
    def n_blocks(self) -> int:
        return self.n_layers + self.n_mtp_layers

    def replace(self, **changes) -> "ModelArgs":
        return dataclasses.replace(self, **changes)


def _flash() -> ModelArgs:
    # reference/deepseek_v4.md §7, column V4-Flash ([CFG-F])
    return ModelArgs()


def _pro() -> ModelArgs:
    # reference/deepseek_v4.md §7, column V4-Pro ([CFG-P])
    return ModelArgs(
        dim=7168, n_layers=61, n_heads=128, q_lora_rank=1536, o_groups=16, o_lora_rank=1024,
        compress_ratios=(128, 128) + (4, 128) * 29 + (4,) + (0,),
        index_topk=1024, n_routed_experts=384, moe_inter_dim=3072, route_scale=2.5)


def _tiny() -> ModelArgs:
    # reference/deepseek_v4.md §8: every mechanism active at T = 64 on a CPU.
    return ModelArgs(
        vocab_size=4096, dim=128, n_layers=4, n_mtp_layers=1,
        n_heads=4, head_dim=64, rope_head_dim=16, q_lora_rank=64, o_groups=2, o_lora_rank=32,
        window_size=16, compress_ratios=(0, 4, 16, 4, 0),
        index_n_heads=4, index_head_dim=32, index_topk=4,
        n_routed_experts=8, n_activated_experts=2, n_shared_experts=1, moe_inter_dim=64,
        n_hash_layers=1, route_scale=1.5, swiglu_limit=10.0,
        max_seq_len=64,
        # all experts on all tokens, weighted: static shapes for torch.compile (same math)
        moe_dispatch="dense")


def _small() -> ModelArgs:
    # ~0.76B parameters (0.2B activated): trains on one H200 with a 32k vocabulary.
    # Layer pattern as Flash (2 SWA, then CSA/HCA alternating), HCA ratio 128 as in the real model.
    return ModelArgs(
        vocab_size=32768, dim=1024, n_layers=12, n_mtp_layers=1,
        n_heads=16, head_dim=128, rope_head_dim=32, q_lora_rank=512, o_groups=4, o_lora_rank=512,
        window_size=128, compress_ratios=(0, 0) + (4, 128) * 5 + (0,),
        index_n_heads=16, index_head_dim=64, index_topk=128,
        n_routed_experts=32, n_activated_experts=6, n_shared_experts=1, moe_inter_dim=512,
        n_hash_layers=1, route_scale=1.5, swiglu_limit=10.0,
        max_seq_len=4096)


def _flash_h200() -> ModelArgs:
    # V4-Flash's widths (dim 4096, 64 heads x 512 with 64 rope dims, q/o ranks 1024, 8 output groups,
    # indexer 64 x 128, experts 2048 wide, top-6 + 1 shared, window 128, ratios 4 / 128, Flash's
    # vocabulary) cut in depth (4 trunk layers in Flash's order: SWA, SWA, CSA, HCA; + the SWA MTP
    # block) and experts (16) so that weights, grads, AdamW state and the activations of 4 x 1024
    # tokens fit one H200; index_topk 128 selects half of the 256 CSA entries at T = 1024 (docs/model.md).
    return ModelArgs(
        n_layers=4, compress_ratios=(0, 0, 4, 128) + (0,), n_routed_experts=16, n_hash_layers=1,
        index_topk=128, max_seq_len=1024, moe_dispatch="grouped")


CONFIGS = {"tiny": _tiny, "small": _small, "flash_h200": _flash_h200, "flash": _flash, "pro": _pro}


def get_config(name: str, **overrides) -> ModelArgs:
    """Return a fresh ``ModelArgs`` for ``tiny|small|flash_h200|flash|pro``; keyword overrides replace fields."""
    try:
        make = CONFIGS[name]
    except KeyError:
        raise ValueError(f"unknown model config {name!r}; choose one of {sorted(CONFIGS)}") from None
    args = make()
    return dataclasses.replace(args, **overrides) if overrides else args
