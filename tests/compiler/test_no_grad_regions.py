"""Graphs with a torch.no_grad() region (transformers' rotary tables are computed under @torch.no_grad())
are fused: backend.detach_no_grad_regions rewrites each region as the same ops on detached inputs, so
re-tracing to ATen keeps eager's gradients; a region that mutates, or another global-state change,
still compiles the graph unfused with the reason recorded."""
from __future__ import annotations

import pytest
import torch

from trex.compiler import logs


class Rotary(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", torch.rand(8))

    @torch.no_grad()
    def forward(self, t, x):
        freqs = t[:, None] * self.inv_freq[None] + x[:, :1]     # x requires grad: no_grad must cut it
        return freqs.cos(), freqs.sin()


def rms(x, w):
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)


ROTARY = Rotary()


def block(x, w, t):
    cos, sin = ROTARY(t, x)
    h = rms(x, w)
    return (h[:, :8] * cos + h[:, 8:16] * sin).sum() + rms(h, w).sum(), cos


@pytest.fixture(autouse=True)
def _reset():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("rest", ["aten", "inductor"])
def test_no_grad_region_is_fused_with_eager_gradients(rest):
    torch.manual_seed(0)
    x, w, t = torch.randn(4, 32), torch.randn(32), torch.arange(4.0)
    got = [x.clone().requires_grad_(), w.clone().requires_grad_()]
    want = [x.clone().requires_grad_(), w.clone().requires_grad_()]
    with logs.capture() as reports:
        loss, cos = torch.compile(block, backend="trex", options={"rest": rest})(*got, t)
    loss.backward()
    ref_loss, ref_cos = block(*want, t)
    ref_loss.backward()
    assert reports[0].match_counts() == {"rms_norm": 2} and reports[0].fallbacks == []
    assert not cos.requires_grad and not ref_cos.requires_grad
    torch.testing.assert_close(loss, ref_loss)
    for g, r in zip(got, want):
        torch.testing.assert_close(g.grad, r.grad)


def test_mutating_no_grad_region_runs_unfused_with_the_reason():
    def fn(x, w, buf):
        with torch.no_grad():
            buf.add_(1.0)
        return rms(x, w).sum() + buf.sum()
    x, w = torch.randn(4, 32, requires_grad=True), torch.randn(32, requires_grad=True)
    with logs.capture() as reports:
        torch.compile(fn, backend="trex")(x, w, torch.zeros(3)).backward()
    assert reports[0].matches == []
    assert "grad mode" in reports[0].fallbacks[0]
