"""The projection layout of mHC (the cuda target's: trex/passes/mhc_pre/ir.py, "the projection layout"): the
reduce pass as the executor's `mhc_pre_proj` host step (partial sums per row), the per-row math from the
partials as programs of their own. Equal to the split layout in the Kernel IR interpreter within fp32
rounding, within the op's fp64 tolerance, under the Triton interpreter equal to the IR interpreter; the
split-K kernel (trex/codegen_triton/mhc_proj.py) equal to the host step's reference on odd shapes."""
import pytest
import torch

from trex.compiler import registry
from trex.compiler.kernel_ir.reference import Schedule, interpreter
from trex.compiler.kernels import Executor
from trex.passes.mhc_pre import ir
from trex.passes.mhc_pre.op import mhc_pre_bwd_reference, mhc_pre_reference

from test_mhc_split import EPS, _args, _rel, needs_triton   # the same draws as the split layout's tests


@pytest.mark.parametrize("n,d,iters,sched", [(4, 64, 3, Schedule(rows_per_tile=4, col_chunk=16, cores=3)),
                                             (2, 40, 5, Schedule(rows_per_tile=8, col_chunk=32, cores=2))])
def test_projection_layout_equals_the_split_one_and_the_reference(n, d, iters, sched):
    fwd_args, grads = _args(n=n, d=d)
    ex = Executor(interpreter(sched))
    proj = ir.run_mhc_pre_proj(ex, *fwd_args, iters, EPS, EPS)
    split = ir.run_mhc_pre_split(ex, *fwd_args, iters, EPS, EPS)
    ref = mhc_pre_reference(*(a.double() for a in fwd_args), iters, EPS, EPS)
    assert torch.equal(proj[0], split[0])            # layer_input: the same apply program on the same pre (bf16)
    for p, s, r in zip(proj, split, ref):
        assert _rel(p, s) < 1e-6 and _rel(p, r) < 1e-2
    proj = ir.run_mhc_pre_bwd_proj(ex, *grads, *fwd_args, iters, EPS, EPS)
    split = ir.run_mhc_pre_bwd_split(ex, *grads, *fwd_args, iters, EPS, EPS)
    ref = mhc_pre_bwd_reference(*(a.double() for a in grads), *(a.double() for a in fwd_args), iters, EPS, EPS)
    for p, s, r in zip(proj, split, ref):
        assert _rel(p, s) < 1e-5 and _rel(p, r) < 1e-2
    assert _rel(proj[1], ref[1]) < 1e-5              # dfn: fp32 over the rows


def test_the_coefficient_programs_read_partial_sums_not_x():
    fwd, bwd = ir.build_mhc_pre_coeff_proj("bf16"), ir.build_mhc_pre_bwd_coeff_proj("bf16")
    assert {t.name for t in fwd.inputs} == {"hpart", "sspart", "scale", "base"}
    assert {t.name for t in bwd.inputs} == {"dpost", "dcomb", "hpart", "sspart", "dppart", "scale", "base"}
    assert not fwd.chunk_dims and not bwd.chunk_dims             # no pass over HD: the host step made it
    assert [t.name for t in fwd.outputs] == ["pre_mix", "post", "comb"]
    assert {"dh", "dss2", "pre_mix"} <= {t.name for t in bwd.outputs}
    # the cuda target runs this layout; the split and fused ones stay targets of their own
    spec = registry.kernel_spec("mhc_pre")
    assert spec.layout_for("cuda").run is ir.run_mhc_pre_proj and spec.layout_for("cuda_split").run is ir.run_mhc_pre_split


def test_the_partial_sums_of_more_slices_give_the_same_coefficients():
    """A target's column split changes PARTS, not the result: the same row math on 1 x n and 4 x n
    partials (the host step's reference regrouped) agrees to fp32 rounding."""
    (x, fn, scale, base), _ = _args(rows=9, n=4, d=64)
    ex = Executor(interpreter(Schedule(rows_per_tile=4, col_chunk=16, cores=2)))
    rows, n, d = x.shape
    x2, fn2 = x.reshape(rows, n * d), fn.reshape(-1, n * d)
    hp, ssp, _ = Executor(None).mhc_pre_proj(x2, fn2, n)
    # 4 slices per stream: split each stream's columns in 4 and sum each slice separately
    xs = x.float().reshape(rows, n, 4, d // 4)
    fs = fn2.float().reshape(-1, n, 4, d // 4)
    hp4 = torch.einsum("tsjc,msjc->tsjm", xs, fs).reshape(rows, n * 4, -1)
    ssp4 = (xs * xs).sum(-1).reshape(rows, n * 4)
    p = ir.build_mhc_pre_coeff_proj("bf16")
    sc = {"iters": 3, "hc_eps": EPS, "rms_eps": EPS, "hd": d}
    common = {"scale": scale.float().reshape(3, 1), "base": base.float().reshape(2 + n, n)}
    one = ex(p, dict(common, hpart=hp, sspart=ssp), sc)
    four = ex(p, dict(common, hpart=hp4, sspart=ssp4), sc)
    for k in ("pre_mix", "post", "comb"):
        assert _rel(four[k], one[k]) < 1e-6, k


@needs_triton
@pytest.mark.parametrize("dtype,n,d,rows,slices,block_k", [(torch.float32, 4, 64, 37, 2, 16), (torch.float32, 2, 48, 9, 4, 16),
                                                           (torch.float32, 4, 100, 20, 2, 32), (torch.float32, 1, 7, 3, 1, 16)])
def test_the_split_k_kernel_matches_the_host_step_reference(monkeypatch, dtype, n, d, rows, slices, block_k):
    """Under Triton's interpreter: rows not a multiple of the row block, widths not a multiple of the
    column block or of the slices (100 = 2 x 50, 7), with and without dli. bf16 x (two bf16 dots of fn's
    hi and lo parts) is checked on the GPU: the interpreter computes bf16 dots wrong (bench/h200_h17_mhc.py)."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    from trex.codegen_triton.mhc_proj import mhc_proj_triton
    g = torch.Generator().manual_seed(4)
    m = (2 + n) * n
    x = torch.randn(rows, n * d, generator=g).to(dtype)
    fn = torch.randn(m, n * d, generator=g)
    dli = torch.randn(rows, d, generator=g).to(dtype)
    want_h, want_ss, want_dp = Executor(None).mhc_pre_proj(x, fn, n, dli)
    hp, ssp, dpp = mhc_proj_triton(x, fn, n, dli, block_t=16, block_k=block_k, num_warps=4, slices=slices)
    assert hp.shape == (rows, n * slices, m) and ssp.shape == (rows, n * slices) and dpp.shape == (rows, n, slices)
    assert _rel(hp.sum(1), want_h.sum(1)) < 1e-5
    assert _rel(ssp.sum(1), want_ss.sum(1)) < 1e-6
    assert _rel(dpp.sum(-1), want_dp.sum(-1)) < 1e-6
    # the per-stream sums are the reference's per-stream partials (slices add up within their stream)
    assert _rel(hp.reshape(rows, n, slices, m).sum(2), want_h) < 1e-5
    hp2, ssp2, none = mhc_proj_triton(x, fn, n, None, block_t=16, block_k=block_k, num_warps=4, slices=slices)
    assert none is None and torch.equal(hp2, hp) and torch.equal(ssp2, ssp)


@needs_triton
def test_projection_layout_under_the_triton_interpreter(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TREX_TRITON_CACHE", str(tmp_path))
    monkeypatch.setenv("TREX_TUNING_STORE", "none")
    from trex.codegen_triton.launcher import run_program
    from trex.codegen_triton.printer import Tiling
    from trex.codegen_triton.target import TritonExecutor
    fwd_args, grads = _args(rows=21)
    ref_ex = Executor(interpreter(Schedule(rows_per_tile=4, col_chunk=16, cores=3)))
    want_f = ir.run_mhc_pre_proj(ref_ex, *fwd_args, 3, EPS, EPS)
    want_b = ir.run_mhc_pre_bwd_proj(ref_ex, *grads, *fwd_args, 3, EPS, EPS)
    # the model's choice, one row block of 16 rows with persistent programs, and 4-row tiles
    for tiling in (None, Tiling(rows_per_tile=16, col_chunk=None, num_warps=1, programs=3),
                   Tiling(rows_per_tile=4, col_chunk=None, num_warps=2, programs=2)):
        ex = TritonExecutor(lambda p, i, s, out=None, t=tiling: run_program(p, i, s, t, out=out))
        for got, want in zip(ir.run_mhc_pre_proj(ex, *fwd_args, 3, EPS, EPS), want_f):
            assert _rel(got, want) < 1e-2
        for got, want in zip(ir.run_mhc_pre_bwd_proj(ex, *grads, *fwd_args, 3, EPS, EPS), want_b):
            assert _rel(got, want) < 1e-2


def test_default_launches_and_slices():
    from trex.codegen_triton.mhc_proj import default_launch, slices_per_stream
    # the H200 sweep's bests (bench/NOTES_gpu.md, session 13)
    assert default_launch(7168, False)["block_t"] == 256 and default_launch(1024, False)["slices"] == 1
    assert default_launch(7168, True)["block_t"] == 64
    # enough programs for ~4 per SM, slices >= 4 column blocks long, a power of two
    assert slices_per_stream(16384, 4, 7168, 256, 64, 132) == 4
    assert slices_per_stream(8192, 4, 1024, 64, 64, 132) == 2
    assert slices_per_stream(8, 4, 64, 16, 16, 132) == 1          # too short a row to split
