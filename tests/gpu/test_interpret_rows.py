"""Multi-row (block-tiled) programs of the row-wise kernels on odd shapes, through Triton's interpreter
(TRITON_INTERPRET=1) against the Kernel-IR reference interpreter: RMSNorm forward/backward (weighted
and weight-free), add+RMSNorm, limited SwiGLU forward/backward, RoPE; row widths 1024, 1000, 7 and
4097 (a power of two, padded, tiny, one past a power of two), 1, 3 and 318 rows; the tiling the cost
model chooses (one warp per row at short rows, several rows per program) next to fixed 2-D tiles
[rows_per_tile, D] with 1-16 warps and persistent grids for the per-core dw partials. All math stays
fp32 (the printed tiles accumulate in fp32), so fp32 programs agree to fp32 rounding and 16-bit ones to
one unit in the last place (the interpreter truncates fp32 -> bf16 casts, see test_interpret.py).
Skips without Triton."""
from __future__ import annotations

import pytest
import torch

from gpu_cases import requires_triton, use_triton_interpreter
from test_interpret import make_inputs, ulp_tol
from trex.compiler.kernel_ir import ROWS, DType, Schedule, TensorKind, interpret, size

pytestmark = requires_triton

WIDTHS = (1024, 1000, 7, 4097)
ROW_COUNTS = (1, 3, 318)


# (id, module of trex.passes, builder, its arguments, the row's size symbol); built in the test, so a
# builder being edited breaks its own cases only
PROGRAMS = [
    (f"{stem}_{dt}", module, builder, (dt, *extra), dim)
    for dt in ("bf16", "fp32")
    for stem, module, builder, extra, dim in (
        ("rms_fwd_w", "rms_norm", "build_rms_norm_fwd", (True,), "D"),
        ("rms_bwd_w", "rms_norm", "build_rms_norm_bwd", (True,), "D"),
        ("add_rms", "add_rms_norm", "build_add_rms_norm", (True,), "D"),
        ("swiglu_fwd", "swiglu_limited", "build_swiglu_limited_fwd", (), "F"),
        ("swiglu_bwd", "swiglu_limited", "build_swiglu_limited_bwd", (), "F"),
        ("rope", "rope", "build_rope", ("fp32",), "HD"))
    if not (stem == "add_rms" and dt == "bf16")   # normalises h as stored in bf16: the interpreter's
    #                                               truncating cast biases its rstd (~2^-9), the GPU's rounds
] + [("rms_fwd_now_bf16", "rms_norm", "build_rms_norm_fwd", ("bf16", False), "D"),
     ("rms_bwd_now_bf16", "rms_norm", "build_rms_norm_bwd", ("bf16", False), "D")]


def _build(module: str, builder: str, args: tuple):
    import importlib
    build = getattr(importlib.import_module(f"trex.passes.{module}.ir"), builder)
    return build(*args, swap="pairs") if module == "rope" else build(*args)


def _sizes(dim: str, width: int, rows: int) -> dict:
    if dim != "HD":
        return {size(dim): width}
    rd = min(64, width - width % 2)              # the rotated channels: even, at most the row
    return {size("HD"): width, size("RD"): rd, size("CDIV"): 1, size("CROWS"): rows}


def _tilings(program, sizes: dict, rows: int):
    from trex.codegen_triton import tiling as tiling_mod
    from trex.codegen_triton.printer import Tiling
    partial = any(t.kind == TensorKind.PARTIAL for t in program.tensors) or bool(program.epilogue)
    fixed = [Tiling(rows_per_tile=r, num_warps=w, num_stages=1, programs=p if partial else None)
             for r, w, p in ((8, 1, 5), (4, 4, 2), (16, 2, 7), (2, 16, 1))]
    # the model's choices at these rows and at the e2e step's 8192 (a persistent grid wider than the rows)
    chosen = [tiling_mod.choose(program, {**sizes, ROWS: n}) for n in (rows, 8192)]
    return list(dict.fromkeys(chosen + fixed))


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch, tmp_path):
    use_triton_interpreter(monkeypatch, tmp_path)


# the interpreter takes ~1-8 s per (kernel, shape, tiling): the default run keeps 1000 columns x 3 and
# 318 rows (padded, several tiles and programs), the whole grid is slow
GRID = [pytest.param(w, r, marks=() if (w == 1000 and r in (3, 318)) else pytest.mark.slow, id=f"D{w}-rows{r}")
        for w in WIDTHS for r in ROW_COUNTS]


@pytest.mark.parametrize("width,rows", GRID)
@pytest.mark.parametrize("name,module,builder,build_args,dim", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_block_tiled_row_kernel_matches_the_reference(name, module, builder, build_args, dim, width, rows):
    from trex.codegen_triton.launcher import run_program
    program = _build(module, builder, build_args)
    if dim == "HD" and width < 2:
        pytest.skip("RoPE needs a pair of channels")
    sizes = _sizes(dim, width, rows)
    gen = torch.Generator().manual_seed(width * 7 + rows)
    ins = make_inputs(program, {**sizes, ROWS: rows}, rows, gen)
    scalars = {s.name: {"eps": 1e-6, "limit": 5.0, "cdiv": 1, "sgn": -1.0}[s.name] for s in program.scalars}
    ref = interpret(program, ins, scalars, Schedule(rows_per_tile=1 << 30))
    for tiling in _tilings(program, sizes, rows):
        out = run_program(program, ins, scalars, tiling)
        assert set(out) == set(ref)
        for k, r in ref.items():
            o = out[k]
            assert o.shape == r.shape and o.dtype == r.dtype, k
            tol = ulp_tol(DType.from_torch(r.dtype))
            err = (o.double() - r.double()).abs()
            # dw sums up to 318 rows in another order than the reference's tree: fp32 rounding of the sum
            scale = r.double().abs() + (rows * ins["x"].double().abs().max() if k == "dw" else 0)
            bound = tol * r.double().abs() + 1e-5 * (1 + scale)
            assert torch.isfinite(o.double()).all(), f"{name}:{k} not finite ({tiling})"
            assert (err <= bound).all(), f"{name}:{k} max err {float(err.max()):.3g} ({tiling})"
