"""The glue math of DeepSeek-V4 as plain functions, written in the eager spellings that the trex
passes match (trex/passes/rms_norm/, trex/passes/swiglu_limited/, trex/passes/rope/).

Each function is one fusable chain and nothing else, so that the chain appears contiguously in the
captured graph. The spellings mirror the chains in the pattern.py of each of those packages
(``x.float()``, ``pow(2).mean(-1, keepdim=True)``, ``torch.rsqrt(v + eps)``, cast
back, weight multiply; ``silu(g.float().clamp(max=L)) * u.float().clamp(-L, L)``, route weight,
cast; RoPE through ``view_as_complex`` and ``conj()`` for the inverse): keep them when editing.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F


# ----------------------------------------------------------------------------- RMSNorm (spec §4)
def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """Weighted RMSNorm over the last dim: fp32 statistics, cast back, then the weight."""
    xf = x.float()
    return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def rms_norm_noweight(x: torch.Tensor, eps: float) -> torch.Tensor:
    """Weight-free RMSNorm over the last dim (the per-head query norm of spec §5.1)."""
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


# ------------------------------------------------------------------- limited SwiGLU (spec §2)
def limited_swiglu(gate: torch.Tensor, up: torch.Tensor, limit: float,
                   route_weight: torch.Tensor | None = None) -> torch.Tensor:
    """``silu(min(gate, L)) * clamp(up, -L, L) [* route_weight]`` in fp32, cast to gate's dtype.

    ``route_weight`` broadcasts over the last dim (shape ``[..., 1]``); the reference multiplies
    the routing weight before the down projection (spec §2).
    """
    g = gate.float().clamp(max=limit)
    u = up.float().clamp(-limit, limit)
    if route_weight is None:
        return (F.silu(g) * u).to(gate.dtype)
    return (route_weight * (F.silu(g) * u)).to(gate.dtype)


# -------------------------------------------------------------- partial interleaved RoPE (§3)
def apply_rope(x: torch.Tensor, freqs_cis: torch.Tensor, inverse: bool = False) -> torch.Tensor:
    """Rotate the LAST ``2 * freqs_cis.shape[-1]`` channels of ``x`` as interleaved pairs
    (2i, 2i+1); ``inverse`` rotates by the conjugate (undoes the rotation).

    ``freqs_cis`` is complex64 ``[..., rope_dim // 2]`` and broadcasts against the leading dims of
    ``x`` (e.g. ``[T, 1, r/2]`` for ``x [B, T, H, D]``). Out-of-place: the untouched channels are
    concatenated back, never written into a view.
    """
    rope_dim = 2 * freqs_cis.shape[-1]
    x_pass, x_rot = x[..., :-rope_dim], x[..., -rope_dim:]
    x_rot = x_rot.float()
    if x.shape[-1] % 2:
        # view_as_complex needs even strides: an odd head size (never in V4) gets a copy. (A test on
        # strides would be more general but x.storage_offset() breaks the torch.compile graph.)
        x_rot = x_rot.contiguous()
    x_complex = torch.view_as_complex(x_rot.unflatten(-1, (-1, 2)))
    if inverse:
        freqs_cis = freqs_cis.conj()
    y = torch.view_as_real(x_complex * freqs_cis).flatten(-2).to(x.dtype)
    return torch.cat([x_pass, y], dim=-1)


def yarn_ramp_bounds(rope_dim: int, base: float, factor_orig_seq_len: int,
                     beta_fast: int, beta_slow: int) -> tuple[int, int]:
    """YaRN correction range: rotary pair indices between which low frequencies get interpolated."""
    def correction_dim(num_rotations: float) -> float:
        return rope_dim * math.log(factor_orig_seq_len / (num_rotations * 2 * math.pi)) / (2 * math.log(base))
    low = max(math.floor(correction_dim(beta_fast)), 0)
    high = min(math.ceil(correction_dim(beta_slow)), rope_dim - 1)
    return low, high


def rope_frequencies(rope_dim: int, base: float, yarn: bool, factor: float = 1.0,
                     original_seq_len: int = 0, beta_fast: int = 32, beta_slow: int = 1,
                     device: torch.device | str | None = None) -> torch.Tensor:
    """Inverse frequencies ``[rope_dim // 2]`` (fp32); YaRN interpolates the low ones (spec §3)."""
    freqs = 1.0 / (base ** (torch.arange(0, rope_dim, 2, dtype=torch.float32, device=device) / rope_dim))
    if yarn:
        low, high = yarn_ramp_bounds(rope_dim, base, original_seq_len, beta_fast, beta_slow)
        ramp = ((torch.arange(rope_dim // 2, dtype=torch.float32, device=device) - low)
                / max(high - low, 1e-3)).clamp(0, 1)
        freqs = freqs / factor * ramp + freqs * (1 - ramp)
    return freqs


def rope_table(inv_freq: torch.Tensor, seq_len: int) -> torch.Tensor:
    """Complex unit rotations ``[seq_len, rope_dim // 2]`` (no YaRN mscale: |e^{iθ}| = 1)."""
    positions = torch.arange(seq_len, dtype=torch.float32, device=inv_freq.device)
    angles = torch.outer(positions, inv_freq)
    return torch.polar(torch.ones_like(angles), angles)
