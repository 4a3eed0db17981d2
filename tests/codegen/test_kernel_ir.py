"""Kernel IR: structure, validation, and every fused op's IR program (through its kernel spec's runners)
against its composite PyTorch reference (trex/passes/<op>/op.py), under several schedules (cores, tiles,
chunks)."""
import pytest
import torch

from trex.passes.mhc_pre.op import mhc_pre_bwd_reference, mhc_pre_reference
from trex.passes.rms_norm.ir import build_rms_norm_fwd
from trex.passes.rms_norm.op import rms_norm_bwd_reference, rms_norm_reference
from trex.passes.rope.ir import cos_row_map
from trex.passes.rope.op import rope_reference
from trex.passes.swiglu_limited.op import swiglu_limited_bwd_reference, swiglu_limited_reference
from trex.compiler import registry
from trex.compiler.kernel_ir import IRError, Op, ProgramBuilder, Schedule, interpret, interpreter, size

SPECS = registry.kernel_specs()

SCHEDULES = [Schedule(rows_per_tile=1 << 30), Schedule(rows_per_tile=2, cores=3), Schedule(rows_per_tile=1, cores=7)]
TOL = {torch.bfloat16: dict(atol=2e-2, rtol=2e-2), torch.float16: dict(atol=2e-3, rtol=2e-3),
       torch.float32: dict(atol=2e-5, rtol=2e-5)}


def close(a, b, dt, scale=1.0):
    tol = TOL[dt]
    torch.testing.assert_close(a.float(), b.float(), atol=tol["atol"] * scale, rtol=tol["rtol"] * scale)


def test_program_is_printable_hashable_and_stable():
    p1, p2 = build_rms_norm_fwd("bf16"), build_rms_norm_fwd("bf16")
    assert p1 == p2 and hash(p1) == hash(p2) and p1.fingerprint() == p2.fingerprint()
    assert build_rms_norm_fwd("fp16").fingerprint() != p1.fingerprint()
    text = str(p1)
    assert "reduce_sum(sq, axis=-1)" in text and "in row     x: bf16[ROWS, D]" in text
    assert {s.name for s in p1.sizes} == {"ROWS", "D"}


def test_validation_rejects_bf16_math_and_bad_names():
    b = ProgramBuilder("bad")
    b.gm("x", "bf16", (size("D"),))
    b.gm("y", "bf16", (size("D"),), role="out")
    b.op("load", "xl", "x", dtype="bf16", cols=(size("D"),))
    b.op("exp", "e", "xl", dtype="fp32", cols=(size("D"),))
    with pytest.raises(IRError, match="compute in fp32"):
        b.build()
    with pytest.raises(IRError, match="unknown opcode"):
        Op("fused_magic", "a", ("b",))
    b2 = ProgramBuilder("bad2")
    b2.gm("x", "fp32", (size("D"),))
    b2.gm("y", "bf16", (size("D"),), role="out")
    b2.op("load", "xl", "x", dtype="fp32", cols=(size("D"),))
    b2.op("store", None, "y", "xl")
    with pytest.raises(IRError, match="cast first"):
        b2.build()


def test_interpret_checks_input_views():
    p = build_rms_norm_fwd("bf16")
    with pytest.raises(IRError, match="2-d view"):
        interpret(p, {"x": torch.zeros(2, 3, 8, dtype=torch.bfloat16), "w": torch.zeros(8, dtype=torch.bfloat16)}, {"eps": 1e-6})
    with pytest.raises(IRError, match="D is 8 elsewhere but 9"):
        interpret(p, {"x": torch.zeros(2, 8, dtype=torch.bfloat16), "w": torch.zeros(9, dtype=torch.bfloat16)}, {"eps": 1e-6})


@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("weight", [True, False])
@pytest.mark.parametrize("sched", SCHEDULES)
def test_rms_norm_ir_matches_reference(dt, weight, sched):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(3, 5, 37, generator=g).to(dt)
    w = torch.randn(37, generator=g).to(dt) if weight else None
    y, r = SPECS["rms_norm"].run((x, w, 1e-6, None), interpreter(sched))
    yr, rr = rms_norm_reference(x, w, 1e-6, None)
    close(y, yr, dt)
    torch.testing.assert_close(r, rr.float(), atol=1e-5, rtol=1e-5)
    dy = torch.randn(3, 5, 37, generator=g).to(dt)
    dx, dw = SPECS["rms_norm_bwd"].run((dy, x, w, rr), interpreter(sched))
    dxr, dwr = rms_norm_bwd_reference(dy, x, w, rr)
    close(dx, dxr, dt)
    if weight:
        close(dw, dwr, dt, scale=2)
    else:
        assert dw.numel() == 0


def test_rms_norm_out_dtype():
    x = torch.randn(4, 16, dtype=torch.bfloat16)
    y, _ = SPECS["rms_norm"].run((x, None, 1e-6, torch.float32))
    assert y.dtype == torch.float32
    torch.testing.assert_close(y, rms_norm_reference(x, None, 1e-6, torch.float32)[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("route", [True, False])
@pytest.mark.parametrize("sched", SCHEDULES)
def test_swiglu_limited_ir_matches_reference(dt, route, sched):
    g = torch.Generator().manual_seed(2)
    L = 1.5
    gate = (torch.randn(4, 3, 33, generator=g) * 2).to(dt)
    up = (torch.randn(4, 3, 33, generator=g) * 2).to(dt)
    gate[0, 0, :4] = L                      # exactly at the clamp limits: gradient must pass (inclusive)
    up[0, 1, :4] = -L
    up[0, 2, :4] = L
    rw = torch.rand(4, 3, 1, generator=g) if route else None
    close(SPECS["swiglu_limited"].run((gate, up, L, rw, None), interpreter(sched)), swiglu_limited_reference(gate, up, L, rw, None), dt)
    dh = torch.randn(4, 3, 33, generator=g).to(dt)
    got = SPECS["swiglu_limited_bwd"].run((dh, gate, up, L, rw), interpreter(sched))
    want = swiglu_limited_bwd_reference(dh, gate, up, L, rw)
    for a, b in zip(got[:2], want[:2]):
        close(a, b, dt)
    if route:
        torch.testing.assert_close(got[2], want[2], atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("xs,cs,rd", [((2, 5, 3, 24), (5, 1, 4), 8), ((2, 5, 3, 24), (2, 5, 1, 4), 8),
                                      ((2, 5, 3, 24), (2, 1, 3, 4), 8), ((7, 8), (7, 4), 8), ((4, 16), (4,), 8),
                                      ((3, 2, 10), (3, 1, 1), 2)])
@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("swap", ["shifted_loads", "pairs"])
def test_rope_ir_matches_reference(xs, cs, rd, inverse, dt, swap):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(xs, generator=g).to(dt)
    cos, sin = torch.randn(cs, generator=g), torch.randn(cs, generator=g)
    got = SPECS["rope"].run((x, cos, sin, rd, inverse), interpreter(Schedule(rows_per_tile=3, cores=2)),
                            "cuda" if swap == "pairs" else None)
    close(got, rope_reference(x, cos, sin, rd, inverse), dt)


def test_pair_swap_has_no_ascend_lowering_and_says_why():
    """The GPU's register swap cannot be lowered to AscendC (a UB copy at a one-element offset breaks
    the 32-byte rule): asking for it names the form to use instead."""
    from trex.codegen_ascendc.lowering import LOWERING_RULES
    from trex.passes.rope.ir import build_rope
    from trex.compiler.kernel_ir import IRError
    with pytest.raises(IRError, match="shifted_loads"):
        LOWERING_RULES["pair_swap"](None, next(op for op in build_rope("bf16", "fp32", swap="pairs").body
                                              if getattr(op, "opcode", None) == "pair_swap"))


def test_rope_row_map():
    assert cos_row_map((2, 5, 3), (5, 1)) == (3, 5)
    assert cos_row_map((2, 5, 3), (2, 5, 1)) == (3, 10)
    assert cos_row_map((2, 5, 3), (2, 1, 3)) is None      # not a contiguous block: materialised
    assert cos_row_map((2, 5, 3), ()) == (30, 1)


def _mhc_inputs(dt, n=4, d=40, lead=(2, 3), seed=4):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*lead, n, d, generator=g).to(dt)
    fn = torch.randn((2 + n) * n, n * d, generator=g) * 0.05
    scale = torch.rand(3, generator=g) + 0.5
    base = torch.randn((2 + n) * n, generator=g) * 0.1
    return x, fn, scale, base


@pytest.mark.parametrize("dt", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("sched", [Schedule(rows_per_tile=1 << 30), Schedule(rows_per_tile=4, col_chunk=16, cores=2),
                                   Schedule(rows_per_tile=1, col_chunk=24, cores=5)])
def test_mhc_pre_ir_matches_reference(dt, sched):
    x, fn, scale, base = _mhc_inputs(dt)
    got = SPECS["mhc_pre"].run((x, fn, scale, base, 20, 1e-6, 1e-6), interpreter(sched))
    want = mhc_pre_reference(x, fn, scale, base, 20, 1e-6, 1e-6)
    close(got[0], want[0], dt)
    for a, b in zip(got[1:], want[1:]):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    g = torch.Generator().manual_seed(5)
    dli = torch.randn(got[0].shape, generator=g).to(dt)
    dpost, dcomb = torch.randn(got[1].shape, generator=g), torch.randn(got[2].shape, generator=g)
    gb = SPECS["mhc_pre_bwd"].run((dli, dpost, dcomb, x, fn, scale, base, 20, 1e-6, 1e-6), interpreter(sched))
    wb = mhc_pre_bwd_reference(dli, dpost, dcomb, x, fn, scale, base, 20, 1e-6, 1e-6)
    close(gb[0], wb[0], dt)
    for a, b in zip(gb[1:], wb[1:]):
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)


def test_mhc_bwd_matches_fp64_autograd():
    """The IR's Sinkhorn backward (iterates recomputed) against autograd through the forward."""
    x, fn, scale, base = _mhc_inputs(torch.float64, d=16, lead=(3,))
    xs, fns, ss, bs = (t.clone().requires_grad_() for t in (x, fn, scale, base))
    outs = mhc_pre_reference(xs, fns, ss, bs, 5, 1e-6, 1e-6)
    grads = [torch.randn_like(o) for o in outs]
    torch.autograd.backward(outs, grads)
    args = (grads[0].float(), grads[1].float(), grads[2].float(), x.float(), fn.float(), scale.float(), base.float(),
            5, 1e-6, 1e-6)
    got = SPECS["mhc_pre_bwd"].run(args, interpreter(Schedule(rows_per_tile=2, col_chunk=16, cores=2)))
    for a, b in zip(got, (xs.grad, fns.grad, ss.grad, bs.grad)):
        torch.testing.assert_close(a.double(), b.double(), atol=2e-4, rtol=2e-4)
