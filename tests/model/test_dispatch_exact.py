"""The host-overhead rewrites of the sparse MoE dispatch are exact: same outputs and gradients, bit
for bit, as the spelling they replaced (bench/NOTES_train.md: a slice per expert, bincount)."""
import pytest
import torch
from torch import nn

from trex.training.model.moe import Expert, expert_counts, sparse_dispatch


def sliced_bincount_dispatch(x, topk_idx, topk_weight, experts):
    """The previous sparse_dispatch: bincount for the counts, one slice of the routed rows per expert."""
    n_rows, k = topk_idx.shape
    flat_expert = topk_idx.reshape(-1)
    order = torch.argsort(flat_expert, stable=True)
    rows = torch.div(order, k, rounding_mode="floor")
    counts = torch.bincount(flat_expert, minlength=len(experts)).tolist()
    routed_x = x.index_select(0, rows)
    routed_w = topk_weight.reshape(-1).index_select(0, order).unsqueeze(-1)
    outputs, start = [], 0
    for expert, count in zip(experts, counts):
        if count:
            outputs.append(expert(routed_x[start:start + count], routed_w[start:start + count]))
        start += count
    y = torch.zeros(n_rows, x.shape[-1], dtype=torch.float32, device=x.device)
    return y.index_add(0, rows, torch.cat(outputs).float()).to(x.dtype)


def _routing(n_rows, n_experts, k, generator, skew):
    """Top-k expert ids per row; with ``skew`` the ids crowd into the first experts (some get none)."""
    logits = torch.randn(n_rows, n_experts, generator=generator)
    if skew:
        logits[:, n_experts // 2:] -= 100.0
    idx = logits.topk(k, dim=-1).indices
    weight = torch.rand(n_rows, k, generator=generator) + 0.1
    return idx, weight / weight.sum(-1, keepdim=True)


@pytest.mark.parametrize("skew", [False, True])
def test_expert_counts_equal_bincount(skew):
    g = torch.Generator().manual_seed(1)
    idx, _ = _routing(37, 8, 3, g, skew)
    counts = expert_counts(idx.reshape(-1), 8)
    assert counts.dtype == torch.int64
    assert torch.equal(counts, torch.bincount(idx.reshape(-1), minlength=8))
    if skew:
        assert (counts == 0).any()      # the empty-expert path is exercised


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("skew", [False, True])
def test_sparse_dispatch_bit_exact_with_sliced_version(dtype, skew):
    g = torch.Generator().manual_seed(2)
    n_experts, k, dim = 8, 2, 16
    torch.manual_seed(3)
    experts = nn.ModuleList(Expert(dim, 24, swiglu_limit=10.0) for _ in range(n_experts))
    with torch.no_grad():
        for p in experts.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    experts = experts.to(dtype)
    idx, weight = _routing(29, n_experts, k, g, skew)
    x0 = torch.randn(29, dim, generator=g).to(dtype)
    grad_out = torch.randn(29, dim, generator=g).to(dtype)

    results = []
    for dispatch in (sliced_bincount_dispatch, sparse_dispatch):
        x = x0.clone().requires_grad_()
        w = weight.clone().requires_grad_()
        experts.zero_grad(set_to_none=True)
        y = dispatch(x, idx, w, experts)
        y.backward(grad_out)
        param_grads = [None if p.grad is None else p.grad.clone() for p in experts.parameters()]
        results.append((y.detach(), x.grad, w.grad, param_grads))

    (y_old, dx_old, dw_old, pg_old), (y_new, dx_new, dw_new, pg_new) = results
    assert torch.equal(y_old, y_new)
    assert torch.equal(dx_old, dx_new)
    assert torch.equal(dw_old, dw_new)
    assert len(pg_old) == len(pg_new)
    for old, new in zip(pg_old, pg_new):
        assert (old is None) == (new is None)       # skipped experts get no gradient in both
        if old is not None:
            assert torch.equal(old, new)
    if skew:
        assert any(g is None for g in pg_new)


def test_track_load_counts_equal_bincount(tiny_args):
    from trex.training.model.moe import MoE
    torch.manual_seed(0)
    moe = MoE(tiny_args.replace(moe_dispatch="sparse"), layer_id=tiny_args.n_hash_layers)
    with torch.no_grad():
        for p in moe.parameters():
            p.normal_(0, 0.1)
        moe.gate.bias.zero_()
    moe.expert_load.zero_()
    moe.track_load = True
    x = torch.randn(2, 9, tiny_args.dim)
    moe(x)
    moe(x)
    _, idx = moe.gate(x.reshape(-1, tiny_args.dim))
    assert torch.equal(moe.expert_load, 2 * torch.bincount(idx.reshape(-1), minlength=tiny_args.n_routed_experts))


def test_sparse_dispatch_of_no_rows_returns_an_empty_result():
    """An expert-parallel rank can receive no rows: the dispatch returns [0, dim] instead of failing
    on torch.cat of no expert outputs (review finding)."""
    experts = nn.ModuleList(Expert(8, 12, swiglu_limit=10.0) for _ in range(4))
    x = torch.zeros(0, 8, requires_grad=True)
    y = sparse_dispatch(x, torch.zeros(0, 2, dtype=torch.int64), torch.zeros(0, 2), experts)
    assert y.shape == (0, 8) and y.dtype == x.dtype
    y.sum().backward()
    assert x.grad.shape == (0, 8)
