"""Where the host time of a training step goes: aten ops (≈ kernel launches) and host syncs of one
forward + backward, by model part, layer and call site (bench/NOTES_train.md has the findings).

    python -m trex.training.model.opcount --n-layers 4 --seq-len 256 --micro-batch 2          # CPU, eager
    python -m trex.training.model.opcount --device cuda --bf16 --n-layers 4 --seq-len 1024 --micro-batch 4

A ``TorchDispatchMode`` sees every aten op below autograd. Forward ops are attributed to the innermost
running module (forward hooks) and the innermost call site in trex/training/model; backward ops to the
forward op that created their autograd node (a ``TorchFunctionMode`` tags each result's ``grad_fn``,
nodes made inside composite ops inherit their consumer's tag). Ops that only make a view or an
allocation are counted apart ("views"): they launch no kernel. Host syncs are the ops that read device
memory on the host on CUDA (``SYNC_OPS``: ``.item()``/``.tolist()`` reads, data-dependent output
shapes, bincount, bool-mask indexing, ...). On CUDA ``torch.cuda.set_sync_debug_mode`` also reports
every real synchronisation, with its Python line.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import re
import sys
import time
import warnings
from dataclasses import dataclass, field

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

MODEL_DIR = os.path.dirname(os.path.abspath(__file__))

# aten ops that make a view, an alias or an uninitialised allocation: no kernel launch
VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "_reshape_alias", "unsqueeze", "squeeze", "expand", "transpose", "t",
    "permute", "slice", "select", "as_strided", "alias", "detach", "unflatten", "flatten", "view_as_real",
    "view_as_complex", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "split",
    "split_with_sizes", "unbind", "chunk", "narrow", "diagonal", "lift_fresh", "_conj", "conj",
    "resolve_conj", "resolve_neg", "_neg_view", "real", "imag",
})
# aten ops that read device memory on the host when run on CUDA (why, for the table)
SYNC_OPS = {
    "_local_scalar_dense": ".item() / float() / bool() / .tolist() element read",
    "nonzero": "nonzero: data-dependent output shape",
    "masked_select": "masked_select: data-dependent output shape",
    "_unique2": "unique: data-dependent output shape",
    "unique_dim": "unique: data-dependent output shape",
    "unique_consecutive": "unique: data-dependent output shape",
    "bincount": "bincount: CUDA reads the input's min and max to size the output",
    "histc": "histc: CUDA reads the input's min and max when no range is given",
    "equal": "torch.equal: host bool",
    "is_nonzero": "bool(tensor)",
}
# Tensor methods that read device memory on the host (seen above the dispatcher: on a CPU tensor
# .tolist() reads memory directly and dispatches no aten op)
SYNC_METHODS = frozenset({"tolist", "item", "__bool__", "__int__", "__float__", "__index__", "numpy", "cpu"})


def call_site() -> str:
    """``file:line function`` of the innermost frame in trex/training/model, else ``<outside model>``."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith(MODEL_DIR) and not frame.f_code.co_filename.endswith("opcount.py"):
            return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno} {frame.f_code.co_name}"
        frame = frame.f_back
    return "<outside model>"


def model_part(module: str, site: str) -> str:
    """The part of the model an op belongs to, from the running module's name and the call site."""
    if "mhc.py" in site:
        return "mHC (mhc_pre, Sinkhorn, hc_post, hc_head)"
    if re.search(r"norm$", module):
        return "RMSNorm modules"
    if ".attn.indexer" in module:
        return "attention: indexer (+ its compressor)"
    if ".attn.compressor" in module:
        return "attention: compressor"
    if module.endswith(".attn") or ".attn." in module:
        return "attention: core (projections, RoPE, masks, softmax)"
    if ".ffn.gate" in module:
        return "MoE: router"
    if ".ffn.experts." in module:
        return "MoE: routed experts"
    if ".ffn.shared_experts" in module:
        return "MoE: shared expert"
    if module.endswith(".ffn"):
        return "MoE: dispatch (sort, gather, scatter)"
    if module == "<AccumulateGrad>":
        return "gradient accumulation"
    return "embedding, head, loss, MTP projections"


def layer_of(module: str) -> str:
    parts = module.split(".")
    return f"{parts[0]}.{parts[1]}" if parts[0] in ("layers", "mtp") and len(parts) > 1 else "-"


class _ModuleStack:
    """The names of the modules whose forward is running (innermost last)."""

    def __init__(self, model: torch.nn.Module):
        self._names = {m: n for n, m in model.named_modules()}
        self.stack: list[str] = []
        self.handles = []
        for m in model.modules():
            self.handles.append(m.register_forward_pre_hook(self._enter))
            self.handles.append(m.register_forward_hook(self._exit))

    def _enter(self, module, _inputs):
        self.stack.append(self._names[module])

    def _exit(self, module, _inputs, _output):
        self.stack.pop()

    def current(self) -> str:
        return self.stack[-1] if self.stack else "<top>"

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


@dataclass
class OpCounts:
    """Counts of one step. Keys: phase ('forward'/'backward'), part, layer, op, call site."""
    kernels: collections.Counter = field(default_factory=collections.Counter)   # (phase, part, layer) -> n
    views: collections.Counter = field(default_factory=collections.Counter)     # (phase, part, layer) -> n
    ops: collections.Counter = field(default_factory=collections.Counter)       # (phase, part, op) -> n
    syncs: collections.Counter = field(default_factory=collections.Counter)     # (phase, why, site) -> n

    def total(self, phase: str | None = None, views: bool = False) -> int:
        table = self.views if views else self.kernels
        return sum(n for (p, _, _), n in table.items() if phase in (None, p))

    def by_part(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = collections.defaultdict(lambda: collections.Counter())
        for (phase, part, _), n in self.kernels.items():
            out[part][phase] += n
        return {k: dict(v) for k, v in out.items()}

    def by_layer(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = collections.defaultdict(lambda: collections.Counter())
        for (phase, _, layer), n in self.kernels.items():
            out[layer][phase] += n
        return {k: dict(v) for k, v in out.items()}

    def sync_sites(self) -> dict[tuple[str, str, str], int]:
        return dict(self.syncs)


class _Counter(TorchDispatchMode):
    def __init__(self, stack: _ModuleStack, counts: OpCounts):
        super().__init__()
        self.stack, self.counts, self.phase = stack, counts, "forward"

    def _where(self) -> tuple[str, str]:
        if self.phase == "forward":
            return self.stack.current(), call_site()
        node = torch._C._current_autograd_node()
        tag = node.metadata.get("opcount_site") if node is not None else None
        return tag if tag is not None else ("<untagged>", "<backward>")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        module, site = self._where()
        part, layer = model_part(module, site), layer_of(module)
        if name in VIEW_OPS:
            self.counts.views[(self.phase, part, layer)] += 1
        else:
            self.counts.kernels[(self.phase, part, layer)] += 1
            self.counts.ops[(self.phase, part, name)] += 1
        why = SYNC_OPS.get(name)
        if name in ("index", "index_put", "index_put_") and len(args) > 1 and any(
                isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in (args[1] or ()) if i is not None):
            why = "boolean-mask indexing: data-dependent output shape"
        if name == "repeat_interleave" and kwargs.get("output_size") is None and isinstance(args[0], torch.Tensor):
            why = "repeat_interleave with tensor repeats and no output_size"
        if why:
            self.counts.syncs[(self.phase, why, site)] += 1
        return func(*args, **kwargs)


class _Tagger(TorchFunctionMode):
    """Tags every forward result's autograd node with (module, call site); counts host-reading methods."""

    def __init__(self, stack: _ModuleStack, counter: _Counter):
        super().__init__()
        self.stack, self.counter = stack, counter

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = getattr(func, "__name__", "")
        if name in SYNC_METHODS:
            self.counter.counts.syncs[(self.counter.phase, f"Tensor.{name}(): host read", call_site())] += 1
        if self.counter.phase == "forward":
            tag = (self.stack.current(), call_site())
            for t in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(t, torch.Tensor) and t.grad_fn is not None and "opcount_site" not in t.grad_fn.metadata:
                    t.grad_fn.metadata["opcount_site"] = tag
        return out


def _inherit_tags(root: torch.Tensor) -> None:
    """Nodes made inside a composite op (no tag of their own) take the tag of the node that consumes them."""
    seen, todo = set(), [(root.grad_fn, None)]
    while todo:
        node, parent = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        if "AccumulateGrad" in node.name():
            node.metadata["opcount_site"] = ("<AccumulateGrad>", "<gradient accumulation>")
        tag = node.metadata.setdefault("opcount_site", parent) if parent is not None else node.metadata.get(
            "opcount_site")
        todo.extend((nxt, tag) for nxt, _ in node.next_functions)


def count_step(model: torch.nn.Module, loss_fn, autocast: contextlib.AbstractContextManager | None = None
               ) -> OpCounts:
    """Run ``loss = loss_fn(model)`` and ``loss.backward()`` once under the counters (eager model)."""
    counts = OpCounts()
    stack = _ModuleStack(model)
    counter = _Counter(stack, counts)
    try:
        with _Tagger(stack, counter), counter, (autocast or contextlib.nullcontext()):
            loss = loss_fn(model)
        _inherit_tags(loss)
        counter.phase = "backward"
        with _Tagger(stack, counter), counter:
            loss.backward()
    finally:
        stack.remove()
    return counts


def _cuda_syncs(model, loss_fn, autocast) -> collections.Counter:
    """Real CUDA synchronisations of one step, by the Python line that caused them."""
    found: collections.Counter = collections.Counter()
    previous = torch.cuda.get_sync_debug_mode()
    torch.cuda.set_sync_debug_mode("warn")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with autocast or contextlib.nullcontext():
                loss = loss_fn(model)
            loss.backward()
            torch.cuda.synchronize()
    finally:
        torch.cuda.set_sync_debug_mode(previous)
    for w in caught:
        if "synchroniz" in str(w.message):
            found[f"{os.path.relpath(w.filename)}:{w.lineno}"] += 1
    return found


def reduced_small(n_layers: int, **overrides):
    """``small`` cut to its first ``n_layers`` trunk layers (+ the MTP block), as bench/_train_common does."""
    from .args import get_config
    base = get_config("small")
    ratios = list(base.compress_ratios)
    return get_config("small", n_layers=n_layers,
                      compress_ratios=tuple(ratios[:n_layers] + ratios[base.n_layers:]),
                      n_hash_layers=min(base.n_hash_layers, n_layers), **overrides)


def main(argv=None) -> int:
    from .model import Transformer, lm_loss
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-layers", type=int, default=4, help="trunk layers of `small` (4: SWA, SWA, CSA, HCA + MTP)")
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--micro-batch", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--bf16", action="store_true", help="bf16 autocast, as the H200 training runs")
    ap.add_argument("--moe-dispatch", default="sparse", choices=["sparse", "dense"])
    ap.add_argument("--json", default=None, help="also write the counts here")
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    cfg = reduced_small(args.n_layers, moe_dispatch=args.moe_dispatch)
    torch.manual_seed(0)
    model = Transformer(cfg).to(device)
    tokens = torch.randint(0, cfg.vocab_size, (args.micro_batch, args.seq_len), device=device)
    labels = torch.randint(0, cfg.vocab_size, (args.micro_batch, args.seq_len), device=device)

    def loss_fn(m):
        logits, mtp = m(tokens)
        return lm_loss(logits, mtp, labels)[0]

    def autocast():
        return torch.autocast(device.type, dtype=torch.bfloat16) if args.bf16 else contextlib.nullcontext()

    t0 = time.perf_counter()
    with autocast():
        loss = loss_fn(model)
    loss.backward()
    if device.type == "cuda":
        torch.cuda.synchronize()
    print(f"warm-up step {time.perf_counter() - t0:.2f} s; compress_ratios {cfg.compress_ratios}")
    model.zero_grad(set_to_none=True)
    counts = count_step(model, loss_fn, autocast())
    model.zero_grad(set_to_none=True)

    print(f"\naten ops of one step ({args.micro_batch} x {args.seq_len} tokens, {cfg.n_layers} trunk layers + "
          f"{cfg.n_mtp_layers} MTP, {'bf16 autocast' if args.bf16 else 'fp32'}, {args.moe_dispatch} dispatch)")
    print(f"{'part':52s} {'fwd':>7s} {'bwd':>7s}")
    for part, n in sorted(counts.by_part().items(), key=lambda kv: -sum(kv[1].values())):
        print(f"{part:52s} {n.get('forward', 0):7d} {n.get('backward', 0):7d}")
    print(f"{'total kernels':52s} {counts.total('forward'):7d} {counts.total('backward'):7d}")
    print(f"{'views / allocations (no kernel)':52s} {counts.total('forward', True):7d} "
          f"{counts.total('backward', True):7d}")
    print(f"\n{'layer':12s} {'fwd':>7s} {'bwd':>7s}")
    for layer, n in sorted(counts.by_layer().items()):
        print(f"{layer:12s} {n.get('forward', 0):7d} {n.get('backward', 0):7d}")
    print("\nmost frequent kernels")
    for (phase, part, op), n in counts.ops.most_common(20):
        print(f"{n:6d}  {phase:8s} {op:24s} {part}")
    print("\nhost syncs on CUDA (phase, why, call site: count per step)")
    for (phase, why, site), n in sorted(counts.syncs.items()):
        print(f"{n:6d}  {phase:8s} {site:40s} {why}")
    real = {}
    if device.type == "cuda":
        real = _cuda_syncs(model, loss_fn, autocast())
        print("\nCUDA synchronisations reported by set_sync_debug_mode (line: count)")
        for site, n in real.most_common():
            print(f"{n:6d}  {site}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "by_part": counts.by_part(), "by_layer": counts.by_layer(),
                       "kernels": {"forward": counts.total("forward"), "backward": counts.total("backward")},
                       "views": {"forward": counts.total("forward", True), "backward": counts.total("backward", True)},
                       "syncs": [{"phase": p, "why": w, "site": s, "count": n} for (p, w, s), n in counts.syncs.items()],
                       "cuda_syncs": dict(real)}, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
