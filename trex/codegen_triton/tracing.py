"""Whether printed kernels launch or are traced: under `traced_launches()` (the cuda target's decomposition
of a fused op while Inductor traces a graph) every launch goes through `torch.library.wrap_triton` and
becomes a Triton-kernel node of the graph, which Inductor calls from its own wrapper code."""
from __future__ import annotations

import contextlib
import contextvars

_TRACED: contextvars.ContextVar[bool] = contextvars.ContextVar("trex_traced_launches", default=False)


@contextlib.contextmanager
def traced_launches():
    """Launches inside the block go through `torch.library.wrap_triton` (module docstring)."""
    token = _TRACED.set(True)
    try:
        yield
    finally:
        _TRACED.reset(token)


def tracing() -> bool:
    return _TRACED.get()


def launchable(fn, writes):
    """`fn` (a @triton.jit function) as the current mode launches it: itself, or wrapped for tracing.
    `writes` names the parameters the launch writes (a tuple, or a function of the launch's keyword
    arguments): traced, torch is told them instead of analysing the kernel's TTIR (`writes.py`)."""
    if _TRACED.get():
        from torch.library import wrap_triton

        from . import writes as declared_writes
        declared_writes.declare(fn, writes)
        return wrap_triton(fn)
    return fn
