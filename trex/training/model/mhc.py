"""Manifold-constrained hyper-connections (mHC) as used by DeepSeek-V4 (spec §1).

Each block has two mHC sites (around attention and around the MoE). A site's pre-projection
(``mhc_pre``: coefficients + Sinkhorn + collapse, the chain the trex ``mhc_pre`` pass fuses) turns
the ``n`` residual streams ``[..., n, d]`` into one layer input ``[..., d]`` and returns the
``post`` gains and the doubly-stochastic ``comb`` matrix that ``hc_post`` uses to write the
sub-layer output back into the streams.
"""
from __future__ import annotations

import torch


def sinkhorn(logits: torch.Tensor, iters: int, eps: float) -> torch.Tensor:
    """Sinkhorn-Knopp on the last two dims ``[..., n, n]``, V4's variant (spec §1): row softmax + eps,
    a column pass, then ``iters - 1`` (row, column) passes; every denominator gets ``+ eps``.
    The last pass is a column pass, so ``M.sum(-2) == 1`` (up to eps) and rows approach 1.
    """
    m = torch.softmax(logits, dim=-1) + eps
    m = m / (m.sum(-2, keepdim=True) + eps)
    for _ in range(iters - 1):
        m = m / (m.sum(-1, keepdim=True) + eps)
        m = m / (m.sum(-2, keepdim=True) + eps)
    return m


def mhc_pre(x: torch.Tensor, fn: torch.Tensor, scale: torch.Tensor, base: torch.Tensor,
            iters: int, hc_eps: float, rms_eps: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One mHC site's pre-projection.

    x ``[..., n, d]`` streams; fn ``[(2+n)*n, n*d]``, scale ``[3]``, base ``[(2+n)*n]`` (fp32 math).
    Returns layer_input ``[..., d]`` in x.dtype, post ``[..., n]`` fp32 in (0, 2), comb
    ``[..., n, n]`` fp32 with ``comb[j, k]`` = weight of input stream j in output stream k.
    """
    # The spelling mirrors trex/passes/mhc_pre/pattern.py's chain (and spec §1); fn/scale/base are fp32
    # parameters, so their .float() is a no-op in the traced graph.
    n = x.shape[-2]
    fn, scale, base = fn.float(), scale.float(), base.float()
    xf = x.flatten(-2).float()
    # weight-free RMSNorm over all n*d channels, applied after the GEMM as a per-token scalar
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + rms_eps)
    z = (xf @ fn.t()) * r
    zp, zq, zc = z[..., :n], z[..., n:2 * n], z[..., 2 * n:].unflatten(-1, (n, n))
    pre = torch.sigmoid(scale[0] * zp + base[:n]) + hc_eps
    post = 2.0 * torch.sigmoid(scale[1] * zq + base[n:2 * n])
    comb = sinkhorn(scale[2] * zc + base[2 * n:].view(n, n), iters, hc_eps)
    layer_input = (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype)
    return layer_input, post, comb


def hc_post(y: torch.Tensor, residual: torch.Tensor, post: torch.Tensor, comb: torch.Tensor) -> torch.Tensor:
    """New streams: ``post_k * y + sum_j comb[j, k] * residual_j`` (note the transpose), fp32 math,
    rounded once to y.dtype. y ``[..., d]``, residual ``[..., n, d]``."""
    mixed = torch.matmul(comb.transpose(-1, -2), residual.float())
    out = post.unsqueeze(-1) * y.float().unsqueeze(-2) + mixed
    return out.to(y.dtype)


def hc_head(x: torch.Tensor, fn: torch.Tensor, scale: torch.Tensor, base: torch.Tensor,
            hc_eps: float, rms_eps: float) -> torch.Tensor:
    """Final collapse before the LM head (spec §1 ``hc_head``): sigmoid weights, no Sinkhorn, no post.
    x ``[..., n, d]``; fn ``[n, n*d]``; scale ``[1]``; base ``[n]``. Returns ``[..., d]`` in x.dtype."""
    n = x.shape[-2]
    xf = x.flatten(-2).float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + rms_eps)
    mixes = torch.matmul(xf, fn.float().t()) * rstd
    pre = torch.sigmoid(mixes * scale.float() + base.float()) + hc_eps
    return (pre.unsqueeze(-1) * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype)
