"""The kernel of ``trex::rope`` (its backward is the inverse rotation, the same kernel): programs and
runners of ir.py, the inputs they do not take, the cuda layout (pairs swapped in registers) and the
example sizes (the query heads: last 64 of 512 channels, 128 heads)."""
from __future__ import annotations

from trex.compiler.kernels import EXAMPLE_TOKENS, V4PRO_HEADS, V4PRO_TOKENS, Guard, KernelSpec, Layout
from trex.compiler.registry import register_kernel_spec

from .ir import build_rope, run_rope, run_rope_pairs


def _sizes(tokens: int, heads: int = V4PRO_HEADS) -> dict:
    return {"ROWS": tokens * heads, "HD": 512, "RD": 64, "CDIV": heads, "CROWS": tokens}


register_kernel_spec(KernelSpec(
    op="rope",
    doc="partial interleaved RoPE on the query heads (last 64 of 512 channels); the inverse rotation "
        "(and RoPE's backward) is the same kernel with the sine table negated",
    layout=Layout(run=run_rope, program=lambda dtype, sizes: build_rope(dtype)),
    # a UB copy at a one-element offset breaks AscendC's 32-byte rule; a GPU swaps in registers
    variants={"cuda": Layout(run=run_rope_pairs, program=lambda dtype, sizes: build_rope(dtype, swap="pairs"))},
    sizes={"example": _sizes(EXAMPLE_TOKENS), "small": {"ROWS": 512, "HD": 128, "RD": 64, "CDIV": 8, "CROWS": 64},
           "tiny": {"ROWS": 32, "HD": 64, "RD": 16, "CDIV": 4, "CROWS": 8}, "v4pro": _sizes(V4PRO_TOKENS)},
    scalars={"cdiv": V4PRO_HEADS, "sgn": 1.0},      # sgn: the cuda program's direction (1 forward)
    guards=(Guard(lambda a: a[3] % 2 or not 2 <= a[3] <= a[0].shape[-1] or a[1].shape[-1] != a[3] // 2,
                  "invalid rope_dim: the reference raises the argument error"),
            Guard(lambda a: a[1].dtype != a[2].dtype, "cos and sin dtypes differ"))))
