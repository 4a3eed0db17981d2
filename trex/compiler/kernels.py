"""Kernel specs: everything one fused op needs to run as a generated kernel, kept with the op.

A fused op's package registers a ``KernelSpec`` (trex/passes/<op>/kernel.py, through
``trex.compiler.registry.register_kernel_spec``). The targets ("emulate": trex.codegen_ascendc,
"cuda": trex.codegen_triton), ``trex codegen``, ``trex tune``, ``python -m trex.tuning.bench`` and
the benchmarks find it with ``registry.kernel_spec(name)`` / ``registry.kernel_specs()``: they keep
no per-op table and import nothing from trex.passes, so an op with kernels is one package.

A spec holds
  * ``guards``: inputs its programs cannot take (a predicate over the op's arguments, and why); the
    target then runs the composite reference;
  * ``layout``: how op-level arguments become one program's [ROWS, *cols] views and back (``run``),
    and the program built for a dtype at given sizes (``program``: what codegen prints, tuning tunes
    and the benchmarks sweep); ``variants`` give a target a layout of its own (cuda swaps RoPE's
    pairs in registers and runs mHC per stream);
  * ``sizes``: the named example sizes of SIZE_SETS, and the example ``scalars``.

A runner receives an ``Executor``: calling it runs a program on views (the reference interpreter,
the AscendC emulator, a Triton launch); its methods are the host steps a target provides
(``rows_matmul``, the mHC projections), so that no runner
imports a code generator.
"""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping

import torch

from trex.compiler.kernel_ir import DType, IRError, Program, interpreter

# DeepSeek-V4-Pro's token counts of the example size sets (reference/deepseek_v4.md §7: d = 7168, 128
# heads, head_dim 512 with 64 rope channels, moe_intermediate 3072, hc_mult 4, 20 Sinkhorn iterations)
EXAMPLE_TOKENS = 8192
V4PRO_TOKENS = 16384
V4PRO_HEADS = 128

# name -> what the sizes are for; every spec gives every set, each naming the same sizes
SIZE_SETS = {
    "example": "DeepSeek-V4-Pro at 8192 tokens per device step: what `trex codegen` tiles for and the "
               "sizes `trex tune --shape` starts from",
    "small": "sizes the Ascend emulator runs in seconds (tuning bench default on Ascend targets)",
    "tiny": "sizes Triton's interpreter runs in seconds (CPU smoke of the CUDA path)",
    "v4pro": "DeepSeek-V4-Pro at 16384 tokens (tuning bench default on cuda)",
}


_IR_DTYPES = {d.torch: d for d in DType}


def ir_dtype(dtype: torch.dtype | None) -> DType | None:
    """The Kernel IR dtype of a torch dtype (None for None): a dict lookup, runners call it per op call;
    a dtype without an IR equivalent raises DType.from_torch's IRError."""
    if dtype is None:
        return None
    found = _IR_DTYPES.get(dtype)
    return found if found is not None else DType.from_torch(dtype)


def row_op_sizes(dim: str, width: int, small: tuple[int, int], tiny: tuple[int, int] = (24, 128)) -> dict:
    """The size sets of a row op over one column size `dim` whose DeepSeek-V4-Pro value is `width`:
    `small` and `tiny` are (ROWS, dim)."""
    return {"example": {"ROWS": EXAMPLE_TOKENS, dim: width}, "small": {"ROWS": small[0], dim: small[1]},
            "tiny": {"ROWS": tiny[0], dim: tiny[1]}, "v4pro": {"ROWS": V4PRO_TOKENS, dim: width}}


@functools.lru_cache(maxsize=None)
def cached_program(builder: Callable[..., Program], *args) -> Program:
    """``builder(*args)``, built once: programs are immutable, and launch plans, cost models and
    compiled kernels are cached per program."""
    return builder(*args)


class Executor:
    """What a target gives an op's runner: calling it runs one program on views; the methods are host
    steps, reference implementations here, that a target may replace with its own."""

    def __init__(self, launch: Callable[[Program, dict, dict], dict]):
        self._launch = launch

    def __call__(self, program: Program, inputs: dict, scalars: dict, out: dict | None = None) -> dict:
        """The program's outputs by name. ``out`` gives row outputs the runner preallocated (row-strided
        views of one tensor, so per-stream outputs need no stack copy); a launch that cannot write
        into them has its results copied there."""
        result = self._launch(program, inputs, scalars)
        for name, view in (out or {}).items():
            view.copy_(result[name])
            result[name] = view
        return result

    def rows_matmul(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """a^T @ b over the rows, in fp32: the host step of a program that leaves its GEMM to the caller
        (the cube unit's or a tensor-core GEMM's work, not the vector program's)."""
        return a.float().T @ b.float()

    def mhc_pre_dx_dfn(self, x: torch.Tensor, dli: torch.Tensor, fn: torch.Tensor, dh: torch.Tensor,
                       dss2: torch.Tensor, pre: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """mHC's backward apply pass as one host step, so a target can compute dx and dfn = dh^T x from one
        read of x (the row programs cannot hold dfn's per-column accumulator): x [T, n*d], dli [T, d],
        fn [M, n*d], dh [T, M], dss2 [T, 1] (2 d(sum of squares)), pre [T, n] ->
        dx = x dss2 + pre_s dli + dh @ fn (x's dtype), dfn (fp32). This is the reference."""
        rows, n = pre.shape
        d = dli.shape[1]
        dxf = x.float() * dss2.float().reshape(rows, 1)
        dxf = dxf + (pre.float().reshape(rows, n, 1) * dli.float().reshape(rows, 1, d)).reshape(rows, n * d)
        dxf = dxf + dh.float() @ fn.float()
        return dxf.to(x.dtype), dh.float().T @ x.float()

    def mhc_pre_proj(self, x: torch.Tensor, fn: torch.Tensor, n: int, dli: torch.Tensor | None = None
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """mHC's reduce pass as one host step, so a target can run it as a split-K GEMM that reads x once
        (the per-row coefficient math then runs in a program of its own): x [T, n*d], fn [M, n*d],
        dli [T, d] or None -> partial sums per row, P of them, P / n per stream (a target's column split;
        one per stream here): hpart [T, P, M] of h = x fn^T, sspart [T, P] of sum x^2, dppart [T, n, P/n]
        of d(pre)_s = x_s . dli (None without dli). fp32. This is the reference."""
        rows, m = x.shape[0], fn.shape[0]
        xs = x.float().reshape(rows, n, -1)
        hpart = torch.einsum("tsc,msc->tsm", xs, fn.float().reshape(m, n, -1))
        sspart = (xs * xs).sum(-1)
        if dli is None:
            return hpart, sspart, None
        return hpart, sspart, (xs * dli.float().reshape(rows, 1, -1)).sum(-1).reshape(rows, n, 1)


@dataclasses.dataclass(frozen=True)
class Guard:
    """Inputs the op's programs have no program for: ``predicate(args)`` is true for them."""
    predicate: Callable[[tuple], bool]
    reason: str


@dataclasses.dataclass(frozen=True)
class Layout:
    """One program layout of an op.

    run(executor, *args): the op's outputs, computed by ``executor`` on this layout's views of args;
    program(dtype, sizes): the program this layout runs for ``dtype`` at named ``sizes`` (its example
      variant: weighted, routed, ... as codegen, tuning and the benchmarks use it);
    views(inputs): this layout's program inputs made from the default layout program's ``inputs``
      (tuning draws inputs for the default layout and views them as the target's runner does, so a
      kernel is verified and profiled on the strides it runs on); None: the same inputs;
    out_views(inputs): the row outputs the runner preallocates for those inputs; None: none;
    programs(dtype, sizes): every program the runner launches, in launch order, ``program``'s first
      (tuning tunes each: a stored tiling serves the launch whose program it was tuned for); None:
      ``program`` is the only one."""
    run: Callable[..., object]
    program: Callable[[DType, Mapping[str, int]], Program]
    views: Callable[[dict], dict] | None = None
    out_views: Callable[[dict], dict] | None = None
    programs: Callable[[DType, Mapping[str, int]], tuple[Program, ...]] | None = None


@dataclasses.dataclass(frozen=True)
class KernelSpec:
    """The kernels of fused op ``op`` (see the module docstring); ``targets`` are the runtime targets
    that run them (the others run the composite reference)."""
    op: str
    doc: str
    layout: Layout
    sizes: Mapping[str, Mapping[str, int]]
    scalars: Mapping[str, float] = dataclasses.field(default_factory=dict)
    guards: tuple[Guard, ...] = ()
    variants: Mapping[str, Layout] = dataclasses.field(default_factory=dict)
    targets: tuple[str, ...] = ("emulate", "cuda")

    def __post_init__(self):
        missing = sorted(set(SIZE_SETS) - set(self.sizes))
        if missing:
            raise IRError(f"kernel spec {self.op}: no sizes for {missing} (every spec names all of {list(SIZE_SETS)})")
        names = {k: sorted(v) for k, v in self.sizes.items()}
        if any(v != names["example"] for v in names.values()):
            raise IRError(f"kernel spec {self.op}: the size sets name different sizes: {names}")

    def layout_for(self, target: str | None = None) -> Layout:
        """The layout ``target`` runs (tuning's Ascend targets and "emulate" run the default one)."""
        return self.variants.get(target, self.layout)

    def unsupported_reason(self, args: tuple) -> str | None:
        """Why no program of this op takes ``args`` (None: one does)."""
        return next((g.reason for g in self.guards if g.predicate(args)), None)

    def program(self, dtype: DType | str, target: str | None = None, sizes: Mapping[str, int] | None = None) -> Program:
        """The example program ``target`` runs for ``dtype`` at named ``sizes`` (default: "example")."""
        return self.layout_for(target).program(DType(dtype), sizes or self.sizes["example"])

    def run(self, args: tuple, execute: Callable | None = None, target: str | None = None):
        """The op's outputs for ``args`` through ``target``'s layout. ``execute``: an Executor, or any
        ``(program, inputs, scalars) -> outputs`` callable (the reference interpreter when None)."""
        executor = execute if isinstance(execute, Executor) else Executor(execute or interpreter())
        return self.layout_for(target).run(executor, *args)


class _Captured(Exception):
    def __init__(self, launch: tuple):
        super().__init__()
        self.launch = launch


class _CapturingExecutor(Executor):
    def __init__(self):
        super().__init__(None)

    def __call__(self, program, inputs, scalars, out=None):
        raise _Captured((program, inputs, scalars))


def capture_launch(spec: KernelSpec, args: tuple, target: str | None = None) -> tuple[Program, dict, dict]:
    """(program, inputs, scalars) of the first launch ``target``'s runner makes for ``args``, without
    running it: the benchmarks sweep exactly the kernels a target launches for their op calls."""
    try:
        spec.run(args, _CapturingExecutor(), target)
    except _Captured as c:
        return c.launch
    raise IRError(f"{spec.op}: the runner launched no program for these arguments")
