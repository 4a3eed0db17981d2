"""Pieces of the loop on their own: schedule, parameter groups, gradient clipping, profiler window."""
import json
import math

import pytest
import torch
from torch import nn

from trex.training.config import OptimConfig
from trex.training.distributed import ParallelDims, clip_grad_norm
from trex.training.optim import build_optimizer
from trex.training.train import lr_lambda, train


def test_warmup_then_cosine():
    f = lr_lambda(warmup=4, total=20, min_ratio=0.1)
    assert [f(s) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert f(4) == pytest.approx(1.0)
    assert f(12) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    assert f(20) == pytest.approx(0.1) and f(50) == pytest.approx(0.1)
    assert all(f(s) >= f(s + 1) for s in range(4, 30))


def test_weight_decay_skips_vectors():
    model = nn.Sequential(nn.Linear(3, 4), nn.LayerNorm(4))
    opt = build_optimizer(model.parameters(), OptimConfig(weight_decay=0.2))
    by_decay = {g["weight_decay"]: {tuple(p.shape) for p in g["params"]} for g in opt.param_groups}
    assert by_decay == {0.2: {(4, 3)}, 0.0: {(4,)}}


def test_clip_matches_torch_single_process():
    torch.manual_seed(0)
    a, b = nn.Linear(8, 8), nn.Linear(8, 8)
    b.load_state_dict(a.state_dict())
    for m in (a, b):
        (m(torch.ones(2, 8)) ** 2).sum().backward()
    ours = clip_grad_norm(list(a.parameters()), 0.5, ParallelDims())
    ref = torch.nn.utils.clip_grad_norm_(list(b.parameters()), 0.5)
    torch.testing.assert_close(ours, ref)
    for pa, pb in zip(a.parameters(), b.parameters()):
        torch.testing.assert_close(pa.grad, pb.grad)
    pa = next(a.parameters())
    pa.grad[0, 0] = float("nan")
    assert math.isnan(float(clip_grad_norm(list(a.parameters()), 0.5, ParallelDims())))


def test_clip_sums_squares_in_fp32_across_gradient_dtypes():
    """The foreach norms are taken in fp32 whatever the gradient's dtype (bf16 gradients of a bf16
    parameter must not round the norm), and every gradient is scaled by the same coefficient."""
    g = torch.Generator().manual_seed(1)
    params = [nn.Parameter(torch.zeros(300, dtype=dt)) for dt in (torch.float32, torch.bfloat16, torch.float32)]
    for p in params:
        p.grad = torch.randn(p.shape, generator=g).to(p.dtype)
    before = [p.grad.double().clone() for p in params]
    want = math.sqrt(sum(float(b.pow(2).sum()) for b in before))
    norm = clip_grad_norm(params, 1.0, ParallelDims())
    assert norm.dtype == torch.float32 and abs(float(norm) - want) <= 1e-6 * want
    coef = 1.0 / (want + 1e-6)
    for p, b in zip(params, before):
        torch.testing.assert_close(p.grad.double(), (b * coef).to(p.dtype).double(),
                                   rtol=2 ** -7 if p.dtype == torch.bfloat16 else 1e-6, atol=0)


def test_bf16_autocast_and_profiler_window(make_config, tmp_path):
    cfg = make_config(**{"train.steps": 2, "train.precision": "bf16", "log.profile_steps": [2, 1],
                         "log.profile_dir": str(tmp_path / "prof")})
    losses = train(cfg).losses
    assert all(map(math.isfinite, losses))
    profile = json.loads((tmp_path / "prof" / "rank_0.json").read_text())
    assert profile["first_step"] == 2 and profile["wall_s"] > 0
    assert any("mm" in name for name in profile["ops"])        # the model's matmuls were recorded
    assert (tmp_path / "prof" / "trace_rank0.json").is_file()
