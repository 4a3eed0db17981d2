"""The Cube (AIC) GEMM model: the launches an op leaves to the cube unit (a runner's `rows_matmul` host
steps; the projection GEMMs of mHC's AscendC layout, trex/passes/mhc_pre/ir.py "the Cube split").

A GEMM C[m, n] = A[m, k] B[k, n] costs launch + max(GM bytes / chip bandwidth, FLOPs / cube rate)
(the roofline form of reference/ascendc.md §7), with
  * FLOPs = 2 m n k per Cube product. The Cube multiplies bf16 (or fp16) at the full rate and fp32 at
    `cube_fp32_fraction` of it. An fp32 operand against a bf16 one cannot enter the Cube as it is (the
    GM->L1 path converts nothing), so it is split into three bf16 pieces (hi + mid + lo: 3 x 8
    significand bits = fp32's 24, so the product keeps fp32 accuracy) and the GEMM runs 3 products
    accumulated in L0C; the split is one small elementwise launch reading the fp32 operand (4 B) and
    writing the pieces (6 B per element).
  * bytes: the larger operand is streamed from HBM once; the smaller one is read once from HBM and
    re-read once per BLOCK (256, an L0C-sized tile) of the larger one's free dimension; those re-reads
    come from L2 when the operand fits in it (fn's pieces are 4 MB, L2 192 MiB), priced at the AIC's
    L2 read rate, else from HBM; C is written once in fp32. HBM and L2 traffic overlap with the Cube.
Its numbers come from hardware.py (sourced); nothing here has been measured on an NPU.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from trex.cost_models.hardware import AscendHW

BLOCK = 256          # output rows/columns of one L0C tile per re-read of the other operand
SPLIT_PIECES = 3     # bf16 pieces of an fp32 operand (8 + 8 + 8 significand bits)

# (A is 16-bit, B is 16-bit) -> (Cube mode, products per output); a 16-bit operand against an fp32 one
# splits the fp32 one, two fp32 operands use the Cube's fp32 mode
CUBE_MODES = {(True, True): ("bf16", 1), (True, False): ("bf16x3", SPLIT_PIECES),
              (False, True): ("bf16x3", SPLIT_PIECES), (False, False): ("fp32", 1)}


@dataclass(frozen=True)
class GemmPrediction:
    m: int
    n: int
    k: int
    mode: str                 # "bf16" | "bf16x3" | "fp32"
    flops: float              # Cube FLOPs (all products)
    gm_bytes: float           # HBM bytes: GEMM + operand split
    l2_bytes: float           # operand re-reads served by L2
    compute_s: float
    memory_s: float
    launches: int
    time_s: float

    def as_dict(self) -> dict:
        return {"m": self.m, "n": self.n, "k": self.k, "mode": self.mode, "flops": self.flops,
                "gm_bytes": self.gm_bytes, "l2_bytes": self.l2_bytes, "compute_us": self.compute_s * 1e6, "memory_us": self.memory_s * 1e6,
                "launches": self.launches, "time_us": self.time_s * 1e6}


def cube_gemm(hw: AscendHW, m: int, n: int, k: int, a_bytes: int, b_bytes: int) -> GemmPrediction:
    """C[m, n] = A[m, k] B[k, n] on the Cube, A with `a_bytes` and B with `b_bytes` bytes per element in GM
    (2: bf16/fp16, 4: fp32); C is fp32."""
    mode, products = CUBE_MODES[(a_bytes == 2, b_bytes == 2)]
    split_a = mode == "bf16x3" and a_bytes == 4
    split_b = mode == "bf16x3" and b_bytes == 4
    a_in = m * k * (2 * SPLIT_PIECES if split_a else a_bytes)     # bytes of each operand as the Cube reads it
    b_in = k * n * (2 * SPLIT_PIECES if split_b else b_bytes)
    # the smaller operand is re-read per block of the larger one's free dimension
    small, reads = (a_in, math.ceil(n / BLOCK)) if a_in <= b_in else (b_in, math.ceil(m / BLOCK))
    rereads = small * (reads - 1)
    in_l2 = small <= hw.l2_bytes.value
    hbm = a_in + b_in + m * n * 4 + (0 if in_l2 else rereads)
    l2 = rereads if in_l2 else 0
    split = (m * k if split_a else 0) + (k * n if split_b else 0)
    split_bytes = split * (4 + 2 * SPLIT_PIECES)
    flops = 2.0 * m * n * k * products
    compute = flops / hw.cube_flops(fp32=mode == "fp32")
    memory = max(hbm / hw.hbm_bw.value, l2 / hw.l2_read_bw(int(hw.aic_cores.value)))
    launches = 1 + bool(split)
    time = hw.cube_launch_s.value + max(compute, memory) + (hw.launch_s.value + split_bytes / hw.hbm_bw.value
                                                           if split else 0.0)
    return GemmPrediction(m, n, k, mode, flops, hbm + split_bytes, l2, compute, memory, launches, time)


def eager_gemm(hw: AscendHW, m: int, n: int, k: int) -> GemmPrediction:
    """The eager chain's GEMM: torch's matmul on fp32 operands (the chain upcasts x before its linear),
    on the Cube in fp32 mode."""
    return cube_gemm(hw, m, n, k, 4, 4)
