"""What the Ascend cost model knows of a generated kernel: its counts per pipe, `KernelCounts`.

The AscendC back end (trex.codegen_ascendc: instruction selection, UB planning, printer) lowers a
Kernel IR program to the instructions the kernel issues; `trex.codegen_ascendc.counting.count(plan)`
reduces them to a `KernelCounts`: per section (prologue once per core, body once per row tile,
epilogue) every vector instruction (API, elements, element width, how often it runs), every GM <-> UB
transfer (blocks, block length, element size, how often), the scalar-unit operations, and the UB
bytes of every buffer. ascend_model.py prices those counts with a hardware description and solves
for the tiling. The counts are the whole interface: this package imports nothing from the code
generator, so data flows one way (lowering -> counts -> cost model -> tiling -> printer), and the
predicted bytes and repeats are those of the printed kernel because both come from the same plan.

Everything is a sympy expression in the program's sizes and the tile symbols defined here:
ROWS_PER_TILE and COL_CHUNK (the tiling's capacity: UB sizes), TR and CL (the rows of the current
tile and the length of the current column chunk: the model sums them over full and tail tiles and
chunks). AlignUp and CeilDiv are the integer functions of the UB layout; NUMPY_FUNCS evaluates them
in lambdified expressions.
"""
from __future__ import annotations

from dataclasses import dataclass

import sympy

from trex.compiler.kernel_ir import size

TR = size("TR")                        # rows of the current tile (<= ROWS_PER_TILE)
CL = size("CL")                        # length of the current column chunk (<= COL_CHUNK)
ROWS_PER_TILE = size("ROWS_PER_TILE")
COL_CHUNK = size("COL_CHUNK")


class AlignUp(sympy.Function):
    """AlignUp(x, a) = ceil(x / a) * a for positive integers."""
    is_integer = True

    @classmethod
    def eval(cls, x, a):
        if x.is_Integer and a.is_Integer:
            return sympy.Integer(-(-int(x) // int(a)) * int(a))


class CeilDiv(sympy.Function):
    is_integer = True

    @classmethod
    def eval(cls, x, a):
        if x.is_Integer and a.is_Integer:
            return sympy.Integer(-(-int(x) // int(a)))


NUMPY_FUNCS = {"AlignUp": lambda x, a: (-(-x // a)) * a, "CeilDiv": lambda x, a: -(-x // a)}


@dataclass(frozen=True)
class VectorCount:
    """One vector instruction: `count` elements, `width` bytes per element (the wider of its element
    types), issued `times` per run of its section (per row tile for the body; per column chunk when
    `in_chunk`, with CL the chunk's length)."""
    api: str
    count: sympy.Expr
    width: int
    times: sympy.Expr
    in_chunk: bool


@dataclass(frozen=True)
class TransferCount:
    """One GM <-> UB transfer: `block_count` blocks of `block_len` elements of `elem_bytes` bytes,
    issued `times` per run of its section (per column chunk when `in_chunk`)."""
    direction: str            # "in" (GM -> UB, MTE2) | "out" (UB -> GM, MTE3)
    gm: str                   # the GM tensor (for messages)
    block_count: sympy.Expr
    block_len: sympy.Expr
    elem_bytes: int
    times: sympy.Expr
    in_chunk: bool

    @property
    def nbytes(self) -> sympy.Expr:
        return self.block_count * self.block_len * self.elem_bytes


@dataclass(frozen=True)
class SectionCounts:
    vector: tuple             # VectorCount, in issue order
    scalar_ops: sympy.Expr    # GetValue/SetValue per run of the section, outside column chunks
    scalar_ops_per_chunk: sympy.Expr
    transfers: tuple          # TransferCount, in issue order


@dataclass(frozen=True)
class KernelCounts:
    """The counts of one program lowered at one buffer depth.

    `switches`: (symbol, value) pairs of the kernel's switches (a kernel with two branches, e.g. RESIDENT:
    its resident rows kept in UB or re-read per chunk): the counts' multiplicities and buffer sizes may
    contain the symbol, whose value is a 0/1 expression of the tiling symbols and sizes (the predicate the
    printed kernel evaluates); `resolve` substitutes them, the model evaluates each once per tiling grid."""
    prologue: SectionCounts
    body: SectionCounts
    epilogue: SectionCounts
    ub_buffers: tuple         # (buffer name, copies, bytes per copy), in InitBuffer order
    switches: tuple = ()

    def sections(self) -> tuple:
        return (("prologue", self.prologue), ("body", self.body), ("epilogue", self.epilogue))

    def resolve(self, expr) -> sympy.Expr:
        """`expr` with the switches replaced by their values (an expression of tiling symbols and sizes)."""
        expr = sympy.sympify(expr)
        return expr.xreplace(dict(self.switches)) if self.switches else expr

    @property
    def ub_bytes_raw(self) -> sympy.Expr:
        """The UB bytes with the switch symbols left in."""
        return sympy.Add(*[copies * nbytes for _, copies, nbytes in self.ub_buffers])

    @property
    def ub_bytes(self) -> sympy.Expr:
        return self.resolve(self.ub_bytes_raw)

    @property
    def transfers(self) -> tuple:
        return tuple(t for _, s in self.sections() for t in s.transfers)
