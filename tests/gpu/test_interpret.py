"""Printed kernels compute what the Kernel-IR reference interpreter computes, on the CPU through
Triton's interpreter (TRITON_INTERPRET=1): every program variant, odd sizes, several tilings.

fp32 programs must agree to fp32 rounding. For 16-bit programs the comparison allows one unit in the
last place of the output dtype: Triton's interpreter truncates fp32 -> bf16/fp16 casts where the GPU
(and the reference) round to nearest even (seen with triton 3.6; the CUDA tests check exact rounding).
Skips without Triton.
"""
from __future__ import annotations

import os

import pytest
import torch

from gpu_cases import program_variants, requires_triton, use_triton_interpreter
from trex.compiler.kernel_ir import ROWS, DType, TensorKind, interpret

pytestmark = requires_triton

VARIANTS = [v for v in program_variants() if "fp16" not in v[0]]


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch, tmp_path):
    use_triton_interpreter(monkeypatch, tmp_path)


def make_inputs(p, sizes, rows, gen):
    """Random inputs of the program's views; positive rstd, small mHC weights, clamp-active SwiGLU."""
    def ev(c):
        return int(torch.tensor(0) + int(__import__("sympy").sympify(c).subs(sizes)))
    ins = {}
    for t in p.inputs:
        cols = [ev(c) for c in t.cols]
        lead = [rows] if t.kind == TensorKind.ROW else []
        if t.kind == TensorKind.ROW and not t.row_map.is_identity:
            lead = [ev(t.row_map.mod)]
        x = torch.randn(*lead, *cols, generator=gen)
        if t.name == "rstd":
            x = x.abs() + 0.5
        elif t.name == "fn" or t.name.startswith("fn") and t.name[2:].isdigit():
            x = x * 0.1
        elif t.name in ("gate", "up"):
            x = x * 6
        ins[t.name] = x.to(t.dtype.torch)
    return ins


def ulp_tol(dtype: DType) -> float:
    return {DType.BF16: 2 ** -7, DType.FP16: 2 ** -10}.get(dtype, 0.0)


@pytest.mark.parametrize("name,program,sizes", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_kernel_matches_reference_interpreter(name, program, sizes):
    from trex.codegen_triton.launcher import run_program
    from trex.codegen_triton.printer import Tiling
    gen = torch.Generator().manual_seed(len(name))
    rows = 15 if "rope" in name else 19
    sizes_r = dict(sizes)
    sizes_r[ROWS] = rows
    scalars = {"eps": 1e-6, "limit": 5.0, "cdiv": 3, "sgn": -1.0, "iters": 5, "hc_eps": 1e-6, "rms_eps": 1e-6}
    scalars = {s.name: scalars[s.name] for s in program.scalars}
    ins = make_inputs(program, sizes_r, rows, gen)
    ref = interpret(program, ins, scalars)
    partial = any(t.kind == TensorKind.PARTIAL for t in program.tensors) or bool(program.epilogue)
    tilings = [Tiling(rows_per_tile=4, col_chunk=16, programs=3 if partial else None),
               Tiling(rows_per_tile=4, col_chunk=16, programs=3 if partial else None, prefetch=True)]
    if "mhc" in name:
        tilings.append(Tiling(rows_per_tile=16, col_chunk=32, programs=2 if partial else None,
                              reverse_second_pass=False, hist_scratch=False, second_chunk=64))
        # Triton 3.6's interpreter computes bf16 x bf16 dots wrong (~1e10 off on a 16 x 16 tile), so the
        # bf16-split dot is checked only on a GPU (tests/gpu/test_gpu_cuda.py, bench/gpu_patterns.py)
        tilings.append(Tiling(rows_per_tile=16, col_chunk=16, programs=2 if partial else None, prefetch=True,
                              dot_bf16_split=os.environ.get("TRITON_INTERPRET") != "1"))
    for tiling in tilings:
        out = run_program(program, ins, scalars, tiling)
        assert set(out) == set(ref)
        for k, r in ref.items():
            o = out[k]
            assert o.shape == r.shape and o.dtype == r.dtype, k
            tol = ulp_tol(DType.from_torch(r.dtype))
            err = (o.double() - r.double()).abs()
            bound = tol * r.double().abs() + 1e-5 * (1 + r.double().abs())
            assert torch.isfinite(o.double()).all(), f"{name}:{k} not finite"
            assert (err <= bound).all(), f"{name}:{k} max err {float(err.max()):.3g} ({tiling})"


def test_poison_marks_unwritten_outputs(monkeypatch):
    """With TREX_TRITON_POISON=1 the outputs start as NaN: a kernel that writes them all leaves none."""
    from trex.codegen_triton.launcher import run_program
    from trex.codegen_triton.printer import Tiling
    from trex.compiler import registry
    monkeypatch.setenv("TREX_TRITON_POISON", "1")
    p = registry.kernel_spec("rms_norm").program("fp32")
    out = run_program(p, {"x": torch.randn(9, 33), "w": torch.randn(33)}, {"eps": 1e-6}, Tiling(rows_per_tile=4))
    assert torch.isfinite(out["y"]).all() and torch.isfinite(out["rstd"]).all()


def test_cuda_target_runs_every_kernel_spec_like_the_references():
    """The "cuda" runner (each op's kernel spec, cuda layout, on Triton) on every op's sample inputs."""
    from trex.codegen_triton.target import run
    from trex.compiler import registry
    checked = 0
    for name, fop in registry.fused_ops().items():
        if registry.kernel_spec(name) is None:
            continue
        samples = sorted(fop.sample_inputs(torch.float32),   # the two smallest: the interpreter is slow
                         key=lambda a: sum(t.numel() for t in a if isinstance(t, torch.Tensor)))
        for args in samples[:2]:
            out = run(name, args)
            if out is NotImplemented:
                continue
            ref = fop.reference(*args)
            outs = out if isinstance(out, tuple) else (out,)
            refs = ref if isinstance(ref, tuple) else (ref,)
            for o, r in zip(outs, refs):
                assert o.shape == r.shape and o.dtype == r.dtype, name
                torch.testing.assert_close(o, r, rtol=1e-4, atol=1e-5, msg=lambda m: f"{name}: {m}")
            checked += 1
    assert checked >= 8


def test_rope_on_cuda_is_one_launch_reading_the_half_tables(monkeypatch):
    """The cuda layout expands cos/sin in registers: one kernel a call, fed the tables as given (no
    host-side expansion kernels, nothing cached between calls), for every broadcast layout of the
    tables, both directions; an in-place update of cos is seen by the next call."""
    from trex.codegen_triton import launcher, target
    from trex.passes.rope.op import rope_reference
    programs = []
    real = launcher.run_program

    def spy(p, inputs, scalars=None, **kw):
        programs.append((p.name, {k: tuple(v.shape) for k, v in inputs.items()}))
        return real(p, inputs, scalars, **kw)
    monkeypatch.setattr(target, "_EXECUTOR", target.TritonExecutor(spy))
    ang = torch.rand(2, 1, 2, 1, 4)
    for lead, (cos, sin) in (((2, 3, 2, 5), (ang.cos(), ang.sin())), ((2, 5, 2, 3), (ang.cos(), ang.sin())),
                             ((7,), (ang[0, 0, 0].expand(7, 4).cos(), ang[0, 0, 0].expand(7, 4).sin())),
                             ((3, 2), (ang[0, 0, :1].cos(), ang[0, 0, :1].sin()))):
        x = torch.randn(*lead, 10)
        for inverse in (False, True):
            programs.clear()
            torch.testing.assert_close(target.run("rope", (x, cos, sin, 8, inverse)),
                                       rope_reference(x, cos, sin, 8, inverse), rtol=1e-5, atol=1e-5)
            assert len(programs) == 1 and programs[0][0].endswith("_pairs"), programs
            assert programs[0][1]["cos"][-1] == 4, programs      # the half-width table, not an expansion
    cos.mul_(0.5)
    torch.testing.assert_close(target.run("rope", (x, cos, sin, 8, False)), rope_reference(x, cos, sin, 8, False),
                               rtol=1e-5, atol=1e-5)
