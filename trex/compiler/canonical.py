"""Canonicalisation: rewrite equivalent ATen spellings to one form before matching.

Runs on model graphs and on traced pattern chains alike (graph.py), so a pattern written with one
spelling matches all spellings that canonicalise to the same form. Each rule is a small function in
the ``RULES`` table keyed by the ATen overload it looks at; it returns the replacement node (already
inserted) or ``None``. Every rule is an exact rewrite (same values, same dtype), never an
approximation:

==================================  ============================================
spelling                            canonical form
==================================  ============================================
``x * x``                           ``pow(x, 2)``
``1 / sqrt(v)``, ``v ** -0.5``      ``rsqrt(v)``
``x / sqrt(v)``                     ``x * rsqrt(v)``
``sum(x, d, keepdim) / n``          ``mean(x, d, keepdim)`` (n = reduced numel)
``g * sigmoid(g)``, ``g/(1+e^-g)``  ``silu(g)``
``clamp_max``/``clamp_min``         ``clamp(x, lo, hi)``; nested clamps merged
``minimum/maximum(x, const)``       ``clamp``
``x * 1``, no-op casts, ``clone``   removed (clone only of dense tensors)
``x[..., -n:]`` over all of x       ``x`` (no ``slice_backward`` copy in the backward)
``sum/mean(x, dtype=x.dtype)``      ``sum/mean(x)`` (CUDA autocast's spelling)
``_to_copy(x, dtype, layout, dev)`` ``_to_copy(x, dtype=...)``
==================================  ============================================
"""
from __future__ import annotations

import math
import operator
from typing import Callable

import torch
import torch.fx as fx

from .graph import aten, insert_call, remove_dead_code, same_size, val

Rule = Callable[[fx.Node], "fx.Node | None"]


def _is_node(x) -> bool:
    return isinstance(x, fx.Node)


def _scalar(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def constant_value(node) -> float | None:
    """The value of a 0-d constant tensor node (a lifted ``torch.tensor(c)``, ``scalar_tensor``, ``full``)."""
    while _is_node(node) and node.op == "call_function" and node.target in (
            aten.detach.default, aten.lift_fresh_copy.default, aten.clone.default, aten.alias.default):
        node = node.args[0]
    if not _is_node(node):
        return None
    if node.op == "get_attr":
        owner = node.graph.owning_module
        t = getattr(owner, node.target, None) if owner is not None else None
        if isinstance(t, torch.Tensor) and t.numel() == 1 and not isinstance(t, torch._subclasses.FakeTensor):
            return float(t.item())
        return None
    if node.op == "call_function" and node.target == aten.scalar_tensor.default:
        return _scalar(node.args[0])
    if node.op == "call_function" and node.target == aten.full.default and list(node.args[0]) == []:
        return _scalar(node.args[1])
    return None


def _same_meta(a, b) -> bool:
    va, vb = val(a), val(b)
    return (isinstance(va, torch.Tensor) and isinstance(vb, torch.Tensor) and va.dtype == vb.dtype
            and len(va.shape) == len(vb.shape) and all(same_size(x, y) for x, y in zip(va.shape, vb.shape)))


def _returns_alias(node: fx.Node) -> bool:
    """Whether ``node``'s result shares storage with its input (a view: ``view``, ``t``, ``split`` and
    the ``getitem`` that unpacks it)."""
    if node.op != "call_function":
        return False
    if node.target is operator.getitem:
        return True
    schema = getattr(node.target, "_schema", None)
    return schema is not None and any(r.alias_info is not None for r in schema.returns)


def escapes(node: fx.Node) -> bool:
    """Whether ``node``'s storage reaches the caller: it is a graph output, or a view of it is. Such a
    value must stay its own tensor: dropping the copy that made it (``clone``, a same-dtype ``_to_copy``,
    ``x * 1``) or merging it with an equal value would hand the caller a tensor that aliases an input or
    another output, and an in-place update of one would silently change the other."""
    stack, seen = [node], set()
    while stack:
        n = stack.pop()
        if n in seen:
            continue
        seen.add(n)
        for user in n.users:
            if user.op == "output":
                return True
            if _returns_alias(user):
                stack.append(user)
    return False


def _insert(anchor: fx.Node, target, args, kwargs=None) -> fx.Node:
    return insert_call(anchor.graph, target, args, kwargs, before=anchor)


# ----------------------------------------------------------------------------------------- rules
def _to_copy(node):
    x = node.args[0]
    kwargs = dict(node.kwargs)
    dtype = kwargs.pop("dtype", None)
    xv = val(x)
    if not isinstance(xv, torch.Tensor):
        return None
    if kwargs.get("layout", torch.strided) != torch.strided or kwargs.get("device", xv.device) != xv.device:
        return None
    kwargs.pop("layout", None), kwargs.pop("device", None)
    if kwargs:  # memory_format / pin_memory / non_blocking: leave alone
        return None
    if dtype is None or dtype == xv.dtype:
        return None if escapes(node) else x
    if set(node.kwargs) == {"dtype"}:
        return None  # already canonical
    return _insert(node, aten._to_copy.default, (x,), {"dtype": dtype})


def _reduction_dtype(node):
    """``sum/mean(x, ..., dtype=x.dtype)`` -> without the dtype: CUDA autocast calls sum with
    dtype=float32 even on fp32 inputs (its fp32_set_opt_dtype policy; CPU autocast does not), which
    hid the mHC chain's Sinkhorn column sums from the pattern on the H200."""
    dtype = node.kwargs.get("dtype")
    xv = val(node.args[0])
    if dtype is None or not isinstance(xv, torch.Tensor) or dtype != xv.dtype:
        return None
    kwargs = {k: v for k, v in node.kwargs.items() if k != "dtype"}
    return _insert(node, node.target, node.args, kwargs)


def _full_slice(node):
    """``x[..., -n:]`` / ``x[a:b]`` covering all of ``x`` along its dim -> ``x``. Left in place it reaches
    the backward as ``slice_backward`` (a zero fill and a copy of the whole gradient): the H200 timed
    RoPE forward+backward through backend="trex" at 0.258 ms against the fused op's 0.139 ms."""
    x, dim = node.args[0], node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    start = node.args[2] if len(node.args) > 2 else node.kwargs.get("start")
    end = node.args[3] if len(node.args) > 3 else node.kwargs.get("end")
    step = node.args[4] if len(node.args) > 4 else node.kwargs.get("step", 1)
    xv = val(x)
    if not isinstance(xv, torch.Tensor) or step != 1 or escapes(node):
        return None
    size = xv.shape[dim]
    if not isinstance(size, int) or not all(v is None or isinstance(v, int) for v in (start, end)):
        return None     # symbolic extents: not provably the whole dim
    start = 0 if start is None else (start + size if start < 0 else start)
    end = size if end is None else (end + size if end < 0 else end)
    return x if start <= 0 and end >= size else None


def _clone(node):
    if node.kwargs.get("memory_format") not in (None, torch.contiguous_format, torch.preserve_format):
        return None
    if escapes(node):
        return None  # keep: removing it could make a graph output alias an input
    xv = val(node.args[0])
    if not isinstance(xv, torch.Tensor) or not xv.is_contiguous():
        return None  # keep: later views were traced against the clone's dense layout
    return node.args[0]


def _mul(node):
    a, b = node.args[0], node.args[1] if len(node.args) > 1 else None
    if _is_node(a) and a is b:
        return _insert(node, aten.pow.Tensor_Scalar, (a, 2))
    for x, y in ((a, b), (b, a)):
        if _is_node(x) and _scalar(y) == 1.0 and _same_meta(node, x) and not escapes(node):
            return x
    for x, y in ((a, b), (b, a)):  # g * sigmoid(g) -> silu(g)
        if _is_node(y) and y.op == "call_function" and y.target == aten.sigmoid.default and y.args[0] is x:
            return _insert(node, aten.silu.default, (x,))
    return None


def _reciprocal(node):
    a = node.args[0]
    if _is_node(a) and a.op == "call_function" and a.target == aten.sqrt.default:
        return _insert(node, aten.rsqrt.default, (a.args[0],))
    return None


def _pow(node):
    base, exp = node.args
    if exp == -0.5:
        return _insert(node, aten.rsqrt.default, (base,))
    if exp == -1 and _is_node(base) and base.op == "call_function" and base.target == aten.sqrt.default:
        return _insert(node, aten.rsqrt.default, (base.args[0],))
    return None


def _reduced_numel(sum_node):
    x, dims = sum_node.args[0], sum_node.args[1]
    shape = val(x).shape
    numel = 1
    for d in dims:
        numel = numel * shape[d]
    return numel


def _div(node):
    a, b = node.args
    if _is_node(b) and b.op == "call_function" and b.target == aten.sqrt.default:
        r = _insert(node, aten.rsqrt.default, (b.args[0],))
        return _insert(node, aten.mul.Tensor, (a, r))
    if (_is_node(a) and a.op == "call_function" and a.target == aten.sum.dim_IntList and not a.kwargs.get("dtype")
            and val(a.args[0]).dtype.is_floating_point):   # mean() rejects integer inputs
        n = b if not _is_node(b) else val(b) if isinstance(val(b), torch.SymInt) else None
        if n is not None and len(a.args) >= 2 and a.args[1] and same_size(_reduced_numel(a), n):
            keepdim = a.args[2] if len(a.args) > 2 else a.kwargs.get("keepdim", False)
            return _insert(node, aten.mean.dim, (a.args[0], list(a.args[1]), keepdim))
    if _is_node(b) and b.op == "call_function" and b.target == aten.add.Tensor and _is_node(a):
        e, one = b.args[0], b.args[1]  # g / (1 + exp(-g)) -> silu(g); not 1 + alpha * exp(-g)
        if b.kwargs:
            return None
        if _scalar(e) == 1.0:
            e, one = one, e
        if (_scalar(one) == 1.0 and _is_node(e) and e.target == aten.exp.default and _is_node(e.args[0])
                and e.args[0].target == aten.neg.default and e.args[0].args[0] is a):
            return _insert(node, aten.silu.default, (a,))
    return None


def _mul_by_inverse_numel(node):
    a, b = node.args[0], node.args[1]
    for s, c in ((a, b), (b, a)):
        if (_is_node(s) and s.op == "call_function" and s.target == aten.sum.dim_IntList and _scalar(c)
                and s.args[1] and not s.kwargs.get("dtype") and val(s.args[0]).dtype.is_floating_point):
            n = _reduced_numel(s)
            if isinstance(n, int) and math.isclose(c * n, 1.0, rel_tol=1e-12):
                keepdim = s.args[2] if len(s.args) > 2 else s.kwargs.get("keepdim", False)
                return _insert(node, aten.mean.dim, (s.args[0], list(s.args[1]), keepdim))
    return None


def _clamp_bound(node, lo, hi):
    """clamp(x, lo, hi), merging into a single-user inner clamp that leaves the other bound free."""
    x = node.args[0]
    if (_is_node(x) and x.op == "call_function" and x.target == aten.clamp.default and len(x.users) == 1):
        ilo = x.args[1] if len(x.args) > 1 else None
        ihi = x.args[2] if len(x.args) > 2 else None
        # max(min(x, ihi), lo) is clamp(x, lo, ihi) only when lo <= ihi: torch.clamp applies max last,
        # so with crossed bounds it returns ihi where the nested form returns lo.
        crossed = lo is not None and ihi is not None and lo > ihi
        if (lo is None or ilo is None) and (hi is None or ihi is None) and not crossed:
            return _insert(node, aten.clamp.default, (x.args[0], lo if lo is not None else ilo,
                                                       hi if hi is not None else ihi))
    return _insert(node, aten.clamp.default, (x, lo, hi))


def _clamp(node):
    lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
    hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
    if _is_node(lo) or _is_node(hi):
        return None
    x = node.args[0]
    if not (_is_node(x) and x.op == "call_function" and x.target == aten.clamp.default and len(x.users) == 1):
        if node.kwargs:
            return _insert(node, aten.clamp.default, (x, lo, hi))
        return None
    return _clamp_bound(node, lo, hi)


def _clamp_max(node):
    return None if _is_node(node.args[1]) else _clamp_bound(node, None, node.args[1])


def _clamp_min(node):
    return None if _is_node(node.args[1]) else _clamp_bound(node, node.args[1], None)


def _min_max(is_min: bool) -> Rule:
    def rule(node):
        a, b = node.args
        for x, c in ((a, b), (b, a)):
            value = constant_value(c)
            if value is not None and _is_node(x) and val(x).dtype.is_floating_point and _same_meta(node, x):
                return _clamp_bound(node, None, value) if is_min else _clamp_bound(node, value, None)
        return None
    return rule


RULES: dict[object, list[Rule]] = {
    aten._to_copy.default: [_to_copy],
    aten.clone.default: [_clone],
    aten.slice.Tensor: [_full_slice],
    aten.mul.Tensor: [_mul, _mul_by_inverse_numel],
    aten.reciprocal.default: [_reciprocal],
    aten.pow.Tensor_Scalar: [_pow],
    aten.div.Tensor: [_div],
    aten.clamp.default: [_clamp],
    aten.clamp_max.default: [_clamp_max],
    aten.clamp_min.default: [_clamp_min],
    aten.sum.dim_IntList: [_reduction_dtype],
    aten.sum.default: [_reduction_dtype],
    aten.mean.dim: [_reduction_dtype],
    aten.mean.default: [_reduction_dtype],
    aten.minimum.default: [_min_max(True)],
    aten.maximum.default: [_min_max(False)],
}


_IMPURE_WORDS = ("rand", "bernoulli", "dropout", "empty", "normal", "uniform", "multinomial")


def _cse_key(node: fx.Node):
    schema = getattr(node.target, "_schema", None)
    if schema is None or schema.is_mutable or any(w in str(node.target) for w in _IMPURE_WORDS):
        return None
    if torch.Tag.nondeterministic_seeded in getattr(node.target, "tags", ()):
        return None  # random ops by tag too (poisson, exponential, ...): two draws are not one

    def freeze(x):
        if isinstance(x, fx.Node):
            return ("node", id(x))
        if isinstance(x, (list, tuple)):
            return tuple(freeze(y) for y in x)
        if isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            raise TypeError("symbolic literal")
        if isinstance(x, float):
            return ("float", x.hex())   # 0.0 == -0.0 in Python, but x * 0.0 and x * -0.0 differ in sign
        return (type(x).__name__, x)

    try:
        key = (node.target, freeze(node.args), tuple(sorted((k, freeze(v)) for k, v in node.kwargs.items())))
        hash(key)
    except TypeError:
        return None
    return key


def eliminate_common_subexpressions(graph: fx.Graph) -> int:
    """Merge pure nodes with the same op and inputs (``x[..., -r:]`` written twice, ``x.float()`` twice)."""
    seen: dict = {}
    merged = 0
    for node in list(graph.nodes):
        if node.op != "call_function":
            continue
        key = _cse_key(node)
        if key is None:
            continue
        if key in seen and escapes(node) and escapes(seen[key]):
            continue  # two equal outputs must stay two tensors (the caller may update one in place)
        if key in seen:
            node.replace_all_uses_with(seen[key])
            graph.erase_node(node)
            merged += 1
        else:
            seen[key] = node
    return merged


def canonicalize(graph: fx.Graph, max_rounds: int = 6) -> int:
    """Apply ``RULES`` (and CSE) to a fixpoint; returns the number of rewrites."""
    total = 0
    for _ in range(max_rounds):
        changed = eliminate_common_subexpressions(graph)
        for node in list(graph.nodes):
            if node.op != "call_function" or getattr(node, "_erased", False) or not node.users:
                continue
            for rule in RULES.get(node.target, ()):
                new = rule(node)
                if new is not None and new is not node and not _same_meta(node, new):
                    # not the same dtype/shape (``b * b`` on bools is and, ``pow(b, 2)`` is int64):
                    # not an exact rewrite after all; keep the original node
                    if not new.users:
                        graph.erase_node(new)
                    continue
                if new is not None and new is not node:
                    node.replace_all_uses_with(new)
                    graph.erase_node(node)
                    changed += 1
                    break
        remove_dead_code(graph)
        total += changed
        if not changed:
            break
    return total
