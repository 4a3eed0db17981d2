"""The ``trex`` torch.compile backend.

``torch.compile(model, backend="trex", options={...})`` (found through the ``torch_dynamo_backends``
entry point, or registered in-process when trex.compiler is imported first).

Pipeline for each graph Dynamo captures:

1. Re-trace the Dynamo graph to a functional ATen graph *before autograd* (graph.trace_to_aten),
   using the fake tensors (and symbolic sizes) Dynamo gave the backend. A ``torch.no_grad()`` region
   in it (transformers' rotary tables) is first rewritten as the same ops on detached inputs
   (``detach_no_grad_regions``), since the re-trace would drop the grad-mode switch.
2. Canonicalise spellings (canonical.py) and run the enabled patterns (pattern.py): matched chains
   become ``torch.ops.trex.*`` fused ops.
3. Compile the rest of the graph (option ``rest``):
   * ``"inductor"`` (default when the graph's tensors are on CUDA): Inductor's ``compile_fx``. Its
     AOTAutograd differentiates each fused op through its ``register_autograd`` formula, so the
     backward holds the ``*_bwd`` fused ops; Inductor generates its own kernels for everything else.
     While Inductor traces, a fused op whose device target can inline its kernels (the cuda target:
     trex.codegen_triton.target) decomposes into ``wrap_triton`` launches of its printed Triton
     kernels (``targets.inlining_kernels``), so Inductor calls them from its own wrapper code like its
     own kernels: no custom-op dispatch, no Python launcher, and CUDA graphs (``mode=
     "reduce-overhead"``) capture them forward and backward. A fused op that cannot be inlined stays
     an extern call of ``torch.ops.trex.*`` (its Python runner), and a graph that Inductor cannot
     compile with inlined kernels is compiled again without (one warning).
   * ``"aten"`` (default on the host CPU, and the path of the ``emulate`` target): AOTAutograd with
     trex's own runner: every graph runs op by op from Python like ``aot_eager``, fused ops under the
     selected target (targets.py).
   * ``"torchair"`` (default on Ascend ``npu`` tensors when ``torchair``, torch_npu's graph compiler,
     imports): the fused graph goes to ``torchair.get_npu_backend()``. Untested here (no NPU).

Options (``options=`` of torch.compile):

* ``target`` (str, default ``"cpu"``): which kernels run the fused ops; see trex.compiler.targets.
  An unknown name is an error (like every bad option: one line, ``TrexOptionError``, not Dynamo's
  BackendCompilerFailed traceback); a known but unavailable one falls back to ``cpu`` with a warning,
  unless ``strict_target=True``.
* ``dump_dir`` (path): write, per graph, the pre-autograd graph after fusion, the forward/backward/
  inference graphs and the match report.
* ``rest`` (``"inductor"``, ``"aten"`` or ``"torchair"``): what compiles everything but the fused
  ops (step 3); default by the device of the graph's tensors. ``rest="inductor"`` runs each fused
  op on the kernels its tensors' device registers (CUDA: Triton; CPU: the reference), so ``target``
  must be ``cpu`` or that device's target there.
* ``mode`` (Inductor's modes: ``"default"``, ``"reduce-overhead"``, ``"max-autotune"``,
  ``"max-autotune-no-cudagraphs"``): as ``torch.compile(mode=...)``, which also reaches trex (but
  torch.compile takes ``mode`` or ``options``, not both: with options, say it here).
  ``inductor`` (dict): further Inductor config patches, e.g. ``{"triton.cudagraphs": True}``.
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
import inspect
import itertools
import os
import tempfile
import time
import warnings
from typing import Any

import torch
import torch.fx as fx

from . import logs, registry, targets
from .canonical import canonicalize, restore_unfused
from .graph import (
    DECOMPOSITIONS,
    graph_has_global_state_changes,
    mark_requires_grad,
    remove_dead_code,
    source_line,
    trace_to_aten,
)
from .pattern import Matcher, MatchFailure, anchor_candidates, build_replacement, graph_float_dtypes

torch._dynamo.config.specialize_float = True

_OPTION_KEYS = {"target", "dump_dir", "patterns", "disable_patterns", "strict_target", "rest", "mode", "inductor"}
# what compiles the rest of the graph, by name (step 3 of the pipeline); the default per device type
REST_COMPILERS = ("inductor", "aten", "torchair")
_DEFAULT_REST = {"cuda": "inductor", "npu": "torchair"}
INDUCTOR_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
_graph_ids = itertools.count()
_NEAR_MISS_MIN_DEPTH = 3


class TrexOptionError(torch._dynamo.exc.ShortenTraceback, ValueError):
    """A bad ``options=`` value: Dynamo re-raises it as it is (a ShortenTraceback), so the user sees trex's
    one line instead of a BackendCompilerFailed traceback asking to report a PyTorch bug."""

    def __init__(self, message: str):
        # the traceback starts at the backend's frame: the caller's frames, then trex's message
        frame = inspect.currentframe()
        while frame is not None and frame.f_code.co_name != "trex_backend":
            frame = frame.f_back
        super().__init__(message, first_useful_frame=frame)


@dataclasses.dataclass(frozen=True)
class TrexOptions:
    target: str = targets.REFERENCE_TARGET
    dump_dir: str | None = None
    patterns: tuple[str, ...] = ()
    strict_target: bool = False
    rest: str | None = None          # None: by the device of the graph's tensors (_DEFAULT_REST)
    mode: str | None = None
    inductor: tuple = ()             # Inductor config patches, as sorted (key, value) pairs

    @staticmethod
    def from_dict(options: dict | None, mode: str | None = None) -> "TrexOptions":
        try:
            return TrexOptions._from_dict(options, mode)
        except (ValueError, targets.TargetError) as e:
            raise TrexOptionError(str(e) if str(e).startswith("trex") else f"trex: {e}") from None

    @staticmethod
    def _from_dict(options: dict | None, mode: str | None) -> "TrexOptions":
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
        rest = options.get("rest")
        if rest is not None and rest not in REST_COMPILERS:
            raise ValueError(f"trex: options['rest'] must be one of {list(REST_COMPILERS)}, got {rest!r}")
        mode = options.get("mode", mode)
        if mode is not None and mode not in INDUCTOR_MODES:
            raise ValueError(f"trex: mode must be one of {list(INDUCTOR_MODES)}, got {mode!r}")
        patches = options.get("inductor") or {}
        if not isinstance(patches, dict):
            raise ValueError(f"trex: options['inductor'] must be a dict of Inductor config patches, got "
                             f"{type(patches).__name__}")
        return TrexOptions(target, os.fspath(dump_dir) if dump_dir is not None else None, tuple(names), strict,
                           rest, mode, tuple(sorted(patches.items())))

    def rest_for(self, example_inputs: list) -> str:
        """The rest compiler of a graph over ``example_inputs``: the option, else the default of the
        graph's device (the trex-only path on the host CPU). A device target (``emulate``) other than
        the tensors' device needs the trex-only path: its kernels run from trex's runner."""
        devices = {x.device.type for x in example_inputs if isinstance(x, torch.Tensor)} - {"cpu", "meta"}
        device = min(devices) if devices else "cpu"
        rest = self.rest
        if rest is None and self.mode not in (None, "default"):
            rest = "inductor"    # an Inductor mode asks for Inductor (torch.compile(mode=...) takes no options)
        if rest is None:
            rest = _DEFAULT_REST.get(device, "aten")
            if rest == "torchair" and not _torchair_available():
                rest = "aten"
            if self.target not in (targets.REFERENCE_TARGET, device):
                rest = "aten"
        elif rest != "aten" and self.target not in (targets.REFERENCE_TARGET, device):
            raise TrexOptionError(f"trex: options['target']={self.target!r} runs its kernels from trex's own "
                                  f"runner; use options['rest']='aten' with it (rest={rest!r} runs the "
                                  f"kernels the {device} tensors' device registers)")
        if self.mode not in (None, "default") and rest == "aten":
            raise TrexOptionError(f"trex: mode={self.mode!r} is an Inductor mode; it needs "
                                  f"options['rest']='inductor' (this graph compiles with rest='aten')")
        return rest


def _torchair_available() -> bool:
    import importlib.util
    return importlib.util.find_spec("torchair") is not None


# ------------------------------------------------------------------------------------------ passes
def run_patterns(gm: fx.GraphModule, pattern_names: tuple[str, ...], report: logs.GraphReport) -> None:
    """Apply the named patterns to ``gm`` in registry order; record matches/near-misses in ``report``.

    An exception while tracing a pattern disables it for this graph; an exception while matching or
    replacing at one anchor leaves that region unfused. Either way: one warning naming the pattern."""
    graph = gm.graph
    all_patterns = registry.patterns()
    graph_dtypes = graph_float_dtypes(graph)
    for name in pattern_names:
        pattern = all_patterns[name]
        misses: dict[fx.Node, MatchFailure] = {}
        matched: set[fx.Node] = set()
        failures: list[str] = []
        try:
            traced_chains = pattern.traced(graph_dtypes)
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
                    and failure.depth >= max(_NEAR_MISS_MIN_DEPTH, pattern.near_miss_depth):
                report.near_misses.append(logs.NearMiss(pattern.name, source_line(anchor), failure.reason))
    remove_dead_code(graph)
    graph.lint()
    gm.recompile()


def _is_mutating(node: fx.Node) -> bool:
    name = getattr(node.target, "__name__", str(node.target))
    return ("out" in node.kwargs or (name.endswith("_") and not name.endswith("__"))
            or node.op == "call_module")


def detach_no_grad_regions(gm: fx.GraphModule) -> fx.GraphModule | None:
    """A copy of Dynamo's graph ``gm`` with each ``torch.no_grad()`` region (``_set_grad_enabled(False)``
    ... ``_set_grad_enabled(True)``) rewritten as the same ops on detached inputs, with grad mode left
    alone, or None when ``gm`` has other global-state changes or a region that mutates (then the graph
    is compiled unfused, trex.compiler.graph.graph_has_global_state_changes says why).

    Why: re-tracing to ATen drops the grad-mode switch (graph.trace_to_aten), and transformers' models
    compute their rotary tables under ``@torch.no_grad()``, so without this every such model graph
    ran unfused (H200 run 7: DeepSeek-V4 fused nothing). The rewrite keeps eager's semantics for
    functional regions: an op on inputs that do not require grad records no graph and returns a
    tensor that does not require grad, as under no_grad; a region that writes in place (``x.add_()``,
    ``out=``) could see a version-counter difference, so it is not rewritten."""
    nodes = list(gm.graph.nodes)
    switches = [n for n in nodes if n.op == "call_function" and n.target is torch._C._set_grad_enabled]
    if not switches:
        return None
    if [n.args for n in switches] != [(False,), (True,)] * (len(switches) // 2) or len(switches) % 2:
        return None
    copy = fx.Graph()
    env: dict[fx.Node, fx.Node] = {}
    out = copy.graph_copy(gm.graph, env)
    copy.output(out)
    position = {n: i for i, n in enumerate(nodes)}
    for start, end in zip(switches[::2], switches[1::2]):
        region = [n for n in nodes if position[start] < position[n] < position[end]]
        inside = set(region)
        if any(_is_mutating(n) for n in region):
            return None
        detached: dict[fx.Node, fx.Node] = {}
        for node in region:
            if node.op == "get_attr":
                continue
            for arg in node.all_input_nodes:
                if arg in inside and arg.op != "get_attr":
                    continue
                if not isinstance(arg.meta.get("example_value"), torch.Tensor):
                    continue
                if arg not in detached:
                    with copy.inserting_before(env[start]):
                        detached[arg] = copy.call_method("detach", (env[arg],))
                        detached[arg].meta = dict(arg.meta)
                env[node].replace_input_with(env[arg], detached[arg])
        copy.erase_node(env[start])
        copy.erase_node(env[end])
    result = fx.GraphModule(gm, copy)
    result.meta.update(getattr(gm, "meta", {}))
    return result


@logs.third_party_tracebacks_to_debug()   # a fallback is one warning line, torch's tracebacks go to debug
def fuse_graph(gm: fx.GraphModule, example_inputs: list, opts: TrexOptions,
               report: logs.GraphReport) -> fx.GraphModule:
    """Steps 1-2 of the pipeline; returns the graph to hand to AOTAutograd (``gm`` itself when the
    graph cannot be prepared, with the reason in ``report.fallbacks``)."""
    from torch._guards import TracingContext, detect_fake_mode
    from torch._subclasses.fake_tensor import FakeTensor

    original = gm
    gm = detach_no_grad_regions(gm) or gm
    reason = graph_has_global_state_changes(gm)
    if reason:
        report.fallbacks.append(reason)
        return original
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
        canonicalize(aten_gm.graph, keep_originals=True)
        aten_gm.recompile()
    except Exception as e:  # noqa: BLE001
        reason = f"{type(e).__name__}: {e}"
        warnings.warn(f"trex: graph {report.graph_id} could not be prepared for fusion ({reason}); it runs "
                      f"unfused", RuntimeWarning, stacklevel=2)
        report.fallbacks.append(f"graph preparation: {reason}")
        return original
    try:
        run_patterns(aten_gm, opts.patterns, report)
        restore_unfused(aten_gm.graph)   # unfused regions compute exactly what eager computes
        aten_gm.recompile()
    except Exception as e:  # noqa: BLE001 - e.g. an invalid graph after splicing (lint): run unfused
        reason = f"{type(e).__name__}: {e}"
        warnings.warn(f"trex: fusing graph {report.graph_id} failed ({reason}); it runs unfused",
                      RuntimeWarning, stacklevel=2)
        report.fallbacks.append(f"fusion: {reason}")
        report.matches.clear()
        return original
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


def _compile_aten(prepared: fx.GraphModule, example_inputs: list, opts: TrexOptions, report: logs.GraphReport):
    """The trex-only path: AOTAutograd with trex's runner per stage (everything runs op by op)."""
    from functorch.compile import min_cut_rematerialization_partition
    from torch._dynamo.backends.common import aot_autograd

    compiler = aot_autograd(
        fw_compiler=_stage_compiler("forward", opts, report),
        bw_compiler=_stage_compiler("backward", opts, report),
        inference_compiler=_stage_compiler("inference", opts, report),
        partition_fn=min_cut_rematerialization_partition,
        decompositions=DECOMPOSITIONS,
    )
    return compiler(prepared, example_inputs)


def _inductor_patches(opts: TrexOptions) -> dict:
    from torch._inductor import list_mode_options

    from .cache_key import inductor_patches

    patches = dict(list_mode_options(opts.mode)) if opts.mode not in (None, "default") else {}
    patches.update(dict(opts.inductor))
    return inductor_patches(patches)    # Inductor's on-disk caches keyed on trex's code too


def _static_user_kernel_launch() -> dict:
    """Inductor launches its own kernels through its static CUDA launcher but user-defined Triton
    kernels, which trex's inlined kernels are, through Triton's Python launcher unless this flag is set
    (off by default in torch 2.11-2.13). Call H (bench/NOTES_gpu.md, session 17) measured the
    difference as part of trex's host tax: 34-39 us a launch against ~30 under cProfile. A kernel the
    static launcher cannot take keeps Triton's launcher (Inductor checks each); `options={"inductor":
    {"static_launch_user_defined_triton_kernels": False}}` turns it off."""
    import torch._inductor.config as inductor_config

    if getattr(inductor_config, "use_static_cuda_launcher", False) and \
            hasattr(inductor_config, "static_launch_user_defined_triton_kernels"):
        return {"static_launch_user_defined_triton_kernels": True}
    return {}


def _eager_backward_lowering():
    import contextlib

    import torch._functorch.config as functorch_config

    if not hasattr(functorch_config, "force_non_lazy_backward_lowering"):   # older torch: lazy only
        return contextlib.nullcontext()
    return functorch_config.patch(force_non_lazy_backward_lowering=True)


def _compile_inductor(prepared: fx.GraphModule, example_inputs: list, opts: TrexOptions,
                      report: logs.GraphReport):
    """Inductor for the rest of the graph, with the fused ops' kernels inlined where their target can
    (module docstring, step 3); a graph Inductor cannot compile with them inlined compiles without."""
    from torch._inductor.compile_fx import compile_fx

    patches = _inductor_patches(opts)
    if any(getattr(n.target, "namespace", None) == registry.NAMESPACE for n in prepared.graph.nodes):
        try:
            # the backward is lowered now, not at the first backward call (AOTAutograd's default), so
            # an inlined kernel Inductor cannot build fails here, where the fallback below catches it
            with targets.inlining_kernels(), _eager_backward_lowering():
                return compile_fx(prepared, example_inputs,
                                  config_patches={**_static_user_kernel_launch(), **patches})
        except Exception as e:  # noqa: BLE001 - e.g. Inductor cannot codegen an inlined kernel
            reason = f"{type(e).__name__}: {str(e)[:300]}"
            warnings.warn(f"trex: Inductor could not compile graph {report.graph_id} with trex's kernels "
                          f"inlined ({reason}); they run as extern calls of torch.ops.trex.*",
                          RuntimeWarning, stacklevel=2)
            report.fallbacks.append(f"inlining kernels into Inductor: {reason}")
    return compile_fx(prepared, example_inputs, config_patches=patches)


def _compile_torchair(prepared: fx.GraphModule, example_inputs: list, opts: TrexOptions,
                      report: logs.GraphReport):
    """torch_npu's graph compiler for the rest of the graph (Ascend; untested here: no NPU)."""
    import torchair

    return torchair.get_npu_backend()(prepared, example_inputs)


_REST_COMPILE = {"aten": _compile_aten, "inductor": _compile_inductor, "torchair": _compile_torchair}


def _warm_inductor_compile_pool() -> None:
    """Start Inductor's compile subprocesses now, as Inductor's own backend does at its entry: until the
    pool answers, Inductor builds each Triton kernel serially in this process, and without this call the
    pool is only asked for at the first kernel, after trex's fusion and AOTAutograd's trace."""
    try:
        from torch._inductor.async_compile import maybe_warm_pool
    except ImportError:  # a torch without the pool: nothing to warm
        return
    maybe_warm_pool()


def trex_backend(gm: fx.GraphModule, example_inputs: list, options: dict | None = None,
                 mode: str | None = None) -> Any:
    """torch.compile backend entry point (``backend="trex"``; ``mode`` is torch.compile's)."""
    opts = TrexOptions.from_dict(options, mode)
    rest = opts.rest_for(example_inputs)
    if rest == "inductor":
        _warm_inductor_compile_pool()
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
    compile_rest = _REST_COMPILE[rest]
    start = time.perf_counter()
    try:
        return compile_rest(prepared, example_inputs, opts, report)
    except Exception as e:  # noqa: BLE001 - AOTAutograd/partitioning of the fused graph failed
        if prepared is gm:
            raise
        reason = f"{type(e).__name__}: {e}"
        warnings.warn(f"trex: compiling fused graph {graph_id} failed ({reason}); it runs unfused",
                      RuntimeWarning, stacklevel=2)
        report.fallbacks.append(f"compiling the fused graph: {reason}")
        report.matches.clear()
        return compile_rest(gm, example_inputs, opts, report)
    finally:
        report.seconds[f"compile_{rest}"] = time.perf_counter() - start


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
