"""Prototype, outside the Kernel IR: the mHC pre forward with ONE DRAM read of x, by splitting D across programs
and exchanging the per-row partial projections between them (issue 17's lever "one HBM read of each row tile
per pass, the second touch from L2"). It measures what that design gives on the H200 before the IR grows
the two things it needs (a per-tile exchange with an atomic counter and a spin wait; programs that own a
column slice); it is not a trex kernel.

Design (bench/NOTES_gpu.md, session 8): a persistent grid of G x Q programs, all resident (one per SM).
Program (g, q) owns column slice g (D/G columns of each of the n streams) of row tiles q, q+Q, ... (R rows):
  pass 1: sum of squares and the 24-wide projection of its slice (bf16 x against fn = hi + lo in bf16);
  exchange: its partial [R, 33] to a scratch slot, a release increment of the tile's counter, a spin until
          the counter reaches G, then the G partials summed in a fixed order (deterministic);
  every program computes the coefficients and the Sinkhorn iterations of the tile (registers);
  pass 2: layer_input of its slice from the same x slice, read 1-2 us earlier: the working set is
          G*Q programs x R x n x D/G x 2 bytes (30 MB at R=64, G=16, Q=8), inside the 60 MB L2.
Under Triton's interpreter (programs run one after another) only G = 1 can run (a program waits only for
itself): --cpu-check runs that, in fp32, against the op's reference.

  python3 bench/h200_h17_splitd.py [--tokens 16384]      # GPU: correctness vs fp64, device time per config
  TRITON_INTERPRET=1 python3 bench/h200_h17_splitd.py --cpu-check
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch
import triton
import triton.language as tl

PART_W = tl.constexpr(33)   # 24 projections (padded to 32) + the sum of squares


@triton.jit
def splitd_mhc_fwd(x_ptr, whi_ptr, wlo_ptr, scale_ptr, base_ptr, li_ptr, post_ptr, comb_ptr, part_ptr, cnt_ptr,
                   T, hc_eps, rms_eps, ITERS: tl.constexpr, NS: tl.constexpr, D: tl.constexpr, G: tl.constexpr,
                   Q: tl.constexpr, R: tl.constexpr, BK: tl.constexpr, BF16: tl.constexpr):
    pid = tl.program_id(0)
    g = pid % G
    q = pid // G
    DS: tl.constexpr = D // G
    K: tl.constexpr = NS * D
    hc_eps = tl.cast(hc_eps, tl.float32)
    rms_eps = tl.cast(rms_eps, tl.float32)
    n_tiles = (T + R - 1) // R
    offs_r = tl.arange(0, R)
    offs_m = tl.arange(0, 32)
    mask_m = offs_m < 24
    offs_c = tl.arange(0, BK)
    o4 = tl.arange(0, 4)
    s0 = tl.load(scale_ptr)
    s1 = tl.load(scale_ptr + 1)
    s2 = tl.load(scale_ptr + 2)
    bp = tl.load(base_ptr + o4)
    bq = tl.load(base_ptr + 4 + o4)
    bc = tl.load(base_ptr + 8 + o4[:, None] * 4 + o4[None, :])
    t = q
    while t < n_tiles:
        rows = t * R + offs_r
        rmask = rows < T
        h = tl.zeros([R, 32], dtype=tl.float32)
        ss = tl.zeros([R], dtype=tl.float32)
        for s in tl.static_range(NS):
            for c0 in range(0, DS, BK):
                cols = s * D + g * DS + c0 + offs_c
                xb = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=rmask[:, None], other=0.0)
                xf = xb.to(tl.float32)
                ss += tl.sum(xf * xf, axis=1)
                whi = tl.load(whi_ptr + offs_m[:, None] * K + cols[None, :], mask=mask_m[:, None], other=0.0)
                if BF16:
                    wlo = tl.load(wlo_ptr + offs_m[:, None] * K + cols[None, :], mask=mask_m[:, None], other=0.0)
                    h = tl.dot(xb, tl.trans(whi), h)
                    h = tl.dot(xb, tl.trans(wlo), h)
                else:
                    h = tl.dot(xf, tl.trans(whi), h, input_precision="ieee")
        # exchange the tile's partials: store, CTA barrier, one release increment, spin (acquire), barrier
        mine = part_ptr + (t * G + g) * (R * PART_W)
        tl.store(mine + offs_r[:, None] * PART_W + offs_m[None, :], h)
        tl.store(mine + offs_r * PART_W + 32, ss)
        tl.debug_barrier()
        tl.atomic_add(cnt_ptr + t, 1, sem="release")
        while tl.atomic_add(cnt_ptr + t, 0, sem="acquire") < G:
            pass
        tl.debug_barrier()
        hp = tl.zeros([R, 4], dtype=tl.float32)
        hq = tl.zeros([R, 4], dtype=tl.float32)
        hc = tl.zeros([R, 4, 4], dtype=tl.float32)
        sst = tl.zeros([R], dtype=tl.float32)
        for gg in tl.static_range(G):
            b = part_ptr + (t * G + gg) * (R * PART_W)
            hp += tl.load(b + offs_r[:, None] * PART_W + o4[None, :], cache_modifier=".cg")
            hq += tl.load(b + offs_r[:, None] * PART_W + 4 + o4[None, :], cache_modifier=".cg")
            hc += tl.load(b + offs_r[:, None, None] * PART_W + 8 + o4[None, :, None] * 4 + o4[None, None, :],
                          cache_modifier=".cg")
            sst += tl.load(b + offs_r * PART_W + 32, cache_modifier=".cg")   # L2: other SMs wrote it
        r = tl.rsqrt(sst / K + rms_eps)
        pre = tl.sigmoid(s0 * (hp * r[:, None]) + bp[None, :]) + hc_eps
        post = 2.0 * tl.sigmoid(s1 * (hq * r[:, None]) + bq[None, :])
        a = s2 * (hc * r[:, None, None]) + bc[None, :, :]
        e = tl.exp(a - tl.max(a, axis=2)[:, :, None])
        m = e / tl.sum(e, axis=2)[:, :, None] + hc_eps
        m = m / (tl.sum(m, axis=1)[:, None, :] + hc_eps)
        for _ in range(ITERS - 1):
            m = m / (tl.sum(m, axis=2)[:, :, None] + hc_eps)
            m = m / (tl.sum(m, axis=1)[:, None, :] + hc_eps)
        first = g == 0
        tl.store(post_ptr + rows[:, None] * 4 + o4[None, :], post, mask=rmask[:, None] & first)
        tl.store(comb_ptr + rows[:, None, None] * 16 + o4[None, :, None] * 4 + o4[None, None, :], m,
                 mask=rmask[:, None, None] & first)
        # pass 2: the same slice again (L2), layer_input of the slice
        for c0 in range(0, DS, BK):
            acc = tl.zeros([R, BK], dtype=tl.float32)
            for s in tl.static_range(NS):
                cols = s * D + g * DS + c0 + offs_c
                xf = tl.load(x_ptr + rows[:, None] * K + cols[None, :], mask=rmask[:, None], other=0.0).to(tl.float32)
                ps = tl.sum(tl.where(o4[None, :] == s, pre, 0.0), axis=1)
                acc += xf * ps[:, None]
            tl.store(li_ptr + rows[:, None] * D + (g * DS + c0 + offs_c)[None, :], acc.to(li_ptr.dtype.element_ty),
                     mask=rmask[:, None])
        t += Q


def splitd_forward(x, fn, scale, base, iters, hc_eps, rms_eps, G=16, Q=8, R=64, BK=64, num_warps=8, num_stages=2):
    """x [T, n, d] (n = 4), fn [24, n*d], scale [3], base [24] -> (layer_input, post, comb) as trex::mhc_pre."""
    T, n, d = x.shape
    assert n == 4 and d % G == 0 and (d // G) % BK == 0, (n, d, G, BK)
    bf16 = x.dtype == torch.bfloat16 and os.environ.get("TRITON_INTERPRET") != "1"
    fn = fn.float().contiguous()
    whi = fn.bfloat16() if bf16 else fn
    wlo = (fn - whi.float()).bfloat16() if bf16 else fn
    n_tiles = triton.cdiv(T, R)
    part = torch.empty(n_tiles * G * R * PART_W.value, device=x.device, dtype=torch.float32)
    cnt = torch.zeros(n_tiles, device=x.device, dtype=torch.int32)
    li = torch.empty(T, d, device=x.device, dtype=x.dtype)
    post = torch.empty(T, n, device=x.device, dtype=torch.float32)
    comb = torch.empty(T, n, n, device=x.device, dtype=torch.float32)
    splitd_mhc_fwd[(G * Q,)](x.contiguous(), whi, wlo, scale.float().contiguous(), base.float().contiguous(), li, post,
                             comb, part, cnt, T, hc_eps, rms_eps, ITERS=iters, NS=n, D=d, G=G, Q=Q, R=R, BK=BK, BF16=bf16,
                             num_warps=num_warps, num_stages=num_stages)
    return li, post, comb


def _inputs(T, d, device, seed=0):
    g = torch.Generator(device=device).manual_seed(seed)
    n, m = 4, 24
    x = torch.randn(T, n, d, device=device, generator=g).bfloat16()
    fn = torch.randn(m, n * d, device=device, generator=g) * (n * d) ** -0.5
    return x, fn, torch.rand(3, device=device, generator=g) + 0.5, torch.randn(m, device=device, generator=g) * 0.1


def _rel(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--cpu-check", action="store_true", help="G = 1 under TRITON_INTERPRET=1, fp32 dots, small shape")
    args = ap.parse_args(argv)
    from trex.compiler import registry
    ref_fn = registry.fused_ops()["mhc_pre"].reference
    if args.cpu_check:
        if os.environ.get("TRITON_INTERPRET") != "1":
            print("bench/h200_h17_splitd.py: --cpu-check needs TRITON_INTERPRET=1", file=sys.stderr)
            return 2
        x, fn, sc, b = _inputs(37, 64, "cpu")
        got = splitd_forward(x, fn, sc, b, 3, 1e-6, 1e-6, G=1, Q=2, R=16, BK=16, num_warps=4)
        ref = ref_fn(x.double(), fn.double(), sc.double(), b.double(), 3, 1e-6, 1e-6)
        errs = [_rel(o, r) for o, r in zip(got, ref)]
        print(json.dumps({"cpu_check_rel_err": errs}))
        return 0 if errs[0] < 1e-2 and max(errs[1:]) < 1e-5 else 1
    if not torch.cuda.is_available():
        print("bench/h200_h17_splitd.py: needs a CUDA GPU (--cpu-check runs on the CPU)", file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import gpu_patterns as G_
    T, d, iters, eps = args.tokens, 7168, 20, 1e-6
    x, fn, sc, b = _inputs(T, d, "cuda")
    ref = ref_fn(x.double(), fn.double(), sc.double(), b.double(), iters, eps, eps)
    out = {"tokens": T, "points": []}
    # ptxas (sm_90a, on the CPU): the first has no spills; the others spill 0.1-2 KB per thread
    for G, Q, R, BK, w, st in ((16, 8, 64, 32, 4, 2), (16, 8, 64, 64, 8, 2), (16, 8, 32, 64, 4, 3),
                               (14, 9, 64, 128, 8, 2), (28, 4, 128, 64, 8, 2)):
        pt = {"G": G, "Q": Q, "R": R, "BK": BK, "num_warps": w, "num_stages": st}
        try:
            t0 = time.time()
            got = splitd_forward(x, fn, sc, b, iters, eps, eps, G, Q, R, BK, w, st)
            torch.cuda.synchronize()
            pt["first_call_s"] = time.time() - t0
            pt["rel_err"] = [_rel(o, r) for o, r in zip(got, ref)]
            pt["us"] = G_.graph_ms(lambda: splitd_forward(x, fn, sc, b, iters, eps, eps, G, Q, R, BK, w, st)) * 1e3
        except Exception as e:  # noqa: BLE001 - recorded
            pt["error"] = f"{type(e).__name__}: {e}"[:300]
        out["points"].append(pt)
        print(json.dumps(pt), flush=True)
    if os.environ.get("OUT"):
        path = os.path.join(os.environ["OUT"], "h17_splitd.json")
        with open(path + ".tmp", "w") as f:
            json.dump(out, f, indent=1)
        os.replace(path + ".tmp", path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
