"""Test helpers shared by every layer's tests: the DESIGN.md numerics rule and input makers.

Numerics rule (torch._dynamo.utils.same): compare the fused result and the eager low-precision result
against an fp64 reference; pass when ``rmse(fused) <= k * rmse(eager) + tol / 10`` with k = 3 for
bf16/fp16 results and 2 otherwise (or when the fused result is allclose to eager at ``tol``).
"""
from __future__ import annotations

import collections
from typing import Any, Iterable

import torch

LOW_PRECISION = (torch.bfloat16, torch.float16)


def rmse(a: torch.Tensor, b: torch.Tensor) -> float:
    diff = a.detach().to(torch.float64) - b.detach().to(torch.float64)
    return float(diff.pow(2).mean().sqrt()) if diff.numel() else 0.0


def _flatten(x: Any) -> list:
    if isinstance(x, torch.Tensor) or x is None:
        return [x]
    if isinstance(x, (list, tuple)):
        return [leaf for item in x for leaf in _flatten(item)]
    raise TypeError(f"assert_close_to_reference: expected tensors or (nested) tuples of tensors, got {type(x)}")


def assert_close_to_reference(actual: Any, eager: Any, reference: Any, *, tol: float = 1e-4,
                              multiplier: float | None = None, compute_dtype: torch.dtype | None = None,
                              name: str = "output") -> None:
    """Assert the DESIGN.md rule for each tensor in (nested tuples of) ``actual``/``eager``/``reference``.

    ``actual``: fused/compiled result; ``eager``: the same computation run eagerly in the same dtypes;
    ``reference``: the computation run in fp64 (any dtype; compared in fp64). The multiplier is 3 when
    the tensor (or ``compute_dtype``, the precision the computation ran in, e.g. an fp32 gradient of a
    bf16 model) is bf16/fp16, else 2."""
    acts, eags, refs = _flatten(actual), _flatten(eager), _flatten(reference)
    if not (len(acts) == len(eags) == len(refs)):
        raise AssertionError(f"{name}: structure differs ({len(acts)} / {len(eags)} / {len(refs)} tensors)")
    for i, (a, e, r) in enumerate(zip(acts, eags, refs)):
        label = f"{name}[{i}]" if len(acts) > 1 else name
        if a is None or e is None or r is None:
            if not (a is None and e is None):
                raise AssertionError(f"{label}: one of fused/eager is None (fused={a is None}, eager={e is None})")
            continue
        if a.shape != e.shape:
            raise AssertionError(f"{label}: fused shape {tuple(a.shape)} != eager shape {tuple(e.shape)}")
        if a.dtype != e.dtype:
            raise AssertionError(f"{label}: fused dtype {a.dtype} != eager dtype {e.dtype}")
        a64, e64 = a.detach().to(torch.float64), e.detach().to(torch.float64)
        if not torch.isfinite(a64).all() and torch.isfinite(e64).all():
            raise AssertionError(f"{label}: fused result has non-finite values where eager has none")
        if torch.allclose(a64, e64, atol=tol, rtol=tol):
            continue
        low = a.dtype in LOW_PRECISION or compute_dtype in LOW_PRECISION
        k = multiplier if multiplier is not None else (3.0 if low else 2.0)
        err_fused, err_eager = rmse(a, r), rmse(e, r)
        if not err_fused <= k * err_eager + tol / 10:
            raise AssertionError(
                f"{label}: fused rmse vs fp64 {err_fused:.3e} > {k} x eager rmse {err_eager:.3e} + {tol / 10:.1e} "
                f"(dtype {a.dtype}, shape {tuple(a.shape)})")


def to_fp64(tree: Any) -> Any:
    """Detached fp64 leaf copies (requires_grad kept) of the floating tensors in a nested structure."""
    if isinstance(tree, torch.Tensor):
        if not tree.is_floating_point():
            return tree
        out = tree.detach().to(torch.float64)
        return out.requires_grad_(tree.requires_grad)
    if isinstance(tree, (list, tuple)):
        return type(tree)(to_fp64(t) for t in tree)
    return tree


def make_input(shape: Iterable[int], dtype: torch.dtype, *, noncontiguous: bool = False, seed: int = 0,
               scale: float = 1.0, requires_grad: bool = False) -> torch.Tensor:
    """A seeded normal tensor; ``noncontiguous`` returns a strided view (every other column)."""
    shape = tuple(shape)
    g = torch.Generator().manual_seed(seed)
    if noncontiguous:
        base = torch.randn(*shape[:-1], 2 * shape[-1], generator=g) * scale
        t = base.to(dtype)[..., ::2]
    else:
        t = (torch.randn(*shape, generator=g) * scale).to(dtype)
    return t.requires_grad_(requires_grad)


def trex_op_counts(gm) -> collections.Counter:
    """Count ``torch.ops.trex.*`` calls in an FX GraphModule, by short op name."""
    counts: collections.Counter = collections.Counter()
    for node in (gm.graph.nodes if gm is not None else ()):
        if node.op == "call_function" and str(node.target).startswith("trex."):
            counts[str(node.target).split(".")[1]] += 1
    return counts


def aten_op_counts(gm) -> collections.Counter:
    """Count the other call_function targets of an FX GraphModule, by ATen op name (``aten.rsqrt``)."""
    counts: collections.Counter = collections.Counter()
    for node in (gm.graph.nodes if gm is not None else ()):
        if node.op == "call_function" and not str(node.target).startswith("trex."):
            name = str(getattr(node.target, "_overloadpacket", node.target))
            counts[name] += 1
    return counts
