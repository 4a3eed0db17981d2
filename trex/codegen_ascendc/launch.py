"""Run generated AscendC kernels on the host through the emulator (`target="emulate"`).

`EmulatedKernel(program, tiling)` prints the kernel, compiles it with the emulator's runner (cached
shared library), packs the tiling struct, launches `tiling.cores` blocks on torch CPU tensors and
applies the program's host `finalize` steps, returning the same outputs as
`trex.compiler.kernel_ir.interpret` plus the emulator's per-pipe counters.
"""
from __future__ import annotations

import ctypes
import functools

import torch

from trex.codegen_ascendc.lowering import plan_kernel
from trex.codegen_ascendc.printer import AscendCPrinter
from trex.cost_models.ascend_model import Tiling
from trex.compiler.kernel_ir import (ROWS, IRError, Program, TensorKind, _host_op, bind_sizes,
                                     output_shapes)


def tiling_struct_type(printer: AscendCPrinter) -> type:
    fields = [(name, ctypes.c_int64 if ct == "int64_t" else ctypes.c_float) for ct, name, _ in printer.tiling_fields()]
    return type(printer.tname, (ctypes.LittleEndianStructure,), {"_fields_": fields, "_pack_": 8})


@functools.lru_cache(maxsize=64)
def _compiled(source: str, opt: str):
    from trex.codegen_ascendc.emulator.runner import compile_kernel
    return compile_kernel(source, extra_flags=(opt,))


class EmulatedKernel:
    """opt: g++ optimisation flag for the emulator build; "-O0" compiles ~2.5x faster (tests on small
    shapes), "-O2" (default) runs faster (fuzzing large shapes)."""

    def __init__(self, program: Program, tiling: Tiling, opt: str = "-O2"):
        self.program, self.tiling, self.opt = program, tiling, opt
        self.plan = plan_kernel(program, tiling.buffer_depth)
        self.printer = AscendCPrinter(self.plan)
        self.source = self.printer.print()

    def tiling_bytes(self, sizes: dict, scalars: dict) -> bytes:
        st = tiling_struct_type(self.printer)()
        chunk = self.program.chunk_dims[0] if self.program.chunk_dims else None
        vals = {"rows": sizes[ROWS], "rowsPerTile": self.tiling.rows_per_tile,
                "colChunk": (self.tiling.col_chunk or int(chunk.subs(sizes))) if chunk is not None else 1}
        vals.update({s.name: v for s, v in sizes.items() if s != ROWS})
        vals.update(scalars)
        for ct, name, _ in self.printer.tiling_fields():
            if name not in vals:
                raise IRError(f"{self.program.name}: tiling field {name} has no value")
            setattr(st, name, vals[name])
        return bytes(st)

    def __call__(self, inputs: dict, scalars: dict | None = None, check_sync: bool = True) -> tuple[dict, dict]:
        """Run on the emulator. check_sync: the emulator checks every UB access against AscendC's
        pipe synchronisation rules (PipeBarrier / flags / queue hand-offs), so a missing sync in the
        printed code fails here instead of racing on the NPU."""
        p = self.program
        scalars = dict(scalars or {})
        sizes = bind_sizes(p, inputs, scalars)
        if sizes[ROWS] == 0:
            raise IRError(f"{p.name}: zero rows; nothing to launch")
        outs = {n: torch.zeros(s, dtype=p.tensor(n).dtype.torch)
                for n, s in output_shapes(p, sizes, self.tiling.cores).items()}
        args = []
        for t in p.tensors:
            if t.role == "in":
                x = inputs[t.name]
                if x.dtype != t.dtype.torch:
                    raise IRError(f"{p.name}: input {t.name} is {x.dtype}, the kernel expects {t.dtype.value}")
                args.append(x.contiguous())
            else:
                args.append(outs[t.name])
        tb = bytearray(self.tiling_bytes(sizes, {s.name: scalars[s.name] for s in p.scalars}))
        lib = _compiled(self.source, self.opt)
        counters = lib.launch(p.name, self.tiling.cores, *args, tb, check_sync=check_sync)
        result = dict(outs)
        ins = {t.name: inputs[t.name] for t in p.inputs}
        for h in p.finalize:
            result[h.out] = _host_op(p, h, result, ins, sizes)
        for t in p.outputs:
            if t.kind == TensorKind.PARTIAL:
                result.pop(t.name, None)
        return result, counters
