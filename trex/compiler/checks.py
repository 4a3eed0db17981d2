"""Input validation shared by fused ops' fake and reference implementations.

Both run the same checks, so a bad call fails at trace time (fake) and in eager (reference) with an
error that names the op, the argument and the fix, never deep inside a kernel.
"""
from __future__ import annotations

import math

import torch

SUPPORTED_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)


def compute_dtype(*dtypes: torch.dtype) -> torch.dtype:
    """fp32 for bf16/fp16/fp32 inputs; fp64 when any input is fp64 (so gradcheck runs in fp64)."""
    out = torch.float32
    for d in dtypes:
        out = torch.promote_types(out, d)
    return out


def check_float(op: str, name: str, t: torch.Tensor | None, *, optional: bool = False) -> None:
    if t is None:
        if optional:
            return
        raise TypeError(f"trex.{op}: argument {name!r} is required, got None")
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"trex.{op}: argument {name!r} must be a tensor, got {type(t).__name__}")
    if t.dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"trex.{op}: argument {name!r} has dtype {t.dtype}; supported: "
                        f"{', '.join(str(d) for d in SUPPORTED_DTYPES)}")


def check_same_dtype(op: str, **tensors: torch.Tensor | None) -> None:
    present = {k: v.dtype for k, v in tensors.items() if v is not None}
    if len(set(present.values())) > 1:
        desc = ", ".join(f"{k}={v}" for k, v in present.items())
        raise TypeError(f"trex.{op}: arguments must share one dtype, got {desc}; cast them to the same dtype")


def check_shape(op: str, name: str, t: torch.Tensor, expected: tuple, what: str) -> None:
    if tuple(t.shape) != tuple(expected):
        raise ValueError(f"trex.{op}: argument {name!r} has shape {tuple(t.shape)} but must have shape "
                         f"{tuple(expected)} ({what})")


def check_same_shape(op: str, **tensors: torch.Tensor) -> None:
    shapes = {k: tuple(v.shape) for k, v in tensors.items()}
    first = next(iter(shapes.values()), ())
    if any(shape != first for shape in shapes.values()):
        desc = ", ".join(f"{k}={v}" for k, v in shapes.items())
        raise ValueError(f"trex.{op}: arguments must have the same shape, got {desc}")


def check_min_dim(op: str, name: str, t: torch.Tensor, ndim: int) -> None:
    if t.dim() < ndim:
        raise ValueError(f"trex.{op}: argument {name!r} must have at least {ndim} dimension(s), got shape "
                         f"{tuple(t.shape)}")


def check_same_device(op: str, **tensors: torch.Tensor | None) -> None:
    """All tensor arguments on one device (a meta tensor next to CPU ones included)."""
    present = {k: v.device for k, v in tensors.items() if isinstance(v, torch.Tensor)}
    if len(set(present.values())) > 1:
        desc = ", ".join(f"{k} on {v}" for k, v in present.items())
        raise ValueError(f"trex.{op}: arguments must be on one device, got {desc}; move them with .to(device)")


# symbolic scalars (dynamic shapes) are checked where they become concrete, not here
_SYMBOLIC = (torch.SymInt, torch.SymFloat)


def check_number(op: str, name: str, value, *, minimum: float | None = None, above: float | None = None,
                 integer: bool = False, infinite_ok: bool = False) -> None:
    """A finite Python number (an int where `integer`; +inf too where `infinite_ok`: an op that gives it
    a meaning, like swiglu_limited's limit = inf for no clamp), >= minimum / > above where given."""
    if isinstance(value, _SYMBOLIC):
        return
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        want = "an int" if integer else "a number"
        raise TypeError(f"trex.{op}: argument {name!r} must be {want}, got {value!r} ({type(value).__name__})")
    if not math.isfinite(value) and not (infinite_ok and value == math.inf):
        extra = " or +inf" if infinite_ok else ""
        raise ValueError(f"trex.{op}: argument {name!r} must be finite{extra}, got {value}")
    if minimum is not None and value < minimum:
        raise ValueError(f"trex.{op}: argument {name!r} must be >= {minimum}, got {value}")
    if above is not None and not value > above:
        raise ValueError(f"trex.{op}: argument {name!r} must be > {above}, got {value}")


def check_out_dtype(op: str, name: str, dtype) -> None:
    """None (the input's dtype) or one of the floating dtypes the kernels write."""
    if dtype is None:
        return
    if not isinstance(dtype, torch.dtype) or dtype not in SUPPORTED_DTYPES:
        raise TypeError(f"trex.{op}: argument {name!r} must be None or one of "
                        f"{', '.join(str(d) for d in SUPPORTED_DTYPES)}, got {dtype!r}")
