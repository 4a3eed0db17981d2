"""A small DeepSeek-V4-style block written in two different spellings.

Used by the compiler tests (tests/compiler/test_block.py), bench/compile_time.py and
``trex explain --example block``; it is example model code, not part of the compile pipeline.

Per block and per call: two mHC sites (attention, FFN), four RMSNorms (attn_norm, the weight-free
per-head query norm, kv_norm, ffn_norm), three rotary embeddings (query, shared K=V head, inverse
on the attention output) and one limited SwiGLU with its routing weight. ``EXPECTED`` lists the trex
ops each graph must contain for one block.

SpellingA follows the reference code (deepseek_v4.md): complex RoPE with in-place write-back,
``.float()``/``rsqrt``/``pow``/``mean``, ``F.silu`` with ``clamp``. SpellingB writes every chain
differently: ``.to(torch.float32)``/``type_as``, ``x * x``, ``sum / n``, ``1 / sqrt``, weight
applied after the down-cast, real pairwise RoPE with ``cat`` and ``-sin`` for the inverse,
``g * sigmoid(g)``, ``clamp_max``/``clamp_min``.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

EXPECTED_FORWARD = {"mhc_pre": 2, "rms_norm": 4, "rope": 3, "swiglu_limited": 1}
EXPECTED_BACKWARD = {"mhc_pre_bwd": 2, "rms_norm_bwd": 4, "rope": 3, "swiglu_limited_bwd": 1}
# ATen ops that only the fused chains use in these blocks: none may survive fusion.
RESIDUE_FORWARD = {"aten.rsqrt", "aten.sigmoid", "aten.silu", "aten.clamp", "aten.clamp_max", "aten.minimum",
                   "aten.maximum", "aten.view_as_complex", "aten.pow", "aten.mean", "aten.stack", "aten.sqrt",
                   "aten.reciprocal"}
RESIDUE_BACKWARD = RESIDUE_FORWARD | {"aten.silu_backward", "aten.sigmoid_backward", "aten.where", "aten.le",
                                      "aten.ge", "aten.logical_and", "aten.pow"}


class Config:
    dim = 32
    n_streams = 4
    n_heads = 2
    head_dim = 16
    rope_dim = 8
    inter = 24
    limit = 7.0
    iters = 4
    eps = 1e-6
    hc_eps = 1e-6


def rope_table(seq_len: int, rope_dim: int, base: float = 10000.0) -> torch.Tensor:
    freqs = base ** (-torch.arange(0, rope_dim, 2, dtype=torch.float32) / rope_dim)
    ang = torch.outer(torch.arange(seq_len, dtype=torch.float32), freqs)
    return torch.polar(torch.ones_like(ang), ang)            # [S, rope_dim / 2] complex64


class _Params(nn.Module):
    def __init__(self, cfg: Config, seed: int = 0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        c = cfg
        m, nd = (2 + c.n_streams) * c.n_streams, c.n_streams * c.dim

        def p(*shape, scale=1.0, offset=0.0):
            return nn.Parameter(torch.randn(*shape, generator=g) * scale + offset)

        self.cfg = cfg
        # Accumulation dtype of the upcasts: fp32 in the models under test; the fp64 reference model
        # (to_reference) upcasts to fp64 instead, so it computes everything in fp64.
        self.acc = torch.float32
        self.hc_attn_fn = p(m, nd, scale=0.05)
        self.hc_attn_scale = p(3, scale=0.1, offset=1)
        self.hc_attn_base = p(m, scale=0.1)
        self.hc_ffn_fn = p(m, nd, scale=0.05)
        self.hc_ffn_scale = p(3, scale=0.1, offset=1)
        self.hc_ffn_base = p(m, scale=0.1)
        self.attn_norm = p(c.dim, scale=0.1, offset=1)
        self.kv_norm = p(c.head_dim, scale=0.1, offset=1)
        self.ffn_norm = p(c.dim, scale=0.1, offset=1)
        self.wq = p(c.dim, c.n_heads * c.head_dim, scale=c.dim ** -0.5)
        self.wkv = p(c.dim, c.head_dim, scale=c.dim ** -0.5)
        self.wo = p(c.n_heads * c.head_dim, c.dim, scale=(c.n_heads * c.head_dim) ** -0.5)
        self.w1 = p(c.dim, c.inter, scale=c.dim ** -0.5 * 4)
        self.w3 = p(c.dim, c.inter, scale=c.dim ** -0.5 * 4)
        self.w2 = p(c.inter, c.dim, scale=c.inter ** -0.5)
        self.wr = p(c.dim, 1, scale=c.dim ** -0.5)

    def up(self, t):
        return t.float() if self.acc is torch.float32 else t.to(self.acc)

    def cast(self, dtype: torch.dtype):
        """Weights to ``dtype``; the mHC parameters stay fp32 as in the V4 checkpoints."""
        for name, p in self.named_parameters():
            if not name.startswith("hc_"):
                p.data = p.data.to(dtype)
        return self

    def to_reference(self):
        self.acc = torch.float64
        return self.to(torch.float64)

    def attention(self, q, kv):
        # q [B,S,H,hd], kv [B,S,hd] (one shared K=V head); causal softmax attention
        scores = self.up(torch.einsum("bshd,btd->bhst", q, kv)) * self.cfg.head_dim ** -0.5
        s = q.shape[1]
        mask = torch.full((s, s), float("-inf"), device=q.device).triu(1)
        probs = torch.softmax(scores + mask, dim=-1).to(q.dtype)
        return torch.einsum("bhst,btd->bshd", probs, kv)

    def hc_post(self, y, x_res, post, comb):
        out = post.unsqueeze(-1) * y.unsqueeze(-2) + torch.einsum("bsjk,bsjd->bskd", comb, x_res.to(comb.dtype))
        return out.to(y.dtype)


class SpellingA(_Params):
    """Reference-style spellings."""

    def rms(self, x, w):
        xf = self.up(x)
        return (w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.cfg.eps))).to(x.dtype)

    def hc_pre(self, x, fn, scale, base):
        n, c = x.shape[-2], self.cfg
        xf = self.up(x.flatten(-2))
        r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + c.eps)
        z = (xf @ fn.t()) * r
        zp, zq, zc = z[..., :n], z[..., n:2 * n], z[..., 2 * n:].unflatten(-1, (n, n))
        pre = torch.sigmoid(scale[0] * zp + base[:n]) + c.hc_eps
        post = 2.0 * torch.sigmoid(scale[1] * zq + base[n:2 * n])
        m = torch.softmax(scale[2] * zc + base[2 * n:].view(n, n), dim=-1) + c.hc_eps
        m = m / (m.sum(-2, keepdim=True) + c.hc_eps)
        for _ in range(c.iters - 1):
            m = m / (m.sum(-1, keepdim=True) + c.hc_eps)
            m = m / (m.sum(-2, keepdim=True) + c.hc_eps)
        layer_input = (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype)
        return layer_input, post, m

    def apply_rope(self, x, freqs, inverse=False):
        y = torch.view_as_complex(self.up(x).unflatten(-1, (-1, 2)))
        if inverse:
            freqs = freqs.conj()
        return torch.view_as_real(y * freqs).flatten(-2).to(x.dtype)

    def forward(self, x, freqs):
        c = self.cfg
        rd = c.rope_dim
        f4 = freqs.view(1, x.shape[1], 1, -1)
        f3 = freqs.view(1, x.shape[1], -1)
        li, post, comb = self.hc_pre(x, self.hc_attn_fn, self.hc_attn_scale, self.hc_attn_base)
        h = self.rms(li, self.attn_norm)
        q = (h @ self.wq).unflatten(-1, (c.n_heads, c.head_dim))
        q = q * torch.rsqrt(self.up(q).pow(2).mean(-1, keepdim=True) + c.eps).to(q.dtype)
        q = q.clone()
        q[..., -rd:] = self.apply_rope(q[..., -rd:], f4)
        kv = self.rms(h @ self.wkv, self.kv_norm)
        kv = torch.cat([kv[..., :-rd], self.apply_rope(kv[..., -rd:], f3)], dim=-1)
        o = self.attention(q, kv)
        o = torch.cat([o[..., :-rd], self.apply_rope(o[..., -rd:], f4, inverse=True)], dim=-1)
        x = self.hc_post(o.flatten(-2) @ self.wo, x, post, comb)

        li, post, comb = self.hc_pre(x, self.hc_ffn_fn, self.hc_ffn_scale, self.hc_ffn_base)
        h = self.rms(li, self.ffn_norm)
        route = F.softplus(self.up(h) @ self.up(self.wr))          # [B,S,1] fp32 routing weight
        g = self.up(h @ self.w1).clamp(max=c.limit)
        u = self.up(h @ self.w3).clamp(-c.limit, c.limit)
        act = (route * (F.silu(g) * u)).to(h.dtype)
        return self.hc_post(act @ self.w2, x, post, comb)


class SpellingB(_Params):
    """The same block with every chain spelled differently."""

    def rms(self, x, w):
        xf = x.to(self.acc)
        var = (xf * xf).sum(dim=-1, keepdim=True) / x.shape[-1]
        return (xf * (1.0 / torch.sqrt(var + self.cfg.eps))).type_as(x) * w

    def rms_noweight(self, x):
        xf = x.to(self.acc)
        return (xf / torch.sqrt(xf.square().mean(-1, keepdim=True) + self.cfg.eps)).type_as(x)

    def hc_pre(self, x, fn, scale, base):
        n, c = x.shape[-2], self.cfg
        xf = x.reshape(*x.shape[:-2], -1).to(self.acc)
        r = (xf.pow(2).mean(dim=-1, keepdim=True) + c.eps).rsqrt()
        z = torch.matmul(xf, fn.t()) * r
        pre = (z[..., :n] * scale[0] + base[:n]).sigmoid() + c.hc_eps
        post = (z[..., n:2 * n] * scale[1] + base[n:2 * n]).sigmoid() * 2.0
        logits = z[..., 2 * n:].reshape(*z.shape[:-1], n, n) * scale[2] + base[2 * n:].reshape(n, n)
        m = F.softmax(logits, dim=-1) + c.hc_eps
        m = m / (m.sum(dim=-2, keepdim=True) + c.hc_eps)
        for _ in range(c.iters - 1):
            m = m / (m.sum(dim=-1, keepdim=True) + c.hc_eps)
            m = m / (m.sum(dim=-2, keepdim=True) + c.hc_eps)
        streams = xf.reshape(*xf.shape[:-1], n, -1)
        layer_input = (streams * pre.unsqueeze(-1)).sum(dim=-2).to(x.dtype)
        return layer_input, post, m

    def apply_rope(self, x, cos, sin):
        a, b = x[..., 0::2].to(self.acc), x[..., 1::2].to(self.acc)
        return torch.stack([a * cos - b * sin, b * cos + a * sin], dim=-1).flatten(-2).type_as(x)

    def forward(self, x, freqs):
        c = self.cfg
        rd = c.rope_dim
        cos, sin = freqs.real, freqs.imag
        cos4, sin4 = cos[None, :, None, :], sin[None, :, None, :]
        li, post, comb = self.hc_pre(x, self.hc_attn_fn, self.hc_attn_scale, self.hc_attn_base)
        h = self.rms(li, self.attn_norm)
        q = (h @ self.wq).view(*h.shape[:-1], c.n_heads, c.head_dim)
        q = self.rms_noweight(q)
        q = torch.cat([q[..., :-rd], self.apply_rope(q[..., -rd:], cos4, sin4)], dim=-1)
        kv = self.rms(h @ self.wkv, self.kv_norm)
        kv = torch.cat([kv[..., :-rd], self.apply_rope(kv[..., -rd:], cos[None], sin[None])], dim=-1)
        o = self.attention(q, kv)
        o = torch.cat([o[..., :-rd], self.apply_rope(o[..., -rd:], cos4, -sin4)], dim=-1)
        x = self.hc_post(o.reshape(*o.shape[:-2], -1) @ self.wo, x, post, comb)

        li, post, comb = self.hc_pre(x, self.hc_ffn_fn, self.hc_ffn_scale, self.hc_ffn_base)
        h = self.rms(li, self.ffn_norm)
        route = F.softplus(self.up(h) @ self.up(self.wr))
        g = (h @ self.w1).to(self.acc)
        # clamp, not torch.minimum/maximum against a constant: those split the gradient at a tie
        # (other mathematics, never fused; see trex.compiler.canonical)
        g = g.clamp_max(c.limit)
        u = (h @ self.w3).to(self.acc).clamp_min(-c.limit).clamp_max(c.limit)
        act = ((g * torch.sigmoid(g)) * u * route).to(h.dtype)
        return self.hc_post(act @ self.w2, x, post, comb)


SPELLINGS = {"reference": SpellingA, "alternate": SpellingB}


class Stack(nn.Module):
    """``depth`` blocks in a row (alternating spellings), for compile-time benchmarks."""

    def __init__(self, depth: int, cfg: Config | None = None, dtype: torch.dtype = torch.float32):
        super().__init__()
        cfg = cfg or Config()
        kinds = list(SPELLINGS.values())
        self.blocks = nn.ModuleList(kinds[i % len(kinds)](cfg, seed=i).cast(dtype) for i in range(depth))

    def forward(self, x, freqs):
        for block in self.blocks:
            x = block(x, freqs)
        return x


def make_streams(batch: int, seq: int, cfg: Config, dtype: torch.dtype, *, noncontiguous: bool = False,
                 seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    shape = (batch, seq, cfg.n_streams, cfg.dim)
    if noncontiguous:  # streams stored [B, n, S, d] and viewed as [B, S, n, d]
        base = torch.randn(batch, cfg.n_streams, seq, cfg.dim, generator=g)
        return base.to(dtype).transpose(1, 2)
    return torch.randn(*shape, generator=g).to(dtype)
