"""Run under torchrun with 2+ gloo processes: the expert-parallel dispatcher against local experts.

Every rank builds the same routed experts; each rank's tokens are routed mostly to experts owned by
OTHER ranks. The all-to-all dispatcher (local experts only) must give the same outputs and input
gradients as running all experts locally, and each owned expert's weight gradient must equal the
sum over ranks of the local reference gradients. Exits non-zero with a message on mismatch.
"""
import sys

import torch
import torch.distributed as dist
from torch import nn

from trex.training.distributed import ExpertParallelDispatcher
from trex.training.model.moe import Expert, sparse_dispatch


def _grad(p):
    return p.grad.clone() if p.grad is not None else torch.zeros_like(p)


def main() -> int:
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    n_experts, k, dim, n_tokens = 4 * world, 2, 16, 12
    torch.manual_seed(0)                                   # identical experts on every rank
    experts = nn.ModuleList(Expert(dim, 24, swiglu_limit=10.0) for _ in range(n_experts))
    for p in experts.parameters():
        nn.init.normal_(p, std=0.2)
    g = torch.Generator().manual_seed(100 + rank)          # different tokens per rank
    x = torch.randn(n_tokens, dim, generator=g)
    n_local = n_experts // world
    # route to the next rank's experts (remote), plus one random expert anywhere
    remote = ((rank + 1) % world) * n_local + torch.randint(0, n_local, (n_tokens, 1), generator=g)
    anywhere = (remote + 1 + torch.randint(0, n_experts - 1, (n_tokens, 1), generator=g)) % n_experts
    topk_idx = torch.cat([remote, anywhere], dim=1)
    topk_w = torch.rand(n_tokens, k, generator=g).requires_grad_(True)
    assert (topk_idx // n_local != rank).any(), "test routing must reach remote experts"

    # reference: all experts here
    x_ref = x.clone().requires_grad_(True)
    y_ref = sparse_dispatch(x_ref, topk_idx, topk_w, experts)
    (y_ref * torch.linspace(-1, 1, dim)).sum().backward()
    ref_grads = [_grad(p) for p in experts.parameters()]   # an unrouted expert has none
    ref_w_grad = topk_w.grad.clone()
    for grad in ref_grads:
        dist.all_reduce(grad)                               # what the owner must accumulate
    experts.zero_grad()
    topk_w.grad = None

    # expert parallel: this rank keeps its n_local experts
    local = nn.ModuleList(list(experts)[rank * n_local:(rank + 1) * n_local])
    dispatcher = ExpertParallelDispatcher(sparse_dispatch, n_experts, dist.group.WORLD)
    x_ep = x.clone().requires_grad_(True)
    y_ep = dispatcher(x_ep, topk_idx, topk_w, local)
    (y_ep * torch.linspace(-1, 1, dim)).sum().backward()

    checks = {"output": (y_ep, y_ref), "input grad": (x_ep.grad, x_ref.grad), "route weight grad":
              (topk_w.grad, ref_w_grad)}
    params = list(experts.parameters())
    per_expert = len(params) // n_experts
    for j, p in enumerate(local.parameters()):
        checks[f"expert param {j}"] = (_grad(p), ref_grads[rank * n_local * per_expert + j])
    for name, (got, want) in checks.items():
        if not torch.allclose(got, want, rtol=1e-5, atol=1e-6):
            print(f"rank {rank}: {name} differs, max |diff| {(got - want).abs().max():.3e}", file=sys.stderr)
            return 1
    # under torch.compile (aot_eager: tracing and autograd, no codegen) with changing routing
    compiled = torch.compile(lambda xs, idx, w: dispatcher(xs, idx, w, local), backend="aot_eager")
    for shift in (0, 1):
        idx = (topk_idx + shift) % n_experts
        x_c = x.clone().requires_grad_(True)
        y_c = compiled(x_c, idx, topk_w.detach())
        y_e = dispatcher(x, idx, topk_w.detach(), local)
        y_c.sum().backward()
        if not torch.allclose(y_c, y_e, rtol=1e-5, atol=1e-6) or x_c.grad is None:
            print(f"rank {rank}: compiled dispatch differs (shift {shift})", file=sys.stderr)
            return 1
    print(f"rank {rank}: expert-parallel dispatch matches ({len(checks)} tensors, eager and compiled)")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
