"""A block written like DeepSeek's official V4 inference code (shared/reference/deepseek_v4.md, [REF]):
``view_as_complex`` RoPE written back in place into the last ``rope_dim`` channels (``y.copy_(x)``), the
inverse through ``freqs_cis.conj()``, the mHC pre-projection with ``F.linear(x, fn) * rsqrt`` and the
Sinkhorn split off with ``split``, the limited SwiGLU with the routing weight before the down-cast.
All four families must fuse, forward and backward, within the numerics rule."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F

from trex.compiler import logs
from trex.compiler.examples import Config, _Params, rope_table
from trex.compiler.testing import assert_close_to_reference, make_input, trex_op_counts


def apply_rotary_emb(x, freqs_cis, inverse=False, *, up=torch.Tensor.float):
    """The official function: rotates ``x`` (a view into the activations) in place and returns it."""
    y = x
    x = torch.view_as_complex(up(x).unflatten(-1, (-1, 2)))
    if inverse:
        freqs_cis = freqs_cis.conj()
    if x.ndim == 3:
        freqs_cis = freqs_cis.view(1, x.size(1), x.size(-1))
    else:
        freqs_cis = freqs_cis.view(1, x.size(1), 1, x.size(-1))
    x = torch.view_as_real(x * freqs_cis).flatten(-2)
    y.copy_(x)
    return y


class OfficialBlock(_Params):
    def rms(self, x, weight):
        dtype = x.dtype
        x = self.up(x)
        var = x.square().mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.cfg.eps)
        return (weight * x).to(dtype)

    def hc_split_sinkhorn(self, mixes, scale, base):
        c, n = self.cfg, self.cfg.n_streams
        pre, post, comb = mixes.split([n, n, n * n], dim=-1)
        pre = torch.sigmoid(pre * scale[0] + base[:n]) + c.hc_eps
        post = 2 * torch.sigmoid(post * scale[1] + base[n:2 * n])
        comb = comb.unflatten(-1, (n, n)) * scale[2] + base[2 * n:].view(n, n)
        comb = comb.softmax(-1) + c.hc_eps
        comb = comb / (comb.sum(-2, keepdim=True) + c.hc_eps)
        for _ in range(c.iters - 1):
            comb = comb / (comb.sum(-1, keepdim=True) + c.hc_eps)
            comb = comb / (comb.sum(-2, keepdim=True) + c.hc_eps)
        return pre, post, comb

    def hc_pre(self, x, hc_fn, hc_scale, hc_base):
        shape, dtype = x.size(), x.dtype
        x = self.up(x.flatten(2))
        rsqrt = torch.rsqrt(x.square().mean(-1, keepdim=True) + self.cfg.eps)
        mixes = F.linear(x, hc_fn) * rsqrt
        pre, post, comb = self.hc_split_sinkhorn(mixes, hc_scale, hc_base)
        y = torch.sum(pre.unsqueeze(-1) * x.view(shape), dim=2)
        return y.to(dtype), post, comb

    def rope(self, x, freqs, inverse=False):
        return apply_rotary_emb(x, freqs, inverse, up=self.up)

    def forward(self, x, freqs):
        c = self.cfg
        rd = c.rope_dim
        li, post, comb = self.hc_pre(x, self.hc_attn_fn, self.hc_attn_scale, self.hc_attn_base)
        h = self.rms(li, self.attn_norm)
        q = (h @ self.wq).unflatten(-1, (c.n_heads, c.head_dim))
        q = (self.up(q) * torch.rsqrt(self.up(q).square().mean(-1, keepdim=True) + c.eps)).to(q.dtype)
        self.rope(q[..., -rd:], freqs)
        kv = self.rms(h @ self.wkv, self.kv_norm)
        self.rope(kv[..., -rd:], freqs)
        o = self.attention(q, kv)
        self.rope(o[..., -rd:], freqs, True)
        x = self.hc_post(o.flatten(-2) @ self.wo, x, post, comb)

        li, post, comb = self.hc_pre(x, self.hc_ffn_fn, self.hc_ffn_scale, self.hc_ffn_base)
        h = self.rms(li, self.ffn_norm)
        weights = F.softplus(self.up(h) @ self.up(self.wr))
        gate, up = self.up(h @ self.w1), self.up(h @ self.w3)
        gate = gate.clamp(max=c.limit)
        up = up.clamp(min=-c.limit, max=c.limit)
        z = weights * (F.silu(gate) * up)
        return self.hc_post(z.to(h.dtype) @ self.w2, x, post, comb)


EXPECTED_FORWARD = {"mhc_pre": 2, "rms_norm": 4, "rope": 3, "swiglu_limited": 1}
EXPECTED_BACKWARD = {"mhc_pre_bwd": 2, "rms_norm_bwd": 4, "rope": 3, "swiglu_limited_bwd": 1}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_official_spelling_fuses_forward_and_backward(dtype):
    cfg = Config()
    block = OfficialBlock(cfg).cast(dtype)
    reference = copy.deepcopy(block).to_reference()
    x = make_input((2, 6, cfg.n_streams, cfg.dim), dtype, seed=1, requires_grad=True)
    freqs = rope_table(6, cfg.rope_dim)

    x_e = x.detach().clone().requires_grad_()
    eager = block(x_e, freqs)
    eager.float().pow(2).sum().backward()
    eager_grads = {n: p.grad.clone() for n, p in block.named_parameters()}
    block.zero_grad(set_to_none=True)
    x_r = x.detach().double().requires_grad_()
    ref = reference(x_r, freqs.to(torch.complex128))
    ref.pow(2).sum().backward()

    torch._dynamo.reset()
    with logs.capture() as reports:
        out = torch.compile(block, backend="trex")(x, freqs)
        out.float().pow(2).sum().backward()
    (report,) = reports
    assert report.fallbacks == [], report.format()
    assert trex_op_counts(report.compiled_graphs["forward"]) == EXPECTED_FORWARD, report.format()
    assert trex_op_counts(report.compiled_graphs["backward"]) == EXPECTED_BACKWARD, report.format()
    assert_close_to_reference(out, eager, ref, name="block output")
    assert_close_to_reference(x.grad, x_e.grad, x_r.grad, name="dx", compute_dtype=dtype)
    ref_grads = dict(reference.named_parameters())
    for name, p in block.named_parameters():
        assert_close_to_reference(p.grad, eager_grads[name], ref_grads[name].grad, name=f"d{name}",
                                  compute_dtype=dtype)
