"""ATen-graph plumbing shared by the backend and the pattern tracer.

Model graphs and pattern chains go through the SAME steps, so a chain written in plain PyTorch looks
in its traced form exactly like the same code inside a model:

1. ``trace_to_aten``: ``make_fx(functionalize(fn), decomposition_table=DECOMPOSITIONS)``. The graph is
   traced *before* autograd (fused ops are inserted here and AOTAutograd then differentiates them
   through their ``register_autograd`` formula, so the backward graph gets the ``*_bwd`` fused ops).
   Functionalisation turns in-place spellings (``q *= rsqrt(...)``, ``x[..., -r:] = ...``) into the
   functional chains patterns are written against.
2. ``make_differentiable``: functionalisation emits ``aten.copy`` (no autograd formula); it is
   replaced by its source where shapes and dtypes agree, by a cast where only the dtype differs, else
   by ``copy_`` into a fresh buffer.
3. ``canonicalize`` (canonical.py) rewrites equivalent spellings to one form.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Iterable

import torch
import torch.fx as fx
from torch._guards import detect_fake_mode
from torch.fx.experimental.proxy_tensor import make_fx
from torch.fx.experimental.symbolic_shapes import statically_known_true

aten = torch.ops.aten

# The one decomposition table of the backend: used to trace model graphs AND pattern chains, and
# passed to AOTAutograd. Empty on purpose: every remaining ATen op keeps its eager kernel, and the
# canonicaliser (not a decomposition) unifies spellings such as ``g * sigmoid(g)`` and ``silu(g)``.
DECOMPOSITIONS: dict = {}


def val(n: Any) -> Any:
    """The example value of an FX node (a FakeTensor or SymInt), or the literal itself."""
    if isinstance(n, fx.Node):
        return n.meta.get("val")
    return n


def same_size(a: Any, b: Any) -> bool:
    """True when two (possibly symbolic) sizes are provably equal, without adding guards."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    try:
        return bool(statically_known_true(a == b))
    except Exception:  # noqa: BLE001 - an undecidable comparison is simply "not provably equal"
        return False


def same_shape(a: Iterable, b: Iterable) -> bool:
    a, b = list(a), list(b)
    return len(a) == len(b) and all(same_size(x, y) for x, y in zip(a, b))


def fake_eval(target: Callable, args: tuple, kwargs: dict | None = None) -> Any:
    """Run ``target`` on the example values of ``args`` (fake tensors) to get a new node's value."""
    kwargs = kwargs or {}
    vals_args = fx.node.map_arg(args, val)
    vals_kwargs = fx.node.map_arg(kwargs, val)
    leaves: list = []
    fx.node.map_aggregate((vals_args, vals_kwargs), lambda x: leaves.append(x) or x)
    fake_mode = detect_fake_mode([x for x in leaves if isinstance(x, torch.Tensor)])
    if fake_mode is None:
        return target(*vals_args, **vals_kwargs)
    with fake_mode:
        return target(*vals_args, **vals_kwargs)


def insert_call(graph: fx.Graph, target: Callable, args: tuple, kwargs: dict | None = None,
                *, before: fx.Node) -> fx.Node:
    """Insert ``target(*args)`` before ``before``, with ``meta['val']`` filled in (and ``before``'s
    source location: a rewrite stands for the code that node came from)."""
    with graph.inserting_before(before):
        node = graph.call_function(target, args, kwargs or {})
    node.meta["val"] = fake_eval(target, args, kwargs)
    if "stack_trace" in before.meta:
        node.meta["stack_trace"] = before.meta["stack_trace"]
    return node


def source_line(node: Any) -> str:
    """``file.py:line (called at file.py:line)`` of the user code a graph node came from (its innermost
    frame and the one that called it), else the node's name."""
    trace = node.meta.get("stack_trace") if isinstance(node, fx.Node) else None
    if not trace:
        return getattr(node, "name", str(node))
    import re

    frames = re.findall(r'File "([^"]+)", line (\d+)', trace)
    if not frames:
        return node.name
    where = [f"{path.rsplit('/', 1)[-1]}:{line}" for path, line in frames[-2:]]
    # the caller too: a helper called at three sites (apply_rotary_pos_emb) is three places
    return where[-1] if len(where) == 1 else f"{where[1]} (called at {where[0]})"


def trace_to_aten(fn: Callable, args: list, *, fake_mode=None) -> fx.GraphModule:
    """Trace ``fn`` to a functional, differentiable ATen graph (see module docstring).

    ``args`` are fake tensors / SymInts of the graph being compiled (then ``fake_mode`` is theirs)
    or real example tensors (pattern chains; traced with a fresh fake mode)."""
    from torch._dispatch.python import enable_python_dispatcher
    from torch.func import functionalize

    from torch.fx import traceback as fx_traceback

    if isinstance(fn, fx.GraphModule):
        # run node by node, so each ATen node keeps the stack trace (the user's file:line) of the Dynamo
        # node it came from: explanations point at source lines, not at FX node names
        fn = fx.Interpreter(fn).run
    with fx_traceback.preserve_node_meta():
        if fake_mode is None:
            gm = make_fx(functionalize(fn, remove="mutations"), decomposition_table=DECOMPOSITIONS,
                         tracing_mode="fake")(*args)
        else:
            with fake_mode, enable_python_dispatcher():
                gm = make_fx(functionalize(fn, remove="mutations"), decomposition_table=DECOMPOSITIONS,
                             tracing_mode="real")(*args)
    make_differentiable(gm.graph)
    remove_dead_code(gm.graph)
    gm.recompile()
    return gm


REQUIRES_GRAD = "trex_requires_grad"


def mark_requires_grad(graph: fx.Graph, example_inputs: list) -> None:
    """Record in ``node.meta[REQUIRES_GRAD]`` whether autograd may ask for a gradient through each node.

    The graph is traced below autograd, so its fake values never carry ``requires_grad``: it is taken
    from the inputs Dynamo compiled for (placeholders, in order) and spread to every node that uses one
    (an over-approximation: integer results are marked too). Under ``no_grad`` nothing requires grad
    (Dynamo guards on the grad mode)."""
    enabled = torch.is_grad_enabled()
    placeholders = list(graph.find_nodes(op="placeholder"))
    for node, example in zip(placeholders, example_inputs):
        node.meta[REQUIRES_GRAD] = bool(enabled and isinstance(example, torch.Tensor) and example.requires_grad)
    for node in graph.nodes:
        if node.op != "placeholder":
            node.meta[REQUIRES_GRAD] = any(requires_grad(a) for a in node.all_input_nodes)


def requires_grad(node: Any) -> bool:
    """Whether a gradient may flow through ``node``: mark_requires_grad's mark; for a node inserted
    after marking (a canonical rewrite, a fused op), whether one of its inputs requires grad; for an
    unmarked placeholder, its value's flag."""
    if not isinstance(node, fx.Node):
        return False
    if REQUIRES_GRAD not in node.meta:
        if node.op == "placeholder":
            v = val(node)
            return bool(isinstance(v, torch.Tensor) and v.requires_grad)
        node.meta[REQUIRES_GRAD] = any(requires_grad(a) for a in node.all_input_nodes)
    return bool(node.meta[REQUIRES_GRAD])


def make_differentiable(graph: fx.Graph) -> None:
    """Replace ``aten.copy`` (functionalised ``copy_``, which has no autograd formula)."""
    for node in list(graph.find_nodes(op="call_function", target=aten.copy.default)):
        dst, src = node.args[0], node.args[1]
        dv, sv = val(dst), val(src)
        if sv.dtype == dv.dtype and same_shape(sv.shape, dv.shape):
            node.replace_all_uses_with(src)
        elif same_shape(sv.shape, dv.shape) and sv.device == dv.device:
            # copying into a tensor of another dtype is a cast (the official RoPE's y.copy_(x), fp32 into
            # the bf16 activations): same values, same gradient, and a form the patterns see through
            node.replace_all_uses_with(insert_call(graph, aten._to_copy.default, (src,), {"dtype": dv.dtype},
                                                   before=node))
        else:
            buf = insert_call(graph, aten.empty_like.default, (dst,), before=node)
            new = insert_call(graph, aten.copy_.default, (buf, src), before=node)
            node.replace_all_uses_with(new)
        graph.erase_node(node)


_SIDE_EFFECT_TARGETS = {aten.copy_.default}
KEPT_ORIGINAL = "trex_original_of"   # canonical.py's mark on an original kept beside its canonical form
ASIDE = "trex_aside"   # a kept original, or a node only kept originals still need: no pass may use it


def users(node: fx.Node) -> list:
    """The users of ``node`` that compute something (not what canonical.py keeps aside)."""
    return [u for u in node.users if ASIDE not in u.meta]


def has_side_effect(node: fx.Node) -> bool:
    """In-place ops (``copy_`` into inputs), runtime asserts, RNG and grad-mode calls: never dead."""
    target = node.target
    try:
        return _SIDE_EFFECT_OF[target]
    except KeyError:
        pass
    except TypeError:               # an unhashable target: answer without remembering
        return _target_has_side_effect(target)
    # DCE asks this of every node, many times per graph (V4's 2 layers: ~40k calls, 0.4 s uncached)
    answer = _SIDE_EFFECT_OF[target] = _target_has_side_effect(target)
    return answer


_SIDE_EFFECT_OF: dict = {}


def _target_has_side_effect(target) -> bool:
    if target in _SIDE_EFFECT_TARGETS or target is operator.setitem or target in (torch._C._set_grad_enabled,):
        return True
    if target in getattr(fx.node, "_side_effectful_functions", ()):
        return True  # runtime asserts (torch._check -> _assert_scalar), profiler ranges: no users, not dead
    schema = getattr(target, "_schema", None)
    return schema is not None and (schema.is_mutable or "rand" in str(target) or "bernoulli" in str(target)
                                   or "dropout" in str(target))


def live_nodes(graph: fx.Graph) -> set:
    """Nodes the graph's outputs and side effects need, not counting uses by kept originals."""
    stack = [n for n in graph.nodes if n.op == "output" or (
        n.op == "call_function" and KEPT_ORIGINAL not in n.meta and has_side_effect(n))]
    live: set = set()
    while stack:
        n = stack.pop()
        if n not in live:
            live.add(n)
            stack.extend(n.all_input_nodes)
    return live


def remove_dead_code(graph: fx.Graph) -> None:
    """DCE that keeps side effects (``has_side_effect``) and the originals canonical.py keeps; a node
    only kept originals still need is marked ``ASIDE`` (matching must neither count nor anchor on it)."""
    for node in reversed(list(graph.nodes)):
        if node.op == "call_function" and not node.users and KEPT_ORIGINAL not in node.meta \
                and not has_side_effect(node):
            graph.erase_node(node)
    if any(KEPT_ORIGINAL in n.meta for n in graph.nodes):
        live = live_nodes(graph)
        for node in graph.nodes:
            if node.op == "call_function" and node not in live:
                node.meta[ASIDE] = True


def graph_has_global_state_changes(gm: fx.GraphModule) -> str | None:
    """A Dynamo graph that changes grad mode or autocast inside cannot be re-traced before autograd
    without losing that change; such graphs are compiled without fusion (reason returned)."""
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        name = getattr(node.target, "__name__", str(node.target))
        if node.target is torch._C._set_grad_enabled or "autocast" in name or "set_grad_enabled" in name:
            return f"graph changes global state with {name} (grad mode / autocast region inside the graph)"
    return None
