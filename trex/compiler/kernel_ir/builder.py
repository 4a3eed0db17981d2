"""`ProgramBuilder`: writes a Kernel IR program the way one writes code (trex/passes/<op>/ir.py use it).

The builder collects GM tensors, scalars, locals and statements section by section (prologue,
body, epilogue, with `chunk_loop`/`repeat` blocks as context managers); `build` returns the
validated, frozen `Program`.
"""
from __future__ import annotations

from trex.compiler.kernel_ir.program import (ChunkLoop, DType, GMTensor, HostOp, IRError, Local, Op, Program,
                                             Repeat, RowMap, ScalarParam, TensorKind)
from trex.compiler.kernel_ir.validate import validate_program


class ProgramBuilder:
    """Collects tensors/locals/statements; `op` returns the out name so programs read like code.

    Locals are declared on first assignment with the dtype and cols given, or inferred."""

    def __init__(self, name: str, doc: str = ""):
        self.name, self.doc = name, doc
        self.tensors: list[GMTensor] = []
        self.scalars: list[ScalarParam] = []
        self.locals: dict[str, Local] = {}
        self.size_params: list = []
        self.row_group = None
        self.finalize: list[HostOp] = []
        self._blocks: list[list] = []
        self.prologue: list = []
        self.body: list = []
        self.epilogue: list = []
        self._cur = self.body

    # declarations
    def gm(self, name, dtype, cols, kind=TensorKind.ROW, role="in", row_map=RowMap()):
        self.tensors.append(GMTensor(name, DType(dtype), tuple(cols), kind, role, row_map))
        return name

    def scalar(self, name, dtype=DType.FP32):
        self.scalars.append(ScalarParam(name, DType(dtype)))
        return "$" + name

    def local(self, name, dtype, cols, per_row=True):
        new = Local(name, DType(dtype), tuple(cols), per_row)
        old = self.locals.get(name)
        if old is not None and old != new:
            raise IRError(f"program {self.name}: local {name!r} redeclared as {new} (was {old})")
        self.locals[name] = new
        return name

    # statement sections
    def section(self, which: str):
        self._cur = {"prologue": self.prologue, "body": self.body, "epilogue": self.epilogue}[which]
        return self

    def op(self, opcode, out, *args, dtype=None, cols=None, per_row=None, **attrs):
        if out is not None and out not in self.locals:
            if cols is None or dtype is None:
                raise IRError(f"program {self.name}: first assignment of {out!r} by {opcode} needs dtype= and cols=")
            self.local(out, dtype, cols, True if per_row is None else per_row)
        self._cur.append(Op(opcode, out, tuple(args), attrs))
        return out

    class _Block:
        def __init__(self, b, make):
            self.b, self.make = b, make

        def __enter__(self):
            self.saved = self.b._cur
            self.b._cur = []
            return self.b

        def __exit__(self, *exc):
            body = self.b._cur
            self.b._cur = self.saved
            if exc[0] is None:
                self.b._cur.append(self.make(tuple(body)))
            return False

    def chunk_loop(self, dim):
        return self._Block(self, lambda body: ChunkLoop(dim, body))

    def repeat(self, var, count, reverse=False):
        return self._Block(self, lambda body: Repeat(var, count, body, reverse))

    def build(self) -> Program:
        return validate_program(Program(
            self.name, tuple(self.tensors), tuple(self.scalars), tuple(self.locals.values()), tuple(self.prologue),
            tuple(self.body), tuple(self.epilogue), tuple(self.finalize), tuple(self.size_params), self.doc,
            self.row_group))
