"""DeepSeek-V4 mixture of experts (spec §2, §6).

Routing: affinity ``s = sqrt(softplus(x @ Wg^T))`` in fp32; score-routed layers pick the top-k of
``s + bias`` (the bias only affects the choice, it is updated by the aux-loss-free balancing rule,
never by gradient); hash-routed layers (the first ``n_hash_layers``) take the experts from a fixed
token-id -> expert-id table ``tid2eid``. Either way the weights are ``s`` at the chosen experts,
renormalised over the k picks, times ``route_scale``. Every routed expert and the one shared
expert is a limited-SwiGLU FFN.

Expert dispatch is pluggable (contracts.md): ``MoE.dispatcher(x_flat, topk_idx, topk_weight,
experts) -> y_flat``; ``experts[e](x, route_weight)`` returns the weighted expert output.
"""
from __future__ import annotations

from typing import Callable

import torch
import torch.nn.functional as F
from torch import nn

from .args import ModelArgs
from .functional import limited_swiglu
from .layers import Linear

Dispatcher = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, nn.ModuleList], torch.Tensor]


class Expert(nn.Module):
    """Limited-SwiGLU FFN: ``w2(limited_swiglu(w1 x, w3 x, L, route_weight))``."""

    def __init__(self, dim: int, inter_dim: int, swiglu_limit: float):
        super().__init__()
        self.w1 = Linear(dim, inter_dim)   # gate
        self.w2 = Linear(inter_dim, dim)   # down
        self.w3 = Linear(dim, inter_dim)   # up
        self.swiglu_limit = swiglu_limit

    def forward(self, x: torch.Tensor, route_weight: torch.Tensor | None = None) -> torch.Tensor:
        return self.w2(limited_swiglu(self.w1(x), self.w3(x), self.swiglu_limit, route_weight))


class Gate(nn.Module):
    """Router. ``weight [E, dim]``; ``bias [E]`` (score layers) or ``tid2eid [vocab, k]`` (hash layers),
    both buffers: neither is trained by gradient."""

    def __init__(self, args: ModelArgs, hash_routed: bool):
        super().__init__()
        self.topk = args.n_activated_experts
        self.n_experts = args.n_routed_experts
        self.route_scale = args.route_scale
        self.hash_routed = hash_routed
        self.weight = nn.Parameter(torch.empty(args.n_routed_experts, args.dim))
        if hash_routed:
            self.register_buffer("tid2eid", torch.empty(args.vocab_size, args.n_activated_experts,
                                                        dtype=torch.int64))
        else:
            self.register_buffer("bias", torch.empty(args.n_routed_experts, dtype=torch.float32))

    def forward(self, x: torch.Tensor, token_ids: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """x ``[N, dim]`` (token_ids ``[N]`` for hash layers) -> (weights fp32 ``[N, k]``, indices ``[N, k]``)."""
        # fp32 as the reference (under torch.autocast the GEMM runs in bf16: docs/model.md, precision)
        scores = F.softplus(F.linear(x.float(), self.weight.float())).sqrt()
        if self.hash_routed:
            if token_ids is None:
                raise ValueError("hash-routed MoE layer needs token_ids (the input token of each row)")
            indices = self.tid2eid[token_ids]
        else:
            indices = (scores + self.bias.float()).topk(self.topk, dim=-1).indices
        weights = scores.gather(-1, indices)
        weights = weights / weights.sum(-1, keepdim=True) * self.route_scale
        return weights, indices


def expert_counts(flat_expert: torch.Tensor, n_experts: int) -> torch.Tensor:
    """Rows routed to each expert, int64 ``[n_experts]``, computed on the device without a host read.

    (``torch.bincount`` on CUDA reads the input's min and max back to the host to size its output:
    two syncs per call; a scatter-add into a fixed-size buffer needs none and counts the same.)"""
    counts = torch.zeros(n_experts, dtype=torch.int64, device=flat_expert.device)
    return counts.scatter_add_(0, flat_expert, torch.ones_like(flat_expert))


def sparse_dispatch(x: torch.Tensor, topk_idx: torch.Tensor, topk_weight: torch.Tensor,
                    experts: nn.ModuleList) -> torch.Tensor:
    """Run each local expert on the rows routed to it (gather, expert, fp32 scatter-add).

    Experts with no rows are skipped (their weights get no gradient this step). One host read per
    call: the per-expert row counts, which size the expert calls."""
    n_rows, k = topk_idx.shape
    flat_expert = topk_idx.reshape(-1)
    order = torch.argsort(flat_expert, stable=True)
    rows = torch.div(order, k, rounding_mode="floor")
    counts = expert_counts(flat_expert, len(experts)).tolist()
    routed_x = x.index_select(0, rows)
    routed_w = topk_weight.reshape(-1).index_select(0, order).unsqueeze(-1)
    # torch.split, not a slice per expert: the backward of the pieces is one cat, where a slice's
    # backward writes a zero tensor of routed_x's full size per expert and autograd sums them
    outputs = [expert(expert_x, expert_w)
               for expert, count, expert_x, expert_w in zip(experts, counts, routed_x.split(counts),
                                                            routed_w.split(counts))
               if count]
    y = torch.zeros(n_rows, x.shape[-1], dtype=torch.float32, device=x.device)
    if not outputs:     # no rows at all (an expert-parallel rank that received none): zeros, still
        return y.index_add(0, rows, routed_x.float()).to(x.dtype)     # in x's autograd graph
    return y.index_add(0, rows, torch.cat(outputs).float()).to(x.dtype)


def dense_dispatch(x: torch.Tensor, topk_idx: torch.Tensor, topk_weight: torch.Tensor,
                   experts: nn.ModuleList) -> torch.Tensor:
    """Every expert on every row, weighted by a dense routing matrix that is zero off the top-k.

    The same function as ``sparse_dispatch`` (non-routed rows get weight 0) with static shapes and
    no host sync, for torch.compile and small configs; costs ``E / k`` times the expert FLOPs."""
    dense_weight = torch.zeros(x.shape[0], len(experts), dtype=topk_weight.dtype, device=x.device)
    dense_weight = dense_weight.scatter(-1, topk_idx, topk_weight)
    y = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for e, expert in enumerate(experts):
        y = y + expert(x, dense_weight[:, e:e + 1]).float()
    return y.to(x.dtype)


# --------------------------------------------------------------------------- grouped dispatch
# CUDA's grouped GEMM (torch._grouped_mm, CUTLASS on sm90) runs each expert's rows as one problem of
# a single launch; torchtitan pads every expert's row group to a multiple of 8 for bf16 (16-byte
# aligned group starts). Rows of the padding are zeros, so they add nothing to the weight grads.
GROUP_ALIGN = {"cuda": 8}


def grouped_layout(flat_expert: torch.Tensor, n_experts: int, align: int = 1
                   ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
    """Sort the routed (row, pick) slots by expert, with each expert's group padded to ``align`` rows.

    Returns ``(order, slot, offs, n_slots)``: ``order`` the stable argsort of ``flat_expert``; sorted
    pick j lives at row ``slot[j]`` of the grouped buffer of ``n_slots`` rows; ``offs`` int32
    ``[n_experts]`` the end row of each expert's group (the last group runs to ``n_slots``, so no
    buffer row is outside a group). Computed on the device, without a host read: ``n_slots`` is the
    static bound ``len(flat_expert) + n_experts * (align - 1)``."""
    order = torch.argsort(flat_expert, stable=True)
    n_picks = flat_expert.numel()
    counts = expert_counts(flat_expert, n_experts)
    if align == 1:
        return order, torch.arange(n_picks, device=flat_expert.device), counts.cumsum(0).to(torch.int32), n_picks
    padded = torch.div(counts + align - 1, align, rounding_mode="floor") * align
    padded_end = padded.cumsum(0)
    shift = (padded_end - padded) - (counts.cumsum(0) - counts)     # group start: padded minus packed
    slot = torch.arange(n_picks, device=flat_expert.device) + shift[flat_expert.index_select(0, order)]
    n_slots = n_picks + n_experts * (align - 1)
    offs = torch.cat([padded_end[:-1], padded_end.new_full((1,), n_slots)]).to(torch.int32)
    return order, slot, offs, n_slots


def grouped_mm(x: torch.Tensor, w: torch.Tensor, offs: torch.Tensor) -> torch.Tensor:
    """``x [M, K]`` rows grouped by ``offs`` (int32 group ends, ``offs[-1] == M``) times ``w [G, K, N]``
    -> ``[M, N]``: group g's rows ``offs[g-1]:offs[g]`` times ``w[g]``.

    CUDA: one ``torch._grouped_mm`` (bf16; no host sync). Elsewhere one ``mm`` per group after a
    host read of ``offs``, the per-expert loop's products (w1 and w3 as one GEMM: equal to
    ``sparse_dispatch`` up to the summation order): torch's CPU ``_grouped_mm`` runs, but its backward
    rejects stride-0 (expanded) gradients and its fake-tensor rule, which torch.compile uses, takes
    bf16 only."""
    if x.is_cuda:
        return torch._grouped_mm(x, w, offs=offs)
    sizes = torch.diff(offs, prepend=offs.new_zeros(1)).tolist()
    return torch.cat([xg @ wg for xg, wg in zip(x.split(sizes), w.unbind(0))])


def _stacked(experts: nn.ModuleList, name: str, dtype: torch.dtype) -> torch.Tensor:
    """The experts' weight ``name`` (``[out, in]`` each) as ``[E, in, out]`` in ``dtype`` (the
    autocast dtype: each weight is cast once, as autocast would cast it for ``F.linear``); a
    transposed view, the column-major layout ``torch._grouped_mm`` takes."""
    return torch.stack([getattr(e, name).weight.to(dtype) for e in experts]).transpose(1, 2)


def grouped_dispatch(x: torch.Tensor, topk_idx: torch.Tensor, topk_weight: torch.Tensor,
                     experts: nn.ModuleList) -> torch.Tensor:
    """All routed experts as grouped GEMMs (gate, up, down: one launch each for all experts) over
    the routed rows sorted by expert, with the limited SwiGLU (route weight included) as one call
    over all of them.

    The same function as ``sparse_dispatch`` with static shapes and no host sync (on CUDA), so that
    torch.compile captures the whole MoE layer in one graph. Experts with no rows get zero grads
    (``sparse_dispatch`` leaves theirs None)."""
    n_rows, k = topk_idx.shape
    dim = x.shape[-1]
    flat_expert = topk_idx.reshape(-1)
    align = GROUP_ALIGN.get(x.device.type, 1)
    order, slot, offs, n_slots = grouped_layout(flat_expert, len(experts), align)
    rows = torch.div(order, k, rounding_mode="floor")
    # the autocast dtype, as F.linear would run in (meta, e.g. a shape-only forward, has no autocast)
    autocast = x.device.type != "meta" and torch.is_autocast_enabled(x.device.type)
    dtype = torch.get_autocast_dtype(x.device.type) if autocast else x.dtype
    routed_x = x.to(dtype).index_select(0, rows)
    routed_w = topk_weight.reshape(-1).index_select(0, order).unsqueeze(-1)
    if n_slots != routed_x.shape[0]:     # padded groups: scatter the rows into their slots
        routed_x = routed_x.new_zeros(n_slots, dim).index_copy(0, slot, routed_x)
        routed_w = routed_w.new_zeros(n_slots, 1).index_copy(0, slot, routed_w)
    # gate and up as two GEMMs, not one over [w1; w3]: each output is contiguous, the layout the
    # per-expert loop hands limited_swiglu (and trex's swiglu_limited pattern), and no cat of weights
    gate = grouped_mm(routed_x, _stacked(experts, "w1", dtype), offs)
    up = grouped_mm(routed_x, _stacked(experts, "w3", dtype), offs)
    hidden = limited_swiglu(gate, up, experts[0].swiglu_limit, routed_w)
    out = grouped_mm(hidden, _stacked(experts, "w2", dtype), offs)
    if n_slots != len(rows):
        out = out.index_select(0, slot)
    y = torch.zeros(n_rows, dim, dtype=torch.float32, device=x.device)
    return y.index_add(0, rows, out.float()).to(x.dtype)


DISPATCHERS: dict[str, Dispatcher] = {"sparse": sparse_dispatch, "dense": dense_dispatch,
                                      "grouped": grouped_dispatch}


class MoE(nn.Module):
    def __init__(self, args: ModelArgs, layer_id: int):
        super().__init__()
        self.layer_id = layer_id
        # MTP blocks (layer_id >= n_layers) are always score-routed (spec §6)
        self.hash_routed = layer_id < args.n_hash_layers
        self.gate = Gate(args, self.hash_routed)
        self.experts = nn.ModuleList(
            Expert(args.dim, args.moe_inter_dim, args.swiglu_limit) for _ in range(args.n_routed_experts))
        self.shared_experts = (Expert(args.dim, args.n_shared_experts * args.moe_inter_dim, args.swiglu_limit)
                               if args.n_shared_experts else None)
        self.dispatcher: Dispatcher = DISPATCHERS[args.moe_dispatch]
        # aux-loss-free balancing: with track_load on, forward adds each expert's routed-row count
        # here and update_router_biases() turns the counts into bias steps (off by default so
        # the captured graph has no buffer mutation)
        self.track_load = False
        # int64: model.to(bfloat16) must not round the counts
        self.register_buffer("expert_load", torch.zeros(args.n_routed_experts, dtype=torch.int64),
                             persistent=False)

    def forward(self, x: torch.Tensor, token_ids: torch.Tensor | None = None) -> torch.Tensor:
        """x ``[..., dim]``, token_ids ``[...]`` (used by hash-routed layers) -> ``[..., dim]``."""
        shape = x.shape
        x_flat = x.reshape(-1, shape[-1])
        ids = token_ids.reshape(-1) if token_ids is not None else None
        topk_weight, topk_idx = self.gate(x_flat, ids)
        if self.track_load and not self.hash_routed:
            with torch.no_grad():
                self.expert_load += expert_counts(topk_idx.reshape(-1), self.expert_load.numel())
        y = self.dispatcher(x_flat, topk_idx, topk_weight, self.experts)
        if self.shared_experts is not None:
            y = (y.float() + self.shared_experts(x_flat).float()).to(x.dtype)
        return y.view(shape)


@torch.no_grad()
def update_router_biases(moe_layers, rate: float = 1e-3, group=None) -> None:
    """Aux-loss-free load balancing (DeepSeek-V3's rule, V4's ``noaux_tc``): for every score-routed
    layer, ``bias_i += rate * sign(mean_load - load_i)`` from the loads counted since the last call
    (``MoE.track_load`` must be on), then reset the counts. ``group``: a process group whose ranks'
    loads are summed first, so every rank applies the same step. The sign makes the step independent
    of how often a forward was counted (e.g. recomputed under activation checkpointing).
    The V4 rate is not published; 1e-3 is DeepSeek-V3's."""
    for moe in moe_layers:
        if moe.hash_routed:
            continue
        load = moe.expert_load
        if group is not None:
            torch.distributed.all_reduce(load, group=group)
        load = load.double()
        if load.sum() > 0:
            moe.gate.bias += rate * torch.sign(load.mean() - load).to(moe.gate.bias.dtype)
        moe.expert_load.zero_()
