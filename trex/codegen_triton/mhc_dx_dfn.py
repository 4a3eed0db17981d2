"""The Triton rule of the `mhc_pre_dx_dfn` host step: mHC's backward apply pass, dx and dfn from ONE read of x.

After the backward's reduce kernel (per row: dh [24] = d(projection), dss2 = 2 d(sum of squares), pre [n]),
what is left is column-local: for x [T, n*d] (stream s = column // d),

    dx[t, k]  = x[t, k] * dss2[t] + pre[t, s] * dli[t, k mod d] + sum_m dh[t, m] fn[m, k]
    dfn[m, k] = sum_t dh[t, m] x[t, k]

The Kernel IR's row programs cannot accumulate dfn (its [24, n*d] accumulator is per column, across all
rows: 2.75 MB), so the split programs left it to a rows GEMM that read x a second time (940 MB at the bench
shape, ~0.25 ms). This kernel is that GEMM (trex/codegen_triton/gemm.py: each program owns a BLOCK_K
slab of columns and a span of rows, dfn accumulates in registers, one partial per row split) with dx
computed from the same x tile: x is read once, dli once per stream (the n programs of one column block
run together, the rest from L2), dx written once.

Precision as the printed programs and the rows GEMM: dh . fn on the TF32 tensor cores (the programs'
matvec_t), dfn as three bf16 dots of dh = hi + mid + lo against the exact bf16 x (fp32's 24 bits; any
other x dtype takes tf32x3).
"""
from __future__ import annotations

import torch

from .tracing import launchable

_KERNEL = None


def _kernel():
    global _KERNEL, _dx_dfn_rows   # the kernel finds its helper among the module's globals, as Triton resolves names
    if _KERNEL is None:
        import triton
        import triton.language as tl

        @triton.jit
        def _dx_dfn_rows(x_ptr, dli_ptr, dh_ptr, dss2_ptr, pre_ptr, dx_ptr, w, acc, t0, t_hi, s, offs_k, offs_d,
                         offs_m, mask_m, x_stride, dli_stride, dh_stride, pre_stride, dx_stride,
                         BLOCK_T: tl.constexpr, X_BF16: tl.constexpr):
            """One BLOCK_T-row tile: dx stored, the tile's dfn contribution added to acc."""
            offs_t = t0 + tl.arange(0, BLOCK_T)
            mask_t = offs_t < t_hi
            xb = tl.load(x_ptr + offs_t[:, None] * x_stride + offs_k[None, :], mask=mask_t[:, None], other=0.0)
            g = tl.load(dh_ptr + offs_t[:, None] * dh_stride + offs_m[None, :],
                        mask=mask_t[:, None] & mask_m[None, :], other=0.0)
            c2 = tl.load(dss2_ptr + offs_t, mask=mask_t, other=0.0)
            p = tl.load(pre_ptr + offs_t * pre_stride + s, mask=mask_t, other=0.0)
            dl = tl.load(dli_ptr + offs_t[:, None] * dli_stride + offs_d[None, :], mask=mask_t[:, None], other=0.0)
            dxf = xb.to(tl.float32) * c2[:, None]
            dxf = dxf + dl.to(tl.float32) * p[:, None]
            dxf = dxf + tl.dot(g, w)
            tl.store(dx_ptr + offs_t[:, None] * dx_stride + offs_k[None, :], dxf.to(dx_ptr.dtype.element_ty),
                     mask=mask_t[:, None])
            if X_BF16:   # x exact in bf16: dh = hi + mid + lo, three bf16 dots (fp32's 24 bits of dh)
                g_hi = g.to(tl.bfloat16)
                rest = g - g_hi.to(tl.float32)
                g_mid = rest.to(tl.bfloat16)
                g_lo = (rest - g_mid.to(tl.float32)).to(tl.bfloat16)
                acc += tl.dot(tl.trans(g_hi), xb)
                acc += tl.dot(tl.trans(g_mid), xb)
                acc += tl.dot(tl.trans(g_lo), xb)
            else:
                acc += tl.dot(tl.trans(g), xb.to(tl.float32), input_precision="tf32x3")
            return acc

        @triton.jit
        def mhc_dx_dfn_kernel(x_ptr, dli_ptr, fn_ptr, dh_ptr, dss2_ptr, pre_ptr, dx_ptr, dfn_ptr,
                              T, M, rows_per_split, x_stride, dli_stride, dh_stride, pre_stride, dx_stride,
                              D: tl.constexpr, K: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_T: tl.constexpr,
                              BLOCK_K: tl.constexpr, X_BF16: tl.constexpr, PIPELINE: tl.constexpr,
                              LOOP_STAGES: tl.constexpr):
            pid_k = tl.program_id(0)
            split = tl.program_id(1)
            k0 = pid_k * BLOCK_K
            s = k0 // D                                   # BLOCK_K divides D: one stream per block
            offs_k = k0 + tl.arange(0, BLOCK_K)
            offs_d = offs_k - s * D
            offs_m = tl.arange(0, BLOCK_M)
            mask_m = offs_m < M
            w = tl.load(fn_ptr + offs_m[:, None] * K + offs_k[None, :], mask=mask_m[:, None], other=0.0)
            acc = tl.zeros([BLOCK_M, BLOCK_K], dtype=tl.float32)
            t_lo = split * rows_per_split
            t_hi = tl.minimum(t_lo + rows_per_split, T)
            if PIPELINE:
                # a counted loop: what Triton's software pipeliner overlaps (loads of tile i+1 with tile i's
                # dots); the interpreter takes no runtime range bound under numpy 2, hence the while form
                for t0 in tl.range(t_lo, t_hi, BLOCK_T, num_stages=LOOP_STAGES):
                    acc = _dx_dfn_rows(x_ptr, dli_ptr, dh_ptr, dss2_ptr, pre_ptr, dx_ptr, w, acc, t0, t_hi, s,
                                       offs_k, offs_d, offs_m, mask_m, x_stride, dli_stride, dh_stride,
                                       pre_stride, dx_stride, BLOCK_T, X_BF16)
            else:
                t0 = t_lo
                while t0 < t_hi:
                    acc = _dx_dfn_rows(x_ptr, dli_ptr, dh_ptr, dss2_ptr, pre_ptr, dx_ptr, w, acc, t0, t_hi, s,
                                       offs_k, offs_d, offs_m, mask_m, x_stride, dli_stride, dh_stride,
                                       pre_stride, dx_stride, BLOCK_T, X_BF16)
                    t0 += BLOCK_T
            tl.store(dfn_ptr + split * M * K + offs_m[:, None] * K + offs_k[None, :], acc, mask=mask_m[:, None])

        _KERNEL = mhc_dx_dfn_kernel
    return _KERNEL


def block_k(d: int, most: int = 128) -> int:
    """The column block: the largest power of two <= `most` dividing d (0 when below 16: no kernel)."""
    b = most
    while b >= 16 and d % b:
        b //= 2
    return b if b >= 16 else 0


def mhc_dx_dfn_triton(x: torch.Tensor, dli: torch.Tensor, fn: torch.Tensor, dh: torch.Tensor, dss2: torch.Tensor,
                      pre: torch.Tensor, block_t: int = 64, num_warps: int = 4, num_stages: int = 3,
                      block_k_max: int = 128, pipeline: bool | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """x [T, n*d], dli [T, d] (x's dtype), fn [M, n*d], dh [T, M] (M <= 64), dss2 [T, 1], pre [T, n] ->
    (dx [T, n*d] in x's dtype, dfn [M, n*d] fp32). d must have a power-of-two divisor >= 16 (block_k).
    The default launch is the fastest of H200 run 12's five (bench/NOTES_gpu.md, session 8: 1.48 ms at
    16384 x 4 x 7168; 32 rows x 8 warps, the one without spills, 3.74 ms). ``pipeline`` (default: on CUDA)
    runs the row loop as a counted ``tl.range`` that Triton software-pipelines: session 14 measured 1.13 ms
    against the while loop's 1.50 at 16384 x 4 x 7168 and 106 against 139 us at 8192 x 4 x 1024; Triton's
    interpreter cannot run it (a runtime range bound under numpy 2), so the CPU takes the while loop."""
    import triton
    T, K = x.shape
    d = dli.shape[1]
    M = dh.shape[1]
    bk = block_k(d, block_k_max)
    if not bk or M > 64:
        raise ValueError(f"mhc_dx_dfn_triton: d={d} has no power-of-two divisor >= 16 or M={M} > 64; "
                         f"use the Executor's torch step")
    x, dli, dh, pre = x.contiguous(), dli.contiguous(), dh.float().contiguous(), pre.float().contiguous()
    dss2 = dss2.float().reshape(T).contiguous()
    fn = fn.float().contiguous()
    dx = torch.empty_like(x)
    sms = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 4
    k_blocks = K // bk
    splits = max(1, min(triton.cdiv(2 * sms, k_blocks), triton.cdiv(T, 4 * block_t)))
    rows_per_split = triton.cdiv(triton.cdiv(T, splits), block_t) * block_t if T else block_t
    splits = triton.cdiv(T, rows_per_split) if T else 1
    out = torch.zeros((splits, M, K), device=x.device, dtype=torch.float32)
    if T:
        launchable(_kernel(), ("dx_ptr", "dfn_ptr"))[(k_blocks, splits)](
            x, dli, fn, dh, dss2, pre, dx, out, T, M, rows_per_split, x.stride(0), dli.stride(0), dh.stride(0),
            pre.stride(0), dx.stride(0), D=d, K=K, BLOCK_M=max(16, triton.next_power_of_2(M)), BLOCK_T=block_t,
            BLOCK_K=bk, X_BF16=x.dtype == torch.bfloat16, PIPELINE=x.is_cuda if pipeline is None else bool(pipeline),
            LOOP_STAGES=num_stages, num_warps=num_warps, num_stages=num_stages)
    return dx, (out[0] if splits == 1 else out.sum(0))
