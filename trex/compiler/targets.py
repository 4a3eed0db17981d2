"""Target registry: which implementation runs a fused op at runtime.

A *target* is a named runner, ``runner(op_name, args) -> outputs``. ``op_name`` is the short fused-op
name (``"rms_norm"``, ``"swiglu_limited_bwd"``, ...; see ``trex.compiler.registry.fused_ops()``) and
``args`` are the op's positional arguments exactly as in its schema (docs/contracts.md). The runner
returns the op's outputs (a tensor or a tuple of tensors, fresh memory, dtypes/shapes as the fake
implementation says), or ``NotImplemented`` when it has no kernel for that op or those inputs; then the
composite reference runs instead. The ``cpu`` target is the reference itself.

How a later layer plugs in (the hook other layers use)::

    from trex.compiler.targets import register_target

    def run_emulated(op_name, args):
        kernel = build_or_load(op_name, args)     # generate, compile, cache ...
        if kernel is None:
            return NotImplemented                 # -> composite reference
        return kernel(*args)

    register_target("emulate", run_emulated,
                    available=lambda: (shutil.which("g++") is not None, "g++ not found"),
                    description="generated AscendC compiled against the host emulator")

A layer that cannot be imported by trex.compiler (import direction: trex.compiler <- codegen_*) is
found through the ``trex.targets`` entry-point group: an entry point ``emulate = "pkg.mod:register"``
is loaded the first time the name ``emulate`` is asked for; loading it (or calling the loaded
object, if it is callable) must call ``register_target``.

Selecting the target: ``torch.compile(model, backend="trex", options={"target": "emulate"})`` makes
every compiled graph run under that target (the backend wraps the compiled callables in
``use_target``). Eager calls of ``torch.ops.trex.*`` use the innermost ``use_target`` context, or
``cpu`` outside any.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import warnings
from importlib.metadata import entry_points
from typing import Any, Callable

Runner = Callable[[str, tuple], Any]

REFERENCE_TARGET = "cpu"


@dataclasses.dataclass(frozen=True)
class Target:
    name: str
    runner: Runner | None  # None = the composite reference
    available: Callable[[], tuple[bool, str]]
    description: str = ""


def _always_available() -> tuple[bool, str]:
    return True, ""


_TARGETS: dict[str, Target] = {
    REFERENCE_TARGET: Target(REFERENCE_TARGET, None, _always_available,
                             "composite PyTorch reference (fp32 compute)"),
}
_ACTIVE: contextvars.ContextVar[str] = contextvars.ContextVar("trex_target", default=REFERENCE_TARGET)
_ENTRY_POINT_GROUP = "trex.targets"


class TargetError(ValueError):
    """An unknown target name, or a target that cannot run here when no fallback is allowed."""


def register_target(name: str, runner: Runner, *, available: Callable[[], tuple[bool, str]] | None = None,
                    description: str = "", replace: bool = False) -> None:
    """Register ``runner`` under ``name``; ``available()`` -> (ok, reason) says if it can run on this host."""
    if not callable(runner):
        raise TypeError(f"register_target({name!r}): runner must be callable, got {type(runner).__name__}")
    if name == REFERENCE_TARGET:
        raise TargetError(f"register_target: {REFERENCE_TARGET!r} is the built-in reference target")
    if name in _TARGETS and not replace and _TARGETS[name].runner is not runner:
        raise TargetError(f"register_target: target {name!r} is already registered; pass replace=True "
                          f"to override it")
    _TARGETS[name] = Target(name, runner, available or _always_available, description)


def _load_from_entry_points(name: str) -> None:
    for ep in entry_points(group=_ENTRY_POINT_GROUP):
        if ep.name == name:
            obj = ep.load()
            if name not in _TARGETS and callable(obj):
                obj()
            return


def load_device_kernels(device_type: str) -> str | None:
    """Load the target named after a device type ("cuda"; "npu" where one is registered), so fused ops
    on that device's tensors run its kernels instead of the composite reference. The target registers
    its per-device op kernels when its `trex.targets` entry point loads. Returns None when they are
    loaded (or the device is the host CPU), else why not (nothing is raised: the reference runs)."""
    if device_type == "cpu":
        return None
    try:
        resolve_target(device_type, fallback=False)     # loads it through its entry point
    except TargetError as e:
        return (f"{e}; install trex with `pip install -e .` so its '{_ENTRY_POINT_GROUP}' entry points "
                f"load, or register the target by hand (e.g. trex.codegen_triton.register_cuda_target())")
    except Exception as e:  # noqa: BLE001 - a broken optional target must not break compiling
        return f"loading the {device_type!r} target failed ({type(e).__name__}: {e})"
    return None


def known_targets() -> list[str]:
    names = set(_TARGETS) | {ep.name for ep in entry_points(group=_ENTRY_POINT_GROUP)}
    return sorted(names)


def get_target(name: str) -> Target:
    if name not in _TARGETS:
        _load_from_entry_points(name)
    if name not in _TARGETS:
        raise TargetError(f"unknown trex target {name!r}; known targets: {', '.join(known_targets())} "
                          f"(a layer registers more with trex.compiler.targets.register_target or the "
                          f"'{_ENTRY_POINT_GROUP}' entry-point group)")
    return _TARGETS[name]


def resolve_target(name: str, *, fallback: bool = True) -> str:
    """Check that ``name`` exists and can run here; an unavailable target falls back to ``cpu`` with a
    warning (or raises when ``fallback`` is False). Returns the name that will actually run."""
    target = get_target(name)
    ok, reason = target.available()
    if ok:
        return name
    if not fallback:
        raise TargetError(f"trex target {name!r} is not available on this host: {reason}")
    warnings.warn(f"trex: target {name!r} is not available on this host ({reason}); running the "
                  f"{REFERENCE_TARGET!r} reference instead", RuntimeWarning, stacklevel=2)
    return REFERENCE_TARGET


def active_target() -> str:
    return _ACTIVE.get()


@contextlib.contextmanager
def use_target(name: str):
    """Run fused ops under target ``name`` inside the block (name must be registered and available)."""
    get_target(name)
    token = _ACTIVE.set(name)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


_INLINING: contextvars.ContextVar[bool] = contextvars.ContextVar("trex_inlining_kernels", default=False)


@contextlib.contextmanager
def inlining_kernels():
    """Inside the block (the backend sets it while Inductor traces a graph), a fused op whose device
    target can inline its kernels decomposes into them (the cuda target: ``wrap_triton`` launches,
    trex.codegen_triton.target), so the compiler calls them directly; outside it the op stays opaque
    (the trex-only path must not see kernel launches in its graphs: it would run them op by op)."""
    token = _INLINING.set(True)
    try:
        yield
    finally:
        _INLINING.reset(token)


def inlining() -> bool:
    return _INLINING.get()


def run_fused(op_name: str, reference: Callable[..., Any], args: tuple,
              fake: Callable[..., Any] | None = None, target: str | None = None) -> Any:
    """The eager implementation of every fused op: the kernel of ``target`` (default: the active
    target), else the reference.

    With ``fake`` (the op's meta implementation), a kernel's outputs are checked at the boundary:
    a kernel that returns the wrong number of outputs, shapes or dtypes is not trusted (one warning,
    then the reference runs), so a bug in generated code cannot flow on as a wrong result."""
    target = _TARGETS.get(target or _ACTIVE.get())
    if target is not None and target.runner is not None:
        try:
            out = target.runner(op_name, args)
            if out is not NotImplemented and fake is not None:
                _check_outputs(op_name, out, _expected_outputs(op_name, fake, args))
        except Exception as e:  # noqa: BLE001 - a kernel failure must not produce a wrong result or crash
            _warn_once((target.name, op_name, type(e).__name__),
                       f"trex: target {target.name!r} failed on {op_name} ({type(e).__name__}: {e}); "
                       f"running the reference instead")
            out = NotImplemented
        if out is not NotImplemented:
            return out
    return reference(*args)


def _warn_once(key: tuple, message: str) -> None:
    if key not in _WARNED:
        _WARNED.add(key)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


_EXPECTED: dict = {}   # (op, argument signature) -> [(shape, dtype)] of the op's outputs


def _expected_outputs(op_name: str, fake: Callable[..., Any], args: tuple) -> list:
    """Output shapes/dtypes from the op's fake implementation, cached per argument signature."""
    import torch

    # on every fused call: shapes and dtypes decide the fake's outputs (not strides or device), and
    # the scalars hash as they are (repr only for anything unhashable)
    key = (op_name,) + tuple((a.shape, a.dtype) if isinstance(a, torch.Tensor)
                             else a if isinstance(a, (int, float, str, type(None))) else repr(a) for a in args)
    if key not in _EXPECTED:
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode(allow_non_fake_inputs=False) as mode:
            fargs = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
            outs = fake(*fargs)
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        _EXPECTED[key] = [(tuple(o.shape), o.dtype) for o in outs]
    return _EXPECTED[key]


def _check_outputs(op_name: str, out: Any, expected: list) -> None:
    outs = out if isinstance(out, (tuple, list)) else (out,)
    if len(outs) != len(expected):
        raise RuntimeError(f"{op_name}: kernel returned {len(outs)} outputs, the op has {len(expected)}")
    for i, (o, (shape, dtype)) in enumerate(zip(outs, expected)):
        if tuple(o.shape) != shape or o.dtype != dtype:
            raise RuntimeError(f"{op_name}: kernel output {i} is {tuple(o.shape)} {o.dtype}, "
                               f"expected {shape} {dtype}")


_WARNED: set = set()


# --------------------------------------------------------------------------------------------
# tuned configurations: a later layer (trex/tuning/) keeps the best kernel configuration per program and
# shape; codegen asks for it here, through the `trex.tuned_configs` entry-point group, never by import.
_TUNED_GROUP = "trex.tuned_configs"


@functools.cache
def _tuned_providers(list_entry_points: Callable) -> tuple:
    """The group's entry points, listed once per lister (importlib's `entry_points`, or a test's
    replacement): listing scans every installed distribution (~4 ms), and the emulate target asks
    once per (program, sizes) it launches."""
    return tuple(list_entry_points(group=_TUNED_GROUP))


def tuned_config(target: str, program: Any, sizes: dict) -> dict | None:
    """The tuned knob values for ``program`` (a Kernel IR Program) at ``sizes`` ({size: int}) on
    ``target`` from the first provider of the ``trex.tuned_configs`` group that has one, else None.
    A provider that fails is skipped with a warning: a broken store never breaks compilation."""
    for ep in _tuned_providers(entry_points):
        try:
            cfg = ep.load()(target, program, sizes)
        except Exception as e:  # noqa: BLE001 - fall back to the cost model's choice
            key = ("tuned", ep.name, type(e).__name__)
            if key not in _WARNED:
                _WARNED.add(key)
                warnings.warn(f"trex: tuned-config provider {ep.name!r} failed ({type(e).__name__}: {e}); "
                              f"using the cost model's tiling", RuntimeWarning, stacklevel=2)
            continue
        if cfg:
            return dict(cfg)
    return None
