"""The Triton printer emits valid kernels for every Kernel-IR program (CPU only: no Triton needed).

Each printed source must compile as Python, define exactly one @triton.jit function whose parameters
are the launcher's argument list, store every output tensor, keep ROWS a run-time argument (the other
sizes are literals), and follow the tiling (persistent loop, chunk loops, tensor-core dot).
"""
from __future__ import annotations

import ast
import dataclasses

import pytest

from trex.codegen_triton.printer import ELEMENTWISE, RULES, Tiling, missing_rules, print_program
from trex.compiler.kernel_ir import OPS, IRError, TensorKind

from gpu_cases import program_variants

VARIANTS = program_variants()


def _tiling_for(p, rows_per_tile=4, chunk=16):
    partial = any(t.kind == TensorKind.PARTIAL for t in p.tensors) or bool(p.epilogue)
    return Tiling(rows_per_tile=rows_per_tile, col_chunk=chunk, programs=3 if partial else None)


def test_every_opcode_has_a_rule():
    assert not missing_rules() and set(RULES) >= set(OPS), missing_rules()
    assert set(ELEMENTWISE) <= {k for k, v in OPS.items() if v.category in ("binary", "scalar", "unary")}


@pytest.mark.parametrize("name,program,sizes", VARIANTS, ids=[v[0] for v in VARIANTS])
@pytest.mark.parametrize("rows_per_tile", [1, 16])
def test_printed_source_is_one_jit_kernel(name, program, sizes, rows_per_tile):
    ks = print_program(program, sizes, _tiling_for(program, rows_per_tile))
    tree = ast.parse(ks.source)
    compile(ks.source, ks.name + ".py", "exec")
    fns = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert len(fns) == 1 and fns[0].name == ks.name
    deco = fns[0].decorator_list
    assert len(deco) == 1 and ast.unparse(deco[0]) == "triton.jit"
    params = [a.arg for a in fns[0].args.args]
    expected = []
    for kind, tname in ks.args:
        expected.append({"ptr": f"{tname}_ptr", "row_stride": f"{tname}_row_stride",
                         "scratch": f"{tname}_ptr"}.get(kind, tname))
    assert params == expected
    assert params[-1] == "ROWS"
    stored = {ast.unparse(c.args[0]).split("_ptr")[0] for c in ast.walk(fns[0])
              if isinstance(c, ast.Call) and ast.unparse(c.func) == "tl.store"}
    for t in program.outputs:
        assert t.name in stored, f"{name}: output {t.name} is never stored"
    # sizes other than ROWS are literals: no size symbol survives as a free name
    names = {n.id for n in ast.walk(fns[0]) if isinstance(n, ast.Name)}
    assert not ({str(s) for s in sizes} & names - set(params))


@pytest.mark.parametrize("name,program,sizes", [v for v in VARIANTS if v[0].startswith(("mhc", "rms_bwd_bf16_True"))],
                         ids=[v[0] for v in VARIANTS if v[0].startswith(("mhc", "rms_bwd_bf16_True"))])
def test_structure_follows_the_tiling(name, program, sizes):
    ks = print_program(program, sizes, _tiling_for(program, 16, 16))
    src = ks.source
    if program.chunk_dims:
        assert src.count("for _c_") == 2          # the reduce pass and the apply pass over HD
        assert "(2 - _c_" in src                   # the second pass walks the chunks backwards (40/16 = 3)
        assert "tl.dot(" in src                    # 16 rows x 64 x 32 projection on the tensor cores
    if any(t.kind == TensorKind.PARTIAL for t in program.tensors):
        assert ks.persistent and "while r0 < row_hi" in src
    small = print_program(program, sizes, _tiling_for(program, 2, 16)).source
    if program.chunk_dims:
        assert "tl.dot(" not in small              # 2 rows: broadcast-multiply-sum instead
    if "hist_write" in str(program):
        assert ks.scratch_per_program == 16 * 10 * 4 * 4    # R x (2*ITERS) x N x N fp32 slots
        assert "hist_scratch_ptr" in src and "tl.debug_barrier()" in src
        regs = print_program(program, sizes, dataclasses.replace(_tiling_for(program, 16, 16), hist_scratch=False))
        assert "hist_scratch_ptr" not in regs.source and regs.scratch_per_program == 0


def test_partial_outputs_need_a_persistent_grid():
    from trex.passes.rms_norm.ir import build_rms_norm_bwd
    from trex.compiler.kernel_ir import size
    with pytest.raises(IRError, match="programs="):
        print_program(build_rms_norm_bwd("bf16", True), {size("D"): 64}, Tiling(rows_per_tile=2))


def test_unbound_size_is_an_error():
    from trex.passes.rms_norm.ir import build_rms_norm_fwd
    with pytest.raises(IRError, match="not bound"):
        print_program(build_rms_norm_fwd("bf16", True), {}, Tiling())


def test_tiling_rejects_non_power_of_two():
    with pytest.raises(IRError, match="power of two"):
        Tiling(rows_per_tile=3)


def test_mhc_streams_knobs_print_prefetch_and_split_dots():
    """`prefetch`: every row tile of the chunk loop is loaded once before the loop and once per
    iteration for the next chunk; `dot_bf16_split`: the projection of a bf16 x is two bf16 dots
    (w_hi, w_lo) and never casts x to fp32 for the dot."""
    from trex.codegen_triton.printer import Tiling, print_program
    from trex.passes.mhc_pre.ir import build_mhc_pre_fwd_streams
    from trex.compiler.kernel_ir import size
    sizes = {size("N"): 4, size("HD"): 7168, size("ITERS"): 20}
    plain = print_program(build_mhc_pre_fwd_streams("bf16", 4), sizes, Tiling(rows_per_tile=128, col_chunk=32)).source
    knobs = print_program(build_mhc_pre_fwd_streams("bf16", 4), sizes,
                          Tiling(rows_per_tile=128, col_chunk=32, prefetch=True, dot_bf16_split=True)).source
    assert plain.count("tl.load(x0_ptr") == 2 and knobs.count("tl.load(x0_ptr") == 4   # 2 passes; +1 ahead each
    assert "_pfn_offs = ((" in knobs and "_pfn_offs" not in plain
    assert plain.count("tl.dot(") == 4 and knobs.count("tl.dot(") == 8                  # 4 streams
    assert knobs.count(".to(tl.bfloat16)") >= 8 and "_raw" in knobs and "v_xf0_in_cur0" in knobs


def test_bf16_split_dot_reads_the_tile_that_was_cast():
    """Review finding: `xin = load(x0); xa = cast(xin); xin = load(x1); matvec(xa, w)` must dot the x0
    tile; the split path once read the bf16 local by name and got the x1 tile."""
    from trex.codegen_triton.printer import Tiling, print_program
    from trex.compiler.kernel_ir import DType, ProgramBuilder, TensorKind, size
    K = size("K")
    b = ProgramBuilder("alias_probe")
    b.gm("x0", DType.BF16, (K,))
    b.gm("x1", DType.BF16, (K,))
    b.gm("w", DType.FP32, (16, K), kind=TensorKind.SHARED)
    b.gm("h", DType.FP32, (16,), role="out")
    b.gm("y", DType.FP32, (K,), role="out")
    b.op("load", "xin", "x0", dtype=DType.BF16, cols=(K,))
    b.op("cast", "xa", "xin", dtype=DType.FP32, cols=(K,))
    b.op("load", "xin", "x1", dtype=DType.BF16, cols=(K,))
    b.op("cast", "xb", "xin", dtype=DType.FP32, cols=(K,))
    b.op("load", "wt", "w", dtype=DType.FP32, cols=(16, K), per_row=False)
    b.op("matvec", "hp", "xa", "wt", dtype=DType.FP32, cols=(16,))
    b.op("store", None, "h", "hp")
    b.op("store", None, "y", "xb")
    src = print_program(b.build(), {K: 32}, Tiling(rows_per_tile=16, dot_bf16_split=True)).source
    lines = src.splitlines()
    alias = next(ln.split("=")[0].strip() for ln in lines if "_raw" in ln and ln.strip().endswith("= v_xin"))
    first_alias_line = next(i for i, ln in enumerate(lines) if ln.strip().startswith(f"{alias} ="))
    second_load = [i for i, ln in enumerate(lines) if ln.strip().startswith("v_xin = tl.load(x1_ptr")][0]
    assert first_alias_line < second_load and f"tl.dot({alias}" in src


def test_min_max_rules_propagate_nan_as_torch_does():
    """torch.clamp/maximum/relu keep NaN; Triton's tl.minimum/maximum drop it on the GPU by default
    (the H200 fuzz found swiglu_limited's clamp returning 0.73 for a NaN gate). The interpreter
    propagates NaN either way, so this rule is checked on the printed source."""
    for opcode in ("max", "min", "maxs", "mins", "relu"):
        assert "propagate_nan=tl.PropagateNan.ALL" in ELEMENTWISE[opcode], opcode

