"""The Triton rule of the `mhc_pre_proj` host step: mHC's reduce pass (projection, sum of squares and, in the
backward, d(pre)) as a split-K GEMM, x read once.

For x [T, n*d] (stream s = column // d) and fn [M, n*d] (M = (2+n) n):

    h[t, :]   = sum_k x[t, k] fn[:, k]        ss[t] = sum_k x[t, k]^2        dpre[t, s] = sum_c x[t, s*d + c] dli[t, c]

Each program owns BLOCK_T rows and one column slice (stream s, slice j of J per stream) and writes its partial
sums; the coefficient program that follows (trex/passes/mhc_pre/ir.py, "the projection layout") adds the
partials of a row in a fixed order, so the result is deterministic. Why split K (bench/NOTES_gpu.md, session
13): the row-program reduce pass runs one 128-row tile per SM with its coefficient math, Sinkhorn and its
reverse in the same program (255 registers, spills, 2 TB/s); here the stream of x has the SM to itself, J
slices multiply the programs so several tiles per SM keep loads in flight, and the per-row math runs in a
kernel of its own at its own tiling.

Precision as the printed programs' `matvec` (dot_bf16_split): x exact in bf16 against fn = hi + lo, two bf16
dots (fp32 accumulation); any other x dtype takes tf32x3.
"""
from __future__ import annotations

import torch

from .tracing import launchable

_KERNEL = None


def _kernel():
    global _KERNEL
    if _KERNEL is None:
        import triton
        import triton.language as tl

        @triton.jit
        def mhc_proj_kernel(x_ptr, fn_ptr, dli_ptr, hp_ptr, ssp_ptr, dpp_ptr, T, x_stride, dli_stride,
                            D: tl.constexpr, K: tl.constexpr, M: tl.constexpr, J: tl.constexpr, P: tl.constexpr,
                            BLOCK_M: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr,
                            NUM_STAGES: tl.constexpr, WITH_DLI: tl.constexpr, X_BF16: tl.constexpr):
            pid_t = tl.program_id(0)
            q = tl.program_id(1)                       # partial q = s * J + j: stream s, slice j
            s = q // J
            j = q % J
            DJ: tl.constexpr = (D + J - 1) // J
            c_lo = j * DJ
            offs_t = pid_t * BLOCK_T + tl.arange(0, BLOCK_T)
            mask_t = offs_t < T
            offs_m = tl.arange(0, BLOCK_M)
            mask_m = offs_m < M
            acc = tl.zeros([BLOCK_T, BLOCK_M], dtype=tl.float32)
            ss = tl.zeros([BLOCK_T], dtype=tl.float32)
            dp = tl.zeros([BLOCK_T], dtype=tl.float32)
            x_rows = x_ptr + offs_t[:, None] * x_stride + s * D
            fn_rows = fn_ptr + offs_m[:, None] * K + s * D
            for c0 in tl.range(0, DJ, BLOCK_K, num_stages=NUM_STAGES):   # a constant trip count
                offs_c = c_lo + c0 + tl.arange(0, BLOCK_K)
                mask_c = (offs_c < D) & (c0 + tl.arange(0, BLOCK_K) < DJ)
                xb = tl.load(x_rows + offs_c[None, :], mask=mask_t[:, None] & mask_c[None, :], other=0.0)
                w = tl.load(fn_rows + offs_c[None, :], mask=mask_m[:, None] & mask_c[None, :], other=0.0)
                xf = xb.to(tl.float32)
                ss += tl.sum(xf * xf, 1)
                if X_BF16:
                    w_hi = w.to(tl.bfloat16)
                    w_lo = (w - w_hi.to(tl.float32)).to(tl.bfloat16)
                    acc = tl.dot(xb, tl.trans(w_hi), acc)
                    acc = tl.dot(xb, tl.trans(w_lo), acc)
                else:
                    acc = tl.dot(xf, tl.trans(w), acc, input_precision="tf32x3")
                if WITH_DLI:
                    dl = tl.load(dli_ptr + offs_t[:, None] * dli_stride + offs_c[None, :],
                                 mask=mask_t[:, None] & mask_c[None, :], other=0.0)
                    dp += tl.sum(xf * dl.to(tl.float32), 1)
            tl.store(hp_ptr + offs_t[:, None] * (P * M) + q * M + offs_m[None, :], acc,
                     mask=mask_t[:, None] & mask_m[None, :])
            tl.store(ssp_ptr + offs_t * P + q, ss, mask=mask_t)
            if WITH_DLI:
                tl.store(dpp_ptr + offs_t * P + q, dp, mask=mask_t)

        _KERNEL = mhc_proj_kernel
    return _KERNEL


def _proj_writes(kwargs: dict) -> tuple[str, ...]:
    """The parameters mhc_proj_kernel stores to: dpp only with dli (without, ssp stands in its slot)."""
    return ("hp_ptr", "ssp_ptr", "dpp_ptr") if kwargs.get("WITH_DLI") else ("hp_ptr", "ssp_ptr")


def slices_per_stream(rows: int, n: int, d: int, block_t: int, block_k: int, sms: int) -> int:
    """J: enough programs for ~4 resident tiles per SM (loads in flight while a tile's dots run), each
    slice at least 4 column blocks long (so the pipeline fills), a power of two (the partial count P = n J
    stays a power of two for the coefficient program's tile)."""
    tiles = -(-rows // block_t) * n
    j = 1
    while tiles * j < 4 * sms and d // (2 * j) >= 4 * block_k:
        j *= 2
    return j


def default_launch(d: int, with_dli: bool) -> dict:
    """The launch measured best on the H200 (session 13, bench/h200_h17_mhc.py; bench/NOTES_gpu.md): the
    forward's pass over x alone wants wide row tiles, the backward's (x and dli) 64-row tiles."""
    if with_dli:
        return dict(block_t=64, block_k=64, num_warps=4, num_stages=3, slices=None)   # 455.6 us / 39.4 us
    if d >= 4096:
        return dict(block_t=256, block_k=64, num_warps=8, num_stages=3, slices=None)  # 16384 x 4 x 7168: 264 us
    return dict(block_t=128, block_k=128, num_warps=8, num_stages=3, slices=1)        # 8192 x 4 x 1024: 27.7 us


def mhc_proj_triton(x: torch.Tensor, fn: torch.Tensor, n: int, dli: torch.Tensor | None = None,
                    block_t: int | None = None, block_k: int | None = None, num_warps: int | None = None,
                    num_stages: int | None = None, slices: int | None = None
                    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """x [T, n*d], fn [M, n*d] (M <= 64), dli [T, d] or None -> (hpart [T, P, M], sspart [T, P],
    dppart [T, n, J] or None), fp32, P = n J partials per row (J column slices per stream). Launch
    parameters left None take `default_launch`'s."""
    import triton
    T, K = x.shape
    d = K // n
    if block_t is None:
        dflt = default_launch(d, dli is not None)
        block_t, block_k, num_warps, num_stages = (dflt[k] for k in ("block_t", "block_k", "num_warps", "num_stages"))
        slices = slices or dflt["slices"]
    block_k, num_warps, num_stages = block_k or 64, num_warps or 4, num_stages or 3
    M = fn.shape[0]
    if M > 64 or K != n * d:
        raise ValueError(f"mhc_proj_triton: M={M} > 64 or {K} columns are not n={n} streams; use the Executor's torch step")
    x = x if x.stride(-1) == 1 else x.contiguous()
    fn = fn.float().contiguous()
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4
    J = slices or slices_per_stream(T, n, d, block_t, block_k, sms)
    P = n * J
    hp = torch.empty((T, P, M), device=x.device, dtype=torch.float32)
    ssp = torch.empty((T, P), device=x.device, dtype=torch.float32)
    dpp = torch.empty((T, n, J), device=x.device, dtype=torch.float32) if dli is not None else None
    if T:
        if dli is not None and dli.stride(-1) != 1:
            dli = dli.contiguous()
        launchable(_kernel(), _proj_writes)[(triton.cdiv(T, block_t), P)](
            x, fn, dli if dli is not None else x, hp, ssp, dpp if dpp is not None else ssp, T, x.stride(0),
            dli.stride(0) if dli is not None else 0, D=d, K=K, M=M, J=J, P=P,
            BLOCK_M=max(16, triton.next_power_of_2(M)), BLOCK_T=block_t, BLOCK_K=block_k, NUM_STAGES=num_stages,
            WITH_DLI=dli is not None, X_BF16=x.dtype == torch.bfloat16, num_warps=num_warps)
    return hp, ssp, dpp
