"""The AscendC instruction set the back end lowers to: the nodes of a `KernelPlan`.

A plan is what the generated kernel issues, in order: vector instructions (`Vec`, one AscendC vector
API call), scalar-unit reads and writes (`GetV`/`SetV`), cross-pipe flags (`Sync`), GM <-> UB
transfers (`Transfer`: DataCopy/DataCopyPad), queue hand-offs (`Queue`), loops (`Loop`, and `Chunk`
for the streamed column dim), over the UB buffers of the plan (`Buffer`: VECIN/VECOUT queues and
TBuf slots). Instruction selection (lowering.py) and UB planning (ub_plan.py) build plans, the
printer (printer.py) renders them as C++, and counting.py reduces them to the counts the cost
model prices (trex.cost_models.kernel_counts). This module only defines the nodes.

Operands are sympy expressions in the tile symbols of trex.cost_models.kernel_counts (TR,
CL, ROWS_PER_TILE, COL_CHUNK), the program's sizes and loop variables, and the runtime symbols
below: ROW0 (first row of the current tile), C0 (first column of the current chunk), BLOCK_IDX
(the core's index), and the switches of a plan (RESIDENT: 0 or 1, fixed per launch by the tiling; a
`Loop` with `guard` set and extent 0 or 1 is the branch it selects).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import sympy

from trex.compiler.kernel_ir import DType, Program

ROW0 = sympy.Symbol("ROW0", integer=True, nonnegative=True)
C0 = sympy.Symbol("C0", integer=True, nonnegative=True)
BLOCK_IDX = sympy.Symbol("BLOCK_IDX", integer=True, nonnegative=True)
# 1 when the kernel keeps its resident locals in UB at this tiling, else 0 (a plan's `switches` define it)
RESIDENT = sympy.Symbol("RESIDENT", integer=True, nonnegative=True)


@dataclass(frozen=True)
class Ref:
    buf: str                  # buffer variable (a local's storage)
    off: sympy.Expr = sympy.Integer(0)   # element offset
    dtype: DType = DType.FP32


@dataclass(frozen=True)
class Scal:
    """A scalar operand: a $param, a constant, a size expression or a scalar register variable."""
    kind: str                 # "param" | "const" | "expr" | "var"
    value: object
    negate: bool = False


@dataclass
class Vec:
    api: str
    dst: Ref | None
    srcs: tuple
    count: sympy.Expr
    width: int                # bytes of the wider element type (repeat counting)
    extra: dict = field(default_factory=dict)


@dataclass
class GetV:
    var: str
    src: Ref


@dataclass
class SetV:
    dst: Ref
    var: str


@dataclass
class Sync:
    kind: str                 # "V_S" | "S_V"


@dataclass
class Loop:
    var: str
    extent: sympy.Expr
    body: list
    reverse: bool = False
    guard: bool = False       # extent is 0 or 1: printed as `if`, counted as a loop (multiplicity = extent)


@dataclass
class Chunk:
    dim: sympy.Expr
    body: list


@dataclass
class Transfer:
    direction: str            # "in" (GM->UB, MTE2) | "out" (UB->GM, MTE3)
    gm: str
    dtype: DType
    gm_off: sympy.Expr        # elements
    ub: Ref
    block_count: sympy.Expr
    block_len: sympy.Expr     # elements
    gm_gap: sympy.Expr        # elements skipped in GM between blocks
    ub_stride: sympy.Expr     # elements between block starts in UB
    pad_left: int = 0         # DataCopyPad left/right padding in UB (elements), GM->UB only
    pad_right: int = 0


@dataclass
class Queue:
    action: str               # alloc | enque | deque | free
    queue: str
    var: str
    dtype: DType


@dataclass
class Buffer:
    name: str
    kind: str                 # "vecin" | "vecout" | "tbuf"
    depth: int
    nbytes: sympy.Expr        # per copy, rounded to ub_plan.BUF_ALIGN
    holds: tuple = ()         # locals stored here


@dataclass
class KernelPlan:
    """A lowered program: its UB buffers (in InitBuffer order), where each local is stored, and the
    instructions of the prologue (once per core), the body (once per row tile) and the epilogue."""
    program: Program
    buffer_depth: int
    buffers: list
    storage: dict             # local name -> buffer variable
    prologue: list
    body: list
    epilogue: list
    chunk_dim: sympy.Expr | None
    # (symbol, UB bytes with the symbol at 1, capacity): the symbol is 1 at a tiling where those bytes fit
    # the capacity, else 0 (RESIDENT: resident locals kept in UB or re-read per chunk); the kernel
    # computes it at Init from its tiling fields, counting.count substitutes the same predicate
    switches: tuple = ()


def iter_nodes(nodes, mult=sympy.Integer(1), in_chunk=False):
    """Yield (node, multiplicity, inside-a-chunk-loop) for leaf nodes; chunk loops count 1 per
    chunk (the caller sums over chunks with the actual CL)."""
    for n in nodes:
        if isinstance(n, Loop):
            yield from iter_nodes(n.body, mult * n.extent, in_chunk)
        elif isinstance(n, Chunk):
            yield from iter_nodes(n.body, mult, True)
        else:
            yield n, mult, in_chunk
