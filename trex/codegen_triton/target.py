"""The "cuda" target: trex's fused ops on CUDA tensors run the Triton kernels printed from their Kernel IR.

`register()` (called by `trex.codegen_triton.register_cuda_target()`, and through the `trex.targets`
entry point when the backend asks for target "cuda"):
  * registers the runner with `trex.compiler.targets.register_target("cuda", ...)`, so
    `torch.compile(..., backend="trex", options={"target": "cuda"})` selects it explicitly;
  * registers, for every fused op with a kernel spec, the rule that inlines its printed kernels into a
    graph Inductor compiles (`_inline_rule`: `wrap_triton` launches, like `torch.library.triton_op`);
  * registers a CUDA kernel for every fused op with a kernel spec (`CustomOpDef.register_kernel("cuda",
    ...)`), so a `torch.ops.trex.*` call on CUDA tensors runs Triton whatever the ambient target is,
    unless a non-reference target (e.g. "emulate") was selected explicitly, which then decides.

Each op's kernel spec (`trex.compiler.registry.kernel_spec(op)`, registered by the op's package) runs
its cuda layout (the SAME programs the AscendC printer prints, or the spec's cuda variant: RoPE's
register pair swap and table expansion, mHC per stream) on `TritonExecutor`: `launcher.run_program` for
the kernels and the Triton GEMM for a `rows_matmul` host step.
Inputs the spec's guards name, fp64 and zero-width rows return NotImplemented; any failure while
printing/compiling warns once and falls back to the composite reference: a compiler failure never
produces a wrong result.
"""
from __future__ import annotations

import os
import warnings

import torch

from trex.compiler import registry
from trex.compiler.kernel_ir import IRError
from trex.compiler.kernels import Executor

from .launcher import rows_matmul, run_program
from .tracing import traced_launches

TARGET_NAME = "cuda"
_FAILED: dict[tuple, str] = {}
# the mhc_pre_proj launch (block_t, block_k, num_warps, num_stages, slices) without and with dli (forward,
# backward); empty: mhc_proj_triton's choice. bench/h200_h17_mhc.py sweeps the launches and sets these to
# run the layout end to end at its best.
_PROJ_LAUNCH: dict = {False: {}, True: {}}


class TritonExecutor(Executor):
    """The kernel specs' runners launch through this on the cuda target: `launcher.run_program`, which
    writes preallocated outputs (`out`) in place."""

    def __call__(self, program, inputs, scalars, out=None) -> dict:
        return self._launch(program, inputs, scalars, out=out)

    def rows_matmul(self, a, b):
        return rows_matmul(a, b)

    def mhc_pre_dx_dfn(self, x, dli, fn, dh, dss2, pre):
        """dx and dfn from one read of x (trex/codegen_triton/mhc_dx_dfn.py); widths without a
        power-of-two block >= 16 take the reference."""
        from .mhc_dx_dfn import block_k, mhc_dx_dfn_triton
        if x.is_cuda and os.environ.get("TRITON_INTERPRET") != "1" and block_k(dli.shape[1]) and dh.shape[1] <= 64:
            return mhc_dx_dfn_triton(x, dli, fn, dh, dss2, pre)
        return super().mhc_pre_dx_dfn(x, dli, fn, dh, dss2, pre)

    def mhc_pre_proj(self, x, fn, n, dli=None):
        """The reduce pass as a split-K GEMM reading x once (trex/codegen_triton/mhc_proj.py)."""
        from .mhc_proj import mhc_proj_triton
        if x.is_cuda and os.environ.get("TRITON_INTERPRET") != "1" and fn.shape[0] <= 64:
            return mhc_proj_triton(x, fn, n, dli, **_PROJ_LAUNCH[dli is not None])
        return super().mhc_pre_proj(x, fn, n, dli)


_EXECUTOR = TritonExecutor(run_program)


def _spec(op_name: str):
    spec = registry.kernel_spec(op_name)
    return spec if spec is not None and TARGET_NAME in spec.targets else None


def _key(op_name: str, args: tuple) -> tuple:
    return (op_name,) + tuple((tuple(a.shape[-1:]), a.dtype) if isinstance(a, torch.Tensor) else type(a).__name__
                              for a in args)


def _no_kernel(spec, op_name: str, args: tuple) -> bool:
    """True when no printed kernel takes these arguments (the reference runs them)."""
    if spec is None or os.environ.get("TREX_TRITON_DISABLE") == "1":
        return True
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    if any(t.dtype == torch.float64 for t in tensors) or any(t.dim() and t.shape[-1] == 0 for t in tensors):
        return True   # no fp64 program; nothing to launch for zero-width rows
    return spec.unsupported_reason(args) is not None or bool(_FAILED and _key(op_name, args) in _FAILED)


def run(op_name: str, args: tuple):
    """Runner of the "cuda" target: the Triton kernel for `op_name`, or NotImplemented."""
    spec = _spec(op_name)
    if _no_kernel(spec, op_name, args):
        return NotImplemented
    try:
        return spec.run(args, _EXECUTOR, TARGET_NAME)
    except (IRError, RuntimeError, ValueError, TypeError, AssertionError, ImportError) as err:
        if isinstance(err, RuntimeError) and "out of memory" in str(err):
            raise
        key = _key(op_name, args)
        reason = f"{type(err).__name__}: {err}"
        _FAILED[key] = reason
        warnings.warn(f"trex cuda target: {op_name} could not run through Triton ({reason[:300]}); "
                      f"running the composite reference for these inputs", RuntimeWarning, stacklevel=2)
        return NotImplemented


def _inline_rule(op_name: str):
    """The FunctionalTensorMode rule of fused op `op_name` (what `torch.library.triton_op` registers for
    its ops): while the backend has Inductor trace a graph (`targets.inlining()`), a call on CUDA tensors
    of static sizes decomposes into the op's runner with its launches traced (`wrap_triton`), so
    Inductor calls the printed kernels from its generated code, with no custom-op dispatch or Python
    launcher at run time and inside CUDA graphs. Anything else keeps the op opaque (an extern call
    of torch.ops.trex.*, the Python runner); so does a runner that fails to trace (one warning)."""
    from trex.compiler import targets

    def rule(mode, op, types, args, kwargs):
        spec = _spec(op_name)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        if (not targets.inlining() or kwargs or _no_kernel(spec, op_name, args) or _writes_views(spec)
                or any(t.device.type != "cuda" for t in tensors)
                or any(isinstance(s, torch.SymInt) for t in tensors for s in (*t.shape, *t.stride()))
                or _key(op_name, args) in _NOT_INLINED):
            return mode.__torch_dispatch__(op, types, args, kwargs)
        try:
            with mode, traced_launches():
                return spec.run(args, _EXECUTOR, TARGET_NAME)
        except Exception as err:  # noqa: BLE001 - the opaque op still runs the kernel from Python
            reason = f"{type(err).__name__}: {str(err)[:300]}"
            _NOT_INLINED[_key(op_name, args)] = reason
            warnings.warn(f"trex cuda target: {op_name} could not be inlined into the compiled graph "
                          f"({reason}); it runs as an extern call of torch.ops.trex.{op_name}",
                          RuntimeWarning, stacklevel=2)
            return mode.__torch_dispatch__(op, types, args, kwargs)
    return rule


_NOT_INLINED: dict[tuple, str] = {}


def _writes_views(spec) -> bool:
    """A runner that writes its kernels' outputs into row-strided views of one tensor (mHC's backward,
    per stream) stays an extern call: functionalized, each kernel's write into a view clones the whole
    base tensor (H200 run 9: mHC forward+backward 3.29 -> 5.58 ms device inlined), while the extern
    call costs ~20 us of host time."""
    return spec.layout_for(TARGET_NAME).out_views is not None


def available() -> tuple[bool, str]:
    try:
        import triton  # noqa: F401
    except ImportError:
        return False, "triton is not installed"
    if not torch.cuda.is_available():
        return False, "no CUDA device (torch.cuda.is_available() is False)"
    return True, ""


_REGISTERED = False


def register() -> None:
    """Register the "cuda" target and the CUDA kernels of every fused op with a kernel spec (idempotent)."""
    global _REGISTERED
    from trex.compiler import targets

    from torch._subclasses.functional_tensor import FunctionalTensorMode

    if _REGISTERED:
        return
    from . import writes
    writes.install()   # torch asks which arguments each traced launch writes; trex's kernels declare it
    targets.register_target(TARGET_NAME, run, available=available, replace=True,
                            description="Triton kernels printed from the Kernel IR (codegen_triton)")
    for name, fop in registry.fused_ops().items():
        if _spec(name) is None:
            continue
        opdef = torch._library.custom_ops.OPDEFS.get(fop.qualname)
        if opdef is None:
            continue

        def cuda_kernel(*args, _name=name, _fop=fop):
            # through run_fused, so the kernel's outputs are checked against the op's fake
            # implementation at the boundary (count, shapes, dtypes) like every other target's
            active = targets.active_target()
            return targets.run_fused(_name, _fop.reference, args, fake=_fop.fake,
                                     target="cuda" if active == targets.REFERENCE_TARGET else active)

        opdef.register_kernel("cuda", cuda_kernel)
        opdef.register_torch_dispatch(FunctionalTensorMode, _inline_rule(name))
    _REGISTERED = True
