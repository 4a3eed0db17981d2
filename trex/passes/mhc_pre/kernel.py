"""The kernels of ``trex::mhc_pre`` and ``trex::mhc_pre_bwd``: programs and runners of ir.py, the inputs they
do not take, the AscendC layout (the Cube split: the projection GEMMs as the executor's rows_matmul, the row
work in AIV programs; its program is the first AIV launch, what codegen prints; `programs` lists every AIV
launch, which tuning tunes one by one), the cuda layouts (the projection layout by default: the reduce pass as
the executor's split-K host step; the older split and fused per-stream layouts) and the example sizes (hc_mult 4 streams of d = 7168, 20 Sinkhorn iterations)."""
from __future__ import annotations

from trex.compiler.kernels import EXAMPLE_TOKENS, V4PRO_TOKENS, Guard, KernelSpec, Layout, cached_program
from trex.compiler.registry import register_kernel_spec

from .ir import (build_mhc_pre_bwd_apply_cube, build_mhc_pre_bwd_coeff_cube, build_mhc_pre_bwd_coeff_proj,
                 build_mhc_pre_bwd_coeff_streams, build_mhc_pre_bwd_streams, build_mhc_pre_coeff_proj,
                 build_mhc_pre_coeff_streams, build_mhc_pre_fwd_cube, build_mhc_pre_fwd_streams, proj_from_default,
                 run_mhc_pre, run_mhc_pre_bwd, run_mhc_pre_bwd_proj, run_mhc_pre_bwd_split, run_mhc_pre_bwd_streams,
                 run_mhc_pre_proj, run_mhc_pre_split, run_mhc_pre_streams, streams_dx_views, streams_from_default)

SCALARS = {"iters": 20, "hc_eps": 1e-6, "rms_eps": 1e-6}


def _sizes(small: dict) -> dict:
    # PARTS: the partial sums per row the cuda layout's coefficient programs read (ir.py, "the
    # projection layout"); N (one per stream) is what the reference host step and the views of the default
    # draws give (the H200 launch writes N x J; the programs' cost barely depends on it). The other programs ignore them.
    one = {"PARTS": 4}
    return {"example": {"ROWS": EXAMPLE_TOKENS, "N": 4, "HD": 7168, "ITERS": 20, **one}, "small": dict(small, **one),
            "tiny": {"ROWS": 32, "N": 4, "HD": 64, "ITERS": 4, **one},
            "v4pro": {"ROWS": V4PRO_TOKENS, "N": 4, "HD": 7168, "ITERS": 20, **one}}


# The AscendC layout's [N, chunk] tiles would make the Triton kernel reshape 3-d and 5-d tiles into dot
# operands every iteration (ir.py, "the per-stream layout"), so CUDA runs layouts of its own:
#   cuda: the projection layout (ir.py): the reduce pass as the executor's split-K `mhc_pre_proj` host step,
#     the per-row math from its partial sums as a program, then the apply pass / the dx + dfn step;
#   cuda_split: the reduce pass and the row math in one program, the apply pass in another ("the split
#     per-stream programs"); cuda_fused: both passes in one program.
# The older two stay as targets of their own so the benchmarks can run every layout on the GPU
# (bench/h200_h17_mhc.py). A layout's program is its first program launch (what tuning and the sweeps see).
register_kernel_spec(KernelSpec(
    op="mhc_pre", doc="mHC pre-projection (on the Cube), Sinkhorn and collapse",
    layout=Layout(run=run_mhc_pre, program=lambda dtype, sizes: build_mhc_pre_fwd_cube(dtype)),
    variants={"cuda": Layout(run=run_mhc_pre_proj, views=proj_from_default,
                             program=lambda dtype, sizes: build_mhc_pre_coeff_proj(dtype)),
              "cuda_split": Layout(run=run_mhc_pre_split, views=streams_from_default,
                                   program=lambda dtype, sizes: build_mhc_pre_coeff_streams(dtype, int(sizes["N"]))),
              "cuda_fused": Layout(run=run_mhc_pre_streams, views=streams_from_default,
                                   program=lambda dtype, sizes: build_mhc_pre_fwd_streams(dtype, int(sizes["N"])))},
    targets=("emulate", "cuda", "cuda_split", "cuda_fused"),
    sizes=_sizes({"ROWS": 64, "N": 4, "HD": 512, "ITERS": 20}), scalars=SCALARS))

register_kernel_spec(KernelSpec(
    op="mhc_pre_bwd", doc="mHC pre backward (Sinkhorn iterates recomputed in UB, GEMMs on the Cube)",
    layout=Layout(run=run_mhc_pre_bwd, program=lambda dtype, sizes: build_mhc_pre_bwd_coeff_cube(dtype),
                  programs=lambda dtype, sizes: (cached_program(build_mhc_pre_bwd_coeff_cube, dtype),
                                                 cached_program(build_mhc_pre_bwd_apply_cube, dtype))),
    variants={"cuda": Layout(run=run_mhc_pre_bwd_proj, views=proj_from_default,
                             program=lambda dtype, sizes: build_mhc_pre_bwd_coeff_proj(dtype)),
              "cuda_split": Layout(run=run_mhc_pre_bwd_split, views=streams_from_default,
                                   program=lambda dtype, sizes: build_mhc_pre_bwd_coeff_streams(dtype, int(sizes["N"]))),
              "cuda_fused": Layout(run=run_mhc_pre_bwd_streams, views=streams_from_default, out_views=streams_dx_views,
                                   program=lambda dtype, sizes: build_mhc_pre_bwd_streams(dtype, int(sizes["N"])))},
    targets=("emulate", "cuda", "cuda_split", "cuda_fused"),
    sizes=_sizes({"ROWS": 32, "N": 4, "HD": 256, "ITERS": 20}), scalars=SCALARS,
    guards=(Guard(lambda a: a[0].dtype != a[3].dtype,
                  "d_layer_input's dtype differs from x's: the program reads it in x's dtype"),)))
