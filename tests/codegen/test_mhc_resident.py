"""mHC's forward AIV program with x's bf16 row tile resident in UB (bench/NOTES_ascend_mhc.md, session 15).

The program loads x's whole rows once per tile (a resident local) and both passes over HD read it chunk by
chunk (`slice(..., chunk=HD)`, then the cast to fp32). The AscendC kernel has both branches: it keeps the rows
in UB (one MTE2 read of x, each chunk cast in place) at a tiling where the UB plan with the resident queue fits,
and re-reads every chunk from GM (the plan of the program without the resident local) where it does not. The
cost model counts the branch each tiling runs (the RESIDENT switch), so the solver picks among both. Checked
here: the IR (validation, interpreter), the branch each tiling takes in the emulator (counted bytes: x read once
vs twice, equal to the predicted bytes), outputs equal to the interpreter and bit-equal to the re-reading
program's, the solver's choice where it fits, the fallback where it does not, and the model at V4-Pro sizes."""
import pytest
import sympy
import torch

from trex.codegen_ascendc.counting import ascend_cost_model, kernel_counts
from trex.codegen_ascendc.emulator.runner import compiler_available
from trex.codegen_ascendc.launch import EmulatedKernel
from trex.codegen_ascendc.lowering import UB_CAPACITY
from trex.codegen_ascendc.printer import print_kernel
from trex.compiler.kernel_ir import (DType, IRError, ProgramBuilder, bind_sizes, interpret, resident_locals, size)
from trex.cost_models.ascend_model import Tiling
from trex.cost_models.hardware import ASCEND_910B, ASCEND_910C_DIE
from trex.cost_models.kernel_counts import COL_CHUNK, ROWS_PER_TILE
from trex.passes.mhc_pre import ir

BF = torch.bfloat16
N = 4
needs_cxx = pytest.mark.skipif(not compiler_available(), reason="no C++ compiler (g++/$CXX) for the emulator")
RESIDENT_P = ir.build_mhc_pre_fwd_cube("bf16")
REREAD_P = ir.build_mhc_pre_fwd_cube("bf16", resident=False)


def _inputs(rows: int, width: int, seed: int = 0, dtype=BF):
    g = torch.Generator().manual_seed(seed)
    ins = {"x": torch.randn(rows, N, width, generator=g).to(dtype), "hproj": torch.randn(rows, 2 + N, N, generator=g),
           "scale": torch.rand(3, 1, generator=g) + 0.5, "base": torch.randn(2 + N, N, generator=g) * 0.1}
    return ins, {"iters": 3, "hc_eps": 1e-6, "rms_eps": 1e-6}


def _kept(p, sizes: dict, til: Tiling) -> int:
    """The RESIDENT switch at this tiling: 1 when the kernel keeps x's rows in UB (the cost model's predicate,
    the one the printed kernel evaluates at Init)."""
    (sym, val), = kernel_counts(p, til.buffer_depth).switches
    return int(val.subs({**sizes, ROWS_PER_TILE: til.rows_per_tile, COL_CHUNK: til.col_chunk}))


def _run(p, rows: int, width: int, til: Tiling, seed: int = 0, dtype=BF):
    """Emulate p at til: outputs (checked against the interpreter), counters (checked against the model)."""
    ins, sc = _inputs(rows, width, seed, dtype)
    got, counters = EmulatedKernel(p, til, opt="-O0")(ins, sc)
    want = interpret(p, ins, sc, til.schedule())
    for k in want:
        if want[k].dtype != torch.float32:     # one rounding of an fp32 value that may differ in its last fp32 bits
            diff = (got[k].float() - want[k].float()).abs()
            assert (diff <= want[k].float().abs() * 2 ** -7 + 1e-30).all(), (p.name, k, til)
        else:
            scale = 1.0 + want[k].float().abs().max().item()
            torch.testing.assert_close(got[k], want[k], atol=1e-5 * scale, rtol=1e-5, msg=f"{p.name} {k} {til}")
    pred = ascend_cost_model(p, ASCEND_910B).evaluate(bind_sizes(p, ins, sc), til)
    assert (pred.mte2_bytes, pred.mte3_bytes) == (counters["mte2_bytes"], counters["mte3_bytes"]), (p.name, til)
    assert counters["ub_peak_bytes"] <= pred.ub_bytes <= UB_CAPACITY
    return got, counters, bind_sizes(p, ins, sc), ins["x"].numel() * ins["x"].element_size()


# ------------------------------------------------------------------------------------------------ the IR


def test_the_bf16_program_has_x_rows_resident_and_fp32_re_reads():
    assert resident_locals(RESIDENT_P) == ("x_row",)
    assert resident_locals(ir.build_mhc_pre_fwd_cube("fp16")) == ("x_row",)
    assert resident_locals(ir.build_mhc_pre_fwd_cube("fp32")) == ()
    assert resident_locals(REREAD_P) == ()
    with pytest.raises(ValueError):
        ir.build_mhc_pre_fwd_cube("fp32", resident=True)


@pytest.mark.parametrize("rows,width,chunk", [(5, 40, 16), (3, 100, 48), (4, 33, 33)])
def test_the_interpreter_reads_the_chunks_of_the_resident_rows(rows, width, chunk):
    """The interpreter slices [c0, c0 + cl) of the whole rows: the outputs are those of the re-reading program."""
    ins, sc = _inputs(rows, width, seed=rows)
    from trex.compiler.kernel_ir import Schedule
    sched = Schedule(rows_per_tile=2, col_chunk=chunk, cores=2)
    a, b = interpret(RESIDENT_P, ins, sc, sched), interpret(REREAD_P, ins, sc, sched)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k


def _tiny(body):
    d = size("D")
    b = ProgramBuilder("tiny_resident")
    b.gm("x", "bf16", (d,))
    b.gm("y", "fp32", (d,), role="out")
    body(b, d)
    return b.build()


def test_validation_of_resident_locals_and_chunk_slices():
    def ok(b, d):
        b.op("load", "xr", "x", dtype="bf16", cols=(d,))
        with b.chunk_loop(d):
            b.op("slice", "xc", "xr", axis=-1, chunk=d, dtype="bf16", cols=(d,))
            b.op("cast", "xf", "xc", dtype="fp32", cols=(d,))
            b.op("store", None, "y", "xf")
    assert resident_locals(_tiny(ok)) == ("xr",)

    def outside_loop(b, d):
        b.op("load", "xr", "x", dtype="bf16", cols=(d,))
        b.op("slice", "xc", "xr", axis=-1, chunk=d, dtype="bf16", cols=(d,))
        b.op("cast", "xf", "xc", dtype="fp32", cols=(d,))
        with b.chunk_loop(d):
            b.op("store", None, "y", "xf")

    def other_reader(b, d):
        b.op("load", "xr", "x", dtype="bf16", cols=(d,))
        b.op("cast", "xw", "xr", dtype="fp32", cols=(d,))
        with b.chunk_loop(d):
            b.op("slice", "xc", "xr", axis=-1, chunk=d, dtype="bf16", cols=(d,))
            b.op("cast", "xf", "xc", dtype="fp32", cols=(d,))
            b.op("store", None, "y", "xf")

    def loaded_in_loop(b, d):
        with b.chunk_loop(d):
            b.op("load", "xr", "x", dtype="bf16", cols=(d,))
            b.op("slice", "xc", "xr", axis=-1, chunk=d, dtype="bf16", cols=(d,))
            b.op("cast", "xf", "xc", dtype="fp32", cols=(d,))
            b.op("store", None, "y", "xf")

    def dtype_change(b, d):
        b.op("load", "xr", "x", dtype="bf16", cols=(d,))
        with b.chunk_loop(d):
            b.op("slice", "xf", "xr", axis=-1, chunk=d, dtype="fp32", cols=(d,))
            b.op("store", None, "y", "xf")
    for bad, why in ((outside_loop, "inside a ChunkLoop"), (other_reader, "read by chunk slices only"),
                     (loaded_in_loop, "outside every ChunkLoop"), (dtype_change, "source's dtype")):
        with pytest.raises(IRError, match=why):
            _tiny(bad)


def test_the_kernel_prints_both_branches_and_the_switch():
    src = print_kernel(RESIDENT_P, 2)
    assert "resident_ = ((" in src and f"<= {UB_CAPACITY}) ? 1 : 0;" in src
    assert "if ((resident_) != 0) {" in src and "if ((1 - resident_) != 0) {" in src
    assert src.count("CopyIn_x_row(row0") == 1 and src.count("CopyIn_xf_in(row0") == 2
    # the re-reading program's kernel has no switch (and every other pattern's plan is unchanged: goldens)
    assert "resident_" not in print_kernel(REREAD_P, 2)


# ------------------------------------------------------------------------------------------- the emulator


@needs_cxx
@pytest.mark.parametrize("til", [Tiling(2, 16, 2, 3), Tiling(3, 48, 1, 1), Tiling(1, 96, 2, 4)])
def test_where_it_fits_the_kernel_reads_x_once(til):
    """At a size where the resident rows fit, the kernel reads x once: its counted MTE2 bytes are the
    re-reading program's minus one read of x, predicted exactly, and its outputs are bit-equal."""
    rows, width = 7, 100
    got, c, sizes, xbytes = _run(RESIDENT_P, rows, width, til)
    assert _kept(RESIDENT_P, sizes, til) == 1
    ref, c_re, _, _ = _run(REREAD_P, rows, width, til)
    assert c["mte2_bytes"] == c_re["mte2_bytes"] - xbytes
    assert c["mte3_bytes"] == c_re["mte3_bytes"]
    for k in ref:
        assert torch.equal(got[k], ref[k]), k


@needs_cxx
def test_fp16_x_is_kept_the_same_way():
    rows, width, til = 5, 72, Tiling(2, 32, 2, 2)
    res, re = ir.build_mhc_pre_fwd_cube("fp16"), ir.build_mhc_pre_fwd_cube("fp16", resident=False)
    got, c, sizes, xbytes = _run(res, rows, width, til, dtype=torch.float16)
    assert _kept(res, sizes, til) == 1
    ref, c_re, _, _ = _run(re, rows, width, til, dtype=torch.float16)
    assert c["mte2_bytes"] == c_re["mte2_bytes"] - xbytes
    for k in ref:
        assert torch.equal(got[k], ref[k]), k


@needs_cxx
def test_the_solver_chooses_the_resident_branch_where_it_fits():
    rows, width = 9, 200
    ins, sc = _inputs(rows, width)
    sizes = bind_sizes(RESIDENT_P, ins, sc)
    best = ascend_cost_model(RESIDENT_P, ASCEND_910B).solve(sizes, max_cores=4, depths=(2,))
    assert _kept(RESIDENT_P, sizes, best.tiling) == 1
    re = ascend_cost_model(REREAD_P, ASCEND_910B).solve(sizes, max_cores=4, depths=(2,))
    assert best.mte2_bytes < re.mte2_bytes and best.time_s <= re.time_s
    _, c, _, xbytes = _run(RESIDENT_P, rows, width, best.tiling)
    _, c_re, _, _ = _run(REREAD_P, rows, width, best.tiling)
    assert c["mte2_bytes"] == c_re["mte2_bytes"] - xbytes


@needs_cxx
def test_where_it_does_not_fit_the_kernel_re_reads_and_the_solver_still_finds_a_tiling():
    """N x HD = 4 x 12288 bf16 is 96 KiB per row: two queue copies (depth 2) exceed the UB, so every depth-2
    tiling runs the re-reading branch (exactly the re-reading program's bytes); one copy (depth 1) fits."""
    rows, width = 3, 12288
    ins, sc = _inputs(rows, width)
    sizes = bind_sizes(RESIDENT_P, ins, sc)
    m = ascend_cost_model(RESIDENT_P, ASCEND_910B)
    best2 = m.solve(sizes, max_cores=2, depths=(2,))
    assert _kept(RESIDENT_P, sizes, best2.tiling) == 0
    assert best2.mte2_bytes == ascend_cost_model(REREAD_P, ASCEND_910B).evaluate(sizes, best2.tiling).mte2_bytes
    got, c, _, xbytes = _run(RESIDENT_P, rows, width, best2.tiling)
    ref, c_re, _, _ = _run(REREAD_P, rows, width, best2.tiling)
    assert c["mte2_bytes"] == c_re["mte2_bytes"]
    for k in ref:
        assert torch.equal(got[k], ref[k]), k
    til1 = Tiling(1, 1024, 1, 2)
    assert _kept(RESIDENT_P, sizes, til1) == 1
    _, c1, _, _ = _run(RESIDENT_P, rows, width, til1)
    _, c1_re, _, _ = _run(REREAD_P, rows, width, til1)
    assert c1["mte2_bytes"] == c1_re["mte2_bytes"] - xbytes


@needs_cxx
def test_one_size_both_branches_by_tiling():
    """At HD 4096 one row tile of x (32 KiB) double-buffered fits beside the chunk buffers, three do not: the
    same compiled kernel keeps x at rows_per_tile 1 and re-reads it at 3, each counted as predicted."""
    rows, width = 6, 4096
    ins, sc = _inputs(rows, width)
    sizes = bind_sizes(RESIDENT_P, ins, sc)
    kept, reread = Tiling(1, 512, 2, 2), Tiling(3, 512, 2, 2)
    assert (_kept(RESIDENT_P, sizes, kept), _kept(RESIDENT_P, sizes, reread)) == (1, 0)
    _, ck, _, xbytes = _run(RESIDENT_P, rows, width, kept)
    _, cr, _, _ = _run(RESIDENT_P, rows, width, reread)
    assert ck["mte2_bytes"] == cr["mte2_bytes"] - xbytes


# ------------------------------------------------------------------------------------ the model at V4-Pro


@pytest.mark.parametrize("hw", [ASCEND_910B, ASCEND_910C_DIE], ids=lambda h: h.name)
def test_at_v4_pro_sizes_the_aiv_forward_reads_x_once(hw):
    """8192 tokens x 4 x 7168: at the tiling the solver picks (session 15: 1 row, chunk 1472, depth 2, 48
    cores) the AIV forward moves x once (469.8 MB) instead of twice; GM bytes ~0.59 GB instead of ~1.06 GB."""
    sz = {size("ROWS"): 8192, size("N"): 4, size("HD"): 7168, size("ITERS"): 20}
    til = Tiling(1, 1472, 2, 48)
    assert _kept(RESIDENT_P, sz, til) == 1
    a = ascend_cost_model(RESIDENT_P, hw).evaluate(sz, til)
    b = ascend_cost_model(REREAD_P, hw).evaluate(sz, til)
    xbytes = 8192 * 4 * 7168 * 2
    assert a.mte2_bytes == b.mte2_bytes - xbytes
    assert 0.58e9 < a.mte2_bytes + a.mte3_bytes < 0.60e9 < 1.0e9 < b.mte2_bytes + b.mte3_bytes
    assert a.ub_bytes <= hw.ub_capacity and a.time_s < b.time_s


@needs_cxx
def test_drawn_tilings_at_a_size_with_both_branches():
    """Tilings drawn from the feasible set (what the solver and `trex tune` choose from) at HD 4096, where
    small row tiles keep x in UB and large ones re-read it: each matches the interpreter and moves exactly
    the predicted bytes, and the draws cover both branches."""
    import random
    rows, width = 5, 4096
    ins, sc = _inputs(rows, width)
    sizes = bind_sizes(RESIDENT_P, ins, sc)
    m = ascend_cost_model(RESIDENT_P, ASCEND_910B)
    seen = set()
    for seed in range(8):
        til = m.random_feasible_tiling(sizes, random.Random(seed), max_cores=3, depths=(1, 2))
        if til is None:
            continue
        _run(RESIDENT_P, rows, width, til, seed)
        seen.add(_kept(RESIDENT_P, sizes, til))
    assert seen == {0, 1}, seen
