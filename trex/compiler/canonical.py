"""Canonicalisation: rewrite equivalent ATen spellings to one form before matching.

Runs on model graphs and on traced pattern chains alike (graph.py), so a pattern written with one
spelling matches all spellings that canonicalise to the same form. Each rule is a small function in
one of three tables keyed by the ATen overload it looks at; it returns the replacement node (already
inserted) or ``None``. Three kinds of rules, because a compiled graph must compute what eager computes
wherever nothing fuses (values AND gradients, ties, nan and inf included), with one stated exception:

* ``EXACT_RULES`` give bit-identical values and gradients (a no-op cast or clone removed, ``clamp_max``
  spelt ``clamp``); they rewrite the graph for good.
* ``MATCHING_RULES`` give the same mathematics but not the same bits (``1 / sqrt(v)`` and ``rsqrt(v)``
  round differently, ``g / (1 + exp(-g))`` has a nan gradient at -inf where ``silu`` has 0). In a model
  graph (``canonicalize(graph, keep_originals=True)``) the original node stays in the graph beside its
  canonical form (marked, without users); after the patterns ran, ``restore_unfused`` puts every
  original whose canonical form did not end up inside a fused op back in place. Pattern chains are
  canonicalised for good (they are never run).
* ``LAYOUT_RULES`` give the same mathematics in another GEMM layout: the same products summed over the
  same terms, not the same bits (another GEMM kernel and blocking; a reduction the backward did outside
  a GEMM moves inside one). They rewrite the graph for good, fused or not, because what they remove is
  a materialised copy (a broadcast operand of ``matmul``, gigabytes in transformers' DeepSeek-V4
  indexer) that costs more than any fusion here saves. Their errors against fp64 are held to the
  project's rule (``testing.assert_close_to_reference``, tests/compiler/test_broadcast_bmm.py); see each
  rule for where its error differs from eager's. Each firing is
  counted in ``logs.counters["layout_rules"][rule]`` and logged on the ``TREX_LOGS=matches`` channel.

Not a rule: ``minimum/maximum(x, c)`` to ``clamp``. At a tie eager splits the gradient in half
(``minimum(g, 10) * 3`` at g = 10 has gradient 1.5; ``clamp`` passes 3) and at nan ``maximum``
passes the gradient where ``clamp`` blocks it, so no fused op with clamp semantics may take it either.

==================================  ============================================
spelling                            canonical form
==================================  ============================================
``x * x``                           ``pow(x, 2)``
``1 / sqrt(v)``, ``v ** -0.5``      ``rsqrt(v)``
``x / sqrt(v)``                     ``x * rsqrt(v)``
``sum(x, d, keepdim) / n``          ``mean(x, d, keepdim)`` (n = reduced numel)
``g * sigmoid(g)``, ``g/(1+e^-g)``  ``silu(g)``
``clamp_max``/``clamp_min``         ``clamp(x, lo, hi)``; nested clamps merged
``x * 1``, no-op casts, ``clone``   removed (clone only of dense tensors)
``x[..., -n:]`` over all of x       ``x`` (no ``slice_backward`` copy in the backward)
``sum/mean(x, dtype=x.dtype)``      ``sum/mean(x)`` (CUDA autocast's spelling)
``_to_copy(x, dtype, layout, dev)`` ``_to_copy(x, dtype=...)``
``split/chunk(x)[i]``, ``unbind[i]`` ``x[..., a:b]``, ``select(x, d, i)``
``mean(x, d).unsqueeze(d)``         ``mean(x, d, keepdim=True)``
``x.unflatten(-1, (-1, 2))[..., k]`` ``x[..., k::2]`` (interleaved pairs; unbind too)
``w.T``, ``w.permute(1, 0)`` (2-D)    ``w.t()``
``add_(t, c)`` on a temporary       ``add(t, c)`` (``F.rms_norm``'s ``+ eps``; mul_/sub_/div_ too)
``(w * x) * rsqrt(mean(x^2)+e)``    ``w * (x * rsqrt(...))``
``einsum("...n,...nd->...d")``      ``(a.unsqueeze(-1) * b).sum(-2)`` (bmm form, proved by index replay)
``view_as_real(view_as_complex(p)   ``stack([a*c - b*s, a*s + b*c], -1)`` (c, s = view_as_real(f.resolve_conj()))
* f)``
``matmul(a, b)``, b broadcast over  ``bmm(a.view(lead, fold*M, K), b0.view(lead, K, N))``
trailing batch dims (bmm of         viewed ``[lead*fold, M, N]``: no copy of the broadcast
``clone(expand(b0))``)              (layout rule; lead, fold = the unbroadcast / broadcast batch)
==================================  ============================================
"""
from __future__ import annotations

import math
import operator
import sys
from typing import Callable

import torch
import torch.fx as fx

from . import logs
from .graph import (ASIDE, KEPT_ORIGINAL, aten, insert_call, live_nodes, remove_dead_code, same_size, source_line,
                    users, val)

Rule = Callable[[fx.Node], "fx.Node | None"]


def _is_node(x) -> bool:
    return isinstance(x, fx.Node)


def _scalar(x) -> float | None:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


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


def _open_slice_end(node):
    """``x[..., a:size]`` -> ``x[..., a:]`` (the end any open slice has, ``sys.maxsize``): ``split`` and
    ``x[..., a:]`` give the same last piece, and the patterns compare literals."""
    args = list(node.args) + [None] * (5 - len(node.args))
    x, dim, start, end, step = args
    xv = val(x)
    if node.kwargs or not isinstance(xv, torch.Tensor) or not isinstance(end, int) or end == sys.maxsize:
        return None
    size = xv.shape[dim if dim is not None else 0]
    if not isinstance(size, int) or end < size:
        return None
    step_arg = (step,) if step not in (None, 1) else ()
    return _insert(node, aten.slice.Tensor, (x, dim, start if start is not None else 0, sys.maxsize) + step_arg)


def _clone(node):
    if node.kwargs.get("memory_format") not in (None, torch.contiguous_format, torch.preserve_format):
        return None
    if escapes(node):
        return None  # keep: removing it could make a graph output alias an input
    xv = val(node.args[0])
    if not isinstance(xv, torch.Tensor) or not xv.is_contiguous():
        return None  # keep: later views were traced against the clone's dense layout
    return node.args[0]


def _mul_by_one(node):
    a, b = node.args[0], node.args[1] if len(node.args) > 1 else None
    for x, y in ((a, b), (b, a)):
        if _is_node(x) and _scalar(y) == 1.0 and _same_meta(node, x) and not escapes(node):
            return x
    return None


def _mul(node):
    a, b = node.args[0], node.args[1] if len(node.args) > 1 else None
    if _is_node(a) and a is b:
        return _insert(node, aten.pow.Tensor_Scalar, (a, 2))
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
    if (_is_node(x) and x.op == "call_function" and x.target == aten.clamp.default and len(users(x)) == 1):
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
    if not (_is_node(x) and x.op == "call_function" and x.target == aten.clamp.default and len(users(x)) == 1):
        if node.kwargs:
            return _insert(node, aten.clamp.default, (x, lo, hi))
        return None
    return _clamp_bound(node, lo, hi)


def _clamp_max(node):
    return None if _is_node(node.args[1]) else _clamp_bound(node, None, node.args[1])


def _clamp_min(node):
    return None if _is_node(node.args[1]) else _clamp_bound(node, node.args[1], None)


def _unpacked_view(node):
    """``split(x, sizes, d)[i]`` / ``split(x, size, d)[i]`` / ``chunk`` -> ``x[.., a:b]``;
    ``unbind(x, d)[i]`` -> ``select(x, d, i)``. Same values; the gradients differ only in the sign of
    a zero (split's backward concatenates, the slices' backward adds zero-filled copies)."""
    source, index = node.args
    if not (_is_node(source) and source.op == "call_function" and isinstance(index, int)):
        return None
    xv = val(source.args[0]) if source.args and _is_node(source.args[0]) else None
    if not isinstance(xv, torch.Tensor):
        return None
    if source.target == aten.unbind.int:
        dim = source.args[1] if len(source.args) > 1 else source.kwargs.get("dim", 0)
        return _insert(node, aten.select.int, (source.args[0], dim, index))
    if source.target == aten.split_with_sizes.default:
        sizes = list(source.args[1])
    elif source.target == aten.split.Tensor:
        size, total = source.args[1], xv.shape[source.args[2] if len(source.args) > 2 else 0]
        if not (isinstance(size, int) and isinstance(total, int)) or size <= 0:
            return None
        sizes = [min(size, total - k) for k in range(0, total, size)]
    else:
        return None
    dim = source.args[2] if len(source.args) > 2 else source.kwargs.get("dim", 0)
    if not all(isinstance(k, int) for k in sizes) or not 0 <= index < len(sizes):
        return None
    start = sum(sizes[:index])
    return _insert(node, aten.slice.Tensor, (source.args[0], dim, start, start + sizes[index]))


def _select_of_pairs(node):
    """``x.unflatten(-1, (-1, 2))[..., k]`` (k = 0, 1: ``unbind`` of the pair dim too) -> ``x[..., k::2]``:
    the even/odd channels of interleaved pairs, one spelling for the RoPE chains. Same values, and the
    same gradients (a zero-filled scatter into the pair view or into the strided slice)."""
    view, dim, index = node.args[0], node.args[1], node.args[2]
    if not (_is_node(view) and view.op == "call_function" and view.target in (aten.view.default, aten._unsafe_view.default)):
        return None
    x = view.args[0]
    xv, pv = val(x), val(view)
    if not (isinstance(xv, torch.Tensor) and isinstance(pv, torch.Tensor)) or pv.dim() != xv.dim() + 1:
        return None
    if dim % pv.dim() != pv.dim() - 1 or index not in (0, 1, -1, -2) or not same_size(pv.shape[-1], 2):
        return None
    if not all(same_size(a, b) for a, b in zip(pv.shape[:-2], xv.shape[:-1])) or not same_size(
            pv.shape[-2] * 2, xv.shape[-1]):
        return None
    return _insert(node, aten.slice.Tensor, (x, xv.dim() - 1, index % 2, sys.maxsize, 2))


def _matrix_transpose(node):
    """``w.T`` / ``w.permute(1, 0)`` / ``w.transpose(0, 1)`` of a matrix -> ``w.t()`` (``x @ w.T`` and
    ``F.linear`` then trace alike): the same view, the same gradient."""
    xv = val(node.args[0])
    if not isinstance(xv, torch.Tensor) or xv.dim() != 2:
        return None
    if node.target == aten.permute.default:
        swaps = [d % 2 for d in node.args[1]] == [1, 0]
    else:
        swaps = sorted(d % 2 for d in node.args[1:3]) == [0, 1]
    return _insert(node, aten.t.default, (node.args[0],)) if swaps else None


# ops that only re-index their input (einsum's operand and result plumbing around a bmm)
_REINDEX = (aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.permute.default,
            aten.unsqueeze.default, aten.squeeze.dim, aten.t.default, aten.transpose.int, aten.expand.default)


def _reindex_chain(node):
    """``node`` and the re-indexing ops behind it, nearest first, up to the first other op."""
    chain = [node]
    while _is_node(chain[-1]) and chain[-1].op == "call_function" and chain[-1].target in _REINDEX:
        chain.append(chain[-1].args[0])
    return chain


def _concrete_shape(node):
    v = val(node)
    if not isinstance(v, torch.Tensor) or not all(isinstance(s, int) for s in v.shape):
        return None
    return list(v.shape)


def _index_map(chain, source):
    """Flat indices into ``source`` that each element of ``chain[0]`` reads (the chain replayed on
    ``arange``): equal maps mean the same re-indexing, whatever ops spelt it."""
    idx = torch.arange(math.prod(_concrete_shape(source))).view(_concrete_shape(source))
    for n in reversed(chain[:chain.index(source)]):
        idx = n.target(idx, *n.args[1:], **n.kwargs)
    return idx


def _einsum_collapse(node):
    """``einsum("...n,...nd->...d", a, b)`` as traced (permutes and views around a ``bmm``) ->
    ``(a.unsqueeze(-1) * b).sum(-2)`` (the mHC collapse's spelling). Proved on the concrete sizes by
    replaying the operand and result re-indexing on index tensors: every output element must sum
    a[..., k] * b[..., k, j] over k in order. Other rounding than bmm: a matching rule."""
    out_chain = _reindex_chain(node)
    mm = out_chain[-1]
    if len(out_chain) < 2 or not (_is_node(mm) and mm.op == "call_function" and mm.target == aten.bmm.default):
        return None
    if any(len(users(n)) != 1 for n in out_chain[1:]):
        return None
    out_shape, mm_shape = _concrete_shape(node), _concrete_shape(mm)
    if out_shape is None or mm_shape is None or len(out_shape) < 2:
        return None
    lead, d = out_shape[:-1], out_shape[-1]
    a_chain, b_chain = _reindex_chain(mm.args[0]), _reindex_chain(mm.args[1])
    fits_a = [n for n in a_chain if _concrete_shape(n) is not None and _concrete_shape(n)[:-1] == lead]
    fits_b = [n for n in b_chain if _concrete_shape(n) is not None and _concrete_shape(n)[:-2] == lead
              and _concrete_shape(n)[-1] == d and len(_concrete_shape(n)) == len(lead) + 2]
    if not fits_a or not fits_b:
        return None
    a, b = fits_a[-1], fits_b[-1]          # the furthest back: the operands as the model wrote them
    k = _concrete_shape(a)[-1]
    if _concrete_shape(b)[-2] != k:
        return None
    try:
        ia, ib = _index_map(a_chain, a), _index_map(b_chain, b)
        flat = _index_map(out_chain[:-1] + [mm], mm).reshape(-1)
    except Exception:  # noqa: BLE001 - a re-indexing this replay cannot evaluate: not proved
        return None
    if ia.dim() != 3 or ib.dim() != 3 or ia.shape[2] != k or ib.shape[1] != k:
        return None
    bb, i, j = flat // (mm_shape[1] * mm_shape[2]), (flat // mm_shape[2]) % mm_shape[1], flat % mm_shape[2]
    got_a, got_b = ia[bb, i, :], ib[bb, :, j]                        # [outputs, k]
    want_a = torch.arange(math.prod(lead) * k).view(*lead, 1, k).expand(*lead, d, k).reshape(-1, k)
    want_b = torch.arange(math.prod(lead) * k * d).view(*lead, k, d).transpose(-1, -2).reshape(-1, k)
    if not (torch.equal(got_a, want_a) and torch.equal(got_b, want_b)):
        return None
    prod = _insert(node, aten.mul.Tensor, (_insert(node, aten.unsqueeze.default, (a, -1)), b))
    return _insert(node, aten.sum.dim_IntList, (prod, [-2]))


def _strided_view_ok(v, shape) -> bool:
    """Whether ``v`` (a fake value with concrete sizes and strides) can be viewed as ``shape``."""
    if not all(isinstance(x, int) for x in (*v.shape, *v.stride())):
        return False
    try:
        torch.empty_strided(tuple(v.shape), tuple(v.stride()), dtype=v.dtype, device="meta").view(shape)
    except RuntimeError:
        return False
    return True


def _as_batched(anchor, x, shape):
    """``x`` viewed as ``shape``, through a contiguous copy where its strides do not allow a view."""
    if not _strided_view_ok(val(x), shape):
        x = _insert(anchor, aten.clone.default, (x,), {"memory_format": torch.contiguous_format})
    return _insert(anchor, aten.view.default, (x, list(shape)))


# the most terms one GEMM of _broadcast_bmm's backward may sum over (dB reduces over fold * M): fp32 on
# CPU at the indexer's sizes (M 64, K 128, N 512) measured its dB rmse vs fp64 at 1.43x / 1.52x / 1.82x /
# 2.79x eager's for 2048 / 8192 / 32768 / 131072 terms (the project's rule allows 2x)
MAX_FOLDED_TERMS = 8192


def _broadcast_bmm(node):
    """``torch.matmul(a, b)`` with ``b`` broadcast over a trailing block of batch dims, as traced::

        bmm(view(clone?(expand?(a0, [*batch, M, K])), [prod(batch), M, K]),
            view(clone?(expand(b0, [*batch, K, N])), [prod(batch), K, N]))       # view or _unsafe_view

    with ``a0`` not broadcast (its shape is ``[*batch, M, K]``) and ``b0`` of size 1 on the trailing
    batch dims ``batch[p:]`` (fold = their product > 1) and equal to ``batch`` on the leading ones (lead =
    the product of ``batch[:p]``) -> ``view(bmm(A2, B2), [lead * fold, M, N])`` with ``A2`` = the left
    operand viewed ``[lead, fold * M, K]`` and ``B2`` = ``b0`` viewed ``[lead, K, N]`` (each through a
    contiguous copy only where its strides forbid the view). Where fold * M > ``MAX_FOLDED_TERMS``, the
    fold splits into the fewest c chunks (c divides fold) of at most that many terms: ``A2`` viewed
    ``[lead * c, fold / c * M, K]`` and ``b0`` copied c times (not fold times) as ``[lead * c, K, N]``, so
    the backward sums c partial GEMMs; no such c below fold: no rewrite. transformers' DeepSeek-V4 Lightning-indexer
    scorer (``matmul(q.float(), kv.transpose(-1, -2).float().unsqueeze(1))``, q [B, S, H, D], kv [B, T, D])
    materialised ``b0`` broadcast over S (a 1 GB fp32 copy in the H200 profile of transformers' V4 step at
    B 4, T 2048, the step's largest non-GEMM kernel) and its backward wrote the gradient of that copy
    before summing it over S; here the forward is one bmm of batch B and the backward's dB one GEMM
    reducing over S * H. The same products summed over the same K terms, other GEMM blocking (and the
    S-sum inside the GEMM): a layout rule. Sizes must be concrete;
    the broadcast chain (expand, its copy, its view) must feed only this bmm.

    Error: the forward's values are the same products over the same K (CPU, fp32: the same rmse vs fp64 as
    eager). The backward's dB is a GEMM reducing over fold / c * M terms where eager reduces over M per
    batch and sums the fold partials with ATen's cascade sum. Unchunked, with fp32 operands at the indexer's
    sizes (S 2048, H 64, D 128, T 512; CPU MKL) its rmse vs fp64 was 2.8x eager's, outside the project's
    rule (2x); hence the cap (c = 16 there: 1.5x). With bf16 operands (V4's training: the gradient is
    rounded to bf16) the unchunked form measured 1.00x."""
    left, right = node.args[0], node.args[1]
    views = (aten.view.default, aten._unsafe_view.default)
    if not all(_is_node(x) and x.op == "call_function" and x.target in views for x in (left, right)):
        return None
    chain, x = [right], right.args[0]                       # the broadcast right operand, nearest first
    if _is_node(x) and x.op == "call_function" and x.target == aten.clone.default:
        if x.kwargs.get("memory_format") not in (None, torch.contiguous_format):
            return None
        chain, x = chain + [x], x.args[0]
    if not (_is_node(x) and x.op == "call_function" and x.target == aten.expand.default):
        return None
    chain, b0 = chain + [x], x.args[0]
    if any(len(n.users) != 1 for n in chain) or not _is_node(b0):
        return None
    expanded, b0_shape = _concrete_shape(x), _concrete_shape(b0)
    l_shape, r_shape = _concrete_shape(left), _concrete_shape(right)
    if expanded is None or b0_shape is None or l_shape is None or r_shape is None or len(expanded) < 3:
        return None
    batch, (k, n) = expanded[:-2], expanded[-2:]
    nb = len(batch)
    if len(b0_shape) > nb + 2 or r_shape != [math.prod(batch), k, n] or len(l_shape) != 3:
        return None
    m = l_shape[1]
    if l_shape != [math.prod(batch), m, k]:
        return None
    padded = [1] * (nb + 2 - len(b0_shape)) + b0_shape
    p = nb
    while p > 0 and padded[p - 1] == 1:
        p -= 1
    lead, fold = math.prod(batch[:p]), math.prod(batch[p:])
    if padded[:p] != batch[:p] or padded[-2:] != [k, n] or fold <= 1:
        return None                         # broadcast elsewhere than a trailing block, or none at all
    a0 = left.args[0]                       # the left operand: a reshape of a0 [*batch, M, K], unbroadcast
    for op in (aten.clone.default, aten.expand.default):
        if _is_node(a0) and a0.op == "call_function" and a0.target == op:
            a0 = a0.args[0]
    if not _is_node(a0) or _concrete_shape(a0) != [*batch, m, k]:
        return None
    # chunks: c = the fewest (a divisor of fold) keeping each GEMM's backward reduction within the cap
    chunks = next((c for c in range(1, fold) if fold % c == 0 and fold // c * m <= MAX_FOLDED_TERMS), None)
    if chunks is None:
        return None                         # only fold chunks of one would do: that is the broadcast itself
    a2 = _as_batched(node, left, [lead * chunks, fold // chunks * m, k])
    if chunks == 1:
        b2 = _as_batched(node, b0, [lead, k, n])
    else:                                   # b0 copied once per chunk ([lead, chunks, K, N], not fold times)
        b1 = _as_batched(node, b0, [lead, 1, k, n])
        b1 = _insert(node, aten.expand.default, (b1, [lead, chunks, k, n]))
        b1 = _insert(node, aten.clone.default, (b1,), {"memory_format": torch.contiguous_format})
        b2 = _insert(node, aten._unsafe_view.default, (b1, [lead * chunks, k, n]))
    out = _insert(node, aten.bmm.default, (a2, b2))
    return _insert(node, aten.view.default, (out, [lead * fold, m, n]))


def _complex_product_as_pairs(node):
    """``view_as_real(view_as_complex(p) * f)`` -> ``stack([a*c - b*s, a*s + b*c], -1)`` with a, b the pair
    halves of p and c, s the real and imaginary parts of f (``view_as_real(f.resolve_conj())``: a
    ``conj()`` or ``polar`` table becomes its real pair): complex RoPE in the real pairwise form the
    patterns match. Complex multiplication rounds like these four products, but not bit for bit on
    every backend: a matching rule."""
    prod = node.args[0]
    if not (_is_node(prod) and prod.op == "call_function" and prod.target == aten.mul.Tensor and len(users(prod)) == 1):
        return None
    for xc, f in ((prod.args[0], prod.args[1]), (prod.args[1], prod.args[0])):
        if not (_is_node(xc) and xc.op == "call_function" and xc.target == aten.view_as_complex.default
                and _is_node(f) and isinstance(val(f), torch.Tensor) and val(f).is_complex()):
            continue
        pairs = xc.args[0]
        if val(f).dtype != val(xc).dtype or val(pairs).dtype != torch.float32:
            return None      # a promoting product (complex128 table): not the fp32 pair arithmetic
        table = _insert(node, aten.view_as_real.default, (_insert(node, aten.resolve_conj.default, (f,)),))
        a, b = (_insert(node, aten.select.int, (pairs, -1, k)) for k in (0, 1))
        c, sn = (_insert(node, aten.select.int, (table, -1, k)) for k in (0, 1))

        def mul(u, v):
            return _insert(node, aten.mul.Tensor, (u, v))
        real = _insert(node, aten.sub.Tensor, (mul(a, c), mul(b, sn)))
        imag = _insert(node, aten.add.Tensor, (mul(a, sn), mul(b, c)))
        return _insert(node, aten.stack.default, ([real, imag], -1))
    return None


# in-place op -> its functional form, where nothing else reads the updated temporary
_FUNCTIONAL = {aten.add_.Scalar: aten.add.Tensor, aten.add_.Tensor: aten.add.Tensor,
               aten.mul_.Scalar: aten.mul.Tensor, aten.mul_.Tensor: aten.mul.Tensor,
               aten.sub_.Scalar: aten.sub.Tensor, aten.sub_.Tensor: aten.sub.Tensor,
               aten.div_.Scalar: aten.div.Tensor, aten.div_.Tensor: aten.div.Tensor}


def _functional(node):
    """``add_(t, c)`` on a temporary only this op reads (``F.rms_norm``'s ``+ eps``, which
    functionalisation leaves in place) -> ``add(t, c)``: same values, same gradient."""
    t = node.args[0]
    if node.kwargs or not _is_node(t) or t.op != "call_function" or list(t.users) != [node] or escapes(t) \
            or _returns_alias(t):
        return None
    return _insert(node, _FUNCTIONAL[node.target], tuple(node.args))


def _keepdim_mean(node):
    """``mean(x, [d]).unsqueeze(d)`` -> ``mean(x, [d], keepdim=True)`` (``x.pow(2).mean(-1)[..., None]``)."""
    m, d = node.args[0], node.args[1]
    if not (_is_node(m) and m.op == "call_function" and m.target == aten.mean.dim and list(m.users) == [node]):
        return None
    dims = list(m.args[1])
    keepdim = m.args[2] if len(m.args) > 2 else m.kwargs.get("keepdim", False)
    rank = val(m.args[0]).dim()
    if keepdim or len(dims) != 1 or m.kwargs.get("dtype") is not None:
        return None
    if not isinstance(d, int) or dims[0] % rank != d % rank:   # unsqueeze restores the reduced dim
        return None
    return _insert(node, aten.mean.dim, (m.args[0], [dims[0] % rank], True))


def _normaliser_inside(node):
    """``(w * x) * rsqrt(mean(x^2) + eps)`` -> ``w * (x * rsqrt(...))``: the 1/rms factor next to the x it
    is computed from (the weight-first RMSNorm spelling). Products reassociated: other rounding."""
    ab, r = node.args[0], node.args[1] if len(node.args) > 1 else None
    for ab, r in ((ab, r), (r, ab)):
        if not (_is_node(ab) and _is_node(r) and ab.op == "call_function" and ab.target == aten.mul.Tensor
                and r.op == "call_function" and r.target == aten.rsqrt.default and len(users(ab)) == 1):
            continue
        reduced = _normalised_operand(r)
        for w, x in ((ab.args[0], ab.args[1]), (ab.args[1], ab.args[0])):
            if x is reduced and _is_node(w):
                inner = _insert(node, aten.mul.Tensor, (x, r))
                return _insert(node, aten.mul.Tensor, (w, inner))
    return None


def _normalised_operand(rsqrt_node):
    """x for ``rsqrt(mean(pow(x, 2), ...) + eps)``, else None."""
    add = rsqrt_node.args[0]
    if not (_is_node(add) and add.op == "call_function" and add.target == aten.add.Tensor):
        return None
    mean = add.args[0]
    if not (_is_node(mean) and mean.op == "call_function" and mean.target == aten.mean.dim):
        return None
    p = mean.args[0]
    if _is_node(p) and p.op == "call_function" and p.target == aten.pow.Tensor_Scalar and p.args[1] == 2:
        return p.args[0]
    return None


# Bit-identical rewrites (values and gradients): applied for good.
EXACT_RULES: dict[object, list[Rule]] = {
    aten._to_copy.default: [_to_copy],
    aten.clone.default: [_clone],
    aten.slice.Tensor: [_full_slice, _open_slice_end],
    aten.mul.Tensor: [_mul_by_one],
    aten.clamp.default: [_clamp],
    aten.clamp_max.default: [_clamp_max],
    aten.clamp_min.default: [_clamp_min],
    aten.sum.dim_IntList: [_reduction_dtype],
    aten.sum.default: [_reduction_dtype],
    aten.mean.dim: [_reduction_dtype],
    aten.mean.default: [_reduction_dtype],
    aten.unsqueeze.default: [_keepdim_mean],
    aten.select.int: [_select_of_pairs],
    aten.permute.default: [_matrix_transpose],
    aten.transpose.int: [_matrix_transpose],
    **{inplace: [_functional] for inplace in _FUNCTIONAL},
}

# Same mathematics, other rounding or other special-value gradients: kept only inside fused ops.
MATCHING_RULES: dict[object, list[Rule]] = {
    aten.mul.Tensor: [_mul, _mul_by_inverse_numel, _normaliser_inside],
    aten.reciprocal.default: [_reciprocal],
    aten.pow.Tensor_Scalar: [_pow],
    aten.div.Tensor: [_div],
    operator.getitem: [_unpacked_view],
    aten.view_as_real.default: [_complex_product_as_pairs],
    aten.view.default: [_einsum_collapse],
    aten._unsafe_view.default: [_einsum_collapse],
}

# Same mathematics, another GEMM layout that removes a materialised broadcast: applied for good (module
# docstring). Each firing is counted in ``logs.counters["layout_rules"][rule name]``.
LAYOUT_RULES: dict[object, list[Rule]] = {
    aten.bmm.default: [_broadcast_bmm],
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


ORIGINAL = KEPT_ORIGINAL   # meta key on a kept original: the canonical node that stands in for it
_FORMER_USERS = "trex_former_users"   # meta key on a kept original: who used it when it was replaced
_STANDS_FOR = "trex_stands_for"   # meta key on a canonical node: the originals kept beside it


def _replace(graph: fx.Graph, node: fx.Node, new: fx.Node, keep_original: bool) -> None:
    """``node``'s users use ``new`` from now on; ``node`` is erased, or kept aside for restore_unfused."""
    former = [(user, user.args, user.kwargs) for user in node.users]
    node.replace_all_uses_with(new)
    # originals kept for ``node`` (a canonical form rewritten again) now stand beside ``new``
    for original in node.meta.pop(_STANDS_FOR, ()):
        original.meta[ORIGINAL] = new
        new.meta.setdefault(_STANDS_FOR, []).append(original)
    if keep_original:
        node.meta.update({ORIGINAL: new, ASIDE: True, _FORMER_USERS: former})
        new.meta.setdefault(_STANDS_FOR, []).append(node)
    else:
        graph.erase_node(node)


def eliminate_common_subexpressions(graph: fx.Graph, keep_originals: bool = False) -> int:
    """Merge pure nodes with the same op and inputs (``x[..., -r:]`` written twice, ``x.float()`` twice).
    Not exact for gradients (merged paths sum their gradients before the op's backward, in its
    dtype, instead of after it), so a matching rule: merged nodes are kept aside like theirs."""
    seen: dict = {}
    merged = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or ASIDE in node.meta:
            continue
        key = _cse_key(node)
        if key is None:
            continue
        if key in seen and escapes(node) and escapes(seen[key]):
            continue  # two equal outputs must stay two tensors (the caller may update one in place)
        if key in seen:
            _replace(graph, node, seen[key], keep_originals)
            merged += 1
        else:
            seen[key] = node
    return merged


def is_kept_original(node: fx.Node) -> bool:
    """Whether ``node`` is an original kept beside its canonical form (see the module docstring): it has
    no users until ``restore_unfused`` decides, and no pass may count it as a user or merge it."""
    return ORIGINAL in node.meta


def _rewrite(graph: fx.Graph, node: fx.Node, rules: list, keep_original: bool, count: str | None = None) -> bool:
    """The first of ``rules`` that rewrites ``node`` replaces it; ``count``: the ``logs.counters`` key its
    firing is counted under (and logged on the ``matches`` channel)."""
    for rule in rules:
        new = rule(node)
        if new is None or new is node:
            continue
        if not _same_meta(node, new):
            # not the same dtype/shape (``b * b`` on bools is and, ``pow(b, 2)`` is int64): not an
            # equal rewrite after all; keep the original node
            if not new.users:
                graph.erase_node(new)
            continue
        if count is not None:
            logs.counters[count][rule.__name__.lstrip("_")] += 1
            if logs.enabled("matches"):
                where = next((n for n in (node, *node.users) if "stack_trace" in n.meta), node)
                logs.log.info(f"canonical {count}: {rule.__name__.lstrip('_')} at {source_line(where)}: "
                              f"{node.format_node()}")
        _replace(graph, node, new, keep_original)
        return True
    return False


def canonicalize(graph: fx.Graph, max_rounds: int = 6, *, keep_originals: bool = False) -> int:
    """Apply the rule tables (and CSE) to a fixpoint; returns the number of rewrites.

    ``keep_originals``: keep each node a matching rewrite (``MATCHING_RULES``, CSE) replaced, see the
    module docstring; the caller must call ``restore_unfused`` once the patterns ran. ``LAYOUT_RULES``
    rewrite for good either way."""
    total = 0
    for _ in range(max_rounds):
        changed = eliminate_common_subexpressions(graph, keep_originals)
        for node in list(graph.nodes):
            if node.op != "call_function" or getattr(node, "_erased", False) or not users(node):
                continue
            if _rewrite(graph, node, EXACT_RULES.get(node.target, ()), keep_original=False) or _rewrite(
                    graph, node, MATCHING_RULES.get(node.target, ()), keep_original=keep_originals) or _rewrite(
                    graph, node, LAYOUT_RULES.get(node.target, ()), keep_original=False, count="layout_rules"):
                changed += 1
        remove_dead_code(graph)
        total += changed
        if not changed:
            break
    return total


def _put_back(old, now, canonical, original):
    if isinstance(old, (list, tuple)) and isinstance(now, (list, tuple)) and len(old) == len(now):
        return type(now)(_put_back(o, n, canonical, original) for o, n in zip(old, now))
    if isinstance(old, dict) and isinstance(now, dict):
        return {k: _put_back(old.get(k), v, canonical, original) for k, v in now.items()}
    return original if old is original and now is canonical else now


def restore_unfused(graph: fx.Graph) -> int:
    """Hand every former user of a kept original that still computes outside a fused op its original
    input back (so the unfused graph computes exactly what eager computes); drop the other originals.
    Returns how many uses came back."""
    restored, changed = 0, True
    while changed:
        changed = False
        live = live_nodes(graph)
        for original in [n for n in graph.nodes if is_kept_original(n)]:
            canonical = original.meta[ORIGINAL]
            for user, old_args, old_kwargs in original.meta[_FORMER_USERS]:
                if user not in live or canonical not in user.all_input_nodes:
                    continue
                # only the argument slots that held the original (``x * x`` merged by CSE: one of two)
                args = _put_back(old_args, user.args, canonical, original)
                kwargs = _put_back(old_kwargs, user.kwargs, canonical, original)
                if args != user.args or kwargs != user.kwargs:
                    user.args, user.kwargs = args, kwargs
                    restored += 1
                    changed = True
    for node in reversed(list(graph.nodes)):
        for key in (ASIDE, _STANDS_FOR, _FORMER_USERS):
            node.meta.pop(key, None)
        if node.meta.pop(ORIGINAL, None) is not None and not node.users:
            graph.erase_node(node)
    remove_dead_code(graph)
    return restored
