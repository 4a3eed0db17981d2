"""trex's fused patterns on one CUDA GPU, side by side with eager, default torch.compile (Inductor)
and Liger-Kernel, against the measured copy-bandwidth roofline, all in ONE run.

    PYTHONUNBUFFERED=1 python3 bench/gpu_patterns.py --out $OUT          # full run (H200: ~3 min)
    python3 bench/gpu_patterns.py --tokens 1024 --cases rmsnorm_weighted   # quick smoke

What one run does, in order:
  1. calibrates: device-to-device copy bandwidth (bytes read + written), launch overhead (wall time
     of one small Triton launch; device time per kernel inside a CUDA graph), a TF32 GEMM rate;
     writes them to `<out>/h200_calibration.json` in the format trex.codegen_triton.calibration reads.
  2. for every pattern and every variant: a correctness check against a float64 reference on fresh
     random inputs, with the trex kernels' outputs poisoned (NaN) before launch, so an element the
     kernel never writes fails the check; forward outputs and input gradients are both checked.
  3. times every variant, forward and forward+backward: wall time (triton.testing.do_bench median)
     and device time (sum of all CUDA kernel time per step from the profiler), each against the floor
     (bytes counted in `floor_bytes`, one read of every input and one write of every output per
     pass, over the measured copy bandwidth).
Writes `<out>/gpu_patterns.json` (commit, torch/triton versions, device, calibration, every row) and
prints a table last.

Variants: eager (the benchmark's eager chain: fp32 math, as the model writes it), inductor
(torch.compile default), liger (Liger-Kernel's op where it has one; its SwiGLU has no clamp and is
timed as an analog, its RoPE is the half-split form and is not timed), trex (torch.ops.trex.* called
directly: the Triton kernels codegen_triton prints from the Kernel IR, through the op's autograd),
inductor_ro (mode="reduce-overhead": CUDA graphs), trex_aten (backend="trex", options={"rest": "aten"}:
trex's fusions, the rest op by op from Python, the old default), trex_compile (backend="trex": trex's
fusions, Inductor for the rest, the printed kernels inlined into Inductor's graph) and trex_ro (the same
with mode="reduce-overhead").
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import traceback
from typing import Callable

import torch
import torch.nn.functional as F

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

BF16 = torch.bfloat16
RMS_EPS = 1e-6
SWIGLU_LIMIT = 10.0  # DeepSeek-V4's swiglu_limit (reference/deepseek_v4.md section 2)
HC_EPS = 1e-6
SINKHORN_ITERS = 20
ROPE_DIM = 64


# ---------------------------------------------------------------------------------------------
# eager chains, written once with the compute dtype as a parameter: `acc=torch.float32` is the eager
# peer (what the model does), `acc=torch.float64` the reference every variant is checked against.
# ---------------------------------------------------------------------------------------------
def rmsnorm_chain(x, w=None, acc=torch.float32):
    xf = x.to(acc)
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + RMS_EPS)
    if w is not None:
        y = y * w.to(acc)
    return y.to(x.dtype) if acc == torch.float32 else y


def swiglu_limited_chain(g, u, acc=torch.float32):
    gf = g.to(acc).clamp(max=SWIGLU_LIMIT)
    uf = u.to(acc).clamp(min=-SWIGLU_LIMIT, max=SWIGLU_LIMIT)
    h = F.silu(gf) * uf
    return h.to(g.dtype) if acc == torch.float32 else h


def rope_chain(x, cos, sin, acc=torch.float32):
    """Interleaved rotary embedding of the last ROPE_DIM channels; cos/sin [T, R/2] broadcast over heads."""
    nope, rot = x[..., :-ROPE_DIM], x[..., -ROPE_DIM:]
    xf = rot.to(acc).unflatten(-1, (-1, 2))
    x0, x1 = xf[..., 0], xf[..., 1]
    c, s = cos.to(acc)[:, None, :], sin.to(acc)[:, None, :]
    out = torch.stack((x0 * c - x1 * s, x0 * s + x1 * c), dim=-1).flatten(-2)
    out = out.to(x.dtype) if acc == torch.float32 else out
    return torch.cat((nope.to(out.dtype), out), dim=-1) if nope.shape[-1] else out


def mhc_pre_chain(h, fn, scale, base, acc=torch.float32):
    """DeepSeek-V4 mHC pre-projection (reference/deepseek_v4.md section 1). h [T, n, D]."""
    n = h.shape[-2]
    xf = h.flatten(-2).to(acc)
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + RMS_EPS)
    z = (xf @ fn.to(acc).t()) * r
    scale, base = scale.to(acc), base.to(acc)
    pre = torch.sigmoid(scale[0] * z[..., :n] + base[:n]) + HC_EPS
    post = 2.0 * torch.sigmoid(scale[1] * z[..., n:2 * n] + base[n:2 * n])
    # softmax over each row of the n x n logits (the spec; the anchor script's chain normalised all n*n)
    m = torch.softmax((scale[2] * z[..., 2 * n:] + base[2 * n:]).unflatten(-1, (n, n)), dim=-1) + HC_EPS
    m = m / (m.sum(-2, keepdim=True) + HC_EPS)
    for _ in range(SINKHORN_ITERS - 1):
        m = m / (m.sum(-1, keepdim=True) + HC_EPS)
        m = m / (m.sum(-2, keepdim=True) + HC_EPS)
    y = (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2)
    return (y.to(h.dtype) if acc == torch.float32 else y), post, m


# ---------------------------------------------------------------------------------------------
# the cases: shapes of DeepSeek-V4-Pro (issue 6) or of bench/e2e_hf.py's model, byte and FLOP floors
# ---------------------------------------------------------------------------------------------
# --shapes: hidden (weighted RMSNorm, mHC stream width), ffn (SwiGLU width) and swiglu_rows (rows per
# token: the routed experts' top-k), norm_heads x head_dim (the weight-free per-head norm), rope_heads x
# rope_head (RoPE'd heads; the trailing ROPE_DIM channels rotate), rope_tables (cos/sin dtype), tokens
SHAPES = {
    # DeepSeek-V4-Pro's widths; the anchor's 64 x 128 head norm and 64 heads of 64 RoPE channels
    "v4pro": dict(tokens=16384, hidden=7168, ffn=3072, swiglu_rows=1, norm_heads=64, head_dim=128,
                  rope_heads=64, rope_head=64, rope_tables=torch.float32),
    # transformers' V4 at bench/e2e_hf.py's config (B*T = 4*2048 tokens, hidden 1024, experts of 512 at
    # top-2, 8 query heads of 128 with partial RoPE over the last 64, q_b_norm over 8 x 128, bf16 tables)
    "e2e": dict(tokens=8192, hidden=1024, ffn=512, swiglu_rows=2, norm_heads=8, head_dim=128,
                rope_heads=8, rope_head=128, rope_tables=BF16),
}
@dataclasses.dataclass
class Case:
    name: str
    make_inputs: Callable[[torch.Generator], list]  # fresh random inputs on the GPU
    needs_grad: list                                 # per input: gets a gradient in fwd+bwd
    chain: Callable                                  # eager chain(*inputs, acc=...)
    fwd_bytes: int                                   # floor: every input read once, output written once
    fwd_bwd_bytes: int
    flops_fwd_bwd: int = 0                           # matrix FLOPs (mHC projection), for the compute floor
    trex: Callable | None = None                     # direct fused-op call, same outputs as chain
    liger: Callable | None = None
    liger_note: str = ""
    tf32_outputs: tuple = ()                         # outputs downstream of a TF32 contraction


def build_cases(tokens: int, device: str, shapes: str = "v4pro") -> list[Case]:
    sh = SHAPES[shapes]
    T, D, F_, HR, n = tokens, sh["hidden"], sh["ffn"], sh["rope_heads"], 4
    NH, HDN, RH, cs_dt = sh["norm_heads"], sh["head_dim"], sh["rope_head"], sh["rope_tables"]
    TS = T * sh["swiglu_rows"]
    cases = []

    def randn(gen, *shape, scale=1.0, dtype=BF16):
        return (torch.randn(*shape, generator=gen, device=device, dtype=torch.float32) * scale).to(dtype)

    # RMSNorm with weight over the hidden size (attn_norm / ffn_norm)
    e = T * D
    cases.append(Case(
        "rmsnorm_weighted", lambda g: [randn(g, T, D), randn(g, D)], [1, 1],
        lambda x, w, acc=torch.float32: rmsnorm_chain(x, w, acc),
        fwd_bytes=2 * e + 2 * e + 4 * T + 2 * D,
        fwd_bwd_bytes=(2 * e + 2 * e + 4 * T + 2 * D) + (2 * e + 2 * e + 4 * T + 2 * D + 2 * e + 2 * D),
    ))
    # weight-free RMSNorm per head (the query norm: 128 heads x head_dim 512 in V4; the anchor's shape
    # 64 x 128 is kept so the peers' numbers compare)
    e = T * NH * HDN
    cases.append(Case(
        "rmsnorm_weightfree", lambda g: [randn(g, T, NH, HDN)], [1],
        lambda x, acc=torch.float32: rmsnorm_chain(x, None, acc),
        fwd_bytes=4 * e + 4 * T * NH, fwd_bwd_bytes=(4 * e + 4 * T * NH) + (6 * e + 4 * T * NH),
    ))
    # limited SwiGLU at the expert width (gate/up inputs scaled so the clamps act)
    e = TS * F_
    cases.append(Case(
        "swiglu_limited", lambda g: [randn(g, TS, F_, scale=4.0), randn(g, TS, F_, scale=4.0)], [1, 1],
        lambda a, b, acc=torch.float32: swiglu_limited_chain(a, b, acc),
        fwd_bytes=6 * e, fwd_bwd_bytes=6 * e + 10 * e,
        liger_note="Liger's SiLU*mul has no clamp: timed as an analog",
    ))
    # interleaved RoPE on the 64 rope channels of 128 heads... the anchor timed 64 heads of 64: kept
    e = T * HR * RH
    cs = 2 * T * (ROPE_DIM // 2) * torch.finfo(cs_dt).bits // 8

    def rope_inputs(g):
        ang = torch.rand(T, ROPE_DIM // 2, generator=g, device=device) * 2 * math.pi
        return [randn(g, T, HR, RH), ang.cos().to(cs_dt), ang.sin().to(cs_dt)]
    cases.append(Case(
        "rope_interleaved", rope_inputs, [1, 0, 0],
        lambda x, c, s, acc=torch.float32: rope_chain(x, c, s, acc),
        fwd_bytes=4 * e + cs, fwd_bwd_bytes=2 * (4 * e + cs),
        liger_note="Liger's RoPE is the half-split (rotate_half) form, not interleaved: not timed",
    ))
    # mHC pre-projection: 4 streams of the hidden size, 24 coefficients, 20 Sinkhorn iterations
    K = n * D
    M = (2 + n) * n

    def mhc_inputs(g):
        return [randn(g, T, n, D), torch.randn(M, K, generator=g, device=device) * 0.02,
                1.0 + 0.1 * torch.randn(3, generator=g, device=device),
                0.1 * torch.randn(M, generator=g, device=device)]
    coef_out = T * (n + n * n) * 4
    cases.append(Case(
        "mhc_pre", mhc_inputs, [1, 1, 1, 1],
        lambda h, fn, sc, b, acc=torch.float32: mhc_pre_chain(h, fn, sc, b, acc),
        fwd_bytes=2 * T * K + 2 * T * D + coef_out + 4 * M * K,
        fwd_bwd_bytes=(2 * T * K + 2 * T * D + coef_out + 4 * M * K)
        + (2 * T * D + coef_out + 2 * T * K + 4 * M * K + 2 * T * K + 4 * M * K),
        flops_fwd_bwd=3 * 2 * T * M * K,
        tf32_outputs=(1, 2),
    ))
    _attach_trex(cases)
    _attach_liger(cases)
    return cases


def _attach_trex(cases):
    """Direct calls of the fused ops (contracts.md signatures); their CUDA kernels are codegen_triton's."""
    ops = torch.ops.trex
    direct = {
        "rmsnorm_weighted": lambda x, w: ops.rms_norm(x, w, RMS_EPS, None)[0],
        "rmsnorm_weightfree": lambda x: ops.rms_norm(x, None, RMS_EPS, None)[0],
        "swiglu_limited": lambda a, b: ops.swiglu_limited(a, b, SWIGLU_LIMIT, None, None),
        "rope_interleaved": lambda x, c, s: ops.rope(x, c[:, None, :], s[:, None, :], ROPE_DIM, False),
        "mhc_pre": lambda h, fn, sc, b: tuple(ops.mhc_pre(h, fn, sc, b, SINKHORN_ITERS, HC_EPS, RMS_EPS)),
    }
    for c in cases:
        c.trex = direct.get(c.name)


def _attach_liger(cases):
    try:
        from liger_kernel.ops.mhc import LigerMHCCoeffsFunction, LigerMHCPreFunction
        from liger_kernel.ops.rms_norm import LigerRMSNormFunction
        from liger_kernel.ops.swiglu import LigerSiLUMulFunction
    except Exception as err:  # noqa: BLE001 - optional peer; record why it is absent
        for c in cases:
            c.liger_note = f"liger-kernel not importable: {err!r}"
        return

    def liger_mhc(h, fn, sc, b):
        pre, post, comb = LigerMHCCoeffsFunction.apply(
            h, fn.t().contiguous(), b, sc[0], sc[1], sc[2], False, SINKHORN_ITERS, RMS_EPS, HC_EPS, HC_EPS, 2.0)
        return LigerMHCPreFunction.apply(h, pre), post, comb

    table = {
        # "gemma" casting = all math in fp32 (the contract); in_place=False keeps dy intact between steps
        "rmsnorm_weighted": lambda x, w: LigerRMSNormFunction.apply(x, w, RMS_EPS, 0.0, "gemma", False),
        "rmsnorm_weightfree": lambda x: LigerRMSNormFunction.apply(x, None, RMS_EPS, 0.0, "gemma", False),
        "swiglu_limited": lambda a, b: LigerSiLUMulFunction.apply(a, b),
        "mhc_pre": liger_mhc,
    }
    for c in cases:
        c.liger = table.get(c.name)


# ---------------------------------------------------------------------------------------------
# calibration
# ---------------------------------------------------------------------------------------------
def calibrate(device: str) -> dict:
    import triton
    import triton.language as tl
    import triton.testing

    a = torch.randn(1 << 30, device=device, dtype=BF16)  # 2 GiB, 35x the L2
    b = torch.empty_like(a)
    ms = triton.testing.do_bench(lambda: b.copy_(a), warmup=50, rep=300, return_mode="median")
    copy_bw = 2 * a.numel() * a.element_size() / (ms * 1e-3)
    a = b = None  # noqa: F841 - release the 4 GiB before the next measurements

    @triton.jit
    def _tiny(ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(ptr + offs, tl.load(ptr + offs) + 1.0)

    buf = torch.zeros(128, device=device)
    _tiny[(1,)](buf, BLOCK=128)
    launch_wall_ms = triton.testing.do_bench(lambda: _tiny[(1,)](buf, BLOCK=128), warmup=50, rep=200,
                                             return_mode="median")
    # device-side cost of one launch: 200 tiny kernels captured in one CUDA graph
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(200):
                _tiny[(1,)](buf, BLOCK=128)
    torch.cuda.synchronize()
    graph_ms = triton.testing.do_bench(graph.replay, warmup=20, rep=200, return_mode="median")
    # TF32 matrix rate (the mHC projection's unit)
    m = torch.randn(8192, 8192, device=device)
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    gemm_ms = triton.testing.do_bench(lambda: m @ m, warmup=20, rep=200, return_mode="median")
    torch.backends.cuda.matmul.allow_tf32 = prev
    props = torch.cuda.get_device_properties(device)
    return {
        "device": torch.cuda.get_device_name(device),
        "sm_count": props.multi_processor_count,
        "l2_bytes": getattr(props, "L2_cache_size", 0),
        "copy_bandwidth_bytes_per_s": copy_bw,
        "launch_overhead_wall_us": launch_wall_ms * 1e3,
        "launch_overhead_graph_us": graph_ms * 1e3 / 200,
        "tf32_gemm_flops_per_s": 2 * 8192 ** 3 / (gemm_ms * 1e-3),
        "measured_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "triton": triton.__version__,
    }


def kernel_calls(case: str, tokens: int, device: str, shapes: str = "v4pro") -> list[tuple[str, tuple]]:
    """The fused-op calls (op, arguments) of bench case `case`, forward and backward, at the bench shapes."""
    sh = SHAPES[shapes]
    T, n, d, F_ = tokens, 4, sh["hidden"], sh["ffn"]
    TS, NH, HDN, HR, RH = tokens * sh["swiglu_rows"], sh["norm_heads"], sh["head_dim"], sh["rope_heads"], sh["rope_head"]
    g = torch.Generator(device=device).manual_seed(5)

    def rb(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g, device=device) * scale).to(BF16)
    if case == "rmsnorm_weighted":
        x, w = rb(T, d), rb(d)
        return [("rms_norm", (x, w, RMS_EPS, None)),
                ("rms_norm_bwd", (rb(T, d), x, w, torch.rand(T, generator=g, device=device) + 0.5))]
    if case == "rmsnorm_weightfree":
        x = rb(T, NH, HDN)
        return [("rms_norm", (x, None, RMS_EPS, None)),
                ("rms_norm_bwd", (rb(T, NH, HDN), x, None, torch.rand(T, NH, generator=g, device=device) + 0.5))]
    if case == "swiglu_limited":
        gate, up = rb(TS, F_, scale=4), rb(TS, F_, scale=4)
        return [("swiglu_limited", (gate, up, SWIGLU_LIMIT, None, None)),
                ("swiglu_limited_bwd", (rb(TS, F_), gate, up, SWIGLU_LIMIT, None))]
    if case == "rope_interleaved":
        ang = torch.rand(T, ROPE_DIM // 2, generator=g, device=device) * 6
        cos, sin = ang.cos().to(sh["rope_tables"]), ang.sin().to(sh["rope_tables"])
        return [("rope", (rb(T, HR, RH), cos[:, None, :], sin[:, None, :], ROPE_DIM, False))]
    if case == "mhc_pre":
        h, fn = rb(T, n, d), torch.randn((2 + n) * n, n * d, generator=g, device=device) * 0.02
        sc, b = torch.ones(3, device=device), torch.zeros((2 + n) * n, device=device)
        grads = (rb(T, d), torch.randn(T, n, generator=g, device=device), torch.randn(T, n, n, generator=g, device=device))
        mhc = (SINKHORN_ITERS, HC_EPS, RMS_EPS)
        return [("mhc_pre", (h, fn, sc, b, *mhc)), ("mhc_pre_bwd", (*grads, h, fn, sc, b, *mhc))]
    raise ValueError(f"no kernel calls for bench case {case!r}; choose from {list(SWEEP_CASES)}")


# the bench cases whose kernels the tiling sweep measures (each one's kernel_calls)
SWEEP_CASES = ("rmsnorm_weighted", "rmsnorm_weightfree", "swiglu_limited", "rope_interleaved", "mhc_pre")


def kernel_programs(case: str, tokens: int, device: str, shapes: str = "v4pro"):
    """(program, inputs, scalars) of every kernel the cuda target launches for bench case `case` (its
    kernel spec's cuda layout, captured without running: trex.compiler.kernels.capture_launch)."""
    from trex.compiler import registry
    from trex.compiler.kernels import capture_launch
    return [capture_launch(registry.kernel_spec(op), args, "cuda")
            for op, args in kernel_calls(case, tokens, device, shapes)]


def graph_ms(fn, reps: int = 3) -> float:
    """Device time of fn per call: `reps` calls captured in one CUDA graph, replays timed (launch gaps and
    Python overhead excluded, like the profiler's kernel sum)."""
    import triton.testing
    fn()
    torch.cuda.synchronize()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            for _ in range(reps):
                fn()
    torch.cuda.current_stream().wait_stream(stream)
    torch.cuda.synchronize()
    return triton.testing.do_bench(graph.replay, warmup=5, rep=40, return_mode="median") / reps


def _extra_tilings():
    """Hand-picked points beside the model's shortlist where run 1 showed the model is weakest (mHC:
    chunk sizes, a wider apply pass, warps), so the sweep measures them too."""
    from trex.codegen_triton.printer import Tiling
    sms = 132
    return {
        # larger row tiles than the model's shortlist: fn (fp32, [24, chunk] per stream) is re-read from
        # L2 by every row tile, 0.75x the x bytes at 64 rows, 0.375x at 128
        # wide row tiles, all four streams' loads in flight per iteration: run 3a's 32 x 32 tiles (8 KB
        # per iteration) ran latency-bound at 3.6 ms; run 3b: 128 x 32 x 8 warps 1.10 ms (163 regs, no
        # spills), 128 x 64 needs > 228 KB of shared memory at 16 warps
        "mhc_pre_fwd_streams4": [Tiling(rows_per_tile=r, col_chunk=c, num_warps=w, num_stages=3, prefetch=pf,
                                        dot_bf16_split=sp)
                                 for r, c, w, pf, sp in ((128, 32, 8, False, False), (128, 32, 4, False, False),
                                                         (128, 32, 8, True, False), (128, 32, 8, False, True),
                                                         (128, 32, 8, True, True), (128, 64, 8, True, True),
                                                         (64, 64, 8, True, True), (256, 16, 8, True, True))],
        "mhc_pre_bwd_streams4": [Tiling(rows_per_tile=r, col_chunk=c, num_warps=w, num_stages=2, programs=p_,
                                        prefetch=pf, dot_bf16_split=sp)
                                 for r, c, w, p_, pf, sp in ((128, 32, 16, sms, False, False),
                                                             (128, 32, 8, sms, True, True),
                                                             (128, 32, 16, sms, True, True),
                                                             (64, 32, 8, 2 * sms, True, True),
                                                             (128, 16, 8, sms, True, True))],
        "rms_norm_fwd": [Tiling(rows_per_tile=r, num_warps=w) for r, w in ((1, 8), (8, 4))],
        "rms_norm_bwd": [Tiling(rows_per_tile=r, num_warps=w, programs=p_) for r, w, p_ in ((1, 8, 2 * sms),
                                                                                           (8, 4, 4 * sms))],
        "rope": [Tiling(rows_per_tile=r, num_warps=w) for r, w in ((32, 4), (64, 8))],
    }


def _extra_tilings_e2e():
    """--shapes e2e (hidden 1024, SwiGLU 512, 128-channel heads): the tilings the model chose before
    session 8 (run 11's kernels: the first of each list), Inductor's choice for an inner persistent
    reduction of 256-1024 columns (one row, one warp: triton_heuristics' XBLOCK = min(1024 // rnumel, 8),
    num_warps = 1) and 2-D tiles of several rows between them; rms_norm_bwd with persistent grids of
    1-8 programs per SM (its dw partials)."""
    from trex.codegen_triton.printer import Tiling
    sms = 132

    def rows(*points):
        return [Tiling(rows_per_tile=r, num_warps=w, num_stages=1) for r, w in points]
    return {
        "rms_norm_fwd": rows((4, 8), (1, 1), (2, 1), (2, 2), (8, 8), (1, 4)),
        "rms_norm_bwd": [Tiling(rows_per_tile=r, num_warps=w, num_stages=1, programs=k * sms)
                         for r, w, k in ((8, 16, 1), (1, 1, 8), (1, 2, 8), (2, 4, 4), (4, 4, 2), (2, 2, 4),
                                         (4, 8, 2))],
        "swiglu_limited_fwd": rows((1, 4), (1, 1), (2, 2), (4, 4), (8, 8)),
        "swiglu_limited_bwd": rows((1, 8), (1, 1), (2, 2), (4, 4), (8, 8)),
        "rope": rows((2, 2), (8, 1), (16, 2), (16, 4), (32, 4), (64, 8)),
    }


EXTRA_TILINGS: dict = {}


def sweep_tilings(tokens: int, calib: dict, per_program: int, log, cases: set | None = None,
                  shapes: str = "v4pro") -> dict:
    """Time the cost model's shortlist for every kernel at the bench shapes; record the best in
    calib["measured_tilings"] (what trex.codegen_triton.tiling.choose then uses) and every point in the
    returned report (prediction next to measurement, for bench/NOTES_gpu.md)."""
    import dataclasses as dc


    from trex.codegen_triton import tiling as tiling_mod
    from trex.codegen_triton.launcher import run_program
    from trex.compiler.kernel_ir import bind_sizes
    report = {}
    EXTRA_TILINGS.update(_extra_tilings() if shapes == "v4pro" else _extra_tilings_e2e())
    measured = dict(calib.get("measured_tilings") or {})
    for p, ins, sc in (launch for case in SWEEP_CASES if not cases or case in cases
                       for launch in kernel_programs(case, tokens, "cuda", shapes)):
        sizes = bind_sizes(p, ins, sc)
        key = tiling_mod.measured_key(p, sizes)
        points = []
        candidates = tiling_mod.shortlist(p, sizes, per_program)
        # hand-picked extras are measured even where the register model calls them infeasible: the
        # measurement (and the compiled kernel's spill count in trex_kernels) decides
        extra = [tiling_mod.predict(p, sizes, t) for t in EXTRA_TILINGS.get(p.name.split("_bf16")[0], ())]
        candidates += [q for q in extra if q.tiling not in [c.tiling for c in candidates]]
        baseline = None
        for q in candidates:
            try:
                # every candidate must compute what the first (the model's choice) computes: a fast but
                # wrong tiling is recorded as an error and never chosen (the chosen one is then checked
                # against fp64 by check_case)
                got = run_program(p, ins, sc, q.tiling)
                if baseline is None:
                    baseline = got
                else:
                    for name_, ref_ in baseline.items():
                        err_ = rel_err(got[name_], ref_)
                        if not err_ <= 1e-2:
                            raise AssertionError(f"output {name_} differs from the first candidate's: rel err {err_:.3g}")
                ms = graph_ms(lambda: run_program(p, ins, sc, q.tiling))
                points.append({"tiling": dc.asdict(q.tiling), "predicted_us": q.time_us, "measured_us": ms * 1e3,
                               "dram_bytes_model": q.dram_bytes, "model_feasible": q.feasible})
            except Exception as err:  # noqa: BLE001 - a candidate that fails to compile is recorded, not fatal
                points.append({"tiling": dc.asdict(q.tiling), "predicted_us": q.time_us,
                               "error": f"{type(err).__name__}: {err}"[:300]})
        ok = [pt for pt in points if "measured_us" in pt]
        if ok:
            best = min(ok, key=lambda pt: pt["measured_us"])
            measured[key] = best["tiling"]
        report[p.name] = points
        log(json.dumps({"sweep": p.name, "points": points}))
        print_sweep({p.name: points})          # readable as it goes (a timeout keeps what was measured)
        torch.cuda.empty_cache()
    calib["measured_tilings"] = measured
    return report


# ---------------------------------------------------------------------------------------------
# correctness and timing
# ---------------------------------------------------------------------------------------------
def as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def rel_err(out, ref):
    out64, ref64 = out.detach().double(), ref.detach().double()
    if not torch.isfinite(out64).all():
        return float("nan")
    return float((out64 - ref64).norm() / ref64.norm().clamp_min(1e-300))


def run_with_grads(fn, inputs, needs_grad, grads_out, backward):
    args = [a.detach().clone().requires_grad_(bool(backward and g)) for a, g in zip(inputs, needs_grad)]
    outs = as_tuple(fn(*args))
    grads = []
    if backward:
        torch.autograd.backward(outs, [go.to(o.dtype) for o, go in zip(outs, grads_out)])
        grads = [a.grad for a, g in zip(args, needs_grad) if g]
    return [o.detach() for o in outs], grads


def check_case(case: Case, variants: dict, seed: int) -> dict:
    """Errors of every variant against the float64 reference, forward and gradients, fresh inputs."""
    gen = torch.Generator(device="cuda").manual_seed(seed)
    inputs = case.make_inputs(gen)
    ref_inputs = [a.double() for a in inputs]
    ref_outs, ref_grads = None, None
    grads_out = [torch.randn(o.shape, generator=gen, device="cuda")
                 for o in as_tuple(case.chain(*inputs))]
    ref_outs, ref_grads = run_with_grads(lambda *a: case.chain(*a, acc=torch.float64), ref_inputs,
                                         case.needs_grad, [g.double() for g in grads_out], True)
    report = {}
    for vname, fn in variants.items():
        try:
            with poison_outputs(vname.startswith("trex")):
                outs, grads = run_with_grads(fn, inputs, case.needs_grad, grads_out, True)
            report[vname] = {
                "out_err": [rel_err(o, r) for o, r in zip(outs, ref_outs)],
                "grad_err": [rel_err(g, r) if g is not None else float("nan")
                             for g, r in zip(grads, ref_grads)],
            }
        except Exception as err:  # noqa: BLE001 - one variant failing must not stop the run
            report[vname] = {"error": f"{type(err).__name__}: {err}"[-3000:]}
    eager = report.get("eager", {})
    for vname, r in report.items():
        if "error" in r or vname == "eager" or "out_err" not in eager:
            continue
        r["ok"] = verdict(r, eager, case)
    return report


def verdict(r, eager, case) -> bool:
    """The contract's rule: within 3x the eager chain's error (bf16 inputs); outputs that come out of a
    TF32 contraction (mHC coefficients) get the TF32 bound 2e-3 instead, since eager runs it in fp32."""
    ok = True
    for i, (e, ref_e) in enumerate(zip(r["out_err"], eager["out_err"])):
        bound = max(3 * ref_e, 2e-3 if i in case.tf32_outputs else 0.0, 1e-6)
        ok &= (e == e) and e <= bound
    for e, ref_e in zip(r["grad_err"], eager["grad_err"]):
        bound = max(3 * ref_e, 2e-3 if case.tf32_outputs else 0.0, 1e-6)
        ok &= (e == e) and e <= bound
    return bool(ok)


class poison_outputs:
    """Makes codegen_triton's launcher fill every output with NaN before launching (TREX_TRITON_POISON)."""

    def __init__(self, on):
        self.on = on

    def __enter__(self):
        if self.on:
            self.prev = os.environ.get("TREX_TRITON_POISON")
            os.environ["TREX_TRITON_POISON"] = "1"

    def __exit__(self, *exc):
        if self.on:
            if self.prev is None:
                os.environ.pop("TREX_TRITON_POISON", None)
            else:
                os.environ["TREX_TRITON_POISON"] = self.prev


def time_variant(fn, inputs, needs_grad, backward, grads_out):
    import triton.testing
    args = [a.detach().requires_grad_(bool(backward and g)) for a, g in zip(inputs, needs_grad)]
    if backward:
        def step():
            for a in args:
                a.grad = None
            outs = as_tuple(fn(*args))
            torch.autograd.backward(outs, grads_out[:len(outs)])
    else:
        def step():
            fn(*args)
    with torch.no_grad() if not backward else _null():
        step()
        torch.cuda.synchronize()
        wall = triton.testing.do_bench(step, warmup=25, rep=200, return_mode="median")
        reps = 20
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(reps):
                step()
            torch.cuda.synchronize()
    # the anchor script's sum (shared/anchors/gpu_patterns.py), so the peers' numbers compare
    dev_us = sum(e.self_device_time_total for e in prof.key_averages() if e.self_device_time_total > 0)
    n_kernels = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
    return wall, dev_us / reps / 1e3, n_kernels / reps


class _null:
    def __enter__(self):
        return None

    def __exit__(self, *exc):
        return False


def _step_marked(compiled):
    """A reduce-overhead (CUDA graph) variant: each call starts a new step of the graph trees, so an
    earlier call's outputs (already compared or summed) may be overwritten."""
    def call(*args):
        torch.compiler.cudagraph_mark_step_begin()
        return compiled(*args)
    return call


def make_variants(case: Case, which: set) -> tuple[dict, dict]:
    """name -> callable; plus name -> reason for every variant left out."""
    variants, skipped = {}, {}
    chain = case.chain
    if "eager" in which:
        variants["eager"] = chain
    if "inductor" in which:
        variants["inductor"] = torch.compile(chain)
    if "liger" in which:
        if case.liger is not None:
            variants["liger"] = case.liger
        else:
            skipped["liger"] = case.liger_note or "Liger-Kernel has no such op"
    if "trex" in which:
        variants["trex"] = case.trex
    if "inductor_ro" in which:
        variants["inductor_ro"] = _step_marked(torch.compile(chain, mode="reduce-overhead"))
    if "trex_aten" in which:     # the trex-only path: AOTAutograd + trex's runner, op by op from Python
        variants["trex_aten"] = torch.compile(chain, backend="trex", options={"rest": "aten"})
    if "trex_compile" in which:  # the default on CUDA: trex's fusions, Inductor for the rest, kernels inlined
        variants["trex_compile"] = torch.compile(chain, backend="trex")
    if "trex_compile_triton_launcher" in which:  # the same with trex's kernels on Triton's own launcher
        variants["trex_compile_triton_launcher"] = torch.compile(chain, backend="trex", options={
            "inductor": {"static_launch_user_defined_triton_kernels": False}})
    if "trex_ro" in which:       # the same under CUDA graphs
        variants["trex_ro"] = _step_marked(torch.compile(chain, backend="trex", mode="reduce-overhead"))
    return variants, skipped


def git_commit() -> str:
    # the device tool's copy of the tree carries a .git of the session's first checkout: a commit
    # passed in TREX_COMMIT (git rev-parse HEAD where the run was launched) wins
    if os.environ.get("TREX_COMMIT"):
        return os.environ["TREX_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO_ROOT, capture_output=True, text=True,
                             timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO_ROOT,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "")
    except Exception:  # noqa: BLE001 - the device copy may carry no .git
        return os.environ.get("TREX_COMMIT", "unknown")


def atomic_write_json(path, obj):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


ALL_VARIANTS = ("eager", "inductor", "inductor_ro", "liger", "trex", "trex_aten", "trex_compile",
                "trex_compile_triton_launcher", "trex_ro")


def main(argv=None):
    p = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("--out", default=os.environ.get("OUT", "bench_out"),
                   help="a folder: gpu_patterns.json, h200_calibration.json and the sweep land in it ($OUT, else bench_out)")
    p.add_argument("--tokens", type=int, default=None, help="rows of the token-major inputs (default: the "
                   "--shapes preset's: 16384 for v4pro, 8192 for e2e)")
    p.add_argument("--shapes", default="v4pro", choices=sorted(SHAPES),
                   help="v4pro: DeepSeek-V4-Pro's widths (hidden 7168, SwiGLU 3072); e2e: bench/e2e_hf.py's model "
                   "(hidden 1024, SwiGLU 512 at top-2, 8 heads of 128)")
    p.add_argument("--sweep-only", action="store_true", help="calibrate and sweep the tilings, then stop "
                   "(no variants compiled or timed)")
    p.add_argument("--cases", default="", help="comma-separated case names (default: all)")
    p.add_argument("--variants", default=",".join(ALL_VARIANTS))
    p.add_argument("--no-timing", action="store_true", help="correctness only")
    p.add_argument("--rounds", type=int, default=3, help="timings of each variant, interleaved (median reported)")
    p.add_argument("--sweep", type=int, default=2, help="model-shortlist tilings per kernel to measure, besides "
                   "the hand-picked extras (0: no sweep, use the model's choice)")
    args = p.parse_args(argv)
    if args.tokens is None:
        args.tokens = SHAPES[args.shapes]["tokens"]
    if args.tokens < 1:
        p.error(f"--tokens must be >= 1, got {args.tokens}")
    if args.rounds < 1:
        p.error(f"--rounds must be >= 1, got {args.rounds}")
    # checked before anything runs: an unknown name once made a device run time nothing at all
    bad = sorted(set(filter(None, args.cases.split(","))) - set(SWEEP_CASES))
    if bad:
        p.error(f"--cases: unknown case(s) {bad}; choose from {sorted(SWEEP_CASES)}")
    bad = sorted(set(filter(None, args.variants.split(","))) - set(ALL_VARIANTS))
    if bad:
        p.error(f"--variants: unknown variant(s) {bad}; choose from {list(ALL_VARIANTS)}")
    if not torch.cuda.is_available():
        sys.exit("bench/gpu_patterns.py needs a CUDA GPU (torch.cuda.is_available() is False)")
    import triton

    import trex.compiler.backend  # noqa: F401 - registers backend="trex" in-process (no entry points there)
    import trex.codegen_triton
    trex.codegen_triton.register_cuda_target()

    os.makedirs(args.out, exist_ok=True)
    calib = calibrate("cuda")
    # start from the committed measured tilings (what the backend runs by default): --sweep 0 then
    # times exactly those, and a sweep only replaces the kernels it re-measures
    calib["measured_tilings"] = dict(trex.codegen_triton.calibration.current().get("measured_tilings") or {})
    atomic_write_json(os.path.join(args.out, "h200_calibration.json"), calib)
    trex.codegen_triton.calibration.use(calib)
    bw = calib["copy_bandwidth_bytes_per_s"]
    print(json.dumps(calib), flush=True)
    sweep = {}
    if args.sweep > 0:
        sweep = sweep_tilings(args.tokens, calib, args.sweep, lambda m: print(m, flush=True),
                              set(filter(None, args.cases.split(","))) or None, args.shapes)
        trex.codegen_triton.calibration.use(calib)
        atomic_write_json(os.path.join(args.out, "h200_calibration.json"), calib)
    if args.sweep_only:
        result = {"commit": git_commit(), "torch": torch.__version__, "triton": triton.__version__,
                  "device": torch.cuda.get_device_name(), "tokens": args.tokens, "shapes": args.shapes,
                  "calibration": calib, "tiling_sweep": sweep,
                  "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        atomic_write_json(os.path.join(args.out, "gpu_patterns_sweep.json"), result)
        return result

    # every variant compiles the same chain function (and again under no_grad): more than Dynamo's
    # default 8 entries per code object, after which it silently ran eager (run 7's forward rows)
    torch._dynamo.config.recompile_limit = 64
    which = set(args.variants.split(","))
    wanted = set(filter(None, args.cases.split(",")))
    cases = [c for c in build_cases(args.tokens, "cuda", args.shapes) if not wanted or c.name in wanted]
    rows, checks = [], {}
    for case in cases:
        print(f"== {case.name}", flush=True)
        variants, skipped = make_variants(case, which)
        checks[case.name] = check_case(case, variants, seed=1234 + len(rows))
        checks[case.name]["skipped"] = skipped
        print(json.dumps(checks[case.name]), flush=True)
        if args.no_timing:
            continue
        gen = torch.Generator(device="cuda").manual_seed(7)
        inputs = case.make_inputs(gen)
        grads_out = [torch.randn_like(o) for o in as_tuple(case.chain(*inputs))]
        for backward in (False, True):
            nbytes = case.fwd_bwd_bytes if backward else case.fwd_bytes
            floor_ms = nbytes / bw * 1e3
            row = {"case": f"{case.name}[{'x'.join(map(str, inputs[0].shape))}]", "pass":
                   "fwd+bwd" if backward else "fwd", "floor_bytes": nbytes, "floor_ms": floor_ms}
            # Rounds, the variants' order rotated each round: the sub-millisecond forward+backward rows are
            # host-bound in the autograd engine and one timing of each moved by up to 2x between runs
            # (NOTES_gpu.md, run 9); the median of the rounds and their spread rank two variants fairly.
            names = [v for v in variants if "error" not in checks[case.name].get(v, {})]
            for vname in variants:
                if vname not in names:
                    row[vname] = {"error": checks[case.name][vname]["error"]}
            samples: dict[str, list] = {v: [] for v in names}
            for r in range(args.rounds):
                k = r % max(1, len(names))
                for vname in names[k:] + names[:k]:
                    if vname in row:  # failed in an earlier round
                        continue
                    try:
                        samples[vname].append(time_variant(variants[vname], inputs, case.needs_grad, backward,
                                                           grads_out))
                    except Exception as err:  # noqa: BLE001
                        row[vname] = {"error": f"{type(err).__name__}: {err}"[-3000:]}
                        traceback.print_exc()
            for vname in names:
                if vname in row:
                    continue
                walls, devs, nks = (sorted(x[i] for x in samples[vname]) for i in range(3))
                wall, dev = statistics.median(walls), statistics.median(devs)
                row[vname] = {"wall_ms": wall, "dev_ms": dev, "kernels": statistics.median(nks),
                              "wall_ms_rounds": walls, "dev_ms_rounds": devs,
                              "roof_dev": floor_ms / dev, "roof_wall": floor_ms / wall}
            rows.append(row)
            print(json.dumps(row), flush=True)
            torch.cuda.empty_cache()
            partial = {"commit": git_commit(), "torch": torch.__version__, "device": torch.cuda.get_device_name(),
                       "calibration": calib, "checks": checks, "rows": rows, "tiling_sweep": sweep, "partial": True}
            atomic_write_json(os.path.join(args.out, "gpu_patterns.json"), partial)
    try:
        from trex.codegen_triton import kernel_report
        kernels = kernel_report()
    except Exception as err:  # noqa: BLE001
        kernels = {"error": repr(err)}
    result = {"commit": git_commit(), "torch": torch.__version__, "triton": triton.__version__,
              "device": torch.cuda.get_device_name(), "tokens": args.tokens, "shapes": args.shapes, "calibration": calib,
              "checks": checks, "rows": rows, "trex_kernels": kernels, "tiling_sweep": sweep,
              "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    atomic_write_json(os.path.join(args.out, "gpu_patterns.json"), result)
    print_table(result)
    return result


def print_sweep(sweep: dict):
    """One line per swept tiling: the kernel, the tiling's knobs, predicted and measured device us."""
    for prog, points in sweep.items():
        ok = [pt for pt in points if "measured_us" in pt]
        best = min((pt["measured_us"] for pt in ok), default=None)
        for pt in points:
            t = pt["tiling"]
            knobs = f"R={t['rows_per_tile']:<3d} w={t['num_warps']:<2d} P={t['programs'] or '-'}"
            got = f"{pt['measured_us']:8.1f}" if "measured_us" in pt else "   error"
            mark = " *" if best is not None and pt.get("measured_us") == best else ""
            print(f"sweep {prog:34s} {knobs:22s} predicted {pt['predicted_us']:7.1f} us  measured {got} us{mark}"
                  + (f"  {pt['error'][:80]}" if "error" in pt else ""))


def print_table(result):
    bw = result["calibration"]["copy_bandwidth_bytes_per_s"]
    print(f"\ncopy bw {bw / 1e12:.2f} TB/s  launch {result['calibration']['launch_overhead_wall_us']:.1f} us wall"
          f"  torch {result['torch']}  {result['device']}")
    print("per variant: device ms (fraction of roofline) / wall ms")
    names = [v for v in ALL_VARIANTS if any(v in r for r in result["rows"])]
    print(f"{'case':34s} {'pass':7s} {'floor':>6s} " + " ".join(f"{v:>20s}" for v in names))
    for r in result["rows"]:
        cells = []
        for v in names:
            c = r.get(v)
            if c is None:
                cells.append(f"{'-':>20s}")
            elif "error" in c:
                cells.append(f"{'error':>20s}")
            else:
                cells.append(f"{c['dev_ms']:6.3f}({100 * c['roof_dev']:3.0f}%)/{c['wall_ms']:6.3f}")
        print(f"{r['case']:34s} {r['pass']:7s} {r['floor_ms']:6.3f} " + " ".join(cells))
    for name, chk in result["checks"].items():
        bad = {v: r for v, r in chk.items() if isinstance(r, dict) and ("error" in r or r.get("ok") is False)}
        print(f"check {name}: " + ("all ok" if not bad else json.dumps(bad)[:600]))


if __name__ == "__main__":
    main()
