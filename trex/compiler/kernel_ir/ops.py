"""The Kernel IR opcode table: every opcode that exists, defined once.

`OPS` maps an opcode to its `OpSpec`: the category (what validation checks: fp32 vector math, io
dtypes), the arity and the documentation of its meaning. The executable meaning of an opcode, its
reference semantics in plain torch, is its rule in `trex.compiler.kernel_ir.reference.RULES`;
every printer keeps its own rule table keyed by the same opcodes, and
tests/codegen/test_rule_tables.py checks that each table covers exactly the opcodes listed here.
Adding an opcode = one entry here, one interpreter rule, one rule per printer.
"""
from __future__ import annotations

from dataclasses import dataclass

# acc_rows sums a tile's rows as a pairwise tree before adding them to the accumulator, so the rounding
# error of a core's dw grows with log2(rows per tile) + tiles, not with every row it sums (the
# row-by-row sum was 2.4x eager's rmse on 318 x 7 rows of |x| ~ 2e5, tests/fuzz/cases). Level k halves
# the n_k rows left: row i += row i + ceil(n_k / 2) for i < floor(n_k / 2). Tiles of more than
# 2**ROW_TREE_LEVELS rows add their remaining rows in order.
ROW_TREE_LEVELS = 8


def row_tree(n: int) -> list[tuple[int, int]]:
    """(offset, pairs) of each tree level of acc_rows over n rows: rows [0, pairs) += rows [offset,
    offset + pairs); the rows left after the last level are [0, ceil(n / 2**ROW_TREE_LEVELS))."""
    levels = []
    for _ in range(ROW_TREE_LEVELS):
        offset = -(-n // 2)
        levels.append((offset, n - offset))
        n = offset
    return levels


@dataclass(frozen=True)
class OpSpec:
    category: str          # io | cast | binary | scalar | unary | reduce | select | layout | contract | fill | hist
    arity: int             # number of args (-1: variable)
    doc: str


OPS: dict[str, OpSpec] = {
    "load": OpSpec("io", 1, "load(gm) -> tile of gm (chunked inside a ChunkLoop); attr col=(start, stop) on the last "
                            "axis, pad=(left, right) undefined lanes around it (shifted copies); in the body outside "
                            "every ChunkLoop, a load of a tensor whose innermost axis is a chunked dim reads whole "
                            "rows into a resident local (program.resident_locals) that chunk slices read"),
    "store": OpSpec("io", 2, "store(gm, src): write src to gm (same row/chunk addressing as load)"),
    "cast": OpSpec("cast", 1, "cast(src) to the out local's dtype; down-casts to bf16/fp16 round to nearest even"),
    "copy": OpSpec("unary", 1, "copy(src)"),
    "fill": OpSpec("fill", 1, "fill(value) with the out local's shape (value: number, size expr, $param or -$param)"),
    "add": OpSpec("binary", 2, "a + b (broadcast)"),
    "sub": OpSpec("binary", 2, "a - b (broadcast)"),
    "mul": OpSpec("binary", 2, "a * b (broadcast)"),
    "div": OpSpec("binary", 2, "a / b (broadcast)"),
    "max": OpSpec("binary", 2, "max(a, b) (broadcast)"),
    "min": OpSpec("binary", 2, "min(a, b) (broadcast)"),
    "adds": OpSpec("scalar", 2, "x + s (s: constant or $param)"),
    "muls": OpSpec("scalar", 2, "x * s"),
    "maxs": OpSpec("scalar", 2, "max(x, s)"),
    "mins": OpSpec("scalar", 2, "min(x, s)"),
    "exp": OpSpec("unary", 1, "exp(x)"),
    "ln": OpSpec("unary", 1, "log(x)"),
    "abs": OpSpec("unary", 1, "|x|"),
    "sqrt": OpSpec("unary", 1, "sqrt(x)"),
    "rsqrt": OpSpec("unary", 1, "1/sqrt(x)"),
    "reciprocal": OpSpec("unary", 1, "1/x"),
    "sigmoid": OpSpec("unary", 1, "1/(1+exp(-x))"),
    "relu": OpSpec("unary", 1, "max(x, 0)"),
    "neg": OpSpec("unary", 1, "-x"),
    "reduce_sum": OpSpec("reduce", 1, "sum over column axis `axis`, keepdim"),
    "reduce_max": OpSpec("reduce", 1, "max over column axis `axis`, keepdim"),
    "acc_rows": OpSpec("reduce", 2, "acc += sum over the tile's rows of src, summed as a pairwise tree "
                                   "(ROW_TREE_LEVELS levels, then in order); in place, out == acc, a per-core "
                                   "local; src is consumed (a target may sum it in place)"),
    "parity_select": OpSpec("select", 2, "out[..., j] = a[..., j] if j is even else b[..., j] (pair swaps)"),
    "pair_swap": OpSpec("layout", 1, "out[..., 2i] = src[..., 2i+1], out[..., 2i+1] = src[..., 2i] (even last axis)"),
    "pair_expand": OpSpec("layout", 1, "out[..., 2i] = out[..., 2i+1] = src[..., i] (out's last axis twice src's)"),
    "select": OpSpec("select", 4, "where(a CMP b, x, y); b and y may be scalars; attr cmp in LT LE GT GE EQ NE"),
    "slice": OpSpec("layout", 1, "src[..., start:stop:step] along column axis `axis`; attr chunk=dim instead of "
                             "start/stop/step: the current column chunk [c0, c0 + cl) of a resident local (inside a "
                             "ChunkLoop over dim, axis -1, src's dtype and cols)"),
    "set_slice": OpSpec("layout", 2, "dst[..., start:stop:step] = src (in place; out == dst)"),
    "transpose": OpSpec("layout", 1, "swap the last two column axes"),
    "view": OpSpec("layout", 1, "add/remove unit column axes (attr cols); layout unchanged"),
    "matvec": OpSpec("contract", 2, "out[r, *M] = sum_K a[r, *K] * w[*M, *K]; w per-core"),
    "matvec_t": OpSpec("contract", 2, "out[r, *K] = sum_M g[r, *M] * w[*M, *K]; w per-core"),
    "hist_write": OpSpec("hist", 2, "hist[slot] = src (in place; out == hist); attr slot: expr in loop vars"),
    "hist_read": OpSpec("hist", 1, "hist[slot]"),
}
