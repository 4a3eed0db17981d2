"""The Triton rule of the `rows_matmul` host step: out[M, K] = a^T @ b over the kernel rows.

mHC's backward leaves dfn = dh^T @ x (dh [T, 24] fp32, x [T, 4*d] bf16) to the host (a GEMM belongs on
the matrix unit). cuBLAS would need x in fp32 (a 4*T*4d-byte copy); this kernel reads x once in its own
dtype and feeds the tensor cores: each program owns a BLOCK_K slab of columns and a span of rows,
accumulates a_tile^T @ b_tile in registers, and writes one partial; the partials of the row splits are
summed by torch (split count chosen so there are >= 2 programs per SM).

Precision: as accurate as an fp32 GEMM, not TF32. Plain TF32 truncates dh to 10 mantissa bits and
lost to eager fp32 on the H200 (cuBLAS runs small GEMMs without TF32: the CUDA tests of run 5 failed
on dfn, up to 5600x eager's error). A bf16 b (the production case) is exact in bf16, so dh is split
into three bf16 parts (hi + mid + lo: 24 mantissa bits, fp32's) and fed as three bf16 dots, the cost
of 1.5 TF32 dots (bf16 runs at twice the TF32 rate), still under the time of reading x. Two parts (16
bits) measured 80x an fp32 GEMM's error on the H200. Any other b takes Triton's tf32x3.
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
        def rows_matmul_kernel(a_ptr, b_ptr, out_ptr, T, M, K, rows_per_split, a_stride, b_stride,
                               BLOCK_M: tl.constexpr, BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr,
                               B_BF16: tl.constexpr):
            pid_k = tl.program_id(0)
            split = tl.program_id(1)
            offs_m = tl.arange(0, BLOCK_M)
            offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
            mask_m = offs_m < M
            mask_k = offs_k < K
            acc = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
            t_lo = split * rows_per_split
            t_hi = tl.minimum(t_lo + rows_per_split, T)
            t0 = t_lo
            while t0 < t_hi:
                offs_t = t0 + tl.arange(0, BLOCK_T)
                mask_t = offs_t < t_hi
                a = tl.load(a_ptr + offs_t[:, None] * a_stride + offs_m[None, :],
                            mask=mask_t[:, None] & mask_m[None, :], other=0.0).to(tl.float32)
                b = tl.load(b_ptr + offs_t[:, None] * b_stride + offs_k[None, :],
                            mask=mask_t[:, None] & mask_k[None, :], other=0.0)
                if B_BF16:   # b exact in bf16: a = hi + mid + lo, three bf16 dots (fp32's 24 bits of a)
                    a_hi = a.to(tl.bfloat16)
                    rest = a - a_hi.to(tl.float32)
                    a_mid = rest.to(tl.bfloat16)
                    a_lo = (rest - a_mid.to(tl.float32)).to(tl.bfloat16)
                    acc += tl.dot(tl.trans(a_hi), b)
                    acc += tl.dot(tl.trans(a_mid), b)
                    acc += tl.dot(tl.trans(a_lo), b)
                else:
                    acc += tl.dot(tl.trans(a), b.to(tl.float32), input_precision="tf32x3")
                t0 += BLOCK_T
            tl.store(out_ptr + split * M * K + offs_m[:, None] * K + offs_k[None, :], acc,
                     mask=mask_m[:, None] & mask_k[None, :])

        _KERNEL = rows_matmul_kernel
    return _KERNEL


def rows_matmul_cuda(a: torch.Tensor, b: torch.Tensor, block_k: int = 128, block_t: int = 64) -> torch.Tensor:
    """a [T, M] (M <= 64), b [T, K] -> a^T @ b [M, K] fp32, fp32-GEMM accurate (module docstring)."""
    import triton
    T, M = a.shape
    K = b.shape[1]
    if M > 64:
        return a.float().T @ b.float()
    a = a.contiguous()
    b = b.contiguous()
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    k_blocks = triton.cdiv(K, block_k)
    splits = max(1, min(triton.cdiv(2 * sms, k_blocks), triton.cdiv(T, 4 * block_t)))
    rows_per_split = triton.cdiv(triton.cdiv(T, splits), block_t) * block_t
    splits = triton.cdiv(T, rows_per_split) if T else 1
    out = torch.empty((splits, M, K), device=a.device, dtype=torch.float32)
    if T == 0:
        return out.zero_().sum(0)
    block_m = max(16, triton.next_power_of_2(M))
    launchable(_kernel(), ("out_ptr",))[(k_blocks, splits)](a, b, out, T, M, K, rows_per_split, a.stride(0), b.stride(0),
                                  BLOCK_M=block_m, BLOCK_T=block_t, BLOCK_K=block_k,
                                  B_BF16=b.dtype == torch.bfloat16, num_warps=4, num_stages=3)
    return out[0] if splits == 1 else out.sum(0)
