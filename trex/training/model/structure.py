"""How many fused-op sites one forward + backward of ``Transformer(args)`` contains, derived from the
model structure (for asserting trex fusion counts against the model, issue 3's compile acceptance).

Per block (trunk and MTP) of compress ratio r:
  * ``mhc_pre``: 2 (attention and MoE sites);
  * ``rms_norm``: attn_norm, ffn_norm, q_norm, the weight-free per-head query norm, kv_norm (5);
    +1 compressor norm if r > 0 and T >= r; +1 indexer-compressor norm on CSA layers (T >= 4);
  * ``rope``: query, kv, inverse on the output (3); +1 compressor entries if r > 0 and T >= r;
    +2 (indexer query and indexer-compressor keys) on CSA layers (T >= 4);
  * ``swiglu_limited``: one per expert call (routed experts with dense dispatch) + the shared expert.
Global: the final ``norm`` and, per MTP block, ``enorm``, ``hnorm`` and its ``norm`` (``rms_norm``).
Backward: the indexer is detached (no LM gradient), so its norm and RoPE sites have no backward.
Sparse dispatch breaks the graph at the per-expert counts, so expert sites are not static there.
"""
from __future__ import annotations

from .args import ModelArgs, attention_kind


def expected_fused_ops(args: ModelArgs, seq_len: int) -> dict[str, dict[str, int]]:
    """``{op: {"forward": n, "backward": n}}`` for ``mhc_pre``, ``rms_norm``, ``rope``, ``swiglu_limited``."""
    if args.moe_dispatch != "dense":
        raise ValueError(f"moe_dispatch={args.moe_dispatch!r}: expert call sites are only static with "
                         "moe_dispatch='dense'")
    counts = {op: {"forward": 0, "backward": 0} for op in ("mhc_pre", "rms_norm", "rope", "swiglu_limited")}

    def add(op: str, n: int, backward: bool = True) -> None:
        counts[op]["forward"] += n
        if backward:
            counts[op]["backward"] += n

    for ratio in args.compress_ratios:
        add("mhc_pre", 2)
        add("rms_norm", 5)
        add("rope", 3)
        if ratio and seq_len >= ratio:
            add("rms_norm", 1)
            add("rope", 1)
        if attention_kind(ratio) == "csa" and seq_len >= ratio:
            add("rms_norm", 1, backward=False)
            add("rope", 2, backward=False)
        add("swiglu_limited", args.n_routed_experts + (1 if args.n_shared_experts else 0))
    add("rms_norm", 1 + 3 * args.n_mtp_layers)
    return counts
