"""Property-based fuzzing of fused ops: hypothesis strategies per op and a checker over every target.

    from hypothesis import given
    from trex.compiler.strategies import fuzz_arguments, check_fused_op

    @given(args=fuzz_arguments("rms_norm"))
    def test_rms_norm(args):
        check_fused_op("rms_norm", args)       # cpu reference, emulate, cuda: whichever run here

`fuzz_arguments(op)` draws valid positional argument tuples for any fused op (forward and backward)
whose op package (trex/passes/<op>/op.py) registered an argument generator (`define_fused_op(..., fuzz_arguments=)`); the
generator builds its tensors with a `FuzzDraw`: rows 1..4097 weighted toward the edge counts
`EDGE_ROWS`, hidden sizes from `HIDDEN_SIZES` (odd ones and DeepSeek's 7168), dtypes bf16/fp16/fp32,
contiguous / column-strided / transposed-storage / row-strided layouts, optional extra leading dims,
and special values (all-zero rows, values exactly at and just beyond the clamp limits, large
magnitudes, NaN/+Inf/-Inf). Row counts are capped so the largest tensor stays within the hypothesis
profile's `ELEMENT_CAP` (TREX_FUZZ_PROFILE; one row always fits) so the CI profile stays fast; the
nightly profile reaches 4097 x 7168. (Tilings for the emulator are drawn by `trex.codegen_ascendc.fuzzing`:
the feasible set is the cost model's, a later layer than this one.)

`check_fused_op(op, args)` runs the op on every available target and checks each result against the
fp64 reference with the DESIGN.md rule (rmse vs fp64 within 3x (bf16/fp16) or 2x (fp32) of the
reference run in the input dtypes, `testing.assert_close_to_reference`), after checking that NaN and
+-Inf appear exactly where the reference in the input dtypes has them.
"""
from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import torch

from . import registry, targets
from .testing import assert_close_to_reference, to_fp64

EDGE_ROWS = (1, 3, 127, 129, 4097)
HIDDEN_SIZES = (1, 3, 7, 33, 127, 129, 16, 64, 7168)
FUZZ_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
LAYOUTS = ("contiguous", "column_strided", "transposed", "row_strided")
SPECIAL_VALUES = ("none", "none", "zero_rows", "clamp_limits", "large", "nonfinite")
# Largest tensor (elements) an example may draw, per hypothesis profile: CI stays fast, nightly
# reaches the DeepSeek-V4 hidden size at 4097 rows.
ELEMENT_CAP = {"dev": 1 << 11, "ci": 1 << 12, "nightly": 4097 * 7168}
# Largest magnitude "large" draws: fp16 tops out at 65504 and rms_norm squares in fp32.
LARGE_MAGNITUDE = {torch.float16: 3e4, torch.bfloat16: 1e6, torch.float32: 1e6}


def profile_element_cap() -> int:
    profile = os.environ.get("TREX_FUZZ_PROFILE", "ci")
    if profile not in ELEMENT_CAP:
        raise ValueError(f"TREX_FUZZ_PROFILE={profile!r}: unknown profile; use one of {sorted(ELEMENT_CAP)}")
    return ELEMENT_CAP[profile]


def _st():
    # hypothesis is a test dependency: imported on use
    from hypothesis import strategies as st
    return st


# ------------------------------------------------------------------------------------- drawing
class FuzzDraw:
    """What every argument generator (``define_fused_op(..., fuzz_arguments=)``) draws with: the
    hypothesis draw, the example's dtype, a seeded generator, its special values, the element cap."""

    def __init__(self, draw, dtype: torch.dtype, cap: int, specials: tuple = SPECIAL_VALUES):
        self.draw, self.dtype, self.cap, self.st = draw, dtype, cap, _st()
        self.seed = draw(self.st.integers(0, 2 ** 31 - 1))
        self.gen = torch.Generator().manual_seed(self.seed)
        self.special = draw(self.st.sampled_from(tuple(specials)))

    def pick(self, options):
        return self.draw(self.st.sampled_from(tuple(options)))

    def rows(self, width: int) -> int:
        """1..4097 rows (at most cap // width), half the time one of the edge counts."""
        most = max(1, min(4097, self.cap // max(width, 1)))
        edges = [r for r in EDGE_ROWS if r <= most]
        return self.draw(self.st.one_of(self.st.sampled_from(edges), self.st.integers(1, most)))

    def lead(self, rows: int) -> tuple:
        """The rows as one leading dim or two (any leading shape is allowed)."""
        split = [k for k in (2, 3, 4) if rows % k == 0 and rows > k]
        if split and self.draw(self.st.booleans()):
            k = self.pick(split)
            return (rows // k, k)
        return (rows,)

    def randn(self, shape, dtype=None, scale: float = 1.0) -> torch.Tensor:
        return (torch.randn(*shape, generator=self.gen) * scale).to(dtype or self.dtype)

    def tensor(self, shape, dtype=None, scale: float = 1.0, *, limit: float | None = None) -> torch.Tensor:
        """A main input: random values, this example's special values, then its memory layout."""
        dtype = dtype or self.dtype
        t = torch.randn(*shape, generator=self.gen) * scale
        t = self._special(t, dtype, limit)
        return self._layout(t.to(dtype), self.pick(LAYOUTS))

    def _special(self, t: torch.Tensor, dtype, limit) -> torch.Tensor:
        flat = t.reshape(-1, t.shape[-1]) if t.dim() else t.reshape(1, 1)
        n = flat.numel()
        if self.special == "zero_rows" and flat.shape[0]:
            rows = torch.randint(0, flat.shape[0], (max(1, flat.shape[0] // 4),), generator=self.gen)
            flat[rows] = 0.0
        elif self.special == "clamp_limits" and limit is not None and n:
            # exactly at +-L and one fp32 ulp either side of it: the clamp's boundary cases
            edge = torch.tensor([limit, -limit, math.nextafter(limit, math.inf), math.nextafter(-limit, -math.inf),
                                 math.nextafter(limit, 0.0), math.nextafter(-limit, 0.0)])
            idx = torch.randint(0, n, (max(1, n // 3),), generator=self.gen)
            flat.view(-1)[idx] = edge[torch.randint(0, len(edge), (len(idx),), generator=self.gen)]
        elif self.special == "large":
            flat.mul_(LARGE_MAGNITUDE[dtype] / max(float(flat.abs().max()), 1e-30) if n else 1.0)
        elif self.special == "nonfinite" and n:
            idx = torch.randint(0, n, (max(1, n // 50),), generator=self.gen)
            vals = torch.tensor([math.nan, math.inf, -math.inf])
            flat.view(-1)[idx] = vals[torch.randint(0, 3, (len(idx),), generator=self.gen)]
        return flat.reshape(t.shape)

    @staticmethod
    def _layout(t: torch.Tensor, layout: str) -> torch.Tensor:
        """The same values in another memory layout (a view whose strides are not the contiguous ones)."""
        if t.dim() < 2 or layout == "contiguous":
            return t
        if layout == "column_strided":       # every other column of a twice-as-wide buffer
            base = torch.zeros(*t.shape[:-1], 2 * t.shape[-1], dtype=t.dtype)
            base[..., ::2] = t
            return base[..., ::2]
        if layout == "transposed":           # last two dims stored transposed
            return t.transpose(-1, -2).contiguous().transpose(-1, -2)
        base = torch.zeros(2 * t.shape[0], *t.shape[1:], dtype=t.dtype)   # row_strided
        base[::2] = t
        return base[::2]


def fuzz_arguments(op_name: str, *, dtypes=FUZZ_DTYPES, max_elements: int | None = None,
                   specials: tuple = SPECIAL_VALUES):
    """Hypothesis strategy of positional argument tuples for fused op ``op_name`` (forward or
    backward), built by the generator its op package (trex/passes/<op>/op.py) registered (``define_fused_op(...,
    fuzz_arguments=)``). ``max_elements`` caps the largest tensor (default: the profile's `ELEMENT_CAP`);
    ``specials`` are the special-value kinds drawn from (`SPECIAL_VALUES`; a subset for checks that
    only hold on finite, moderate inputs)."""
    fop = registry.fused_ops().get(op_name)
    if fop is None:
        raise KeyError(f"fuzz_arguments: {op_name!r} is not a registered fused op; registered: "
                       f"{sorted(registry.fused_ops())}")
    if fop.fuzz_arguments is None:
        raise KeyError(f"fuzz_arguments: fused op {op_name!r} registered no argument generator; pass "
                       f"fuzz_arguments=<maker(FuzzDraw) -> args> to define_fused_op in {fop.module}")
    make = fop.fuzz_arguments
    st = _st()
    cap = max_elements if max_elements is not None else profile_element_cap()

    @st.composite
    def strategy(draw):
        return make(FuzzDraw(draw, draw(st.sampled_from(tuple(dtypes))), cap, specials))

    return strategy()


# ------------------------------------------------------------------------------------- checking
def available_targets() -> dict[str, str]:
    """Every known target -> "" when it can run here, else the reason it cannot."""
    out = {}
    for name in targets.known_targets():
        try:
            ok, reason = targets.get_target(name).available()
        except Exception as e:  # noqa: BLE001 - a target whose layer fails to load is unavailable, not fatal
            ok, reason = False, f"failed to load ({type(e).__name__}: {e})"
        out[name] = "" if ok else (reason or "unavailable")
    return out


def _tensors(x: Any) -> list:
    return list(x) if isinstance(x, (tuple, list)) else [x]


def _to_device(args: tuple, device: str) -> tuple:
    return tuple(a.to(device) if isinstance(a, torch.Tensor) else a for a in args)


def _check_nonfinite(actual: torch.Tensor, eager: torch.Tensor, label: str) -> None:
    a, e = actual.detach().double(), eager.detach().double()
    for what, fn in (("NaN", torch.isnan), ("+Inf", lambda t: t == math.inf), ("-Inf", lambda t: t == -math.inf)):
        diff = fn(a) != fn(e)
        if diff.any():
            where = tuple(int(i) for i in diff.nonzero()[0])
            raise AssertionError(f"{label}: {what} positions differ from the reference's ({int(diff.sum())} "
                                 f"elements, first at index {where}: got {a[where].item()}, reference "
                                 f"{e[where].item()})")


def compare_outputs(actual: Any, eager: Any, reference64: Any, *, label: str) -> None:
    """NaN/+-Inf where the reference (input dtypes) has them, then the DESIGN.md rule on the elements
    finite everywhere."""
    acts, eags, refs = _tensors(actual), _tensors(eager), _tensors(reference64)
    if not len(acts) == len(eags) == len(refs):
        raise AssertionError(f"{label}: {len(acts)} outputs, the reference has {len(eags)}")
    for i, (a, e, r) in enumerate(zip(acts, eags, refs)):
        name = f"{label} output {i}"
        # compared on the CPU: a kernel's outputs and the eager chain / fp64 reference of CUDA
        # arguments may sit on different devices (the NaN/Inf position check raised on every H200 case)
        a, e, r = a.cpu(), e.cpu(), r.cpu()
        if a.shape != e.shape or a.dtype != e.dtype:
            raise AssertionError(f"{name}: {a.dtype}{tuple(a.shape)}, the reference gives {e.dtype}{tuple(e.shape)}")
        _check_nonfinite(a, e, name)
        finite = torch.isfinite(a.double()) & torch.isfinite(e.double()) & torch.isfinite(r.double())
        assert_close_to_reference(a.detach()[finite], e.detach()[finite], r.detach()[finite], name=name)


def check_fused_op(op_name: str, args: tuple, targets: list[str] | None = None, *,
                   runners: dict[str, Callable] | None = None) -> dict[str, str]:
    """Run fused op ``op_name`` on ``args`` on every available target (or ``targets``) and check each
    result against the fp64 reference (`compare_outputs`). A target's runner is called directly, so
    a kernel failure raises instead of falling back; ``runners`` overrides a target's runner (e.g.
    the emulator at a chosen tiling). Returns target -> "kernel" (its own implementation ran and
    passed; for ``cpu`` that is the composite reference, dispatched through ``torch.ops.trex``) or
    "reference: <why>" (the runner returned NotImplemented: the reference runs there). A target that
    is not available is left out of the result, or raises when it was asked for by name."""
    from . import targets as target_registry
    fop = registry.fused_ops().get(op_name)
    if fop is None:
        raise KeyError(f"check_fused_op: {op_name!r} is not a registered fused op; registered: "
                       f"{sorted(registry.fused_ops())}")
    eager = fop.reference(*args)
    reference64 = fop.reference(*to_fp64(args))
    if targets is None:     # every available one (listing the entry points costs ~40 ms: only here)
        names = [n for n, why in available_targets().items() if not why]
    else:
        names = list(targets)
        for name in names:
            ok, why = target_registry.get_target(name).available()
            if not ok:
                raise target_registry.TargetError(f"check_fused_op: target {name!r} cannot run here: {why}")
    results: dict[str, str] = {}
    for name in names:
        if name == target_registry.REFERENCE_TARGET:
            with target_registry.use_target(name):
                actual = fop.op(*args)
        else:
            runner = (runners or {}).get(name) or target_registry.get_target(name).runner
            device = "cuda" if name == "cuda" else None
            actual = runner(op_name, _to_device(args, device) if device else args)
            if actual is NotImplemented:
                results[name] = "reference: the target has no kernel for these inputs"
                continue
        compare_outputs(actual, eager, reference64, label=f"{op_name} on {name}")
        results[name] = "kernel"
    return results
