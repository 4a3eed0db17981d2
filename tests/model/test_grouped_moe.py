"""Grouped expert GEMMs (moe.grouped_dispatch) against the per-expert loop (sparse_dispatch):
forward and backward, odd row counts, experts without rows, padded groups, no host sync on the
routing path."""
import pytest
import torch

from trex.training.model import get_config
from trex.training.model import moe as moe_mod
from trex.training.model.moe import MoE, grouped_dispatch, grouped_layout, grouped_mm, sparse_dispatch


def _experts(n_experts=8, dim=32, inter=16, seed=0):
    args = get_config("tiny", dim=dim, moe_inter_dim=inter, n_routed_experts=n_experts)
    torch.manual_seed(seed)
    moe = MoE(args, layer_id=1)
    for p in moe.parameters():
        torch.nn.init.normal_(p, std=0.2)
    return moe.experts


def _routing(n_rows, n_experts, k, unused=(), seed=1):
    """top-k expert ids per row that never pick the experts in ``unused`` (they get no rows)."""
    g = torch.Generator().manual_seed(seed)
    allowed = torch.tensor([e for e in range(n_experts) if e not in unused])
    picks = torch.rand(n_rows, len(allowed), generator=g).argsort(-1)[:, :k]
    weights = torch.rand(n_rows, k, generator=g) + 0.1
    return allowed[picks], weights


def _run(dispatch, experts, x, idx, w):
    x = x.clone().requires_grad_(True)
    w = w.clone().requires_grad_(True)
    for p in experts.parameters():
        p.grad = None
    y = dispatch(x, idx, w, experts)
    (y * torch.linspace(-1, 1, y.numel()).view_as(y)).sum().backward()
    grads = {n: (p.grad if p.grad is not None else torch.zeros_like(p)) for n, p in experts.named_parameters()}
    return y.detach(), x.grad, w.grad, grads


@pytest.mark.parametrize("align", [1, 8])
@pytest.mark.parametrize("n_rows,unused", [(1, ()), (7, (0, 3)), (13, (7,)), (37, (1, 2, 5))])
def test_grouped_equals_per_expert_loop(monkeypatch, n_rows, unused, align):
    monkeypatch.setitem(moe_mod.GROUP_ALIGN, "cpu", align)
    experts = _experts()
    idx, w = _routing(n_rows, 8, 2, unused)
    x = torch.randn(n_rows, 32, generator=torch.Generator().manual_seed(2))
    ref = _run(sparse_dispatch, experts, x, idx, w)
    got = _run(grouped_dispatch, experts, x, idx, w)
    for a, b in zip(ref[:3], got[:3]):
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-5)
    for name in ref[3]:
        torch.testing.assert_close(got[3][name], ref[3][name], atol=1e-5, rtol=1e-5, msg=name)
    for e in unused:      # an expert without rows gets an exact zero gradient
        assert not got[3][f"{e}.w1.weight"].any()


def test_grouped_under_bf16_autocast_matches_loop():
    experts = _experts()
    idx, w = _routing(19, 8, 2, (4,))
    x = torch.randn(19, 32)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = sparse_dispatch(x, idx, w, experts)
        got = grouped_dispatch(x, idx, w, experts)
    torch.testing.assert_close(got, ref, atol=2e-2, rtol=2e-2)


def test_layout_pads_groups_and_covers_every_row():
    flat = torch.tensor([3, 0, 3, 3, 1, 0, 3, 2, 3])       # expert 4 has no rows
    order, slot, offs, n_slots = grouped_layout(flat, 5, align=4)
    assert n_slots == 9 + 5 * 3
    assert offs.dtype == torch.int32 and offs[-1] == n_slots
    # group starts are multiples of 4 and every pick's slot lies inside its expert's group
    starts = torch.cat([offs.new_zeros(1), offs[:-1]])
    assert (starts % 4 == 0).all()
    sorted_e = flat[order]
    assert ((slot >= starts[sorted_e]) & (slot < offs[sorted_e])).all()
    assert len(set(slot.tolist())) == len(slot)


def test_grouped_mm_fallback_equals_torch_grouped_mm_forward():
    if not hasattr(torch, "_grouped_mm"):
        pytest.skip("torch._grouped_mm is not in this torch")
    x = torch.randn(48, 32)
    w = torch.randn(3, 16, 32).transpose(1, 2)               # column-major, as grouped_dispatch passes
    offs = torch.tensor([16, 16, 48], dtype=torch.int32)     # group 1 empty
    try:
        expect = torch._grouped_mm(x, w, offs=offs)
    except RuntimeError as e:                                # CPU kernel missing in this build
        pytest.skip(f"torch._grouped_mm on the CPU: {e}")
    torch.testing.assert_close(grouped_mm(x, w, offs), expect)


class _NoSync(torch.utils._python_dispatch.TorchDispatchMode):
    """Fails on the ops that read a tensor back to the host (a sync on CUDA)."""
    HOST_READS = {"aten._local_scalar_dense.default", "aten.nonzero.default", "aten.bincount.default"}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        assert str(func) not in self.HOST_READS, f"host read {func}"
        return func(*args, **(kwargs or {}))


def test_routing_layout_has_no_host_read():
    flat = torch.randint(0, 16, (301,))
    with _NoSync():
        grouped_layout(flat, 16, align=8)
        grouped_layout(flat, 16, align=1)


def test_cuda_code_path_on_the_cpu_kernel_matches_loop_and_reads_nothing_back(monkeypatch):
    """grouped_dispatch with the CUDA branch's torch._grouped_mm (its CPU kernel, bf16, padded groups):
    equal to the per-expert loop, and no op of forward or backward reads a tensor back to the host."""
    if not hasattr(torch, "_grouped_mm"):
        pytest.skip("torch._grouped_mm is not in this torch")
    monkeypatch.setattr(moe_mod, "grouped_mm", lambda x, w, offs: torch._grouped_mm(x, w, offs=offs))
    monkeypatch.setitem(moe_mod.GROUP_ALIGN, "cpu", 8)
    experts = _experts().to(torch.bfloat16)
    idx, w = _routing(29, 8, 2, (6,))
    x = torch.randn(29, 32, dtype=torch.bfloat16)
    ref = _run(sparse_dispatch, experts, x, idx, w)
    with _NoSync():
        got = _run(grouped_dispatch, experts, x, idx, w)
    for a, b in zip(ref[:3], got[:3]):
        torch.testing.assert_close(b.float(), a.float(), atol=3e-2, rtol=3e-2)
    torch.testing.assert_close(got[3]["2.w2.weight"].float(), ref[3]["2.w2.weight"].float(), atol=3e-2, rtol=3e-2)
