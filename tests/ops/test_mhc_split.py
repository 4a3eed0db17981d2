"""The split per-stream mHC programs (reduce pass and apply pass as two kernels, trex/passes/mhc_pre/ir.py):
equal to the fused per-stream programs in the Kernel IR interpreter (same tiles, same order of sums), within
fp64 tolerance of the op's reference, and under the Triton interpreter equal to the IR interpreter."""
import importlib.util

import pytest
import torch

from trex.compiler.kernel_ir.reference import Schedule, interpreter
from trex.compiler.kernels import Executor
from trex.passes.mhc_pre import ir
from trex.passes.mhc_pre.op import mhc_pre_bwd_reference, mhc_pre_reference

needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed")
EPS = 1e-6


def _args(rows=13, n=4, d=64, seed=0):
    g = torch.Generator().manual_seed(seed)
    m = (2 + n) * n
    x = torch.randn(rows, n, d, generator=g).bfloat16()
    fn = torch.randn(m, n * d, generator=g) * (n * d) ** -0.5
    scale, base = torch.rand(3, generator=g) + 0.5, torch.randn(m, generator=g) * 0.1
    grads = (torch.randn(rows, d, generator=g).bfloat16(), torch.randn(rows, n, generator=g),
             torch.randn(rows, n, n, generator=g))
    return (x, fn, scale, base), grads


def _rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm().clamp_min(1e-300)).item()


@pytest.mark.parametrize("n,d,iters,sched", [(4, 64, 3, Schedule(rows_per_tile=4, col_chunk=16, cores=3)),
                                             (2, 40, 5, Schedule(rows_per_tile=8, col_chunk=32, cores=2))])
def test_split_programs_equal_the_fused_ones_in_the_ir_interpreter(n, d, iters, sched):
    fwd_args, grads = _args(n=n, d=d)
    ex = Executor(interpreter(sched))
    split = ir.run_mhc_pre_split(ex, *fwd_args, iters, EPS, EPS)
    fused = ir.run_mhc_pre_streams(ex, *fwd_args, iters, EPS, EPS)
    ref = mhc_pre_reference(*(a.double() for a in fwd_args), iters, EPS, EPS)
    for s, f, r in zip(split, fused, ref):
        assert torch.equal(s, f)
        assert _rel(s, r) < 1e-2            # layer_input is bf16
    split = ir.run_mhc_pre_bwd_split(ex, *grads, *fwd_args, iters, EPS, EPS)
    fused = ir.run_mhc_pre_bwd_streams(ex, *grads, *fwd_args, iters, EPS, EPS)
    ref = mhc_pre_bwd_reference(*(a.double() for a in grads), *(a.double() for a in fwd_args), iters, EPS, EPS)
    # dscale, dbase: the same reduce kernel; dx: the host step sums dh . fn in another order (bf16 ulps)
    assert torch.equal(split[2], fused[2]) and torch.equal(split[3], fused[3])
    assert _rel(split[0], fused[0]) < 1e-2 and _rel(split[1], fused[1]) < 1e-6
    for s, r in zip(split, ref):
        assert _rel(s, r) < 1e-2            # dx is bf16; dfn, dscale, dbase fp32
    assert _rel(split[1], ref[1]) < 1e-5    # dfn: the fp32 GEMM over the rows


def test_split_programs_meet_through_small_per_row_tensors():
    p_coeff, p_apply = ir.build_mhc_pre_coeff_streams("bf16", 4), ir.build_mhc_pre_apply_streams("bf16", 4)
    assert [t.name for t in p_coeff.outputs] == ["pre_mix", "post", "comb"]
    assert {t.name for t in p_apply.inputs} == {"x0", "x1", "x2", "x3", "pre_mix"}
    b_coeff = ir.build_mhc_pre_bwd_coeff_streams("bf16", 4)
    assert {"pre_mix", "dss2", "dh"} <= {t.name for t in b_coeff.outputs}
    assert not any(t.name.startswith("dx") for t in b_coeff.outputs)     # dx: the executor's host step


@needs_triton
def test_split_programs_under_the_triton_interpreter(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TREX_TRITON_CACHE", str(tmp_path))
    monkeypatch.setenv("TREX_TUNING_STORE", "none")
    from trex.codegen_triton.launcher import run_program
    from trex.codegen_triton.printer import Tiling
    fwd_args, grads = _args(rows=21)
    ref_ex = Executor(interpreter(Schedule(rows_per_tile=4, col_chunk=16, cores=3)))
    want_f = ir.run_mhc_pre_split(ref_ex, *fwd_args, 3, EPS, EPS)
    want_b = ir.run_mhc_pre_bwd_split(ref_ex, *grads, *fwd_args, 3, EPS, EPS)
    # a dot tiling (16 rows: tl.dot, TF32 in the interpreter's fp32) and a broadcast one (4 rows)
    for tiling in (Tiling(rows_per_tile=16, col_chunk=32, num_warps=4, programs=3),
                   Tiling(rows_per_tile=4, col_chunk=16, num_warps=4, programs=2, second_chunk=32)):
        ex = Executor(lambda p, ins, sc, t=tiling: run_program(p, ins, sc, t))
        for got, want in zip(ir.run_mhc_pre_split(ex, *fwd_args, 3, EPS, EPS), want_f):
            assert _rel(got, want) < 1e-2
        for got, want in zip(ir.run_mhc_pre_bwd_split(ex, *grads, *fwd_args, 3, EPS, EPS), want_b):
            assert _rel(got, want) < 1e-2


@needs_triton
@pytest.mark.parametrize("dtype,n,d,rows", [(torch.bfloat16, 4, 64, 37), (torch.float32, 2, 48, 9)])
def test_the_dx_dfn_kernel_matches_the_executor_reference(monkeypatch, dtype, n, d, rows):
    """One read of x for dx and dfn (trex/codegen_triton/mhc_dx_dfn.py) under Triton's interpreter: rows
    not a multiple of the row block, a width whose block is 16 (48), bf16 and fp32 x."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    from trex.codegen_triton.mhc_dx_dfn import block_k, mhc_dx_dfn_triton
    g = torch.Generator().manual_seed(4)
    m = (2 + n) * n
    x = torch.randn(rows, n * d, generator=g).to(dtype)
    dli = torch.randn(rows, d, generator=g).to(dtype)
    fn = torch.randn(m, n * d, generator=g)
    dh, dss2, pre = torch.randn(rows, m, generator=g), torch.randn(rows, 1, generator=g), torch.rand(rows, n, generator=g)
    want = Executor(None).mhc_pre_dx_dfn(x, dli, fn, dh, dss2, pre)
    got = mhc_dx_dfn_triton(x, dli, fn, dh, dss2, pre, block_t=16, num_warps=4)
    assert block_k(d) == {64: 64, 48: 16}[d] and got[0].dtype == dtype
    assert _rel(got[0], want[0]) < (1e-2 if dtype == torch.bfloat16 else 1e-5)
    if dtype == torch.float32:   # the interpreter's bf16 dots are wrong (the printer's dot_bf16_split too):
        assert _rel(got[1], want[1]) < 1e-5    # bf16 x's 3-part dfn is checked on the GPU (bench/h200_h17_mhc.py)
    assert block_k(7) == 0 and block_k(7168) == 128
