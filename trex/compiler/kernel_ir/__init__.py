"""Kernel IR: the printer-agnostic description of one fused kernel (DESIGN.md, "Describe").

One IR, several printers. The package's modules, lowest first:
  * `ops`: the opcode table `OPS` (category, arity, doc of every opcode, defined once);
  * `program`: the data structures (DType, GM tensors, locals, statements, Schedule, Program) and
    the front/tail row split `row_split` every target follows;
  * `validate`: the static checks `ProgramBuilder.build` runs (names, arity, fp32 compute);
  * `builder`: `ProgramBuilder`, how trex/passes/<op>/ir.py write programs;
  * `reference`: the reference interpreter, a rule table opcode -> torch semantics (`RULES`),
    plus size binding, output shapes and host ops that every launcher uses. (Not named
    `interpreter`: that is the executor factory this package exports.)
Importers use this package's names (`from trex.compiler.kernel_ir import Program, interpret`);
`_DTYPE_TORCH` (the fp64 reference of trex/tuning/harness.py patches it) and `_host_op` (the
emulator's launcher) are re-exported for their importers too.
"""
from trex.compiler.kernel_ir.builder import ProgramBuilder
from trex.compiler.kernel_ir.reference import _host_op, bind_sizes, interpret, interpreter, output_shapes
from trex.compiler.kernel_ir.ops import OPS, ROW_TREE_LEVELS, OpSpec, row_tree
from trex.compiler.kernel_ir.program import (_DTYPE_TORCH, ROWS, ChunkLoop, DType, GMTensor, HostOp, IRError, Local,
                                             Op, Program, Repeat, RowMap, ScalarParam, Schedule, TensorKind,
                                             is_chunk_slice, is_scalar_arg, resident_locals, row_split, size, walk)
from trex.compiler.kernel_ir.validate import validate_program

__all__ = [
    "DType", "TensorKind", "RowMap", "GMTensor", "ScalarParam", "Local", "Op", "ChunkLoop",
    "Repeat", "HostOp", "Program", "Schedule", "OpSpec", "OPS", "ROWS", "size", "IRError",
    "interpret", "interpreter", "bind_sizes", "walk", "ProgramBuilder", "row_split",
    "output_shapes", "is_scalar_arg", "validate_program", "ROW_TREE_LEVELS", "row_tree",
    "is_chunk_slice", "resident_locals",
]
