"""SwapAdamW against torch.optim.AdamW: same parameters after N steps, and state round-trips."""
import pytest
import torch
from torch import nn

from trex.training.optim import SwapAdamW


def _model(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(17, 33), nn.GELU(), nn.LayerNorm(33), nn.Linear(33, 5))


def _train(model, opt, steps, seed=1):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(8, 17, generator=g)
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()


@pytest.mark.parametrize("chunk_bytes", [64, 4096, 1 << 30])  # many chunks, a few, one
def test_matches_torch_adamw(chunk_bytes):
    ref, swp = _model(), _model()
    kw = dict(lr=1e-2, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)
    opt_ref = torch.optim.AdamW(ref.parameters(), **kw)
    opt_swp = SwapAdamW(swp.parameters(), chunk_bytes=chunk_bytes, **kw)
    _train(ref, opt_ref, 20)
    _train(swp, opt_swp, 20)
    if chunk_bytes == 64:
        assert opt_swp.num_chunks == len(list(swp.parameters()))  # one parameter per chunk
    for a, b in zip(ref.parameters(), swp.parameters()):
        torch.testing.assert_close(b, a, rtol=1e-6, atol=1e-7)
    for a, b in zip(ref.parameters(), swp.parameters()):
        for moment in ("exp_avg", "exp_avg_sq"):      # AdamW's first and second moments
            torch.testing.assert_close(opt_swp.state[b][moment], opt_ref.state[a][moment], rtol=1e-6, atol=1e-12)


def test_state_dict_roundtrip_continues_identically():
    kw = dict(lr=1e-2, weight_decay=0.05, chunk_bytes=512)
    a = _model()
    opt_a = SwapAdamW(a.parameters(), **kw)
    _train(a, opt_a, 5)
    b = _model(seed=3)
    b.load_state_dict(a.state_dict())
    opt_b = SwapAdamW(b.parameters(), **kw)
    opt_b.load_state_dict(opt_a.state_dict())   # loaded before the chunk plan exists
    _train(a, opt_a, 5, seed=7)
    _train(b, opt_b, 5, seed=7)
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(pa, pb)
    # and loading into an optimizer that already stepped (plan exists) also restores exactly
    opt_b.load_state_dict(opt_a.state_dict())
    for pa, pb in zip(a.parameters(), b.parameters()):
        assert torch.equal(opt_a.state[pa]["exp_avg_sq"], opt_b.state[pb]["exp_avg_sq"])
        assert opt_b.state[pb]["exp_avg_sq"].device.type == "cpu"


def test_rejects_bad_arguments():
    with pytest.raises(ValueError, match="betas"):
        SwapAdamW(_model().parameters(), betas=(0.9, 1.0))
    with pytest.raises(ValueError, match="chunk_bytes"):
        SwapAdamW(_model().parameters(), chunk_bytes=4)
