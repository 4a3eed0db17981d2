"""Which arguments trex's Triton kernels write, declared by their launch sites instead of analysed.

A kernel launched through `torch.library.wrap_triton` (`tracing.launchable` while Inductor traces a graph)
is functionalized: torch must know which tensor arguments it mutates, and finds out by compiling the
kernel to TTIR and walking its stores (`triton_kernel_wrap.identify_mutated_tensors`; torch >= 2.12:
`get_mutated_tensors` over `identify_accessed_tensors`). That runs once per launch per trace - AOTAutograd
traces the graph twice (metadata, joint graph) and Inductor's lowering asks again - and each costs a TTIR
compile: on transformers' DeepSeek-V4 at 2 layers AOTAutograd's two traces took 17.0 s under
`backend="trex"` against 6.2 s under Inductor (H200, session 20, call L), and with the declaration
11.1 s (call M2, 74 questions answered from it). trex knows the answer: a printed kernel
writes its outputs and scratch and never its inputs (`launcher.run_program` builds the argument list from
the program), and each hand-written kernel names its output pointers at its launch. `install()` answers
torch's question from that declaration for trex's kernels and leaves every other kernel to torch's
analysis; with `VERIFY` set, both run and must agree (the CUDA tests do this).
"""
from __future__ import annotations

import collections
from collections.abc import Callable, Iterable

import torch

Writes = tuple[str, ...] | Callable[[dict], Iterable[str]]

_NOT_TENSORS = (int, float, str, type(None), torch.SymInt, torch.SymFloat)
_WRITES: dict[int, tuple[object, Writes]] = {}   # id(kernel) -> (kernel, its written parameter names)
counters: collections.Counter = collections.Counter()  # "declared": questions answered from a declaration
VERIFY = False   # also run torch's analysis and raise when it disagrees (tests)


class DeclaredWritesMismatch(AssertionError):
    pass


def declare(kernel, writes: Writes) -> None:
    """`kernel` (a @triton.jit function) writes the parameters `writes` names: a tuple, or a function
    of the launch's keyword arguments (constexprs included) for a kernel whose writes depend on them."""
    _WRITES[id(kernel)] = (kernel, writes)


def declared(kernel, kwargs: dict) -> list[str] | None:
    """The tensor arguments of `kwargs` that `kernel` writes, in `kwargs`' order (as torch's analysis
    returns them); None when `kernel` declared nothing (or while `VERIFY` runs torch's analysis)."""
    hit = None if _ANALYSING else _WRITES.get(id(kernel))
    if hit is None or hit[0] is not kernel:
        return None
    writes = hit[1]
    names = set(writes(kwargs) if callable(writes) else writes)
    # the values are tensors while AOTAutograd functionalizes, Inductor's IR buffers while it lowers: a
    # declared pointer parameter is named whatever its value is (only scalars and None are skipped)
    return [k for k, v in kwargs.items() if k in names and not isinstance(v, _NOT_TENSORS)]


_ANALYSING = False   # inside VERIFY's call of torch's analysis: declarations are not consulted


def _checked(names: list[str], analysed: Callable[[], list[str]], kernel) -> list[str]:
    global _ANALYSING
    counters["declared"] += 1
    if VERIFY:
        _ANALYSING = True
        try:
            want = list(analysed())
        finally:
            _ANALYSING = False
        if sorted(want) != sorted(names):
            raise DeclaredWritesMismatch(f"trex: kernel {getattr(kernel, '__name__', kernel)} declares writes "
                                         f"{sorted(names)}, torch's TTIR analysis finds {sorted(want)}")
    return names


_INSTALLED = False


def install() -> None:
    """Answer torch's mutation question for declared kernels (module docstring); idempotent. Wraps the
    functions torch looks up at call time, so torch's own callers (functionalization, Inductor's
    lowering of a user kernel) see the declaration; an undeclared kernel goes to the original."""
    global _INSTALLED
    if _INSTALLED:
        return
    from torch._higher_order_ops import triton_kernel_wrap as tkw

    identify = getattr(tkw, "identify_mutated_tensors", None)   # torch <= 2.11: the TTIR analysis itself
    if identify is not None:
        def identify_mutated_tensors(kernel, kwargs, *rest, **kw):
            names = declared(kernel, kwargs)
            if names is None:
                return identify(kernel, kwargs, *rest, **kw)
            return _checked(names, lambda: identify(kernel, kwargs, *rest, **kw), kernel)
        tkw.identify_mutated_tensors = identify_mutated_tensors

    get_mutated = getattr(tkw, "get_mutated_tensors", None)      # every version: functionalization's entry
    if get_mutated is not None:
        def get_mutated_tensors(kernel_idx, constant_args_idx, kwargs, *rest, **kw):
            kernel = tkw.kernel_side_table.get_kernel(kernel_idx)
            names = declared(kernel, {**kwargs, **tkw.kernel_side_table.get_constant_args(constant_args_idx)})
            if names is None:
                return get_mutated(kernel_idx, constant_args_idx, kwargs, *rest, **kw)
            return _checked(names, lambda: get_mutated(kernel_idx, constant_args_idx, kwargs, *rest, **kw), kernel)
        tkw.get_mutated_tensors = get_mutated_tensors
    _INSTALLED = True
