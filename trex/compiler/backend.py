"""The ``trex`` torch.compile backend.

``torch.compile(model, backend="trex", options={...})`` (found through the ``torch_dynamo_backends``
entry point, or registered in-process when trex.compiler is imported first).

Pipeline for each graph Dynamo captures:

1. Re-trace the Dynamo graph to a functional ATen graph *before autograd* (graph.trace_to_aten),
   using the fake tensors (and symbolic sizes) Dynamo gave the backend.
2. Canonicalise spellings (canonical.py) and run the enabled patterns (pattern.py): matched chains
   become ``torch.ops.trex.*`` fused ops.
3. Hand the graph to AOTAutograd (min-cut partition). It differentiates each fused op through its
   ``register_autograd`` formula, so the backward graph holds the ``*_bwd`` fused ops; everything
   else runs as ordinary ATen. Each compiled graph runs under the selected target (targets.py).

Options (``options=`` of torch.compile):

* ``target`` (str, default ``"cpu"``): which kernels run the fused ops; see trex.compiler.targets.
  An unknown name is an error; a known but unavailable one falls back to ``cpu`` with a warning,
  unless ``strict_target=True``.
* ``dump_dir`` (path): write, per graph, the pre-autograd graph after fusion, the forward/backward/
  inference graphs and the match report.
* ``patterns`` (list of names, or ``"all"``): which patterns to run; default = every pattern whose
  ``enabled_by_default`` is true. ``disable_patterns`` (list) removes some from that set.

Safety: an exception in a pattern leaves that region unfused (one warning naming the pattern and the
reason); an exception while preparing a graph compiles that graph unfused (one warning). A fused op
never changes a result beyond fp32-vs-low-precision rounding (docs: DESIGN.md numerics rule).

Dynamic shapes: importing this module sets ``torch._dynamo.config.specialize_float = True``. Without
it Dynamo (torch >= 2.6) turns float module attributes such as ``eps`` or a SwiGLU limit into
runtime tensor inputs under ``dynamic=True``, and a fused kernel needs them as constants. Integer
sizes stay symbolic, so a new sequence length still does not recompile.
"""
from __future__ import annotations

import dataclasses
import itertools
import os
import tempfile
import time
import warnings
from typing import Any

import torch
import torch.fx as fx

from . import logs, registry, targets
from .canonical import canonicalize
from .graph import (
    DECOMPOSITIONS,
    graph_has_global_state_changes,
    mark_requires_grad,
    remove_dead_code,
    trace_to_aten,
)
from .pattern import Matcher, MatchFailure, anchor_candidates, build_replacement

torch._dynamo.config.specialize_float = True

_OPTION_KEYS = {"target", "dump_dir", "patterns", "disable_patterns", "strict_target"}
_graph_ids = itertools.count()
_NEAR_MISS_MIN_DEPTH = 3


@dataclasses.dataclass(frozen=True)
class TrexOptions:
    target: str = targets.REFERENCE_TARGET
    dump_dir: str | None = None
    patterns: tuple[str, ...] = ()
    strict_target: bool = False

    @staticmethod
    def from_dict(options: dict | None) -> "TrexOptions":
        options = dict(options or {})
        unknown = set(options) - _OPTION_KEYS
        if unknown:
            raise ValueError(f"trex: unknown option(s) {sorted(unknown)}; valid options: {sorted(_OPTION_KEYS)}")
        known = registry.patterns()
        requested = options.get("patterns")
        if requested is None:
            names = [n for n, p in known.items() if p.enabled_by_default]
        elif requested == "all":
            names = list(known)
        else:
            if isinstance(requested, str):
                requested = [requested]
            bad = [n for n in requested if n not in known]
            if bad:
                raise ValueError(f"trex: options['patterns'] names unknown pattern(s) {bad}; "
                                 f"registered: {sorted(known)}")
            names = [n for n in known if n in set(requested)]
        disabled = set(options.get("disable_patterns") or ())
        bad = sorted(disabled - set(known))
        if bad:
            raise ValueError(f"trex: options['disable_patterns'] names unknown pattern(s) {bad}; "
                             f"registered: {sorted(known)}")
        names = [n for n in names if n not in disabled]
        target = options.get("target", targets.REFERENCE_TARGET)
        if not isinstance(target, str):
            raise ValueError(f"trex: options['target'] must be a target name, got {target!r}")
        strict = bool(options.get("strict_target", False))
        target = targets.resolve_target(target, fallback=not strict)
        dump_dir = options.get("dump_dir")
        return TrexOptions(target, os.fspath(dump_dir) if dump_dir is not None else None, tuple(names), strict)


# ------------------------------------------------------------------------------------------ passes
def run_patterns(gm: fx.GraphModule, pattern_names: tuple[str, ...], report: logs.GraphReport) -> None:
    """Apply the named patterns to ``gm`` in registry order; record matches/near-misses in ``report``.

    An exception while tracing a pattern disables it for this graph; an exception while matching or
    replacing at one anchor leaves that region unfused. Either way: one warning naming the pattern."""
    graph = gm.graph
    all_patterns = registry.patterns()
    for name in pattern_names:
        pattern = all_patterns[name]
        misses: dict[fx.Node, MatchFailure] = {}
        matched: set[fx.Node] = set()
        failures: list[str] = []
        try:
            traced_chains = pattern.traced()
        except Exception as e:  # noqa: BLE001
            traced_chains = []
            failures.append(f"tracing its chains: {type(e).__name__}: {e}")
        for traced in traced_chains:
            anchor_target = traced.outputs[0].target
            for anchor in reversed(anchor_candidates(graph, anchor_target)):
                if getattr(anchor, "_erased", False) or anchor in matched:
                    continue
                try:
                    match = Matcher(pattern, traced, graph).match(anchor)
                    for hook in (pattern.extra_check, pattern.refine):
                        reason = hook(match) if hook is not None else None
                        if reason:
                            raise MatchFailure(reason, depth=10 ** 6)
                    new_nodes = build_replacement(match)
                except MatchFailure as failure:
                    best = misses.get(anchor)
                    if best is None or failure.depth > best.depth:
                        misses[anchor] = failure
                    continue
                except Exception as e:  # noqa: BLE001 - a broken pass leaves the region eager, never crashes
                    failures.append(f"at {anchor.name}: {type(e).__name__}: {e}")
                    matched.add(anchor)   # do not retry this anchor with another chain
                    continue
                matched.add(anchor)
                report.matches.append(logs.MatchRecord(
                    pattern.name, anchor.name, [n.name for n in new_nodes], dict(match.scalars)))
                remove_dead_code(graph)
        if failures:
            warnings.warn(f"trex: pattern {pattern.name!r} failed ({failures[0]}"
                          f"{f'; {len(failures) - 1} more' if len(failures) > 1 else ''}); the affected "
                          f"region runs unfused", RuntimeWarning, stacklevel=2)
            report.fallbacks.extend(f"pattern {pattern.name} {f}" for f in failures)
        for anchor, failure in misses.items():
            if anchor not in matched and not getattr(anchor, "_erased", False) \
                    and failure.depth >= _NEAR_MISS_MIN_DEPTH:
                report.near_misses.append(logs.NearMiss(pattern.name, anchor.name, failure.reason))
    remove_dead_code(graph)
    graph.lint()
    gm.recompile()


def fuse_graph(gm: fx.GraphModule, example_inputs: list, opts: TrexOptions,
               report: logs.GraphReport) -> fx.GraphModule:
    """Steps 1-2 of the pipeline; returns the graph to hand to AOTAutograd (``gm`` itself when the
    graph cannot be prepared, with the reason in ``report.fallbacks``)."""
    from torch._guards import TracingContext, detect_fake_mode
    from torch._subclasses.fake_tensor import FakeTensor

    reason = graph_has_global_state_changes(gm)
    if reason:
        report.fallbacks.append(reason)
        return gm
    try:
        fake_mode = detect_fake_mode(example_inputs)
        context = TracingContext.try_get()
        symbolic = getattr(context, "tensor_to_context", None) if context is not None else None

        def fakeify(x):
            if not isinstance(x, torch.Tensor) or isinstance(x, FakeTensor):
                return x
            sym_ctx = symbolic.get(x) if symbolic is not None else None
            return fake_mode.from_tensor(x, symbolic_context=sym_ctx)

        fakes = [fakeify(x) for x in example_inputs]
        aten_gm = trace_to_aten(gm, fakes, fake_mode=fake_mode)
        mark_requires_grad(aten_gm.graph, fakes)
        canonicalize(aten_gm.graph)
        aten_gm.recompile()
    except Exception as e:  # noqa: BLE001
        reason = f"{type(e).__name__}: {e}"
        warnings.warn(f"trex: graph {report.graph_id} could not be prepared for fusion ({reason}); it runs "
                      f"unfused", RuntimeWarning, stacklevel=2)
        report.fallbacks.append(f"graph preparation: {reason}")
        return gm
    try:
        run_patterns(aten_gm, opts.patterns, report)
    except Exception as e:  # noqa: BLE001 - e.g. an invalid graph after splicing (lint): run unfused
        reason = f"{type(e).__name__}: {e}"
        warnings.warn(f"trex: fusing graph {report.graph_id} failed ({reason}); it runs unfused",
                      RuntimeWarning, stacklevel=2)
        report.fallbacks.append(f"fusion: {reason}")
        report.matches.clear()
        return gm
    report.pre_grad_graph = aten_gm.print_readable(print_output=False)
    return aten_gm


# ------------------------------------------------------------------------------------------ backend
def _write_atomic(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def _dump(opts: TrexOptions, report: logs.GraphReport, name: str, text: str) -> None:
    if opts.dump_dir is None:
        return
    path = os.path.join(opts.dump_dir, report.graph_id, name)
    _write_atomic(path, text)
    if path not in report.dumped:
        report.dumped.append(path)


def _stage_compiler(stage: str, opts: TrexOptions, report: logs.GraphReport):
    def compile_stage(gm: fx.GraphModule, example_inputs):
        from functorch.compile import make_boxed_func

        text = gm.print_readable(print_output=False)
        setattr(report, f"{stage}_graph", text)
        report.compiled_graphs[stage] = gm
        _dump(opts, report, f"{stage}.py", text)
        if logs.enabled("graphs"):
            logs.log.info(f"graph {report.graph_id} {stage}:\n{text}")
        forward = gm.forward
        target = opts.target

        def run(*args):
            token = targets._ACTIVE.set(target)
            try:
                return forward(*args)
            finally:
                targets._ACTIVE.reset(token)

        return make_boxed_func(run)
    return compile_stage


def _load_device_kernels(example_inputs: list) -> None:
    """The graph's tensors on a device (CUDA) make that device's target load its kernels: without it,
    `torch.compile(model, backend="trex")` on the GPU fused the chains but ran each fused op's
    composite reference. Where none loads, one warning says why and the reference runs (never wrong)."""
    devices = {x.device.type for x in example_inputs if isinstance(x, torch.Tensor)} - {"cpu", "meta"}
    for device_type in sorted(devices):
        why = targets.load_device_kernels(device_type)
        if why:
            targets._warn_once(("device kernels", device_type),
                               f"trex: fused ops on {device_type} tensors run trex's composite PyTorch "
                               f"reference: {why}")


def trex_backend(gm: fx.GraphModule, example_inputs: list, options: dict | None = None) -> Any:
    """torch.compile backend entry point (``backend="trex"``)."""
    from functorch.compile import min_cut_rematerialization_partition
    from torch._dynamo.backends.common import aot_autograd

    opts = TrexOptions.from_dict(options)
    _load_device_kernels(example_inputs)
    try:
        from torch._guards import CompileContext
        compile_id = str(CompileContext.current_compile_id() or "")
    except Exception:  # noqa: BLE001
        compile_id = ""
    graph_id = f"graph_{next(_graph_ids)}" + (f"_{compile_id}".replace("/", "-") if compile_id else "")
    report = logs.GraphReport(graph_id)
    if logs.enabled("graphs"):
        logs.log.info(f"graph {graph_id} from Dynamo:\n{gm.print_readable(print_output=False)}")
    start = time.perf_counter()
    prepared = fuse_graph(gm, example_inputs, opts, report)
    report.seconds["fusion"] = time.perf_counter() - start
    if logs.enabled("graphs") and report.pre_grad_graph:
        logs.log.info(f"graph {graph_id} after trex passes:\n{report.pre_grad_graph}")
    _dump(opts, report, "pre_autograd.py", report.pre_grad_graph or gm.print_readable(print_output=False))
    _dump(opts, report, "matches.txt", report.format())
    logs.publish(report)
    compiler = aot_autograd(
        fw_compiler=_stage_compiler("forward", opts, report),
        bw_compiler=_stage_compiler("backward", opts, report),
        inference_compiler=_stage_compiler("inference", opts, report),
        partition_fn=min_cut_rematerialization_partition,
        decompositions=DECOMPOSITIONS,
    )
    try:
        return compiler(prepared, example_inputs)
    except Exception as e:  # noqa: BLE001 - AOTAutograd/partitioning of the fused graph failed
        if prepared is gm:
            raise
        reason = f"{type(e).__name__}: {e}"
        warnings.warn(f"trex: compiling fused graph {graph_id} failed ({reason}); it runs unfused",
                      RuntimeWarning, stacklevel=2)
        report.fallbacks.append(f"compiling the fused graph: {reason}")
        return compiler(gm, example_inputs)


def _register_in_process() -> None:
    """Register "trex" with Dynamo unless Dynamo is about to do it from the entry point (registering
    twice raises "duplicate name")."""
    from torch._dynamo.backends import registry as dynamo_registry

    compiler_fns = getattr(dynamo_registry, "_COMPILER_FNS", {})
    backends = getattr(dynamo_registry, "_BACKENDS", {})
    if "trex" in compiler_fns or backends.get("trex") is not None:
        return
    dynamo_registry.register_backend(trex_backend, name="trex")


_register_in_process()
