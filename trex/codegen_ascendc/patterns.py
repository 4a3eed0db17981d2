"""The fused patterns the AscendC generator knows: name -> IR builder, example sizes, description.

Example sizes follow DeepSeek-V4-Pro (reference/deepseek_v4.md §7: d = 7168, 128 heads, head_dim
512 with 64 rope channels, moe_intermediate 3072, hc_mult 4, 20 Sinkhorn iterations) at 8192
tokens per device step; they are what `trex codegen` tiles for unless --sizes overrides them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from trex.passes.ir_mhc_pre import build_mhc_pre_bwd, build_mhc_pre_fwd
from trex.passes.ir_rmsnorm import build_rms_norm_bwd, build_rms_norm_fwd
from trex.passes.ir_rope import build_rope
from trex.passes.ir_swiglu_limited import build_swiglu_limited_bwd, build_swiglu_limited_fwd
from trex.compiler.kernel_ir import DType, IRError, Program

TOKENS = 8192
HEADS = 128


@dataclass(frozen=True)
class Pattern:
    name: str
    build: Callable[[DType], Program]
    sizes: dict          # size name -> example value
    scalars: dict        # scalar name -> example value
    doc: str


PATTERNS: dict[str, Pattern] = {p.name: p for p in [
    Pattern("rms_norm", lambda dt: build_rms_norm_fwd(dt, True), {"ROWS": TOKENS, "D": 7168}, {"eps": 1e-6},
            "weighted RMSNorm forward (attn_norm/ffn_norm, d = 7168)"),
    Pattern("rms_norm_bwd", lambda dt: build_rms_norm_bwd(dt, True), {"ROWS": TOKENS, "D": 7168}, {},
            "weighted RMSNorm backward"),
    Pattern("swiglu_limited", lambda dt: build_swiglu_limited_fwd(dt, True), {"ROWS": TOKENS, "F": 3072},
            {"limit": 10.0}, "limited SwiGLU with route weight (moe_intermediate 3072, limit 10)"),
    Pattern("swiglu_limited_bwd", lambda dt: build_swiglu_limited_bwd(dt, True), {"ROWS": TOKENS, "F": 3072},
            {"limit": 10.0}, "limited SwiGLU backward"),
    Pattern("rope", lambda dt: build_rope(dt),
            {"ROWS": TOKENS * HEADS, "HD": 512, "RD": 64, "CDIV": HEADS, "CROWS": TOKENS}, {"cdiv": HEADS},
            "partial interleaved RoPE on the query heads (last 64 of 512 channels); the inverse rotation "
            "(and RoPE's backward) is the same kernel with the sine table negated"),
    Pattern("mhc_pre", lambda dt: build_mhc_pre_fwd(dt), {"ROWS": TOKENS, "N": 4, "HD": 7168, "ITERS": 20},
            {"iters": 20, "hc_eps": 1e-6, "rms_eps": 1e-6}, "mHC pre-projection, Sinkhorn and collapse"),
    Pattern("mhc_pre_bwd", lambda dt: build_mhc_pre_bwd(dt), {"ROWS": TOKENS, "N": 4, "HD": 7168, "ITERS": 20},
            {"iters": 20, "hc_eps": 1e-6, "rms_eps": 1e-6}, "mHC pre backward (Sinkhorn iterates recomputed in UB)"),
]}


def pattern(name: str) -> Pattern:
    try:
        return PATTERNS[name]
    except KeyError:
        raise IRError(f"unknown pattern {name!r}; choose one of {sorted(PATTERNS)}") from None
