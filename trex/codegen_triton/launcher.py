"""Compile and launch printed kernels: the disk/kernel cache, argument binding, grids, host finalize.

`run_program(program, inputs, scalars)` is the Triton counterpart of `kernel_ir.interpret`: the same
inputs (the program's [ROWS, *cols] / [*cols] views), the same outputs (PARTIAL ones combined by the
program's `finalize`). The printed source is written to the kernel cache directory
(TREX_TRITON_CACHE, default ~/.cache/trex/triton) because @triton.jit reads the function's source
file; the file name is the kernel name, which hashes the IR fingerprint, the sizes and the tiling.

Under `traced_launches()` (the cuda target's decomposition of a fused op while Inductor traces it) the
kernels launch through `torch.library.wrap_triton`: the launch is recorded as a Triton-kernel node of
the graph that Inductor calls from its own wrapper code, instead of running.

TREX_TRITON_POISON=1 fills every output with NaN (integers: -1) before the launch, so a test or the
benchmark can tell an element the kernel never wrote from a computed one.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import math
import os
import sys
import threading

import torch

from trex.compiler.kernel_ir import ROWS, IRError, Program, TensorKind, bind_sizes, output_shapes

from . import tiling as tiling_mod
from .printer import KernelSource, Tiling, print_program
from .tracing import launchable, tracing

_LOCK = threading.Lock()
_KERNELS: dict[str, "CompiledKernel"] = {}
_REPORT: dict[str, dict] = {}


def cache_dir() -> str:
    d = os.environ.get("TREX_TRITON_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "trex", "triton")
    os.makedirs(d, exist_ok=True)
    return d


@dataclasses.dataclass
class CompiledKernel:
    source: KernelSource
    path: str
    fn: object


def _write_atomic(path: str, text: str) -> None:
    tmp = f"{path}.tmp.{os.getpid()}.{threading.get_ident()}"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def load_kernel(ks: KernelSource) -> CompiledKernel:
    """Import the printed source as a module (cached by kernel name) and return its @triton.jit fn."""
    # the interpreter (TRITON_INTERPRET=1, CPU tests) decorates differently: its own module and cache slot
    mod_name = ks.name + ("_interpret" if os.environ.get("TRITON_INTERPRET") == "1" else "")
    with _LOCK:
        hit = _KERNELS.get(mod_name)
        if hit is not None:
            return hit
        path = os.path.join(cache_dir(), mod_name + ".py")
        if not os.path.exists(path) or open(path).read() != ks.source:
            _write_atomic(path, ks.source)
        spec = importlib.util.spec_from_file_location(f"trex_triton_kernels.{mod_name}", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        ck = CompiledKernel(ks, path, getattr(module, ks.name))
        _KERNELS[mod_name] = ck
        _REPORT[mod_name] = {"program": ks.program, "tiling": dataclasses.asdict(ks.tiling),
                            "sizes": dict(ks.sizes), "path": path}
        return ck


def _view(t, x: torch.Tensor) -> torch.Tensor:
    """Contiguous columns (the printed offsets assume them); the row stride stays free."""
    if x.dim() <= 1:
        return x.contiguous()
    inner = x[0] if t.kind == TensorKind.ROW else x
    if t.kind == TensorKind.ROW and not inner.is_contiguous():
        return x.contiguous()
    if t.kind != TensorKind.ROW and not x.is_contiguous():
        return x.contiguous()
    return x


def _poison(x: torch.Tensor) -> None:
    x.fill_(float("nan") if x.dtype.is_floating_point else -1)


@dataclasses.dataclass
class LaunchPlan:
    """Everything about one (program, input shapes/dtypes, size scalars, tiling) that does not change
    between calls: computed once (sympy size binding, tiling choice, printing, import), then every call
    only makes views, allocates outputs and launches."""
    program: Program
    kernel: CompiledKernel
    tiling: Tiling
    rows: int
    out_shapes: dict
    out_dtypes: dict
    arg_spec: tuple          # (kind, name, scalar-is-float)
    grid: tuple
    partial: tuple           # names of PARTIAL outputs (dropped after finalize)


_PLANS: dict = {}


def _plan_key(p: Program, inputs: dict, scalars: dict, tiling: Tiling | None) -> tuple:
    shapes = tuple((k, tuple(v.shape), v.dtype) for k, v in inputs.items())
    size_scalars = tuple((name, scalars.get(name)) for _, name in p.size_params)
    return (id(p), shapes, size_scalars, tiling, os.environ.get("TRITON_INTERPRET") == "1")


def plan(p: Program, inputs: dict, scalars: dict, tiling: Tiling | None = None) -> LaunchPlan:
    key = _plan_key(p, inputs, scalars, tiling)
    hit = _PLANS.get(key)
    if hit is not None and hit.program is p:
        return hit
    for t in p.inputs:
        x = inputs.get(t.name)
        if x is not None and x.dtype != t.dtype.torch:
            raise IRError(f"program {p.name}: input {t.name} is {x.dtype}, the program expects "
                          f"{t.dtype.value}; build the program for this dtype")
    sizes = bind_sizes(p, inputs, scalars)
    rows = int(sizes[ROWS])
    chosen = tiling or tiling_mod.choose(p, sizes)
    ks = print_program(p, {k: v for k, v in sizes.items() if k != ROWS}, chosen)
    ck = load_kernel(ks)
    shapes = output_shapes(p, sizes, chosen.programs or 1)
    arg_spec = tuple((kind, name, kind == "scalar" and p.scalar(name).dtype.is_float) for kind, name in ks.args)
    grid = (chosen.programs,) if ks.persistent else (max(1, math.ceil(rows / chosen.rows_per_tile)),)
    lp = LaunchPlan(p, ck, chosen, rows, shapes, {n: p.tensor(n).dtype.torch for n in shapes}, arg_spec, grid,
                    tuple(t.name for t in p.outputs if t.kind == TensorKind.PARTIAL))
    _PLANS[key] = lp
    return lp


def run_program(p: Program, inputs: dict, scalars: dict | None = None, tiling: Tiling | None = None,
                device=None, out: dict | None = None) -> dict:
    """Run program `p` on CUDA (or the Triton interpreter) and return its outputs by name.

    `out` may give row outputs preallocated by the caller (e.g. row-strided views dx[:, s, :] of one
    tensor, so that per-stream outputs need no stack copy): each must have the output's shape and
    dtype and contiguous columns."""
    scalars = scalars or {}
    lp = plan(p, inputs, scalars, tiling)
    device = device or next(iter(inputs.values())).device
    ins = {t.name: _view(t, inputs[t.name]) for t in p.inputs}
    poison = os.environ.get("TREX_TRITON_POISON") == "1" and not tracing()
    given = out or {}
    for name, x in given.items():
        want = lp.out_shapes.get(name)
        t = p.tensor(name) if want is not None else None
        ok = (t is not None and t.kind == TensorKind.ROW and tuple(x.shape) == tuple(want)
              and x.dtype == lp.out_dtypes[name] and x.device == torch.device(device)
              and (x.dim() <= 1 or x.shape[0] == 0 or x[0].is_contiguous()))
        if not ok:
            raise IRError(f"run_program(out={{{name!r}: ...}}): only row outputs can be given; program {p.name} "
                          f"writes {name} as {want} {lp.out_dtypes.get(name)} on {device} with contiguous "
                          f"columns; got {tuple(x.shape)} {x.dtype} on {x.device} strides {x.stride()}")
    outs = {}
    for name, shape in lp.out_shapes.items():
        x = given[name] if name in given else torch.empty(shape, dtype=lp.out_dtypes[name], device=device)
        if poison:
            _poison(x)
        elif lp.rows == 0 and name in lp.partial:
            x.zero_()
        outs[name] = x
    if lp.rows > 0:
        args = []
        for kind, name, is_float in lp.arg_spec:
            if kind == "ptr":
                args.append(ins[name] if name in ins else outs[name])
            elif kind == "row_stride":
                x = ins[name] if name in ins else outs[name]
                args.append(x.stride(0) if x.dim() > 0 else 0)
            elif kind == "scalar":
                args.append(float(scalars[name]) if is_float else int(scalars[name]))
            elif kind == "scratch":
                args.append(torch.empty(lp.grid[0] * lp.kernel.source.scratch_per_program,
                                        dtype=torch.float32, device=device))
            else:
                args.append(lp.rows)
        # the written parameters only matter to a traced launch: an eager one (the hot path) skips them
        writes = _written_params(lp, ins) if tracing() else ()
        launchable(lp.kernel.fn, writes)[lp.grid](*args, num_warps=lp.tiling.num_warps,
                                                  num_stages=lp.tiling.num_stages)
    for h in p.finalize:
        outs[h.out] = _host_op(h, outs, ins)
    for name in lp.partial:
        outs.pop(name, None)
    return outs


def _written_params(lp: LaunchPlan, ins: dict) -> tuple[str, ...]:
    """The kernel parameters a printed kernel writes: its output and scratch pointers (a program never
    writes its inputs), by the names @triton.jit gives the positional arguments run_program passes."""
    fn = lp.kernel.fn
    params = getattr(fn, "arg_names", None) or list(inspect.signature(getattr(fn, "fn", fn)).parameters)
    return tuple(params[i] for i, (kind, name, _) in enumerate(lp.arg_spec)
                 if kind == "scratch" or (kind == "ptr" and name not in ins))


def _host_op(h, result: dict, ins: dict) -> torch.Tensor:
    if h.kind == "sum_cores":
        return result[h.args[0]].sum(0)
    if h.kind == "rows_matmul":
        a = result[h.args[0]] if h.args[0] in result else ins[h.args[0]]
        b = result[h.args[1]] if h.args[1] in result else ins[h.args[1]]
        return rows_matmul(a.reshape(a.shape[0], -1), b.reshape(b.shape[0], -1))
    raise IRError(f"unknown host op kind {h.kind!r} (known: sum_cores, rows_matmul)")


def rows_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """a^T @ b over the rows, fp32 out. On CUDA: a Triton kernel that reads b (e.g. mHC's bf16 x) once
    in its own dtype (cuBLAS would need an fp32 copy of b); elsewhere: torch."""
    if a.is_cuda and os.environ.get("TRITON_INTERPRET") != "1":
        from .gemm import rows_matmul_cuda
        return rows_matmul_cuda(a, b)
    return a.float().T @ b.float()


def kernel_report() -> dict:
    """Every kernel compiled in this process: program, tiling, sizes, source path, and (on CUDA)
    registers and spills from the compiled binary."""
    out = {}
    for name, ck in _KERNELS.items():
        rep = dict(_REPORT[name])
        try:
            cache = getattr(ck.fn, "device_caches", None) or getattr(ck.fn, "cache", None)
            kernels = []
            if isinstance(cache, dict):
                for v in cache.values():
                    entry = v[0] if isinstance(v, tuple) else v
                    if isinstance(entry, dict):
                        kernels += list(entry.values())
            for k in kernels:
                md = getattr(k, "metadata", None)
                rep.setdefault("compiled", []).append({"n_regs": getattr(k, "n_regs", None),
                                                       "n_spills": getattr(k, "n_spills", None),
                                                       "shared": getattr(md, "shared", None)})
        except Exception as err:  # noqa: BLE001 - the report is diagnostic only
            rep["compiled_error"] = repr(err)
        out[name] = rep
    return out
