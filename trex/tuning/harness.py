"""Shared, trusted plumbing of the search and the verifier: programs from pattern names (the fused ops'
kernel specs, trex.compiler.registry), input views for given sizes, running a printed AscendC kernel on
the emulator with poisoned outputs, and the fp64 interpretation of a program.

Nothing here is chosen by a candidate: a candidate contributes its kernel source and its knob values;
how inputs are made, outputs allocated and results compared is fixed here.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

import sympy
import torch

from trex.compiler import kernel_ir, registry
from trex.compiler.kernel_ir import (
    ROWS,
    DType,
    IRError,
    Program,
    TensorKind,
    bind_sizes,
    output_shapes,
    size,
)

# every candidate compile of any target (counted whether or not a disk cache already held the library):
# the store test asserts that an answer from the store compiles nothing.
COMPILE_COUNT = {"n": 0}


def kernel_spec(pattern: str):
    """The kernel spec of fused op `pattern` (registered by the op's package)."""
    spec = registry.kernel_spec(pattern)
    if spec is None:
        raise IRError(f"unknown pattern {pattern!r}; choose one of {sorted(registry.kernel_specs())}")
    return spec


@dataclass
class Artifact:
    """What a candidate hands to the verifier and the profiler: its kernel source, the hash of the
    library built from it (sandbox.build) and its knob values."""
    config: dict
    source: str
    kernel: str
    sha256: str = ""

    def for_verifier(self) -> dict:
        return {"source": self.source, "config": self.config, "sha256": self.sha256}


# The programs build_program made, with (spec, layout, dtype): make_inputs and output_views give a
# program the views its layout's runner makes (the cuda mHC programs take x0..x{N-1}, row-strided views
# of one [ROWS, N, HD] tensor, and write dx0..dx{N-1} into views of one), so a kernel is verified and
# profiled on the strides it runs on.
_BUILT: dict = {}


def build_program(pattern: str, dtype: str, target: str | None = None, named_sizes: dict | None = None, *,
                  index: int = 0) -> Program:
    """The Kernel IR program `target` runs for `pattern`: its kernel spec's layout for that target (cuda:
    RoPE's register pair swap, mHC per stream for N = named_sizes["N"]), so that a stored configuration
    is the one the target's launcher looks up (by program fingerprint). index: the layout's index-th
    launch (`layout_programs`; 0 is the layout's program)."""
    spec = kernel_spec(pattern)
    layout = spec.layout_for(target)
    programs = layout_programs(pattern, dtype, target, named_sizes)
    if not 0 <= index < len(programs):
        raise IRError(f"pattern {pattern!r} launches {len(programs)} program(s) on {target or 'the default layout'}; "
                      f"program index {index} does not exist (use 0..{len(programs) - 1})")
    program = programs[index]
    _BUILT[program] = (spec, layout, DType(dtype))
    return program


def layout_programs(pattern: str, dtype: str, target: str | None = None, named_sizes: dict | None = None
                    ) -> tuple[Program, ...]:
    """Every program `target`'s layout of `pattern` launches, in launch order (the Layout's `programs`;
    just its program when it launches one): what `trex tune` tunes, one search each."""
    spec = kernel_spec(pattern)
    layout = spec.layout_for(target)
    first = spec.program(dtype, target, named_sizes)
    if layout.programs is None:
        return (first,)
    programs = tuple(layout.programs(DType(dtype), named_sizes or spec.sizes["example"]))
    if not programs or programs[0].fingerprint() != first.fingerprint():
        raise IRError(f"kernel spec {pattern}: its layout's programs must start with its program {first.name}")
    return programs


def program_sizes(program: Program, named_sizes: dict) -> dict:
    """The named sizes `program` binds (bind_sizes: ROWS, its tensors' column and row-map symbols, the
    sizes its scalars set): a later launch of a layout (mHC's backward apply program) does not take
    every size of its pattern (no ITERS), and its store entry is keyed by the sizes it is launched with."""
    syms = {ROWS, *(s for s, _ in program.size_params)}
    for t in program.tensors:
        for c in t.cols:
            syms |= sympy.sympify(c).free_symbols
        if t.kind == TensorKind.ROW and not t.row_map.is_identity:
            syms |= {*sympy.sympify(t.row_map.div or 1).free_symbols,
                     *(sympy.sympify(t.row_map.mod).free_symbols if t.row_map.mod is not None else ())}
    names = {str(s) for s in syms}
    return {k: v for k, v in named_sizes.items() if k in names}


def parse_shape(text: str | dict | None, pattern: str) -> dict:
    """`ROWS=64,D=256` (any subset of the pattern's sizes; the rest keep the pattern's example values)
    -> {name: int}."""
    out = dict(kernel_spec(pattern).sizes["example"])
    if isinstance(text, dict):
        items = text.items()
    else:
        items = []
        for part in (text or "").split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise ValueError(f"--shape {text!r}: expected NAME=VALUE pairs separated by commas, e.g. ROWS=64,D=256")
            k, v = part.split("=", 1)
            items.append((k.strip(), v.strip()))
    for k, v in items:
        if k not in out:
            raise ValueError(f"--shape: {k!r} is not a size of pattern {pattern!r} (sizes: {sorted(out)})")
        out[k] = int(v)
    return out


def scalars_for(pattern: str, program: Program, named_sizes: dict) -> dict:
    """The pattern's example scalars, with scalars that bind a size (RoPE's cdiv, mHC's iters) set
    from the sizes so the two agree."""
    sc = dict(kernel_spec(pattern).scalars)
    for sym, sname in program.size_params:
        sc[sname] = named_sizes[str(sym)]
    return sc


def symbol_sizes(named: dict) -> dict:
    return {size(k): int(v) for k, v in named.items()}


def input_shapes(program: Program, named_sizes: dict) -> dict:
    """Shape of every input view: ROW tensors [rows, *cols] (a row-mapped input with a wrap has `mod`
    rows, one without has ceil(ROWS / div)), SHARED tensors [*cols]."""
    sz = symbol_sizes(named_sizes)
    shapes = {}
    for t in program.inputs:
        cols = [int(sympy.sympify(c).subs(sz)) for c in t.cols]
        if t.kind == TensorKind.ROW:
            rm = t.row_map
            if rm.is_identity:
                lead = sz[ROWS]
            elif rm.mod is not None:
                lead = int(rm.mod.subs(sz))
            else:
                lead = math.ceil(sz[ROWS] / int(rm.div.subs(sz)))
            shapes[t.name] = (lead, *cols)
        else:
            shapes[t.name] = tuple(cols)
    return shapes


DISTRIBUTIONS = {
    "normal": lambda shape, g: torch.randn(*shape, generator=g, dtype=torch.float64, device=g.device),
    "uniform": lambda shape, g: torch.rand(*shape, generator=g, dtype=torch.float64, device=g.device) * 2 - 1,
    # heavy tails: a few large entries per row, the case that exposes a wrong reduction order or a dropped lane
    "heavy": lambda shape, g: torch.randn(*shape, generator=g, dtype=torch.float64, device=g.device)
    * torch.where(torch.rand(*shape, generator=g, dtype=torch.float64, device=g.device) < 0.02, 30.0, 1.0),
}


def make_inputs(program: Program, named_sizes: dict, seed: int, scale: float = 1.0,
                distribution: str = "normal", device: str | torch.device = "cpu") -> dict:
    """Seeded random input views in the program's dtypes, drawn on `device` (on a GPU the inputs of a
    DeepSeek-V4 shape take milliseconds instead of the CPU's seconds; a seed gives different values on
    different devices, which only matters for comparing runs across devices).

    A program whose layout views the default layout's inputs (build_program; the cuda mHC programs:
    x0..x{N-1} row-strided views of x [ROWS, N, HD], fn0..fn{N-1} per stream) gets the default program's
    inputs, drawn as for that program, through those views: the strides its target's runner gives it."""
    built = _BUILT.get(program)
    if built is not None and built[1].views is not None:
        spec, layout, dtype = built
        ins = layout.views(make_inputs(spec.program(dtype), named_sizes, seed, scale, distribution, device))
        missing = sorted({t.name for t in program.inputs} - set(ins))
        if missing:
            raise ValueError(f"make_inputs: program {program.name} has inputs {missing} that its layout's "
                             f"views do not make (the kernel spec of {spec.op})")
        return {t.name: ins[t.name] for t in program.inputs}
    g = torch.Generator(device=device).manual_seed(int(seed) % (2 ** 63))
    ins = {}
    for name, shape in input_shapes(program, named_sizes).items():
        t = program.tensor(name)
        ins[name] = (DISTRIBUTIONS[distribution](shape, g) * scale).to(t.dtype.torch)
    # RMSNorm backward's saved rstd is positive by construction
    if "rstd" in ins:
        ins["rstd"] = ins["rstd"].abs() + 0.5
    return ins


def output_views(program: Program, inputs: dict) -> dict | None:
    """Preallocated row outputs in the layout the target's runner passes (`run_program(out=...)`): the
    cuda mHC backward writes dx0..dx{N-1} into row-strided views dx[:, s, :] of one [ROWS, N, HD]
    tensor. None for every other program (the launcher allocates its outputs)."""
    built = _BUILT.get(program)
    return built[1].out_views(inputs) if built is not None and built[1].out_views is not None else None


# ------------------------------------------------------------------------------------------------
# the emulator, with poisoned outputs


def poison_(x: torch.Tensor) -> torch.Tensor:
    """NaN for floating outputs (-1 for integer ones): an element the kernel does not write stays visibly wrong."""
    return x.fill_(float("nan") if x.dtype.is_floating_point else -1)


def ascend_tiling_struct(program: Program, buffer_depth: int):
    """The printer of this program and depth (its tiling-struct layout is trusted, the source is not)."""
    from trex.codegen_ascendc.printer import AscendCPrinter
    from trex.codegen_ascendc.lowering import plan_kernel
    return AscendCPrinter(plan_kernel(program, buffer_depth))


def ascend_launch_args(program: Program, config: dict, inputs: dict, scalars: dict, *, cores: int | None = None,
                       rows_limit: int | None = None, poison: bool = True) -> tuple[list, dict]:
    """(the kernel's arguments in signature order: input tensors, output tensors, the tiling struct as
    bytes; the output tensors by name) for a launch of `config`'s tiling over `inputs`. Outputs are
    NaN-poisoned (poison=True) so that an element the kernel does not write stays visibly wrong."""
    from trex.codegen_ascendc.launch import tiling_struct_type

    sizes = bind_sizes(program, inputs, scalars)
    rows = sizes[ROWS] if rows_limit is None else rows_limit
    ncores = int(config["cores"]) if cores is None else cores
    if rows == 0:
        raise IRError(f"{program.name}: zero rows; nothing to launch")
    printer = ascend_tiling_struct(program, int(config["buffer_depth"]))
    st = tiling_struct_type(printer)()
    chunk = program.chunk_dims[0] if program.chunk_dims else None
    vals = {"rows": rows, "rowsPerTile": int(config["rows_per_tile"]),
            "colChunk": (config.get("col_chunk") or int(chunk.subs(sizes))) if chunk is not None else 1}
    vals.update({str(s): v for s, v in sizes.items() if s != ROWS})
    vals.update({s.name: scalars[s.name] for s in program.scalars})
    for _, fname, _ in printer.tiling_fields():
        if fname not in vals:
            raise IRError(f"{program.name}: tiling field {fname} has no value")
        setattr(st, fname, vals[fname])
    outs = {n: torch.empty(s, dtype=program.tensor(n).dtype.torch)
            for n, s in output_shapes(program, sizes, ncores).items()}
    for t in outs.values():
        poison_(t) if poison else t.zero_()
    args = [inputs[t.name].contiguous() if t.role == "in" else outs[t.name] for t in program.tensors]
    return [*args, bytes(st)], outs


def finalize_ascend(program: Program, outs: dict, inputs: dict, sizes: dict) -> dict:
    """The program's outputs after the host finalize (per-core partials reduced, then dropped)."""
    result = dict(outs)
    ins = {t.name: inputs[t.name] for t in program.inputs}
    for h in program.finalize:
        result[h.out] = kernel_ir._host_op(program, h, result, ins, sizes)
    for t in program.outputs:
        if t.kind == TensorKind.PARTIAL:
            result.pop(t.name, None)
    return result


def tensor_bytes(t: torch.Tensor) -> bytes:
    """A CPU tensor's contents as bytes (what crosses to the kernel worker)."""
    return t.detach().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def tensor_from_bytes(data: bytes, like: torch.Tensor) -> torch.Tensor:
    """A tensor of `like`'s dtype and shape holding `data` (a worker's copy of that buffer)."""
    if len(data) != like.numel() * like.element_size():
        raise ValueError(f"a buffer of {len(data)} bytes cannot hold a {like.dtype} tensor of shape {tuple(like.shape)}")
    if not data:
        return torch.empty_like(like)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).view(like.dtype).reshape(like.shape)


def run_ascend(program: Program, source: str, config: dict, inputs: dict, scalars: dict, *, opt: str = "-O0",
               poison: bool = True, rows_limit: int | None = None, cores: int | None = None,
               check_sync: bool = False) -> tuple[dict, dict]:
    """Compile `source` with the emulator (in this process: for trusted kernels and tests, never for a
    search's candidates, which run in trex.tuning.sandbox), launch it on `config`'s tiling over
    `inputs`, return (outputs after the host finalize, emulator counters).

    rows_limit/cores: launch a single core over the first rows only; outputs are then partial and
    must not be compared. check_sync: the emulator checks every UB access against AscendC's pipe
    synchronisation rules (a missing barrier or flag races on the NPU)."""
    from trex.codegen_ascendc.emulator.runner import compile_kernel

    args, outs = ascend_launch_args(program, config, inputs, scalars, cores=cores, rows_limit=rows_limit,
                                    poison=poison)
    ncores = int(config["cores"]) if cores is None else cores
    lib = compile_kernel(source, extra_flags=(opt,))
    counters = lib.launch(program.name, ncores, *args[:-1], bytearray(args[-1]), check_sync=check_sync)
    return finalize_ascend(program, outs, inputs, bind_sizes(program, inputs, scalars)), counters


# ------------------------------------------------------------------------------------------------
# fp64 reference


@contextlib.contextmanager
def _fp64_dtypes():
    """Interpret every floating Kernel IR dtype as float64 while the block runs: the reference
    interpreter then computes the program's math in fp64 (its casts become exact). Used only inside
    the verifier process; the table is restored on exit. (The interpreter's `select` still rounds
    through fp32: kernel_ir hard-codes it.)"""
    table = kernel_ir._DTYPE_TORCH
    saved = dict(table)
    try:
        for k in (DType.BF16, DType.FP16, DType.FP32):
            table[k] = torch.float64
        yield
    finally:
        table.clear()
        table.update(saved)


def _on_inputs_device(inputs: dict):
    """The reference interpreter makes its outputs and index tensors with torch's factory functions
    (no device argument): run it with the inputs' device as the default, so references of GPU inputs
    are computed on the GPU (DeepSeek-V4 shapes: milliseconds there, seconds to minutes on the CPU)."""
    dev = next((v.device for v in inputs.values() if torch.is_tensor(v)), torch.device("cpu"))
    return torch.device(dev) if dev.type != "cpu" else contextlib.nullcontext()


def reference_fp64(program: Program, inputs: dict, scalars: dict) -> dict:
    ins = {k: (v.double() if v.is_floating_point() else v) for k, v in inputs.items()}
    with _fp64_dtypes(), _on_inputs_device(ins):
        return kernel_ir.interpret(program, ins, scalars)


def reference_eager(program: Program, inputs: dict, scalars: dict, tf32: str | None = None,
                    truncate_bf16: bool = False) -> dict:
    """The program in its own dtypes through the reference interpreter (fp32 compute): the 'eager'
    comparator of the DESIGN.md numerics rule. tf32 = "rn" / "trunc": every matrix product of the
    chain takes its fp32 operands rounded to TF32 first (see `tf32_products`). truncate_bf16: fp32 ->
    bf16 casts truncate, as Triton's interpreter does (see `truncating_bf16_casts`)."""
    with contextlib.ExitStack() as stack:
        stack.enter_context(_on_inputs_device(inputs))
        if tf32:
            stack.enter_context(tf32_products(tf32))
        if truncate_bf16:
            stack.enter_context(truncating_bf16_casts())
        return kernel_ir.interpret(program, inputs, scalars)


# ------------------------------------------------------------------------------------------------
# TF32 contractions (cuda)

TF32_ROUNDINGS = ("rn", "trunc")


def tensor_core_contractions(program: Program, target: str) -> bool:
    """True when `target` may run this program's contractions in TF32: on cuda, the printer turns
    `matvec`/`matvec_t` into tl.dot (TF32 tensor cores for fp32 operands, as DeepSeek's mHC kernels
    do; issue 6 allows it). The `rows_matmul` host step is fp32-accurate (trex/codegen_triton/gemm.py) and
    does not count."""
    if target != "cuda":
        return False
    stmts = (*program.prologue, *program.body, *program.epilogue)
    return any(op.opcode in ("matvec", "matvec_t") for op, _ in kernel_ir.walk(stmts))


def round_tf32(x: torch.Tensor, rounding: str) -> torch.Tensor:
    """fp32 -> the nearest TF32 value (10 mantissa bits): "rn" rounds to nearest, ties away from zero
    (PTX cvt.rna.tf32.f32), "trunc" drops the 13 low mantissa bits (a tensor core reading fp32
    operands unconverted). Other dtypes unchanged."""
    if x.dtype != torch.float32:
        return x
    bits = x.contiguous().view(torch.int32)
    if rounding == "rn":
        bits = bits + 0x1000
    elif rounding != "trunc":
        raise ValueError(f"round_tf32: rounding {rounding!r}; use one of {TF32_ROUNDINGS}")
    out = (bits & ~0x1FFF).view(torch.float32)
    return torch.where(torch.isfinite(x), out, x)


_MATMULS = {torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__, torch.mm, torch.Tensor.mm,
            torch.bmm, torch.Tensor.bmm}


class tf32_products(torch.overrides.TorchFunctionMode):
    """While active, every matrix product (matmul, @, mm, bmm) rounds its fp32 operands to TF32 first
    and multiplies the rounded values in fp32: the arithmetic of a TF32 tensor-core contraction
    (exact products of 10-bit mantissas, fp32 accumulation), emulated the same way on the CPU and the
    GPU (not torch.backends.cuda.matmul.allow_tf32, whose operand rounding is cuBLAS's choice)."""

    def __init__(self, rounding: str):
        super().__init__()
        if rounding not in TF32_ROUNDINGS:
            raise ValueError(f"tf32_products: rounding {rounding!r}; use one of {TF32_ROUNDINGS}")
        self.rounding = rounding

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _MATMULS:
            args = tuple(round_tf32(a, self.rounding) if torch.is_tensor(a) else a for a in args)
        return func(*args, **kwargs)


def row_window_inputs(program: Program, inputs: dict, sizes: dict, lo: int, hi: int) -> dict:
    """The inputs of kernel rows [lo, hi) as a program of hi - lo rows (`sizes`: bind_sizes of the full
    inputs): identity-mapped ROW inputs sliced; a row-mapped table (RoPE's cos/sin: table row =
    (r // div) % mod) rolled (with a mod) or sliced (without) so that window row 0 reads the table row
    that kernel row `lo` reads; SHARED inputs unchanged. `lo` must be a multiple of every row map's div.
    Used to compare a full-shape kernel run with references of a few row windows where a full reference
    is too slow (RoPE's row groups make the interpreter walk one tile per token)."""
    out = {}
    for t in program.inputs:
        x = inputs[t.name]
        if t.kind != TensorKind.ROW:
            out[t.name] = x
        elif t.row_map.is_identity:
            out[t.name] = x[lo:hi]
        else:
            div = int(sympy.sympify(t.row_map.div).subs(sizes))
            if lo % div:
                raise ValueError(f"row window [{lo}, {hi}) of {program.name}: lo must be a multiple of "
                                 f"{t.name}'s row-map div {div}")
            start = lo // div
            out[t.name] = x.roll(-start, 0) if t.row_map.mod is not None else x[start:-(-hi // div)]
    return out


def truncate_to_bf16(x: torch.Tensor) -> torch.Tensor:
    """fp32 -> bf16 dropping the 16 low bits (round toward zero), non-finite values kept."""
    bits = x.contiguous().view(torch.int32) & ~0xFFFF
    return torch.where(torch.isfinite(x), bits.view(torch.float32), x).to(torch.bfloat16)


class truncating_bf16_casts(torch.overrides.TorchFunctionMode):
    """While active, `Tensor.to(torch.bfloat16)` of an fp32 tensor truncates instead of rounding to
    nearest even. Triton 3.6's interpreter converts fp32 -> bf16 that way (runtime/interpreter.py
    `_convert_float` without a rounding mode; the GPU rounds to nearest even, as the IR's `cast`
    says): under the interpreter the verifier's eager baseline casts like the kernel it is compared
    with, so bf16 outputs are not rejected for the interpreter's rounding (up to 2x the rmse of
    round-to-nearest, more on a few heavy-tailed elements)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.Tensor.to and args and torch.is_tensor(args[0]) and args[0].dtype == torch.float32:
            want = kwargs.get("dtype", next((a for a in args[1:] if isinstance(a, torch.dtype)), None))
            if want == torch.bfloat16 and not any(isinstance(a, (str, torch.device)) for a in args[1:]) \
                    and "device" not in kwargs:
                return truncate_to_bf16(args[0])
        return func(*args, **kwargs)
