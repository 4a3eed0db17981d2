"""The LayerNorm family (adv_norm.h) as asc-devkit's A2/A3 impl computes it (layernorm_common_impl.h /
layernorm_common_basic_impl.h, normalize_common_impl.h, layernormgrad_common_impl.h, layernormgradbeta_common_impl.h):
a numpy float32 model of the impl's steps (LayerNormReduceSumImpl's fold-sum, ReduceSumImpl's level-sum, the Adds /
Sqrt / Div rstd, half through float) must match bit for bit. LayerNorm in the LayerNormTiling form (mean / variance,
rounds + tail, the tiling's tail sizes written back, float isReuseSource's x) and the separate form (mean / rstd,
padded rows zeroed in x, padding columns left as stale lanes: the UB fill byte), Normalize, LayerNormGrad (+ its
float isReuseSource side effects) and LayerNormGradBeta (the impl's originalHLength row stride); sharedTmpBuffer and
PopStackBuffer forms; several blocks, odd shapes, poisoned outputs; misuse is an EmulatorError naming the API; the
host Get*MaxMinTmpSize / tiling helpers against the A2/A3 tiling impls' formulas; asc-devkit's layernorm examples
when the corpus is here."""
import os
from pathlib import Path

import numpy as np
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"
BLOCKS = 2
F32 = np.float32
NAN = float("nan")


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_norm_api.cpp", extra_flags=("-O1",))


# ------------------------------------------------------------------ float32 models of the impl's reductions
def tree64(acc):  # WholeReduceSum over 64 lanes (inactive ones 0): adjacent pairs, level by level
    while acc.shape[-1] > 1:
        acc = acc[..., 0::2] + acc[..., 1::2]
    return acc[..., 0]


def fold_sum(v):  # LayerNormReduceSumImpl: 64-float blocks added onto block 0, then one WholeReduceSum
    rows, n = v.shape
    acc = np.zeros((rows, 64), F32)
    acc[:, :min(n, 64)] = v[:, :min(n, 64)]
    if n > 64:
        for r in range(1, n >> 6):
            acc = v[:, 64 * r:64 * r + 64] + acc
        tail, base = n & 63, n & ~63
        acc[:, :tail] = v[:, base:base + tail] + acc[:, :tail]
    return tree64(acc)


def level_sum(v):  # LayerNormGrad's ReduceSumImpl: 64-float repeats, each a tree, until one value is left
    while v.shape[1] > 1:
        k = -(-v.shape[1] // 64)
        p = np.zeros((v.shape[0], k * 64), F32)
        p[:, :v.shape[1]] = v
        v = tree64(p.reshape(v.shape[0], k, 64))
    return v[:, 0]


def f32(t):
    return t.float().numpy().astype(F32)


def same(got, want):
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert np.array_equal(got, want, equal_nan=True), (np.argwhere(~((got == want) | (np.isnan(got) & np.isnan(want))))[:5], got.ravel()[:4], want.ravel()[:4])


def as_np(t, dtype):
    return t.numpy().astype(np.float16 if dtype == torch.float16 else F32)


# ------------------------------------------------------------------ LayerNorm, LayerNormTiling form
def ln_ref(x, g, b, ori_h, eps, dtype):
    k = F32(1) / F32(ori_h)
    e = F32(np.float16(eps)) if dtype == torch.float16 else F32(eps)
    xf = f32(x)
    mean = fold_sum(xf * k)
    d = xf - mean[:, None]
    var = fold_sum((d * d) * k)
    r = F32(1) / np.sqrt(var + e)
    yg = (r[:, None] * d) * f32(g)
    y = yg + f32(b)
    return y, mean, var, yg


def run_ln(lib, kernel, dtype, rows, h, ori_h, tmp, tiling_bytes=0, eps=1e-4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(BLOCKS, rows, h, generator=gen) * 20 + 3).to(dtype)
    x[..., ori_h:] = 0
    g = (torch.rand(h, generator=gen) * 4 - 2).to(dtype)
    b = (torch.rand(h, generator=gen) * 10 - 5).to(dtype)
    mv = -(-rows // 16) * 16
    y = torch.full((BLOCKS, rows, h), NAN, dtype=dtype)
    mean = torch.full((BLOCKS, mv), NAN, dtype=dtype)
    var = torch.full((BLOCKS, mv), NAN, dtype=dtype)
    info = torch.zeros(4, dtype=torch.int32)
    xa = x.clone()
    lib.launch(kernel, BLOCKS, xa, g, b, y, mean, var, info, rows, h, ori_h, tmp, eps, tiling_bytes)
    return x, g, b, y, mean, var, xa, [int(v) for v in info]


@pytest.mark.parametrize("rows, h, ori_h, tmp", [
    (13, 16, 16, 0),            # stack form: one round
    (13, 72, 72, 3 * 4 * 72 * 4),  # 4 rows a round: 3 rounds + a 1-row tail; 72 = one 64-block + 8 folded
    (6, 128, 120, 0),           # two whole 64-blocks; padded H (zeros), 1 / originalHLength
    (5, 200, 200, 3 * 4 * 200 * 2),  # 3 blocks + 8 tail; 2 rows a round
])
def test_layernorm_float(lib, rows, h, ori_h, tmp):
    x, g, b, y, mean, var, xa, info = run_ln(lib, "ln_float", torch.float32, rows, h, ori_h, tmp)
    for blk in range(BLOCKS):
        wy, wm, wv, _ = ln_ref(x[blk], g, b, ori_h, 1e-4, torch.float32)
        same(y[blk].numpy(), wy)
        same(mean[blk, :rows].numpy(), wm)
        same(var[blk, :rows].numpy(), wv)
    assert torch.isnan(mean[:, rows:]).all()  # rows past the tiling untouched
    assert torch.equal(xa, x)  # inputX kept without isReuseSource
    loops, tail, before, after = info
    assert after == (tail if tail else before)  # LayerNormND writes the tail's size into the caller's tiling
    if tmp:
        assert (loops, tail) == (rows * h // (tmp // 12 // h * h), rows * h % (tmp // 12 // h * h))
    # against the textbook formula in float64
    xd = x.double()
    m = xd[..., :ori_h].mean(-1, keepdim=True) if ori_h == h else xd.sum(-1, keepdim=True) / ori_h
    torch.testing.assert_close(mean[:, :rows].double(), m[..., 0], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("tmp", [0, 2 * 3 * 40 * 4])  # one round; 3 rows a round (2 tmp tensors) + a 1-row tail
def test_layernorm_float_reuse_source(lib, tmp):
    rows, h = 7, 40
    x, g, b, y, mean, var, xa, _ = run_ln(lib, "ln_float_reuse", torch.float32, rows, h, h, tmp, seed=3)
    per = rows if tmp == 0 else tmp // 4 // 2 // h
    for blk in range(BLOCKS):
        wy, wm, wv, yg = ln_ref(x[blk], g, b, h, 1e-4, torch.float32)
        same(y[blk].numpy(), wy)
        same(mean[blk, :rows].numpy(), wm)
        # the impl's tempTensorA is inputX from its start: each round leaves its rows' (rstd * (x - mean)) * gamma
        # there, the last round's on top; rows no round wrote keep x
        want = x[blk].numpy().copy()
        for start in range(0, rows, per):
            n = min(per, rows - start)
            want[:n] = yg[start:start + n]
        same(xa[blk].numpy(), want)


@pytest.mark.parametrize("rows, h, tmp", [(9, 32, 0), (11, 80, 2 * 16 * 4 + 3 * 3 * 80 * 4)])
def test_layernorm_half(lib, rows, h, tmp):
    x, g, b, y, mean, var, xa, _ = run_ln(lib, "ln_half", torch.float16, rows, h, h, tmp, eps=1e-3, seed=1)
    for blk in range(BLOCKS):
        wy, wm, wv, _ = ln_ref(x[blk], g, b, h, 1e-3, torch.float16)
        same(y[blk].numpy(), wy.astype(np.float16))
        same(mean[blk, :rows].numpy(), wm.astype(np.float16))
        same(var[blk, :rows].numpy(), wv.astype(np.float16))


def test_layernorm_tmp_below_tiling_raises(lib):
    with pytest.raises(EmulatorError, match=r"LayerNorm: sharedTmpBuffer holds 192 floats \(768 B\); "
                                             r"tiling.tmpBufSize is 384"):
        run_ln(lib, "ln_float", torch.float32, 4, 32, 32, 768, tiling_bytes=1536)


def test_layernorm_half_reuse_source_raises(lib):
    with pytest.raises(EmulatorError, match=r"LayerNorm: isReuseSource must be false for half inputs"):
        run_ln(lib, "ln_half_reuse", torch.float16, 4, 32, 32, 0)


def test_layernorm_outputs_sharing_a_tensor_raise(lib):
    with pytest.raises(EmulatorError, match=r"LayerNorm: outputMean and outputVariance overlap in UB"):
        lib.launch("ln_alias", 1, torch.zeros(4 * 32), 4, 32)


# ------------------------------------------------------------------ separate form and Normalize
def normalize_ref(xf, mean, var, g, b, r, eps, no_gamma=False, no_beta=False):
    rstd = F32(1) / np.sqrt(var + F32(eps))
    t = (xf[:, :r] - mean[:, None]) * rstd[:, None]
    if not no_gamma:
        t = t * g[:r]
    if not no_beta:
        t = t + b[:r]
    return t, rstd


def sep_inputs(dtype, udtype, a, r, rp, seed):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(BLOCKS, a, rp, generator=gen) * 7 - 2).to(dtype)  # padding columns NOT zero: the impl zeroes
    g = (torch.rand(rp, generator=gen) * 3 - 1).to(udtype)
    b = (torch.rand(rp, generator=gen) * 6 - 3).to(udtype)
    return x, g, b


def run_sep(lib, kernel, x, g, b, a, r, rp, tmp, eps, mean=None, var=None, tiling_bytes=0):
    a8 = -(-a // 8) * 8
    y = torch.full_like(x, NAN)
    mo = torch.full((BLOCKS, a8), NAN) if mean is None else mean.clone()
    ro = torch.full((BLOCKS, a8), NAN)
    vi = torch.zeros(BLOCKS, a8) if var is None else var
    xa = x.clone()
    lib.launch(kernel, BLOCKS, xa, g, b, y, mo, ro, vi, a, r, rp, tmp, eps, tiling_bytes)
    return y, mo, ro, xa


def sep_ref(x, g, b, r, eps, dtype, with_var=False):
    rp = x.shape[-1]
    xa = x.clone()
    if r != rp:
        xa[:, r:] = xa[:, r:] * 0  # LayerNormPreProc's multiply by the 1/0 row mask, in T
    xf = f32(xa)
    k = F32(1) / F32(r)
    mean = fold_sum(xf * k)
    d = xf.copy()
    d[:, :r] = d[:, :r] + (-mean[:, None])
    var = fold_sum((d * d) * k)
    if dtype == torch.float32:
        xf = xf + F32(0)  # Normalize's CastSrc for float is Adds(x, 0)
    y, rstd = normalize_ref(xf, mean, var, f32(g), f32(b), r, eps)
    return (y, mean, rstd, xa, var) if with_var else (y, mean, rstd, xa)


@pytest.mark.parametrize("kernel, dtype, udtype, a, r, rp, tmp", [
    ("sep_float", torch.float32, torch.float32, 32, 32, 32, 0),       # asc-devkit's layernorm_v2 shape, stack form
    ("sep_float", torch.float32, torch.float32, 13, 50, 56, 4 * (16 + 2 * 3 * 56)),  # 3 rows a round + tail of 1
    ("sep_float", torch.float32, torch.float32, 5, 100, 104, 4096),   # fold-sum with a partial second block
    ("sep_half_float", torch.float16, torch.float32, 6, 40, 48, 0),   # half x, float gamma / beta
    ("sep_half_half", torch.float16, torch.float16, 7, 64, 64, 2048),
])
def test_layernorm_separate(lib, kernel, dtype, udtype, a, r, rp, tmp):
    x, g, b = sep_inputs(dtype, udtype, a, r, rp, seed=a)
    y, mean, rstd, xa = run_sep(lib, kernel, x, g, b, a, r, rp, tmp, 1e-5)
    for blk in range(BLOCKS):
        wy, wm, wr, wx = sep_ref(x[blk], g, b, r, 1e-5, dtype)
        if dtype == torch.float32:
            wy = wy + F32(0)
        same(y[blk, :, :r].numpy(), wy.astype(as_np(y, dtype).dtype))
        same(mean[blk, :a].numpy(), wm)
        same(rstd[blk, :a].numpy(), wr)
        same(xa[blk].numpy(), wx.numpy())  # inputX's padding columns zeroed in place
    assert torch.isnan(y[..., r:]).all()  # stale tmp lanes in the impl: the UB fill byte (NaN) here
    assert torch.isnan(mean[:, a:]).all() and torch.isnan(rstd[:, a:]).all()
    # textbook layer norm in float64 over the real columns
    xd = x[..., :r].double()
    ref = (xd - xd.mean(-1, keepdim=True)) / torch.sqrt(xd.var(-1, unbiased=False, keepdim=True) + 1e-5)
    ref = ref * g[:r].double() + b[:r].double()
    tol = 2e-2 if dtype == torch.float16 else 1e-4
    torch.testing.assert_close(y[..., :r].double(), ref, rtol=tol, atol=tol)


def test_layernorm_separate_no_beta(lib):
    a, r, rp = 9, 24, 24
    x, g, b = sep_inputs(torch.float32, torch.float32, a, r, rp, seed=4)
    y, mean, rstd, _ = run_sep(lib, "sep_float_nobeta", x, g, b, a, r, rp, 4096, 1e-5)
    for blk in range(BLOCKS):
        _, wm, wr, _, wv = sep_ref(x[blk], g, b, r, 1e-5, torch.float32, with_var=True)
        want, _ = normalize_ref(f32(x[blk]) + F32(0), wm, wv, f32(g), f32(b), r, 1e-5, no_beta=True)
        same(y[blk].numpy(), want + F32(0))
        same(mean[blk, :a].numpy(), wm)
        same(rstd[blk, :a].numpy(), wr)


@pytest.mark.parametrize("kernel, dtype, tmp", [("norm_float", torch.float32, 0), ("norm_half_half", torch.float16, 512)])
def test_normalize(lib, kernel, dtype, tmp):
    a, r, rp = 11, 30, 32
    x, g, b = sep_inputs(dtype, dtype, a, r, rp, seed=7)
    gen = torch.Generator().manual_seed(8)
    mean = torch.randn(BLOCKS, 16, generator=gen)
    var = torch.rand(BLOCKS, 16, generator=gen) * 5
    y, mo, rstd, xa = run_sep(lib, kernel, x, g, b, a, r, rp, tmp, 1e-3, mean=mean, var=var)
    no_gamma = tmp != 0  # the tmp-buffer kernel runs NormalizeConfig isNoGamma
    for blk in range(BLOCKS):
        xf = f32(x[blk]) + F32(0) if dtype == torch.float32 else f32(x[blk])
        want, wr = normalize_ref(xf, mean[blk, :a].numpy(), var[blk, :a].numpy(), f32(g), f32(b), r, 1e-3,
                                 no_gamma=no_gamma)
        want = want + F32(0) if dtype == torch.float32 else want.astype(np.float16)
        same(y[blk, :, :r].numpy(), want)
        same(rstd[blk, :a].numpy(), wr)
    assert torch.isnan(y[..., r:]).all()
    assert torch.equal(xa, x) and torch.equal(mo, mean)  # inputs untouched


@pytest.mark.parametrize("kernel, a, r, rp, tmp, message", [
    ("norm_half_half", 11, 30, 32, 128, r"Normalize: Stackbuffer size is too small!"),  # half gamma: 2R + 2R floats
    ("sep_float", 4, 50, 50, 4096, r"LayerNorm: The para.rLengthWithPadding is 50, should be 32B aligned"),
    ("sep_float", 4, 32, 32, 96, r"LayerNorm: sharedTmpBuffer size must > LayerNormMinTmpSize!"),
])
def test_separate_misuse_raises(lib, kernel, a, r, rp, tmp, message):
    dtype = torch.float16 if "half" in kernel else torch.float32
    x, g, b = sep_inputs(dtype, dtype, a, r, rp, seed=1)
    with pytest.raises(EmulatorError, match=message):
        run_sep(lib, kernel, x, g, b, a, r, rp, tmp, 1e-3, var=torch.ones(BLOCKS, a8(a)))


# ------------------------------------------------------------------ LayerNormGrad / LayerNormGradBeta
def grad_ref(dy, x, var, mean, g, eps, ori_h):
    k1, k2 = F32(1) / F32(ori_h), F32(2) / F32(ori_h)
    x1 = dy * g
    x2 = x - mean[:, None]
    t = var + F32(eps)
    r15 = F32(1) / np.sqrt((t * t) * t)
    pd_var = level_sum(((x2 * r15[:, None]) * x1) * F32(-0.5))
    r05 = F32(1) / np.sqrt(var + F32(eps))
    res = x2 * r05[:, None]
    x3 = x1 * r05[:, None]
    pd_mean = level_sum(x3 * F32(-1))
    s2 = level_sum(x2 * F32(-2)) * k1
    pd_mean = pd_mean + pd_var * s2
    e = (pd_var * k2)[:, None] * x2 + (pd_mean * k1)[:, None]
    return e + x3, res, e, x2


def beta_ref(dy, res, rounds, oh):
    """rounds: (element offset, rows) as the tiling runs them; rows read oh apart within a round."""
    flat_dy, flat_res = dy.ravel(), res.ravel()
    m = flat_dy * flat_res
    g = bsum = None
    for off, rows in rounds:
        for i in range(rows):
            mi, di = m[off + i * oh: off + i * oh + oh], flat_dy[off + i * oh: off + i * oh + oh]
            if g is None:
                g, bsum = mi + F32(0), di + F32(0)
            else:
                g, bsum = mi + g, di + bsum
    return g, bsum


def grad_inputs(dtype, rows, h, seed):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(BLOCKS, rows, h, generator=gen) * 5).to(dtype)
    dy = (torch.randn(BLOCKS, rows, h, generator=gen) * 3).to(dtype)
    mv = -(-rows // 16) * 16
    mean = torch.zeros(BLOCKS, mv)
    var = torch.ones(BLOCKS, mv)
    mean[:, :rows] = x.float().mean(-1)
    var[:, :rows] = x.float().var(-1, unbiased=False)
    g = (torch.rand(h, generator=gen) * 2 - 0.5).to(dtype)
    return dy, x, var.to(dtype), mean.to(dtype), g


def run_grad(lib, kernel, dy, x, var, mean, g, rows, h, ori_h, tmp, eps, which, res=None):
    dtype = x.dtype
    hp = -(-h // 16) * 16
    pdx = torch.full_like(x, NAN)
    res = torch.full_like(x, NAN) if res is None else res.clone()
    pdg = torch.full((BLOCKS, hp), NAN, dtype=dtype)
    pdb = torch.full((BLOCKS, hp), NAN, dtype=dtype)
    dya, xa = dy.clone(), x.clone()
    lib.launch(kernel, BLOCKS, dya, xa, var, mean, g, pdx, res, pdg, pdb, rows, h, ori_h, tmp, eps, which)
    return pdx, res, pdg, pdb, dya, xa


def grad_tiling_rounds(rows, h, stack, type_size, reuse):
    k = 9 if type_size == 2 else (4 if reuse else 6)
    one = stack // 4 // k // h * h
    per = 8 if type_size == 4 else 16
    one = -(-(one // h) // per) * per * h
    return one


@pytest.mark.parametrize("kernel, dtype, rows, h, tmp", [
    ("grad_float", torch.float32, 64, 16, 0),                 # asc-devkit's example shape per block, stack form
    ("grad_float", torch.float32, 21, 16, 6 * 16 * 16 * 4),   # the min tmp size: 16 rows a round + tail of 5
    ("grad_float", torch.float32, 5, 136, 0),                 # 136 floats: two reduce levels
    ("grad_half", torch.float16, 9, 32, 0),
])
def test_layernorm_grad_and_beta(lib, kernel, dtype, rows, h, tmp):
    dy, x, var, mean, g = grad_inputs(dtype, rows, h, seed=rows)
    pdx, res, pdg, pdb, dya, xa = run_grad(lib, kernel, dy, x, var, mean, g, rows, h, h, tmp, 1e-4, 3)
    eps = F32(np.float16(1e-4)) if dtype == torch.float16 else F32(1e-4)
    for blk in range(BLOCKS):
        wpdx, wres, _, _ = grad_ref(f32(dy[blk]), f32(x[blk]), f32(var[blk])[:rows], f32(mean[blk])[:rows], f32(g),
                                    eps, h)
        out_t = np.float16 if dtype == torch.float16 else F32
        same(pdx[blk].numpy(), wpdx.astype(out_t))
        same(res[blk].numpy(), wres.astype(out_t))
        # GradBeta on the (rounded) resForGamma; oh == h, so the rows are plain
        wg, wb = beta_ref(f32(dy[blk]), f32(res[blk]), [(0, rows)], h)
        same(pdg[blk, :h].numpy(), wg.astype(out_t))
        same(pdb[blk, :h].numpy(), wb.astype(out_t))
    assert torch.equal(dya, dy) and torch.equal(xa, x)
    assert torch.isnan(pdg[:, h:]).all()
    # the numpy golden of asc-devkit's layernorm example, float64
    if dtype == torch.float32:
        xd, dyd, gd = x.double(), dy.double(), g.double()
        m, v = mean[:, :rows, None].double(), var[:, :rows, None].double()
        xl = dyd * gd
        pv = (-0.5 * xl * (xd - m) * (v + 1e-4) ** -1.5).sum(-1, keepdim=True)
        pm = (-xl / torch.sqrt(v + 1e-4)).sum(-1, keepdim=True) + pv / h * (-2.0 * (xd - m)).sum(-1, keepdim=True)
        want = pm / h + pv * 2.0 / h * (xd - m) + xl / torch.sqrt(v + 1e-4)
        torch.testing.assert_close(pdx.double(), want, rtol=1e-4, atol=1e-3)


def test_layernorm_grad_float_reuse_source(lib):
    rows, h = 6, 24
    dy, x, var, mean, g = grad_inputs(torch.float32, rows, h, seed=11)
    pdx, res, _, _, dya, xa = run_grad(lib, "grad_float_reuse", dy, x, var, mean, g, rows, h, h, 0, 1e-4, 1)
    for blk in range(BLOCKS):
        wpdx, wres, e, x2 = grad_ref(f32(dy[blk]), f32(x[blk]), f32(var[blk])[:rows], f32(mean[blk])[:rows], f32(g),
                                     F32(1e-4), h)
        same(pdx[blk].numpy(), wpdx)
        same(res[blk].numpy(), wres)
        same(dya[blk].numpy(), e)   # x1Tensor is inputDy: it ends holding pdVar * 2/H * (x - mean) + pdMean / H
        same(xa[blk].numpy(), x2)   # x2Tensor is inputX: x - mean


def test_layernorm_grad_beta_float_reuse_source(lib):
    # GradBeta<float, isReuseSource>: the products dy * resForGamma go to resForGamma from its start each round.
    rows, h, tmp = 10, 16, 2 * 4 * 16 * 4  # 8 rows a round, then a 2-row tail
    gen = torch.Generator().manual_seed(6)
    dy = torch.randn(BLOCKS, rows, h, generator=gen)
    res = torch.randn(BLOCKS, rows, h, generator=gen)
    z = torch.zeros(BLOCKS, 16)
    _, ra, pdg, pdb, _, _ = run_grad(lib, "grad_float_reuse", dy, torch.zeros_like(dy), z, z, torch.ones(h), rows, h,
                                     h, tmp, 1e-4, 2, res=res)
    for blk in range(BLOCKS):
        m = f32(dy[blk]) * f32(res[blk])
        wg, wb = beta_ref(f32(dy[blk]), f32(res[blk]), [(0, rows)], h)
        same(pdg[blk, :h].numpy(), wg)
        same(pdb[blk, :h].numpy(), wb)
        want = f32(res[blk]).copy()
        want[:8] = m[:8]
        want[:2] = m[8:]
        same(ra[blk].numpy(), want)


def test_layernorm_grad_beta_original_h_stride(lib):
    # originalHLength < hLength: the impl's ReduceSumFirstN reads rows originalHLength apart inside a round, and only
    # the first originalHLength columns of pdGamma / pdBeta are written.
    rows, h, oh, tmp = 10, 16, 12, 2 * 4 * 16 * 4  # 128 floats: 8 rows a round, then a 2-row tail
    gen = torch.Generator().manual_seed(2)
    dy = torch.randn(BLOCKS, rows, h, generator=gen)
    res = torch.randn(BLOCKS, rows, h, generator=gen)
    z = torch.zeros(BLOCKS, 16)
    _, _, pdg, pdb, _, _ = run_grad(lib, "grad_float", dy, torch.zeros_like(dy), z, z, torch.ones(h), rows, h, oh,
                                    tmp, 1e-4, 2, res=res)
    one = tmp // 4 // h * h
    rounds = [(0, one // h)] + [(i * one, one // h) for i in range(1, rows * h // one)]
    if rows * h % one:
        rounds.append((rows * h - rows * h % one, rows * h % one // h))
    for blk in range(BLOCKS):
        wg, wb = beta_ref(f32(dy[blk]), f32(res[blk]), rounds, oh)
        same(pdg[blk, :oh].numpy(), wg)
        same(pdb[blk, :oh].numpy(), wb)
    assert torch.isnan(pdg[:, oh:]).all() and torch.isnan(pdb[:, oh:]).all()


def test_layernorm_grad_tmp_too_small_raises(lib):
    dy, x, var, mean, g = grad_inputs(torch.float32, 4, 16, seed=1)
    with pytest.raises(EmulatorError, match=r"LayerNormGrad: the tiling's \w+ \[\d+, \d+\) floats lies past the "
                                             r"sharedTmpBuffer's 100 floats \(400 B\)"):
        run_grad(lib, "grad_float", dy, x, var, mean, g, 4, 16, 16, 400, 1e-4, 1)


# ------------------------------------------------------------------ host helpers
def a32(n):
    return -(-n // 32) * 32


def a8(n):
    return -(-n // 8) * 8


def fbits(v):
    return int(np.array([v], F32).view(np.uint32)[0])


def host(lib, b, s, h, oh, ts, stack, reuse=0, norm_u=None):
    out = torch.zeros(140, dtype=torch.int32)
    lib.launch("ln_host", 1, out, b, s, h, oh, ts, stack, reuse, norm_u or ts)
    return [int(v) & 0xFFFFFFFF for v in out]


def ln_tiling_ref(b, s, h, oh, ts, stack, reuse):
    n, mv = b * s * h, b * s
    k = 2 if reuse and ts == 4 else 3
    mts = a8(mv)
    mvt = 0 if ts == 4 else 2 * mts
    tb = stack // 4
    one = min((tb - mvt) // k // h * h, n)
    tail = n % one
    return [b, s, h, oh, n, mv, k, 0, mts, mts, mts, tb, one, mvt, mvt + one, mvt + 2 * one, n // one, one, tail,
            n - tail, one // h, tail // h, mv - tail // h, one, one // h, fbits(F32(1) / F32(oh))]


def norm_sizes(a, r, tu, tt):
    rp = -(-r // (32 // tt)) * (32 // tt)
    mx = 2 * a32(rp * 4) + 2 * a32(a8(a) * rp * 4)
    mn = max(a32(a * 4), (2 if tu == 4 else 4) * a32(rp * 4))
    return mx, mn


def sep_ref_host(a, r, ts, stack):
    rp = -(-r // (32 // ts)) * (32 // ts)
    mvl = a32(a * 4)
    mx, mn = 2 * a32(a * rp * 4) + mvl, 2 * a32(rp * 4) + mvl
    nmx, nmn = norm_sizes(a, r, ts, ts)
    mn = nmn + mvl if mn - mvl <= nmn else mn
    mx = nmx + mvl if mx - mvl <= nmx else mx
    n, vs, tb = a * rp, a8(a), stack // 4
    one = min((tb - vs) // 2 // rp * rp, n)
    if one <= 0:  # the tiling impl returns without writing
        return [mx, mn]
    tail = n % one
    t = [a, r, 0, 0, 0, 0, n, a, 2, 0, vs, tb, one, vs, vs + one, 0, n // one, one, tail, n - tail, one // rp,
         tail // rp, a - tail // rp, one, one // rp, fbits(F32(1) / F32(r))]
    return [mx, mn] + t


def grad_ref_host(b, s, h, oh, ts, stack, reuse):
    n, hh = b * s * h, h * h
    k = 9 if ts == 2 else (4 if reuse else 6)
    sizes = [k * max(n, hh) * ts, min(n, hh) * k * ts]
    one = grad_tiling_rounds(b * s, h, stack, ts, reuse)
    noh = one // h
    pdv, pdm = one, 2 * one
    x1 = x2 = 0
    x3 = pdm + one
    if not (reuse and ts == 4):
        x1, x2, x3 = pdm + one, pdm + 2 * one, pdm + 3 * one
    t0 = t1 = t2 = 0
    if ts == 2:
        t0, t1, t2 = x3 + one, x3 + 2 * one, x3 + 3 * one
    t = [stack, b, s, h, oh, one, noh, n // one, n % one, n % one // h, 0, one, pdv, one, pdm, one, x1, one, x2, one,
         x3, one, t0, one, t1, one, t2, one, fbits(F32(1) / F32(oh)), fbits(F32(2) / F32(oh))]
    return sizes + t


def beta_ref_host(b, s, h, oh, ts, stack):
    bsh, bs = b * s * h, b * s
    sizes = [(4 if ts == 2 else 2) * bsh * 4, (4 if ts == 2 else 2) * h * 4]
    sb = stack // 4
    one, nb = sb, 1
    if ts == 2:
        nb, one = 2, (sb - 2 * h) // 2
    one = min(one // h * h, bsh)
    tail = bsh % one
    pos = [0, h, 2 * h, 2 * h + one] if ts == 2 else [0, 0, 0, 0]
    return sizes + [sb, b, s, h, oh, bsh, bs, one, nb, bsh // one, tail, bsh - tail, tail // h, one, one // h] + pos + [0]


@pytest.mark.parametrize("b, s, h, oh, ts, stack, reuse", [
    (2, 32, 16, 16, 4, 6144, 0),     # asc-devkit's layernorm example (the three APIs' largest minimum)
    (1, 7, 64, 60, 4, 5000, 0),
    (3, 5, 48, 40, 2, 20000, 0),
    (2, 9, 32, 32, 4, 4096, 1),
])
def test_host_sizes_and_tilings(lib, b, s, h, oh, ts, stack, reuse):
    v = host(lib, b, s, h, oh, ts, stack, reuse)
    k = 2 if reuse and ts == 4 else 3
    mv = a32(b * s * 4)
    assert v[0:2] == [k * a32(b * s * h * 4) + 2 * mv, k * a32(h * 4) + 2 * mv]
    assert v[2:28] == ln_tiling_ref(b, s, h, oh, ts, stack, reuse)
    assert v[28:56] == sep_ref_host(b * s, oh, ts, stack)
    assert v[56:58] == list(norm_sizes(b * s, oh, ts, ts))
    assert v[58:90] == grad_ref_host(b, s, h, oh, ts, stack, reuse)
    assert v[90:112] == beta_ref_host(b, s, h, oh, ts, stack) and v[112:] == [0] * 28


def test_host_layernorm_v2_example_and_normalize_half_gamma(lib):
    # layernorm_v2: [32, 32] float, min tmp as the example takes it; Normalize's min with half gamma (4R).
    v = host(lib, 1, 32, 32, 32, 4, 0)
    # max: 2 * 4096 + 128 is below Normalize's 8448 + 128; min: 2 * 128 + 128 ties Normalize's 256 + 128
    assert v[28:30] == [8576, 384] == sep_ref_host(32, 32, 4, 0)[:2]
    assert v[56:58] == [2 * 128 + 2 * 32 * 32 * 4, 256]
    assert host(lib, 1, 8, 64, 64, 2, 0, norm_u=2)[56:58] == list(norm_sizes(8, 64, 2, 2))
    assert norm_sizes(8, 64, 2, 2)[1] == 4 * 256


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
@pytest.mark.parametrize("example", ["layernorm", "layernorm_v2"])
def test_asc_devkit_example_passes(example):
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api/02_normalization" / example)
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
