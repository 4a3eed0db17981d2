"""Registries of fused ops, patterns and kernel specs, filled by the op packages in trex/passes/ (discovered
automatically).

``fused_ops()``, ``patterns()`` and ``kernel_specs()`` import every op package of ``trex.passes`` first, so tests,
fuzzers, targets and the explain command see every registered op/pattern/spec without a hand-kept list.

A fused op is defined with ``define_fused_op``: it creates the ``torch.library.custom_op`` in the
``trex`` namespace whose eager implementation is ``targets.run_fused`` (the active target's kernel,
else the composite reference), registers the fake implementation, and records sample inputs used
by opcheck/gradcheck, and the op's hypothesis argument generator (``fuzz_arguments``, drawn by
``trex.compiler.strategies.fuzz_arguments``), so the fuzzer needs no per-op table in this layer.

An op with generated kernels also registers its ``trex.compiler.kernels.KernelSpec`` with
``register_kernel_spec``; targets, codegen, tuning and the benchmarks look it up with
``kernel_spec(name)`` / ``kernel_specs()`` and import nothing from ``trex.passes``.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
import pkgutil
import warnings
from typing import TYPE_CHECKING, Callable

import torch

from . import targets

if TYPE_CHECKING:
    from .kernels import KernelSpec

NAMESPACE = "trex"


@dataclasses.dataclass
class FusedOp:
    name: str                       # short name, e.g. "rms_norm"; torch.ops.trex.<name>
    schema: str                     # "(Tensor x, ...) -> (Tensor, Tensor)"
    reference: Callable             # composite PyTorch reference (any dtype incl. fp64)
    fake: Callable
    sample_inputs: Callable[[torch.dtype], list[tuple]]   # argument tuples covering the op's cases
    module: str
    backward_of: str | None = None  # for *_bwd ops: the forward op's name
    differentiable_args: tuple[int, ...] = ()   # positions gradcheck differentiates
    # maker(strategies.FuzzDraw) -> positional argument tuple in schema order; None: not fuzzable
    fuzz_arguments: Callable | None = None

    @property
    def op(self):
        return getattr(getattr(torch.ops, NAMESPACE), self.name).default

    @property
    def qualname(self) -> str:
        return f"{NAMESPACE}::{self.name}"


_FUSED_OPS: dict[str, FusedOp] = {}
_PATTERNS: dict[str, "object"] = {}
_KERNEL_SPECS: dict[str, KernelSpec] = {}
_DISCOVERED = False
DISCOVERY_ERRORS: dict[str, str] = {}


def define_fused_op(name: str, schema: str, *, reference: Callable, fake: Callable,
                    sample_inputs: Callable, backward_of: str | None = None,
                    differentiable_args: tuple[int, ...] = (),
                    fuzz_arguments: Callable | None = None) -> torch._library.custom_ops.CustomOpDef:
    """Create ``trex::<name>`` (idempotent on re-import) and record it in the registry.

    ``fuzz_arguments(d)`` builds one random argument tuple from a ``trex.compiler.strategies.FuzzDraw``
    (rows, layouts, dtypes and special values drawn for it); ``strategies.fuzz_arguments(name)``
    turns it into a hypothesis strategy; tests/fuzz fuzzes every registered op and fails for one
    registered without it."""
    qualname = f"{NAMESPACE}::{name}"
    existing = _FUSED_OPS.get(name)
    if existing is not None:
        return torch._library.custom_ops.OPDEFS[qualname]

    @functools.wraps(reference)
    def eager(*args):
        return targets.run_fused(name, reference, args, fake)

    op = torch.library.custom_op(qualname, eager, mutates_args=(), schema=schema)
    op.register_fake(fake)
    _FUSED_OPS[name] = FusedOp(name, schema, reference, fake, sample_inputs, reference.__module__,
                               backward_of, differentiable_args, fuzz_arguments)
    return op


def register_pattern(pattern) -> None:
    """Register a ``trex.compiler.pattern.Pattern``; re-registering from the same module (a reload)
    replaces it, a second module claiming the name is an error."""
    existing = _PATTERNS.get(pattern.name)
    if existing is not None and existing.replacement.__module__ != pattern.replacement.__module__:
        raise ValueError(f"pattern {pattern.name!r} is already registered by {existing.replacement.__module__}; "
                         f"choose another name for the pattern in {pattern.replacement.__module__}")
    _PATTERNS[pattern.name] = pattern


def register_kernel_spec(spec: KernelSpec) -> None:
    """Register the ``trex.compiler.kernels.KernelSpec`` of fused op ``spec.op`` (a reload replaces it)."""
    _KERNEL_SPECS[spec.op] = spec


def discover() -> None:
    """Import every op package of ``trex.passes`` (once). A package that fails to import is reported in
    ``DISCOVERY_ERRORS`` and warned about; the others still load."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    _DISCOVERED = True
    import trex.passes

    for info in pkgutil.iter_modules(trex.passes.__path__):
        if info.name.startswith("_"):
            continue
        modname = f"trex.passes.{info.name}"
        try:
            importlib.import_module(modname)
        except Exception as e:  # noqa: BLE001 - one broken pass must not disable the others
            DISCOVERY_ERRORS[modname] = f"{type(e).__name__}: {e}"
            warnings.warn(f"trex: pass module {modname} failed to import ({type(e).__name__}: {e}); "
                          f"its patterns are disabled", RuntimeWarning, stacklevel=2)


def fused_ops() -> dict[str, FusedOp]:
    discover()
    return dict(_FUSED_OPS)


def patterns() -> dict[str, object]:
    """All registered patterns, by name, in application order (priority, then name)."""
    discover()
    ordered = sorted(_PATTERNS.values(), key=lambda p: (-p.priority, p.name))
    return {p.name: p for p in ordered}


def kernel_spec(name: str) -> KernelSpec | None:
    """The ``KernelSpec`` of fused op ``name``, or None when it has no generated kernels."""
    discover()
    return _KERNEL_SPECS.get(name)


def kernel_specs() -> dict[str, KernelSpec]:
    """Every registered ``KernelSpec``, by op name, sorted."""
    discover()
    return dict(sorted(_KERNEL_SPECS.items()))
