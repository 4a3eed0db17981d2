"""rms_norm_bwd's dw: acc_rows sums each tile's rows as a pairwise tree (kernel_ir.ops.row_tree) in the
IR semantics, the reference interpreter and the generated AscendC alike (the Triton rule's tl.sum over
the tile's rows is a tree too); the fuzz's 318 x 7 case is in tests/fuzz/test_fuzz_emulator.py."""
from __future__ import annotations

import dataclasses
import random

import pytest
import torch

from trex.compiler import registry
from trex.compiler.kernel_ir import (ROW_TREE_LEVELS, IRError, ProgramBuilder, Schedule, TensorKind, interpreter,
                                     row_tree, size)
from trex.compiler.kernels import Executor


def test_row_tree_sums_every_row_once():
    for n in (1, 2, 3, 7, 44, 255, 256, 257, 1000):
        rows = list(range(n))
        sums = [{r} for r in rows]
        for offset, pairs in row_tree(n):
            assert offset >= pairs >= 0
            for i in range(pairs):
                sums[i] |= sums[i + offset]
        left = -(-n // 2 ** ROW_TREE_LEVELS)
        covered = [r for s in sums[:left] for r in s]
        assert sorted(covered) == rows, n


def test_interpreter_sums_a_tile_as_the_tree():
    """The interpreter's dw is the tree's sum, bit for bit (one tile of 300 rows: 8 levels, then 2 rows)."""
    from trex.passes.rms_norm.ir import build_rms_norm_bwd
    p = build_rms_norm_bwd("fp32", True)
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(300, 5, generator=gen) * 1e5
    dy = torch.randn(300, 5, generator=gen) * 1e5
    rstd = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
    w = torch.randn(5, generator=gen)
    got = interpreter(Schedule(rows_per_tile=300))(p, {"dy": dy, "x": x, "w": w, "rstd": rstd}, {})["dw"]
    t = (dy * (x * rstd)).clone()
    n = t.shape[0]
    for offset, pairs in row_tree(n):
        t[:pairs] += t[offset:offset + pairs]
    want = torch.zeros(1, 5) + t[:1]
    for i in range(1, -(-n // 2 ** ROW_TREE_LEVELS)):
        want = want + t[i:i + 1]
    assert torch.equal(got, want[0])


def test_reading_the_source_after_acc_rows_is_an_ir_error():
    b = ProgramBuilder("acc_then_read")
    D = size("D")
    b.gm("x", "fp32", (D,))
    b.gm("y", "fp32", (D,), role="out")
    b.gm("acc_partial", "fp32", (D,), kind=TensorKind.PARTIAL, role="out")
    b.section("prologue")
    b.op("fill", "acc", 0.0, dtype="fp32", cols=(D,), per_row=False)
    b.section("body")
    b.op("load", "t", "x", dtype="fp32", cols=(D,))
    b.op("acc_rows", "acc", "acc", "t")
    b.op("store", None, "y", "t")
    b.section("epilogue")
    b.op("store", None, "acc_partial", "acc")
    with pytest.raises(IRError, match="consumed"):
        b.build()


@pytest.mark.parametrize("rows_per_tile,cores", [(1, 1), (3, 1), (44, 1), (300, 1), (7, 3)])
def test_emulated_dw_equals_the_interpreter_bit_for_bit(rows_per_tile, cores):
    """The generated AscendC's in-place tree (lowering._acc_rows) adds the same rows in the same order
    as the reference interpreter, so dw agrees bit for bit at every tile height, past the tree's
    2**ROW_TREE_LEVELS rows (300) and over several cores."""
    from trex.codegen_ascendc import target as emulate
    emulate.register()
    args = torch.load(__import__("pathlib").Path(__file__).parents[1] / "fuzz" / "cases" / "rms_norm_bwd_dw_318x7.pt")

    def chosen(model, sizes):
        drawn = model.random_feasible_tiling(sizes, random.Random(0))
        return dataclasses.replace(drawn, rows_per_tile=rows_per_tile, col_chunk=None, buffer_depth=1, cores=cores)

    got = emulate.run_op("rms_norm_bwd", args, executor=emulate.default_executor(), choose_tiling=chosen)
    spec = registry.kernel_spec("rms_norm_bwd")
    want = spec.run(args, Executor(interpreter(Schedule(rows_per_tile=rows_per_tile, cores=cores))), emulate.TARGET_NAME)
    assert torch.equal(got[1], want[1])          # dw (dx's row sums use ReduceSum's own order)
