"""MoE (spec §2, §6): hash routing by the table, bias only for selection, the SwiGLU clamp,
dispatchers."""
import torch
import torch.nn.functional as F

from trex.training.model import get_config
from trex.training.model.functional import limited_swiglu
from trex.training.model.model import hash_table
from trex.training.model.moe import MoE, dense_dispatch, sparse_dispatch


def _moe(layer_id, **overrides):
    args = get_config("tiny", **overrides)
    torch.manual_seed(0)
    moe = MoE(args, layer_id)
    for name, p in moe.named_parameters():
        torch.nn.init.normal_(p, std=0.1)
    if moe.hash_routed:
        moe.gate.tid2eid.copy_(hash_table(args.vocab_size, args.n_routed_experts, args.n_activated_experts, 0))
    else:
        moe.gate.bias.zero_()
    return args, moe


def test_hash_layers_route_by_the_table():
    args, moe = _moe(0)
    assert moe.hash_routed and not hasattr(moe.gate, "bias")
    table = torch.zeros(args.vocab_size, 2, dtype=torch.int64)
    table[:, 0], table[:, 1] = 5, 2
    table[7] = torch.tensor([1, 6])
    moe.gate.tid2eid.copy_(table)
    ids = torch.tensor([7, 3, 7, 100])
    x = torch.randn(4, args.dim)
    weights, idx = moe.gate(x, ids)
    assert idx.tolist() == [[1, 6], [5, 2], [1, 6], [5, 2]]
    scores = F.softplus(x @ moe.gate.weight.t()).sqrt()
    expect = scores.gather(-1, idx)
    torch.testing.assert_close(weights, expect / expect.sum(-1, keepdim=True) * args.route_scale)
    # the layer output is the weighted sum of exactly those experts plus the shared expert
    y = moe(x, ids)
    for row in range(4):
        manual = moe.shared_experts(x[row:row + 1])
        for k in range(2):
            manual = manual + moe.experts[int(idx[row, k])](x[row:row + 1]) * weights[row, k]
        torch.testing.assert_close(y[row:row + 1], manual, atol=1e-5, rtol=1e-5)


def test_hash_table_rows_hold_distinct_experts_and_are_reproducible():
    table = hash_table(1000, 8, 3, seed=4)
    assert table.shape == (1000, 3) and table.min() >= 0 and table.max() < 8
    assert all(len(set(row)) == 3 for row in table.tolist())
    assert torch.equal(table, hash_table(1000, 8, 3, seed=4))
    counts = torch.bincount(table.flatten(), minlength=8).float()
    assert counts.min() > 0.8 * counts.mean()                 # roughly balanced


def test_score_routing_bias_changes_selection_not_weights():
    args, moe = _moe(1)
    assert not moe.hash_routed
    x = torch.randn(16, args.dim)
    weights, idx = moe.gate(x)
    torch.testing.assert_close(weights.sum(-1), torch.full((16,), args.route_scale))
    moe.gate.bias[3] = 1e3
    biased_weights, biased_idx = moe.gate(x)
    assert (biased_idx == 3).any(-1).all()
    scores = F.softplus(x @ moe.gate.weight.t()).sqrt()
    expect = scores.gather(-1, biased_idx)
    torch.testing.assert_close(biased_weights, expect / expect.sum(-1, keepdim=True) * args.route_scale)


def test_swiglu_clamp_zeroes_the_gradient_outside_the_limits():
    limit = 0.5
    gate = torch.tensor([-2.0, 0.2, 0.4, 0.6, 3.0], requires_grad=True)
    up = torch.tensor([-0.7, -0.3, 0.1, 0.45, 0.9], requires_grad=True)
    h = limited_swiglu(gate, up, limit)
    expect = F.silu(gate.detach().clamp(max=limit)) * up.detach().clamp(-limit, limit)
    torch.testing.assert_close(h, expect)
    h.sum().backward()
    gate_inside = gate.detach() <= limit           # gate is clamped from above only
    up_inside = up.detach().abs() <= limit
    assert (gate.grad[~gate_inside] == 0).all() and (gate.grad[gate_inside] != 0).all()
    assert (up.grad[~up_inside] == 0).all() and (up.grad[up_inside] != 0).all()


def test_swiglu_route_weight_scales_before_the_cast():
    gate, up = torch.randn(3, 4, dtype=torch.bfloat16), torch.randn(3, 4, dtype=torch.bfloat16)
    w = torch.tensor([[0.5], [1.0], [2.0]])
    out = limited_swiglu(gate, up, 10.0, w)
    assert out.dtype == torch.bfloat16
    ref = (F.silu(gate.float()) * up.float() * w).to(torch.bfloat16)
    torch.testing.assert_close(out, ref)


def test_expert_clamp_active_in_the_model_layer():
    """With swiglu_limit = 0.5 the expert weights see zero gradient through clamped units."""
    args, moe = _moe(1, swiglu_limit=0.5)
    x = torch.randn(32, args.dim) * 10
    expert = moe.experts[0]
    gate_pre = (x @ expert.w1.weight.t()).detach()
    up_pre = (x @ expert.w3.weight.t()).detach()
    expert(x).sum().backward()
    # d(w1) only flows through rows where gate <= L, d(w3) where |up| <= L
    g_w1 = (expert.w1.weight.grad.abs().sum(-1) > 0)
    g_w3 = (expert.w3.weight.grad.abs().sum(-1) > 0)
    assert torch.equal(g_w1, (gate_pre <= 0.5).any(0))
    assert torch.equal(g_w3, (up_pre.abs() <= 0.5).any(0))


def test_sparse_and_dense_dispatch_agree():
    args, moe = _moe(1)
    x = torch.randn(40, args.dim)
    weights, idx = moe.gate(x)
    torch.testing.assert_close(sparse_dispatch(x, idx, weights, moe.experts),
                               dense_dispatch(x, idx, weights, moe.experts), atol=1e-5, rtol=1e-5)


def test_dispatcher_is_pluggable():
    args, moe = _moe(1)
    calls = []

    def recording_dispatch(x_flat, topk_idx, topk_weight, experts):
        calls.append((x_flat.shape, topk_idx.shape, topk_weight.shape, len(experts)))
        return sparse_dispatch(x_flat, topk_idx, topk_weight, experts)

    moe.dispatcher = recording_dispatch
    moe(torch.randn(2, 5, args.dim))
    assert calls == [(torch.Size([10, args.dim]), torch.Size([10, 2]), torch.Size([10, 2]), 8)]


def test_router_bias_update_moves_load_toward_balance():
    from trex.training.model.moe import update_router_biases

    args, moe = _moe(1)
    moe.track_load = True
    x = torch.randn(64, args.dim)
    weights, idx = moe.gate(x)
    moe(x)
    load = torch.bincount(idx.flatten(), minlength=8).float()
    torch.testing.assert_close(moe.expert_load, load.long())
    update_router_biases([moe], rate=0.01)
    expected = 0.01 * torch.sign(load.mean() - load)
    torch.testing.assert_close(moe.gate.bias, expected)
    assert moe.expert_load.sum() == 0
    # repeated steps spread the tokens: the most loaded expert loses share
    busiest = int(load.argmax())
    for _ in range(30):
        moe(x)
        update_router_biases([moe], rate=0.01)
    _, new_idx = moe.gate(x)
    assert torch.bincount(new_idx.flatten(), minlength=8)[busiest] < load[busiest]
    # hash layers keep no bias and are skipped
    _, hash_moe = _moe(0)
    hash_moe.track_load = True
    hash_moe(x, torch.arange(64))
    update_router_biases([hash_moe])
    assert hash_moe.expert_load.sum() == 0
