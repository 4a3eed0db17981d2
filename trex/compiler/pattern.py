"""The pass-authoring API: a pattern = eager chain(s) in plain PyTorch + a replacement.

An op package's pattern.py (trex/passes/<op>/) calls ``register_pattern``::

    def rms_norm_chain(x, weight, *, eps):            # the eager chain, as model code writes it
        xf = x.float()
        return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)

    def replace(x, weight, *, eps, out_dtype):        # what it becomes
        return torch.ops.trex.rms_norm(x, weight, eps, out_dtype)[0]

    register_pattern(Pattern(name="rms_norm", chains=[rms_norm_chain], replacement=replace,
                             example_inputs=lambda dtype: {"x": torch.randn(2, 3, 16, dtype=dtype),
                                                           "weight": torch.randn(16, dtype=dtype)}))

What the framework does with it:

* **Tracing**: each chain is traced once per dtype in ``Pattern.dtypes`` (fp32 unless the pattern
  says otherwise) that a graph has (lazily, cached per process) with the backend's own
  pipeline (graph.trace_to_aten: same decompositions, functionalisation, canonicalisation), so the
  pattern has exactly the form the chain takes inside a compiled model. Keyword-only float
  arguments (``eps`` above) are traced with unique "magic" values and become captures: the matched
  graph's literal is passed to the replacement.
* **Matching** (``Matcher``): structural, anchored at the chain's output, with
  - casts transparent: a float cast (bf16/fp16/fp32) in the graph or the pattern is skipped, so one
    chain covers the fp32 spelling and the upcast/downcast spellings (``.float()``, ``.to(...)``,
    ``.type_as``, weight before or after the down-cast). Only lossless up-casts are skipped in front of
    a chain input; the fused op receives the original low-precision tensor and computes in fp32.
    ``out_dtype`` (the dtype of the replaced node) is passed to the replacement.
  - ``add``/``mul`` commutative, reduction/slice dims compared after normalising to negative dims,
    reshapes compared by how they regroup dimensions and ``expand`` by which dims it broadcasts (so
    symbolic batch/sequence sizes match).
  - exclusivity: intermediate nodes may not be used outside the chain (else it is a near-miss).
* ``extra_check(match) -> reason | None`` rejects a structural match (recorded as a near-miss with the
  reason); ``refine(match) -> reason | None`` may extend it (mHC counts its Sinkhorn iterations there).
* Matches and near-misses are counted per pattern (``trex.compiler.logs``).
"""
from __future__ import annotations

import dataclasses
import inspect
import logging
import weakref
from typing import Any, Callable

import torch
import torch.fx as fx

from .canonical import canonicalize
from .graph import ASIDE, aten, fake_eval, requires_grad, same_size, source_line, trace_to_aten, users, val

FLOAT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
_MAGIC_BASE = 0.0123456789


@dataclasses.dataclass
class Chain:
    """One eager spelling. ``consts`` are passed to the replacement when this spelling matches
    (e.g. ``{"inverse": True}`` for the conjugate-rotation spelling of RoPE)."""
    fn: Callable
    consts: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class Pattern:
    name: str
    chains: list
    replacement: Callable
    example_inputs: Callable[[torch.dtype], dict]
    extra_check: Callable[["Match"], str | None] | None = None
    refine: Callable[["Match"], str | None] | None = None
    # fp32 only by default: casts are transparent on both sides, so the cast-free fp32 trace matches the
    # bf16/fp16 spellings too (tests/compiler/test_respellings.py runs them in bf16); a pattern whose
    # low-precision spelling differs in more than casts lists those dtypes
    dtypes: tuple = (torch.float32,)
    fused_ops: tuple = ()
    enabled_by_default: bool = True
    # a structural failure is reported as a near-miss only this deep into the chain (at least the backend's
    # default, 3): a chain whose first nodes are every matmul's (attention's PV product) sets it past them
    near_miss_depth: int = 0
    priority: int = 0
    description: str = ""
    _traced: dict = dataclasses.field(default_factory=dict, repr=False)   # (chain index, dtype) -> trace

    def traced(self, dtypes=None) -> list["TracedChain"]:
        """The chains traced for ``dtypes`` (a graph's float dtypes; default: all of ``self.dtypes``), in
        chain order, equal traces once. Each (chain, dtype) is traced once per process, when a graph
        first has that dtype (a bf16 model never pays for the fp16 traces)."""
        wanted = [d for d in self.dtypes if dtypes is None or d in dtypes] or list(self.dtypes[:1])
        missing = [(i, d) for i in range(len(self.chains)) for d in wanted if (i, d) not in self._traced]
        if missing:
            # Outside any Dynamo compile: the chains get their own fake mode, never the ambient
            # TracingContext's shape environment (guards on it would break the model's guards).
            with torch._guards.tracing(None):
                for i, d in missing:
                    self._traced[(i, d)] = _trace_chain(self, self.chains[i], d)
        out, seen = [], set()
        for i in range(len(self.chains)):
            for d in wanted:
                traced = self._traced[(i, d)]
                if traced.key not in seen:
                    seen.add(traced.key)
                    out.append(traced)
        return out


@dataclasses.dataclass
class TracedChain:
    chain: Chain
    gm: fx.GraphModule
    input_names: list[str]          # placeholder order
    outputs: list[fx.Node]          # pattern output nodes (casts stripped)
    magic: dict[float, str]         # magic value -> scalar name
    key: str


@dataclasses.dataclass
class Match:
    pattern: Pattern
    graph: fx.Graph
    inputs: dict[str, fx.Node]
    scalars: dict[str, float]
    outputs: list[fx.Node]          # graph nodes whose values the replacement provides
    nodes: set                      # graph nodes covered by the chain (incl. outputs)
    consts: dict

    def input_val(self, name: str):
        node = self.inputs.get(name)
        return None if node is None else val(node)

    def input_requires_grad(self, name: str) -> bool:
        """Whether autograd may want a gradient for input ``name`` (graph values are traced below
        autograd, so ``input_val(name).requires_grad`` is always False in a compiled graph)."""
        return requires_grad(self.inputs.get(name))


class MatchFailure(Exception):
    def __init__(self, reason: str, depth: int = 0):
        super().__init__(reason)
        self.reason, self.depth = reason, depth


# ------------------------------------------------------------------------------------------ tracing
def _chain_signature(fn: Callable) -> tuple[list[str], list[str]]:
    tensors, scalars = [], []
    for p in inspect.signature(fn).parameters.values():
        (scalars if p.kind == p.KEYWORD_ONLY else tensors).append(p.name)
    return tensors, scalars


def _structural_key(gm: fx.GraphModule) -> str:
    lines = []
    names = {}
    for i, n in enumerate(gm.graph.nodes):
        names[n] = f"n{i}"
        args = fx.node.map_arg((n.args, n.kwargs), lambda a: names[a])
        lines.append(f"{n.op}:{n.target}:{args}")
    return "\n".join(lines)


def _trace_chain(pattern: Pattern, chain, dtype: torch.dtype) -> TracedChain:
    chain = chain if isinstance(chain, Chain) else Chain(chain)
    tensor_names, scalar_names = _chain_signature(chain.fn)
    magic_values = {name: _MAGIC_BASE * (i + 1) + 1e-5 * (i + 3) for i, name in enumerate(scalar_names)}
    examples = pattern.example_inputs(dtype)
    args = [examples[n] for n in tensor_names]

    def fn(*ts):
        return chain.fn(*ts, **magic_values)

    gm = trace_to_aten(fn, args)
    canonicalize(gm.graph)
    gm.recompile()
    out_node = next(iter(gm.graph.find_nodes(op="output")))
    results = out_node.args[0]
    results = list(results) if isinstance(results, (list, tuple)) else [results]
    outputs = [_strip_casts(r) for r in results]
    return TracedChain(chain, gm, tensor_names, outputs, {v: k for k, v in magic_values.items()}, _structural_key(gm))


def graph_float_dtypes(graph: fx.Graph) -> set:
    """The float dtypes of a graph's values (which traces of the chains it needs)."""
    found = set()
    for node in graph.nodes:
        v = val(node)
        for t in (v if isinstance(v, (list, tuple)) else (v,)):
            if isinstance(t, torch.Tensor) and t.dtype in FLOAT_DTYPES:
                found.add(t.dtype)
    return found


# ------------------------------------------------------------------------------------------ matching
_CAST = aten._to_copy.default
_COMMUTATIVE = {aten.add.Tensor, aten.mul.Tensor}
# Reshape-like ops: compared by how they regroup dims (view_groups), not by op or shape literal.
_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default, aten.unsqueeze.default,
          aten.squeeze.dim, aten.squeeze.dims, aten.squeeze.default}
# op -> (index of the dim argument, whether dims are relative to the OUTPUT rank)
_DIM_ARGS = {
    aten.mean.dim: (1, False), aten.sum.dim_IntList: (1, False), aten.amax.default: (1, False),
    aten.slice.Tensor: (1, False), aten.select.int: (1, False), aten.cat.default: (1, False),
    aten.stack.default: (1, True), aten.unsqueeze.default: (1, True), aten.squeeze.dim: (1, False),
    aten._softmax.default: (1, False), aten.softmax.int: (1, False), aten.transpose.int: (1, False),
    aten.unbind.int: (1, False),
}
_LOSSLESS_UPCASTS = {(torch.bfloat16, torch.float32), (torch.float16, torch.float32)}


def _op(n) -> str:
    """An op as users write it: ``aten.select.int`` -> ``select``, ``operator.getitem`` -> ``getitem``."""
    target = getattr(n, "target", n)
    name = getattr(target, "__name__", None) if not hasattr(target, "_schema") else str(target)
    return (name or str(target)).removeprefix("aten.").split(".")[0]


def _is_cast(n) -> bool:
    return (isinstance(n, fx.Node) and n.op == "call_function" and n.target == _CAST
            and set(n.kwargs) == {"dtype"} and n.kwargs["dtype"] in FLOAT_DTYPES
            and isinstance(val(n.args[0]), torch.Tensor) and val(n.args[0]).dtype in FLOAT_DTYPES)


def _is_layout_copy(n) -> bool:
    """``clone`` (e.g. the contiguous copy ``reshape`` makes of a strided tensor): same values."""
    return isinstance(n, fx.Node) and n.op == "call_function" and n.target == aten.clone.default


def _strip_casts(n, seen: list | None = None):
    while _is_cast(n) or _is_layout_copy(n):
        if seen is not None:
            seen.append(n)
        n = n.args[0]
    return n


def _strip_lossless(n, seen: list):
    while (_is_cast(n) and (val(n.args[0]).dtype, n.kwargs["dtype"]) in _LOSSLESS_UPCASTS) or _is_layout_copy(n):
        seen.append(n)
        n = n.args[0]
    return n


def anchor_candidates(graph: fx.Graph, target) -> list[fx.Node]:
    """Graph nodes a chain whose output op is ``target`` may end at (all reshape kinds for a view)."""
    targets = _VIEWS if target in _VIEWS else (target,)
    nodes = [n for t in targets for n in graph.find_nodes(op="call_function", target=t)
             if ASIDE not in n.meta]
    if len(targets) > 1:
        order = {n: i for i, n in enumerate(graph.nodes)}
        nodes.sort(key=order.__getitem__)
    return nodes


def _same_target(a, b) -> bool:
    return a == b or (a in _VIEWS and b in _VIEWS)


def _rank(x) -> int:
    v = val(x)
    return v.dim() if isinstance(v, torch.Tensor) else 0


def _norm_dims(node: fx.Node, d):
    idx, on_output = _DIM_ARGS[node.target]
    first = node.args[0]
    if isinstance(first, (list, tuple)):
        first = first[0]
    rank = _rank(node) if on_output else _rank(first)
    fix = (lambda k: k - rank if isinstance(k, int) and k >= 0 else k)
    if isinstance(d, (list, tuple)):
        return [fix(k) for k in d]
    return fix(d)


def _hint(s) -> int:
    if isinstance(s, int):
        return s
    try:
        return int(s.node.hint)
    except Exception:  # noqa: BLE001 - unbacked sizes have no hint
        return -1


def view_groups(node: fx.Node) -> tuple:
    """How a reshape regroups dims, independent of the sizes: groups (n_in, n_out) of dims from the
    innermost outwards. Size-1 dims are skipped, and so are the outer dims when they only stay or are
    folded/unfolded all together (matmul's ``x.view(-1, k)`` and its inverse): row-wise chains do not
    depend on how the leading (row) dims are grouped, so a chain traced on rank-3 examples matches a
    rank-4 or batch-1 graph. Size-1 dims inserted inside the row structure are kept (they decide
    broadcasting: ``x[..., None]`` vs ``x[..., None, :]``)."""
    src = [_hint(s) for s in val(node.args[0]).shape if _hint(s) != 1]
    dst = [_hint(s) for s in val(node).shape if _hint(s) != 1]
    groups: list[tuple] = []
    i, j = len(src) - 1, len(dst) - 1
    while i >= 0 and j >= 0:
        ni, nj, pi, pj = 1, 1, src[i], dst[j]
        while pi != pj:
            if pi < pj and i - ni >= 0:
                pi *= src[i - ni]
                ni += 1
            elif pj < pi and j - nj >= 0:
                pj *= dst[j - nj]
                nj += 1
            else:
                return ("irregular", tuple(src), tuple(dst))
        groups.append((ni, nj))
        i -= ni
        j -= nj
    if i >= 0 or j >= 0:
        return ("irregular", tuple(src), tuple(dst))
    if groups and min(groups[-1]) == 1:
        groups.pop()          # the outermost group folds/unfolds (or keeps) all leading dims
    while groups and groups[-1] == (1, 1):
        groups.pop()
    inner = max(sum(g[1] for g in groups), 1)   # the regrouped dims, or the last dim
    out_shape = [_hint(s) for s in val(node).shape]
    ones = tuple(k - len(out_shape) for k, s in enumerate(out_shape) if s == 1 and len(out_shape) - k <= inner)
    return tuple(groups), ones


def broadcast_dims(node: fx.Node) -> tuple:
    """An expand's signature without its sizes: the output rank and the (negative) dims it broadcasts
    from size 1, or that it adds in front."""
    src = [_hint(s) for s in val(node.args[0]).shape]
    dst = [_hint(s) for s in val(node).shape]
    lead = len(dst) - len(src)
    return len(dst), tuple(k - len(dst) for k in range(len(dst))
                           if k < lead or (src[k - lead] == 1 and dst[k] != 1))


class Matcher:
    """Match one traced chain at one anchor node of a graph."""

    def __init__(self, pattern: Pattern, traced: TracedChain, graph: fx.Graph):
        self.pattern, self.traced, self.graph = pattern, traced, graph

    def match(self, anchor: fx.Node) -> Match:
        self.m: dict[fx.Node, fx.Node] = {}
        self.inputs: dict[str, fx.Node] = {}
        self.scalars: dict[str, float] = {}
        self.neg: list[tuple[str, float]] = []
        self.covered: set[fx.Node] = set()
        self.input_strips: dict[str, list[list]] = {}   # input -> per binding, the casts/copies skipped
        self.depth = 0
        outputs = self.traced.outputs
        self._node(outputs[0], anchor)
        graph_outputs = [self.m[outputs[0]]]
        for pout in outputs[1:]:
            graph_outputs.append(self._find_other_output(pout))
        for name, value in self.neg:
            if name not in self.scalars or self.scalars[name] != -value:
                raise MatchFailure(f"scalar {name!r}: the negated bound {value} is not -{name}", self.depth)
        graph_outputs = [self._extend_output_casts(g) for g in graph_outputs]
        self.covered.update(graph_outputs)
        self._check_exclusive(graph_outputs)
        return Match(self.pattern, self.graph, dict(self.inputs), dict(self.scalars), graph_outputs,
                     set(self.covered), dict(self.traced.chain.consts))

    # -- helpers
    def _find_other_output(self, pout: fx.Node) -> fx.Node:
        errors = []
        for cand in anchor_candidates(self.graph, pout.target):
            snap = self._snapshot()
            try:
                self._node(pout, cand)
                return self.m[pout]
            except MatchFailure as e:
                errors.append(e.reason)
                self._restore(snap)
        raise MatchFailure(f"second output ({pout.target}) of the chain not found"
                           + (f": {errors[0]}" if errors else ""), self.depth)

    def _extend_output_casts(self, g: fx.Node) -> fx.Node:
        """Take a following down-cast (fp32 -> bf16/fp16) into the fused op: it then rounds once to the
        narrow dtype, exactly like eager. Up-casts are left alone (they would skip eager's rounding)."""
        while len(users(g)) == 1:
            user = users(g)[0]
            if _is_cast(user) and user.kwargs["dtype"].itemsize < val(g).dtype.itemsize:
                self.covered.add(g)
                g = user
            else:
                break
        return g

    def _rebind_shared_copies(self) -> None:
        """A cast or layout copy skipped in front of an input that the model also reads elsewhere (the
        contiguous copy of the first layer's streams, an up-cast reused later) becomes the input
        itself, when every binding of that input went through it."""
        for name, strips in self.input_strips.items():
            for node in reversed(strips[0]):            # from the input outwards
                if all(u in self.covered for u in users(node)):
                    continue
                if not all(node in strip for strip in strips):
                    return
                for strip in strips:
                    self.covered.difference_update(strip[strip.index(node):])
                self.inputs[name] = node
                break

    def _check_exclusive(self, outputs: list[fx.Node]) -> None:
        self._rebind_shared_copies()
        bound_inputs = set(self.inputs.values())
        for n in self.covered:
            if n in outputs or n in bound_inputs:
                continue
            for user in users(n):
                if user not in self.covered:
                    raise MatchFailure(f"intermediate {_op(n)} at {source_line(n)} is also used outside the chain "
                                       f"(by {_op(user)} at {source_line(user)}); fusing would compute it twice", self.depth)

    def _snapshot(self):
        return (dict(self.m), dict(self.inputs), dict(self.scalars), list(self.neg), set(self.covered))

    def _restore(self, snap):
        self.m, self.inputs, self.scalars, self.neg, self.covered = (
            dict(snap[0]), dict(snap[1]), dict(snap[2]), list(snap[3]), set(snap[4]))

    def _node(self, pn: fx.Node, gn: Any) -> None:
        pn = _strip_casts(pn)
        if pn.op == "placeholder":
            if not isinstance(gn, fx.Node):
                raise MatchFailure(f"input {pn.name} expected a tensor, found literal {gn!r}", self.depth)
            casts: list = []
            g = _strip_lossless(gn, casts)
            name = self.traced.input_names[list(self.traced.gm.graph.find_nodes(op="placeholder")).index(pn)]
            if name in self.inputs and self.inputs[name] is not g:
                raise MatchFailure(f"input {name!r} would bind two different tensors "
                                   f"(at {source_line(self.inputs[name])} and {source_line(g)})", self.depth)
            self.inputs[name] = g
            self.covered.update(casts)
            self.input_strips.setdefault(name, []).append(casts)
            return
        if not isinstance(gn, fx.Node):
            raise MatchFailure(f"expected {pn.target} but found literal {gn!r}", self.depth)
        casts = []
        g = _strip_casts(gn, casts)
        if pn in self.m:
            if self.m[pn] is not g:
                raise MatchFailure(f"{pn.target} would match two graph nodes", self.depth)
            self.covered.update(casts)
            return
        if pn.target in _VIEWS and _rank(pn.args[0]) >= 2 and _rank(pn) >= 2 and view_groups(pn) == ((), ()) \
                and not (g.op == "call_function" and g.target in _VIEWS and view_groups(g) == ((), ())):
            # a fold/unfold of the leading (row) dims only, such as matmul's x.view(-1, k) and its
            # _unsafe_view inverse in a chain traced at rank > 2: the same chain on rank-2 inputs has
            # none, and row-wise math does not depend on how the rows are grouped (rank >= 2 on both
            # sides: a rank-1 weight reshape such as base.view(n, n) is not a row fold); a wrong
            # pairing changes the broadcast output shape, which the replacement's shape check refuses
            self._node(pn.args[0], gn)
            self.m[pn] = self.m.get(_strip_casts(pn.args[0]), g)
            return
        if g.op != "call_function" or not _same_target(g.target, pn.target):
            found = g.target if g.op == "call_function" else g.op
            raise MatchFailure(f"expected {_op(pn)} but found {_op(g) if g.op == 'call_function' else found} at "
                               f"{source_line(g)}", self.depth)
        self.depth += 1
        if pn.target in _VIEWS:
            if view_groups(pn) != view_groups(g):
                raise MatchFailure(f"the reshape at {source_line(g)} regroups dims differently from the chain", self.depth)
            self._node(pn.args[0], g.args[0])
        elif pn.target == aten.expand.default and len(g.args) == 2 and not g.kwargs:
            # compared by which dims it broadcasts, not by its size literals: a chain's broadcast to its
            # example's batch or sequence size (a sink logit per head expanded to [B, H, T, 1]) is the
            # graph's broadcast to its own sizes; shapes that disagree fail the ops that consume them and
            # the replacement's shape check, and confirm_semantics evaluates the region
            if broadcast_dims(pn) != broadcast_dims(g):
                raise MatchFailure(f"expand at {source_line(g)} broadcasts dims {broadcast_dims(g)}, the chain "
                                   f"{broadcast_dims(pn)}", self.depth)
            self._node(pn.args[0], g.args[0])
        elif pn.target in _COMMUTATIVE and len(pn.args) == 2 and not pn.kwargs and not g.kwargs:
            snap = self._snapshot()
            try:
                self._args(pn, g, pn.args, g.args)
            except MatchFailure as first:
                self._restore(snap)
                try:
                    self._args(pn, g, pn.args, (g.args[1], g.args[0]))
                except MatchFailure as second:
                    raise (first if first.depth >= second.depth else second) from None
        else:
            self._args(pn, g, pn.args, g.args)
            self._kwargs(pn, g)
        self.m[pn] = g
        self.covered.add(g)
        self.covered.update(casts)

    def _kwargs(self, pn, g) -> None:
        if set(pn.kwargs) != set(g.kwargs):
            raise MatchFailure(f"{_op(g)} at {source_line(g)}: keyword arguments {sorted(g.kwargs)} differ from the chain's "
                               f"{sorted(pn.kwargs)}", self.depth)
        for k in pn.kwargs:
            self._arg(pn, g, pn.kwargs[k], g.kwargs[k], None)

    def _args(self, pn, g, pargs, gargs) -> None:
        if len(pargs) != len(gargs):
            raise MatchFailure(f"{_op(g)} at {source_line(g)}: {len(gargs)} arguments, the chain has {len(pargs)}", self.depth)
        for i, (pa, ga) in enumerate(zip(pargs, gargs)):
            self._arg(pn, g, pa, ga, i)

    def _arg(self, pn, g, pa, ga, index) -> None:
        if isinstance(pa, fx.Node):
            self._node(pa, ga)
            return
        if isinstance(pa, float) and pa in self.traced.magic:
            self._capture(self.traced.magic[pa], ga, g)
            return
        if isinstance(pa, float) and -pa in self.traced.magic:
            if isinstance(ga, fx.Node) or ga is None:
                raise MatchFailure(f"{_op(g)} at {source_line(g)}: expected a constant bound, found {ga}", self.depth)
            self.neg.append((self.traced.magic[-pa], ga))
            return
        if pn.target in _DIM_ARGS and index == _DIM_ARGS[pn.target][0]:
            pa, ga = _norm_dims(pn, pa), _norm_dims(g, ga)
        if isinstance(pa, (list, tuple)):
            if not isinstance(ga, (list, tuple)) or len(pa) != len(ga):
                raise MatchFailure(f"{_op(g)} at {source_line(g)}: argument {ga!r} differs from the chain's {pa!r}", self.depth)
            for x, y in zip(pa, ga):
                self._arg(pn, g, x, y, None)
            return
        if isinstance(ga, fx.Node):
            raise MatchFailure(f"{_op(g)} at {source_line(g)}: argument is a runtime value, the chain has the "
                               f"constant {pa!r}", self.depth)
        if isinstance(pa, torch.SymInt) or isinstance(ga, torch.SymInt):
            if not same_size(pa, ga):
                raise MatchFailure(f"{_op(g)} at {source_line(g)}: size {ga} differs from {pa}", self.depth)
            return
        if pa != ga:
            raise MatchFailure(f"{_op(g)} at {source_line(g)}: argument {ga!r} differs from the chain's {pa!r}",
                               self.depth)

    def _capture(self, name: str, ga, g) -> None:
        if isinstance(ga, fx.Node) or isinstance(ga, torch.SymFloat):
            raise MatchFailure(f"scalar {name!r} is a runtime value here ({getattr(ga, 'name', ga)}), not a "
                               f"compile-time constant (is torch._dynamo.config.specialize_float off?)",
                               self.depth)
        if not isinstance(ga, (int, float)) or isinstance(ga, bool):
            raise MatchFailure(f"scalar {name!r}: found {ga!r}", self.depth)
        if name in self.scalars and self.scalars[name] != ga:
            raise MatchFailure(f"scalar {name!r} has two values ({self.scalars[name]} and {ga})", self.depth)
        self.scalars[name] = float(ga)


# ------------------------------------------------------------------------------------------ replacing
def _call_with_known_kwargs(fn: Callable, kwargs: dict) -> Any:
    params = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in kwargs.items() if k in params})


# ops a confirmation follows outside the matched region (table plumbing: repeat_interleave's expand,
# views, negation, conjugation), so the region and the replacement see the same values
_FOLLOWED = _VIEWS | {aten.expand.default, aten.clone.default, aten.neg.default, aten._conj.default,
                      aten.slice.Tensor, aten.select.int, _CAST}
_CONFIRMED: dict = {}
_CONFIRM_MAX_NUMEL = 1 << 22


def _as_fp64(x):
    if isinstance(x, torch.Tensor):
        return x.to(torch.complex128 if x.is_complex() else torch.float64) if x.is_floating_point() or \
            x.is_complex() else x
    return x


def _concrete(x):
    return _hint(x) if isinstance(x, torch.SymInt) else float(x.node.hint) if isinstance(x, torch.SymFloat) else x


def _region_signature(match: Match, region: list) -> tuple:
    index = {n: i for i, n in enumerate(region)}
    ins = {n: k for k, n in match.inputs.items()}

    def ref(a):
        return ("r", index[a]) if a in index else ("i", ins.get(a, "?"), tuple(_hint(s) for s in val(a).shape)
                                                    if isinstance(val(a), torch.Tensor) else None)
    return (match.pattern.name, tuple(sorted(match.scalars.items())), tuple(sorted(map(str, match.consts.items()))),
            tuple((str(n.target), str(fx.node.map_arg((n.args, n.kwargs), ref))) for n in region))


def confirm_semantics(match: Match) -> str | None:
    """The matched region evaluated in fp64 on random inputs of its sizes against the replacement (the
    fused op's fp64 reference): a region that computes other mathematics than the pattern's function
    (eps outside the root, another reduction, another rotation...) is refused whatever its structure.
    Casts evaluate as fp64 identities (the rounding is the numerics rule's business, not a difference in
    the function). Cached per region structure, sizes and scalars; a region that cannot be evaluated
    here (unbacked sizes, non-float values, too large) keeps the structural verdict."""
    order = {n: i for i, n in enumerate(match.graph.nodes)}
    region = sorted(set(match.nodes) | set(match.outputs), key=order.__getitem__)
    try:
        key = _region_signature(match, region)
    except Exception:  # noqa: BLE001 - e.g. a size without a hint: structure only
        logging.getLogger("trex").debug(f"{match.pattern.name}: region without concrete sizes, not confirmed")
        return None
    if key in _CONFIRMED:
        return _CONFIRMED[key]
    generator = torch.Generator().manual_seed(0)
    values: dict = {}
    members = set(region)

    def leaf(node):
        v = val(node)
        if not isinstance(v, torch.Tensor) or not (v.is_floating_point() or v.is_complex()):
            raise TypeError("non-float leaf")
        shape = [_hint(s) for s in v.shape]
        if min(shape, default=1) < 0 or torch.Size(shape).numel() > _CONFIRM_MAX_NUMEL:
            raise ValueError("size")
        if v.is_complex():
            return torch.complex(torch.randn(shape, generator=generator, dtype=torch.float64),
                                 torch.randn(shape, generator=generator, dtype=torch.float64))
        return torch.randn(shape, generator=generator, dtype=torch.float64)

    def value(node):
        if not isinstance(node, fx.Node):
            return _concrete(node)
        if node in values:
            return values[node]
        # an input computed by table plumbing (rope's halved tables) is followed too, so the region and the
        # replacement read the same values
        if node.op != "call_function" or (node not in members and node.target not in _FOLLOWED):
            result = leaf(node)
        else:
            args = fx.node.map_aggregate(node.args, lambda a: value(a) if isinstance(a, fx.Node) else _concrete(a))
            kwargs = {k: v for k, v in node.kwargs.items() if k != "dtype"} if node.target in (
                _CAST, aten.sum.dim_IntList, aten.mean.dim, aten.sum.default, aten.mean.default) else node.kwargs
            kwargs = fx.node.map_aggregate(kwargs, lambda a: value(a) if isinstance(a, fx.Node) else _concrete(a))
            result = _as_fp64(args[0]) if node.target == _CAST else _as_fp64(node.target(*args, **kwargs))
        values[node] = result
        return result

    try:
        region_out = [value(o) for o in match.outputs]
        params = [p for p in inspect.signature(match.pattern.replacement).parameters.values()
                  if p.kind != p.KEYWORD_ONLY]
        kwargs = {p.name: (value(match.inputs[p.name]) if match.inputs.get(p.name) is not None else None)
                  for p in params}
        kwargs.update(match.scalars)
        kwargs.update(match.consts)
        kwargs["out_dtype"] = torch.float64
        kwargs["out_dtypes"] = (torch.float64,) * len(match.outputs)
        fused = _call_with_known_kwargs(match.pattern.replacement, kwargs)
        fused = list(fused) if isinstance(fused, (list, tuple)) else [fused]
    except Exception as e:  # noqa: BLE001 - not evaluable here: the structural verdict stands
        logging.getLogger("trex").debug(f"{match.pattern.name}: not confirmed in fp64 ({type(e).__name__}: {e}); "
                                        f"the structural match stands")
        _CONFIRMED[key] = None
        return None
    verdict = None
    for i, (a, b) in enumerate(zip(region_out, fused)):
        b = _as_fp64(b)
        if a.shape != b.shape or not torch.allclose(a, b, rtol=1e-6, atol=1e-9, equal_nan=True):
            diff = (a - b).abs().max().item() if a.shape == b.shape else f"shape {tuple(a.shape)} vs {tuple(b.shape)}"
            verdict = (f"the region computes other values than {match.pattern.name}'s op (output {i}, fp64 on "
                       f"random inputs: max difference {diff})")
            break
    _CONFIRMED[key] = verdict
    return verdict


# PyTorch's fused attention ops -> the index of their compute_log_sumexp argument (flash always computes it)
_LOGSUMEXP_ARG = {aten._scaled_dot_product_efficient_attention.default: 4,
                  aten._scaled_dot_product_cudnn_attention.default: 4}

# fake mode -> {replacement key: traced replacement}: a model's repeated sites (every layer's norms) share
# one trace of the replacement; per fake mode, so the cached meta values belong to the graph's own mode
_REPLACEMENTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _replacement_key(pattern: Pattern, names: list, vals: list, kwargs: dict):
    """What a replacement's trace depends on (None when a size is symbolic: traced each time)."""
    metas = []
    for v in vals:
        if not isinstance(v, torch.Tensor) or not all(isinstance(s, int) for s in (*v.shape, *v.stride())):
            return None
        metas.append((tuple(v.shape), tuple(v.stride()), v.dtype, str(v.device)))
    consts = tuple(sorted((k, repr(v)) for k, v in kwargs.items()))
    return pattern.name, tuple(names), tuple(metas), consts


def build_replacement(match: Match) -> list[fx.Node]:
    """Trace the pattern's replacement on the matched values and splice it into the graph; returns the
    new nodes that take over ``match.outputs``. Raises on any inconsistency (caller falls back)."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch._guards import detect_fake_mode
    from torch.fx.experimental.proxy_tensor import make_fx

    pattern = match.pattern
    graph = match.graph
    differs = confirm_semantics(match)
    if differs:
        raise MatchFailure(differs, depth=10 ** 6)
    params = [p for p in inspect.signature(pattern.replacement).parameters.values()
              if p.kind != p.KEYWORD_ONLY]
    tensor_names = [p.name for p in params if match.inputs.get(p.name) is not None]
    vals = [val(match.inputs[n]) for n in tensor_names]
    out_dtypes = [val(o).dtype for o in match.outputs]
    kwargs = dict(match.scalars)
    kwargs.update(match.consts)
    kwargs["out_dtype"] = out_dtypes[0]
    kwargs["out_dtypes"] = tuple(out_dtypes)

    def fn(*tensors):
        bound = {p.name: None for p in params}
        bound.update(zip(tensor_names, tensors))
        all_kwargs = dict(bound)
        all_kwargs.update(kwargs)
        result = _call_with_known_kwargs(pattern.replacement, all_kwargs)
        return tuple(result) if isinstance(result, (list, tuple)) else (result,)

    fake_mode = detect_fake_mode(vals)
    key = _replacement_key(pattern, tensor_names, vals, kwargs)
    cache = _REPLACEMENTS.setdefault(fake_mode, {}) if fake_mode is not None and key is not None else {}
    rgm = cache.get(key)
    if rgm is None:
        with fake_mode, enable_python_dispatcher():
            rgm = make_fx(fn, tracing_mode="real")(*vals)
        if key is not None:
            cache[key] = rgm

    # A replacement is traced on graph values, below autograd: PyTorch's fused attention then decomposes with
    # compute_log_sumexp=False, and AOTAutograd's backward of that node finds no logsumexp (Inductor's
    # wrapper fails on the missing tensor). Where an input of the region wants a gradient, ask for it.
    wants_grad = any(match.input_requires_grad(n) for n in tensor_names)
    order = {n: i for i, n in enumerate(graph.nodes)}
    insert_before = min(match.outputs, key=lambda n: order[n])
    last_input = max((match.inputs[n] for n in tensor_names), key=lambda n: order[n], default=None)
    if last_input is not None and order[last_input] > order[insert_before]:
        # An operand is computed after the chain's first output (a weight scaled late, say): the fused
        # op goes after that operand, which only works if nothing outside the chain reads an output
        # before it.
        insert_before = last_input.next
        for old in match.outputs:
            early = [u.name for u in users(old) if u not in match.nodes and order[u] <= order[last_input]]
            if early:
                raise MatchFailure(f"operand {last_input.name} is computed after output {old.name}, which "
                                   f"{', '.join(early)} already use", depth=10 ** 6)
    env: dict[fx.Node, fx.Node] = {}
    patched: set[fx.Node] = set()      # nodes whose value changed with compute_log_sumexp (and their getitems)
    inserted: list[fx.Node] = []
    placeholders = iter(tensor_names)
    new_outputs: list[fx.Node] = []
    try:
        with graph.inserting_before(insert_before):
            for rn in rgm.graph.nodes:
                if rn.op == "placeholder":
                    env[rn] = match.inputs[next(placeholders)]
                elif rn.op == "output":
                    new_outputs = [env[a] for a in rn.args[0]]
                elif rn.op == "call_function":
                    args = fx.node.map_arg(rn.args, env.__getitem__)
                    kwargs = fx.node.map_arg(rn.kwargs, env.__getitem__)
                    lse = _LOGSUMEXP_ARG.get(rn.target)
                    relabel = wants_grad and lse is not None and args[lse] is False
                    if relabel:
                        args = (*args[:lse], True, *args[lse + 1:])
                    new = graph.call_function(rn.target, args, kwargs)
                    if relabel or any(a in patched for a in new.all_input_nodes):
                        new.meta["val"] = fake_eval(rn.target, args, kwargs)
                        patched.add(new)
                    else:
                        new.meta["val"] = rn.meta.get("val")
                    env[rn] = new
                    inserted.append(new)
                else:
                    raise RuntimeError(f"replacement of {pattern.name} produced a {rn.op} node")
        if len(new_outputs) != len(match.outputs):
            raise RuntimeError(f"replacement returned {len(new_outputs)} values for {len(match.outputs)} outputs")
        for old, new in zip(match.outputs, new_outputs):
            ov, nv = val(old), val(new)
            if ov.dtype != nv.dtype or len(ov.shape) != len(nv.shape) or not all(
                    same_size(a, b) for a, b in zip(ov.shape, nv.shape)):
                raise RuntimeError(f"replacement output {tuple(nv.shape)}/{nv.dtype} differs from the chain's "
                                   f"{tuple(ov.shape)}/{ov.dtype}")
    except Exception:
        for n in reversed(inserted):
            if not n.users:
                graph.erase_node(n)
        raise
    for old, new in zip(match.outputs, new_outputs):
        old.replace_all_uses_with(new)
    return new_outputs
