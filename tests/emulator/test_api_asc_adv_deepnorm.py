"""DeepNorm (adv_deepnorm.h) bit-exact against a numpy float32 model of asc-devkit's A2/A3 implementation steps
(deepnorm_common_impl.h, deepnorm_v220_impl.h): X1 = gx + x * alpha, mean = reduce(X1 * (1/oriH)), B = X1 - mean,
variance = reduce(B * B * (1/oriH)), rstd = 1 / sqrt(variance + eps), dst = B * rstd * gamma + beta, each step one
float op, half through float; reduce = RepeatReduceSum levels of 64-float pairwise trees over the first oriH columns
(isBasicBlock: the row's 64-column chunks added first). rstdLocal holds the variance, as the implementation writes it.
Tilings from the host GetDeepNormTilingInfo with several rounds and a tail, the sharedTmpBuffer and PopStackBuffer
forms, isReuseSrc (srcLocal left holding tmp tensor A), a second call with the tail-mutated tiling; several blocks,
outputs poisoned. Misuse raises naming the API; host GetDeepNormMaxMinTmpSize / GetDeepNormTilingInfo against
deepnorm_tiling_impl.cpp's formulas; asc-devkit's deepnorm example when the corpus is checked out."""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

BLOCKS = 3
F32 = np.float32
TWICE, SRC_OUT, ZERO_ONE_TMP, DST_IS_SRC, TMP_ON_DST, NON_BASIC_TILING = 1, 2, 4, 8, 16, 32

KERNEL = r'''
// trex tests (written for trex): DeepNorm with a tiling from the host GetDeepNormTilingInfo, in the forms kernels
// use: a sharedTmpBuffer of tmpBytes, or the PopStackBuffer form (tmpBytes 0). Each block takes rows x h elements
// (h the 32-byte-aligned row, oriH its valid length); mean / variance rows padded to mrow (a 32-byte multiple).
// Outputs are copied GM -> UB first, so the poison the test put in GM is what the API finds there.
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
using namespace AscendC;

template <class T, bool reuse, bool basic>
__aicore__ inline void Call(LocalTensor<T>& y, LocalTensor<T>& m, LocalTensor<T>& v, LocalTensor<T>& x,
                            LocalTensor<T>& gx, LocalTensor<T>& bt, LocalTensor<T>& gm, LocalTensor<uint8_t>* tmp,
                            float alpha, float eps, DeepNormTiling& t) {
  if (tmp) DeepNorm<T, reuse, basic>(y, m, v, x, gx, bt, gm, *tmp, static_cast<T>(alpha), static_cast<T>(eps), t);
  else DeepNorm<T, reuse, basic>(y, m, v, x, gx, bt, gm, static_cast<T>(alpha), static_cast<T>(eps), t);
}

template <class T, bool reuse, bool basic>
__aicore__ inline void DnBody(GM_ADDR x, GM_ADDR gx, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean,
                              GM_ADDR var, GM_ADDR xo, GM_ADDR tinfo, uint32_t rows, uint32_t h, uint32_t oriH,
                              uint32_t tmpBytes, float alpha, float eps, uint32_t tilingTmp, uint32_t mode) {
  const uint32_t b = GetBlockIdx(), n = rows * h, per = 32 / sizeof(T), mrow = (rows + per - 1) / per * per;
  GlobalTensor<T> xg, gxg, gg, bg, yg, mg, vg, xog;
  xg.SetGlobalBuffer((__gm__ T*)x + b * n, n);
  gxg.SetGlobalBuffer((__gm__ T*)gx + b * n, n);
  gg.SetGlobalBuffer((__gm__ T*)gamma, h);
  bg.SetGlobalBuffer((__gm__ T*)beta, h);
  yg.SetGlobalBuffer((__gm__ T*)y + b * n, n);
  mg.SetGlobalBuffer((__gm__ T*)mean + b * mrow, mrow);
  vg.SetGlobalBuffer((__gm__ T*)var + b * mrow, mrow);
  xog.SetGlobalBuffer((__gm__ T*)xo + b * n, n);
  TPipe pipe;
  TBuf<TPosition::VECCALC> bx, bgx, bgm, bbt, by, bm, bv, btmp;
  pipe.InitBuffer(bx, n * sizeof(T));
  pipe.InitBuffer(bgx, n * sizeof(T));
  pipe.InitBuffer(bgm, h * sizeof(T));
  pipe.InitBuffer(bbt, h * sizeof(T));
  pipe.InitBuffer(by, n * sizeof(T));
  pipe.InitBuffer(bm, mrow * sizeof(T));
  pipe.InitBuffer(bv, mrow * sizeof(T));
  if (tmpBytes) pipe.InitBuffer(btmp, tmpBytes);
  LocalTensor<T> lx = bx.Get<T>(), lgx = bgx.Get<T>(), lgm = bgm.Get<T>(), lbt = bbt.Get<T>(), ly = by.Get<T>(),
                 lm = bm.Get<T>(), lv = bv.Get<T>();
  DataCopy(lx, xg, n);
  DataCopy(lgx, gxg, n);
  DataCopy(lgm, gg, h);
  DataCopy(lbt, bg, h);
  DataCopy(ly, yg, n);
  DataCopy(lm, mg, mrow);
  DataCopy(lv, vg, mrow);
  PipeBarrier<PIPE_ALL>();
  optiling::DeepNormTiling tiling;
  ge::Shape shape({1, static_cast<int64_t>(rows), static_cast<int64_t>(h)});
  ge::Shape ori({1, static_cast<int64_t>(rows), static_cast<int64_t>(oriH)});
  uint32_t stackBytes = tmpBytes;
  if (tmpBytes == 0) {  // the stack form: size the tiling by what PopStackBuffer gives
    LocalTensor<uint8_t> st;
    PopStackBuffer<uint8_t, TPosition::LCM>(st);
    stackBytes = st.GetSize();
  }
  const bool tilingBasic = basic && !(mode & 32);
  if (!GetDeepNormTilingInfo(shape, ori, tilingTmp ? tilingTmp : stackBytes, sizeof(T), reuse, tilingBasic, tiling))
    trex_emu::Fail("test: GetDeepNormTilingInfo refused the shape");
  if (mode & 4) tiling.oneTmpSize = 0;
  GlobalTensor<uint32_t> ti;
  ti.SetGlobalBuffer((__gm__ uint32_t*)tinfo + b * 32, 32);
  uint32_t words[26];
  static_assert(sizeof(tiling) == sizeof(words), "DeepNormTiling is 26 words");
  memcpy(words, &tiling, sizeof(words));
  for (int i = 0; i < 26; ++i) ti.SetValue(i, words[i]);
  LocalTensor<uint8_t> tmp;
  if (tmpBytes) tmp = btmp.Get<uint8_t>();
  if (mode & 16) tmp = ly.template ReinterpretCast<uint8_t>();
  LocalTensor<uint8_t>* tp = tmpBytes ? &tmp : nullptr;
  LocalTensor<T>& dstT = (mode & 8) ? lx : ly;
  Call<T, reuse, basic>(dstT, lm, lv, lx, lgx, lbt, lgm, tp, alpha, eps, tiling);
  ti.SetValue(26, tiling.bshCurLength);
  ti.SetValue(27, tiling.bsCurLength);
  if (mode & 1) {  // again with the tiling the first call left, outputs re-poisoned from GM
    PipeBarrier<PIPE_ALL>();
    DataCopy(ly, yg, n);
    DataCopy(lm, mg, mrow);
    DataCopy(lv, vg, mrow);
    PipeBarrier<PIPE_ALL>();
    Call<T, reuse, basic>(ly, lm, lv, lx, lgx, lbt, lgm, tp, alpha, eps, tiling);
  }
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, (mode & 8) ? lx : ly, n);
  DataCopy(mg, lm, mrow);
  DataCopy(vg, lv, mrow);
  if (mode & 2) DataCopy(xog, lx, n);
}

@ENTRIES@

// Host helpers as a kernel-side probe: out[0..3] = max, min, ok(MaxMin), ok(TilingInfo), out[4..29] the tiling.
extern "C" __global__ __aicore__ void dn_host(GM_ADDR out, uint32_t b, uint32_t s, uint32_t h, uint32_t oriH,
                                              uint32_t typeSize, uint32_t stack, uint32_t reuse, uint32_t basic) {
  uint32_t mx = 0, mn = 0;
  ge::Shape shape({b, s, h}), ori({b, s, oriH});
  const bool ok = GetDeepNormMaxMinTmpSize(shape, typeSize, reuse != 0, basic != 0, mx, mn);
  AscendC::tiling::DeepNormTiling t{};
  const bool ok2 = GetDeepNormTilingInfo(shape, ori, stack, typeSize, reuse != 0, basic != 0, t);
  GlobalTensor<uint32_t> o;
  o.SetGlobalBuffer((__gm__ uint32_t*)out, 32);
  uint32_t words[26];
  memcpy(words, &t, sizeof(words));
  const uint32_t head[4] = {mx, mn, ok, ok2};
  for (int i = 0; i < 4; ++i) o.SetValue(i, head[i]);
  for (int i = 0; i < 26; ++i) o.SetValue(4 + i, words[i]);
}
'''

ENTRY = '''extern "C" __global__ __aicore__ void {name}(GM_ADDR x, GM_ADDR gx, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y,
    GM_ADDR mean, GM_ADDR var, GM_ADDR xo, GM_ADDR tinfo, uint32_t rows, uint32_t h, uint32_t oriH, uint32_t tmpBytes,
    float alpha, float eps, uint32_t tilingTmp, uint32_t mode) {{
  DnBody<{args}>(x, gx, gamma, beta, y, mean, var, xo, tinfo, rows, h, oriH, tmpBytes, alpha, eps, tilingTmp, mode);
}}
'''
KERNEL = KERNEL.replace("@ENTRIES@", "".join(ENTRY.format(name=n, args=a) for n, a in [
    ("dn_float", "float, false, false"), ("dn_float_reuse", "float, true, false"),
    ("dn_float_basic", "float, false, true"), ("dn_half", "half, false, false"), ("dn_half_basic", "half, false, true")]))

FIELDS = ("bLength sLength hLength originalHLength inputXSize meanVarSize numberOfTmpBuf meanTmpTensorPos "
          "meanTmpTensorSize varianceTmpTensorPos varianceTmpTensorSize tmpBufSize oneTmpSize firstTmpStartPos "
          "secondTmpStartPos thirdTmpStartPos loopRound inputRoundSize inputTailSize inputTailPos meanVarRoundSize "
          "meanVarTailSize meanVarTailPos bshCurLength bsCurLength lastDimValueBack").split()


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNEL, extra_flags=("-O1",))


# ---- the numpy model of the implementation's float steps ----
def tree64(v):
    while v.shape[-1] > 1:  # adjacent pairs, each sum rounded to float32
        v = v[..., 0::2] + v[..., 1::2]
    return v[..., 0]


def reduce_rows(q, ori):  # DeepNormReduceSumImpl: RepeatReduceSum levels over the first ori columns
    v = q[:, :ori]
    while v.shape[1] > 1:
        k = -(-v.shape[1] // 64)
        p = np.zeros((v.shape[0], k * 64), F32)
        p[:, :v.shape[1]] = v
        v = tree64(p.reshape(-1, k, 64))
    return v[:, 0]


def reduce_basic(q):  # DeepNormBasicBlockReduceSum: chunk c + acc for c = 1.., then one tree
    acc = q[:, :64].copy()
    for c in range(1, q.shape[1] // 64):
        acc = q[:, c * 64:(c + 1) * 64] + acc
    return tree64(acc)


def model(x, gx, g, b, alpha, eps, ori, basic, brcb_rows):
    """dst, mean, variance of the implementation's steps; brcb_rows: bool per row, the Brcb path's rows."""
    half = x.dtype == np.float16
    xf, gxf, gf, bf = (a.astype(F32) for a in (x, gx, g, b))
    a, e = (F32(np.float16(v)) if half else F32(v) for v in (alpha, eps))
    x1 = gxf + xf * a
    ldv = F32(1) / F32(ori)
    red = reduce_basic if basic else (lambda q: reduce_rows(q, ori))
    mean = red(x1 * ldv)
    bm = np.where(brcb_rows[:, None], x1 - (mean + F32(0))[:, None], x1 + (-mean)[:, None])
    var = red((bm * bm) * ldv)
    r = F32(1) / np.sqrt(var + e)
    y = np.where(brcb_rows[:, None], ((r + F32(0))[:, None] * bm) + F32(0), bm * r[:, None])
    out = (y * gf) + bf
    if half:
        return out.astype(np.float16), mean.astype(np.float16), var.astype(np.float16)
    return out, mean, var


def brcb_mask(rows, h, t, basic):  # IsBasicBlockTmp8HBetter per round: oneTmpSize % 8h == 0 and bs > h / 64
    m = np.zeros(rows, bool)
    if not basic or t["oneTmpSize"] % (8 * h):
        return m
    rr = t["meanVarRoundSize"]
    for r in range(t["loopRound"]):
        m[r * rr:(r + 1) * rr] = rr > h // 64
    tail = t["meanVarTailSize"]
    if tail:
        m[t["meanVarTailPos"]:] = tail > h // 64
    return m


def words_to_tiling(w):
    t = dict(zip(FIELDS, (int(v) & 0xFFFFFFFF for v in w[:26])))
    t["lastDimValueBack"] = float(np.array([t["lastDimValueBack"]], np.uint32).view(F32)[0])
    return t


def run(lib, kernel, dtype, rows, h, ori, tmp, alpha=0.75, eps=1e-5, tiling_tmp=0, mode=0, seed=0, **kw):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((BLOCKS, rows, h)) * 3).astype(dtype)
    gx = (rng.standard_normal((BLOCKS, rows, h)) * 2 + 0.5).astype(dtype)
    x[..., ori:] = 0  # the API page: padding columns hold 0
    gx[..., ori:] = 0
    g = (rng.random(h) + 0.5).astype(dtype)
    b = (rng.standard_normal(h)).astype(dtype)
    per = 32 // np.dtype(dtype).itemsize
    mrow = -(-rows // per) * per
    y = np.full((BLOCKS, rows, h), np.nan, dtype)
    mean = np.full((BLOCKS, mrow), np.nan, dtype)
    var = np.full((BLOCKS, mrow), np.nan, dtype)
    xo = np.full((BLOCKS, rows, h), np.nan, dtype)
    tinfo = np.zeros((BLOCKS, 32), np.uint32)
    xin = x.copy()
    lib.launch(kernel, BLOCKS, xin, gx, g, b, y, mean, var, xo, tinfo, rows, h, ori, tmp, alpha, eps, tiling_tmp,
               mode, **kw)
    return dict(x=x, gx=gx, g=g, b=b, y=y, mean=mean[:, :rows], var=var[:, :rows], xo=xo,
                t=words_to_tiling(tinfo[0]), after=(int(tinfo[0, 26]), int(tinfo[0, 27])), alpha=alpha, eps=eps)


def want(r, ori, basic):
    rows, h = r["x"].shape[1:]
    m = brcb_mask(rows, h, r["t"], basic)
    return [model(r["x"][k], r["gx"][k], r["g"], r["b"], r["alpha"], r["eps"], ori, basic, m) for k in range(BLOCKS)]


def bits(a):
    a = np.ascontiguousarray(a)
    return a.view(np.uint32 if a.dtype == F32 else np.uint16)


def assert_exact(r, ori, basic):
    for k, (y, mean, var) in enumerate(want(r, ori, basic)):
        assert not np.isnan(r["y"][k]).any(), f"block {k}: dst rows left unwritten"
        np.testing.assert_array_equal(bits(r["y"][k]), bits(y), err_msg=f"block {k} dst")
        np.testing.assert_array_equal(bits(r["mean"][k]), bits(mean), err_msg=f"block {k} mean")
        np.testing.assert_array_equal(bits(r["var"][k]), bits(var), err_msg=f"block {k} variance")


@pytest.mark.parametrize("rows, h, ori, tmp, tiling_tmp", [
    (13, 64, 64, 0, 0),                      # stack form: one round
    (13, 64, 64, 0, 3 * 3 * 64 * 4 + 2 * 64),  # stack form, 3-row rounds: 4 rounds + 1-row tail
    (7, 96, 90, 4 * (3 * 2 * 96), 0),        # h padded beyond originalHLength, 2-row rounds + tail
    (5, 200, 200, 4 * (3 * 200 * 2) + 64, 0),  # rows of more than 64 floats: two reduce levels, tail
    (9, 8, 5, 2048, 0),                      # short rows (8 floats), one round
])
def test_deepnorm_float(lib, rows, h, ori, tmp, tiling_tmp):
    r = run(lib, "dn_float", F32, rows, h, ori, tmp, tiling_tmp=tiling_tmp)
    t = r["t"]
    assert t["loopRound"] >= 1 and t["inputRoundSize"] == t["meanVarRoundSize"] * h
    if tiling_tmp or tmp:
        assert t["loopRound"] * t["meanVarRoundSize"] + t["meanVarTailSize"] == rows
    assert_exact(r, ori, False)


@pytest.mark.parametrize("rows, h, ori, tmp", [(9, 32, 32, 0), (11, 48, 40, 4 * (3 * 2 * 48 + 2 * 16)),
                                               (6, 144, 130, 0)])
def test_deepnorm_half(lib, rows, h, ori, tmp):
    r = run(lib, "dn_half", np.float16, rows, h, ori, tmp, alpha=1.5, eps=1e-3)
    assert_exact(r, ori, False)
    if tmp:  # mean / variance kept in float in the tmp buffer ahead of A, B, C
        t = r["t"]
        assert (t["meanTmpTensorPos"], t["varianceTmpTensorPos"], t["firstTmpStartPos"]) == (0, 16, 32)
        assert t["meanVarTailSize"] == 1 and t["loopRound"] == 5


@pytest.mark.parametrize("kernel, dtype, rows, h, tmp", [
    ("dn_float_basic", F32, 16, 128, 0),                       # 8h-multiple tmp tensors: the Brcb path
    ("dn_float_basic", F32, 24, 64, 4 * 3 * 8 * 64),           # 8-row rounds, Brcb (8 > 1)
    ("dn_float_basic", F32, 16, 192, 4 * 3 * 5 * 192),         # 5-row rounds (no 8 fit): for-loop path, tail
    ("dn_half_basic", np.float16, 16, 128, 0),
    ("dn_half_basic", np.float16, 8, 64, 4 * (3 * 8 * 64 + 2 * 8)),
])
def test_deepnorm_basic_block(lib, kernel, dtype, rows, h, tmp):
    r = run(lib, kernel, dtype, rows, h, h, tmp)
    t = r["t"]
    if rows == 24:
        assert t["oneTmpSize"] == 8 * 64 and t["loopRound"] == 3
    if h == 192:
        assert t["oneTmpSize"] == 5 * 192 and t["meanVarTailSize"] == 1
        assert not brcb_mask(rows, h, t, True).any()
    else:
        assert brcb_mask(rows, h, t, True).all()
    assert_exact(r, h, True)


def test_reuse_src_leaves_tmp_a_in_src(lib):
    rows, h = 7, 64
    r = run(lib, "dn_float_reuse", F32, rows, h, h, 4 * 2 * 3 * 64, mode=SRC_OUT)
    t = r["t"]
    assert t["numberOfTmpBuf"] == 2 and (t["firstTmpStartPos"], t["secondTmpStartPos"]) == (0, 192)
    assert_exact(r, h, False)
    # srcLocal is tmp tensor A: y * gamma of the last round at [0, oneTmpSize) (tail round over the last full one)
    for k in range(BLOCKS):
        x, gx = r["x"][k], r["gx"][k]
        out, _, _ = model(x, gx, r["g"], np.zeros_like(r["b"]), r["alpha"], r["eps"], h, False, np.zeros(rows, bool))
        yg = out.reshape(-1)  # beta 0: y * gamma + 0 == y * gamma
        src = x.reshape(-1).copy()
        one, lr, tail = t["oneTmpSize"], t["loopRound"], t["inputTailSize"]
        src[:one] = yg[(lr - 1) * one:lr * one]
        src[:tail] = yg[t["inputTailPos"]:t["inputTailPos"] + tail]
        np.testing.assert_array_equal(bits(r["xo"][k].reshape(-1)), bits(src))


def test_reuse_src_in_place_dst(lib):  # dst == src, the documented reuse: one round
    r = run(lib, "dn_float_reuse", F32, 5, 64, 64, 4 * 2 * 5 * 64, mode=DST_IS_SRC)
    assert r["t"]["loopRound"] == 1 and r["t"]["inputTailSize"] == 0
    assert_exact(r, 64, False)
    # several rounds: the later rounds' tmp tensor A would land on the first round's results
    with pytest.raises(EmulatorError, match=r"DeepNorm: dstLocal is srcLocal with isReuseSrc and 3 rounds"):
        run(lib, "dn_float_reuse", F32, 5, 64, 64, 4 * 2 * 2 * 64, mode=DST_IS_SRC)


def test_second_call_runs_rounds_with_the_tail_lengths(lib):
    rows, h = 10, 64  # 3-row rounds: 3 rounds + a 1-row tail; the tiling comes back with bsCurLength 1
    r = run(lib, "dn_float", F32, rows, h, h, 4 * 3 * 3 * 64, mode=TWICE)
    assert r["after"] == (64, 1)
    done = np.zeros(rows, bool)
    done[[0, 3, 6, 9]] = True  # each round's first row, and the tail
    for k, (y, mean, var) in enumerate(want(r, h, False)):
        assert np.isnan(r["y"][k][~done]).all() and np.isnan(r["mean"][k][~done]).all()
        np.testing.assert_array_equal(bits(r["y"][k][done]), bits(y[done]))
        np.testing.assert_array_equal(bits(r["mean"][k][done]), bits(mean[done]))
        np.testing.assert_array_equal(bits(r["var"][k][done]), bits(var[done]))


def test_original_h_1_leaves_mean_unwritten(lib):  # the reduce loop never runs: meanLocal keeps its poison
    r = run(lib, "dn_float", F32, 4, 8, 1, 0)
    assert np.isnan(r["mean"]).all() and np.isnan(r["var"]).all()


@pytest.mark.parametrize("kernel, rows, h, tmp, tiling_tmp, mode, message", [
    ("dn_float", 6, 64, 2048, 4096, 0, r"DeepNorm: stackBuffer.GetSize \(512\) should be >= tiling.tmpBufSize \(1024\)"),
    ("dn_float", 6, 64, 2048, 0, ZERO_ONE_TMP, r"In DeepNorm, Reduce axis is too long"),
    ("dn_float", 6, 64, 2048, 0, DST_IS_SRC, r"DeepNorm: dstLocal is srcLocal; with isReuseSrc false"),
    ("dn_float", 6, 64, 2048, 1536, TMP_ON_DST, r"DeepNorm: sharedTmpBuffer UB bytes \[\d+, \d+\) overlap dstLocal"),
    ("dn_float_basic", 6, 64, 0, 0, NON_BASIC_TILING,
     r"In DeepNorm, when isBasicBlock is true, input must have hLength % 64 = 0.*bLength \* sLength 6\)"),
])
def test_misuse_raises(lib, kernel, rows, h, tmp, tiling_tmp, mode, message):
    with pytest.raises(EmulatorError, match=message):
        run(lib, kernel, F32, rows, h, h, tmp, tiling_tmp=tiling_tmp, mode=mode)


# ---- host helpers ----
def host(lib, b, s, h, ori, ts, stack, reuse=0, basic=0):
    out = np.zeros(32, np.uint32)
    lib.launch("dn_host", 1, out, b, s, h, ori, ts, stack, reuse, basic)
    return [int(v) for v in out[:4]], words_to_tiling(out[4:])


def align(v, u):
    return -(-v // u) * u


def sizes_ref(b, s, h, ts, reuse):
    k = 2 if reuse and ts == 4 else 3
    bs = align(b * s * 4, 32)
    return k * align(b * s * h * 4, 32) + 2 * bs, k * align(h * 4, 32) + 2 * bs


def tiling_ref(b, s, h, ori, ts, stack, reuse, basic):  # deepnorm_tiling_impl.cpp GetDeepNormTilingInfo
    x, mv = b * s * h, b * s
    k = 2 if reuse and ts == 4 else 3
    mts = align(mv, 8)
    mvt = 0 if ts == 4 else 2 * mts
    buf = stack // 4
    one = (buf - mvt) // k // h * h
    one = min(one, x)
    if basic and one // (8 * h) > 0:
        one = one // (8 * h) * (8 * h)
    tail = x % one
    return dict(bLength=b, sLength=s, hLength=h, originalHLength=ori, inputXSize=x, meanVarSize=mv,
                numberOfTmpBuf=k, meanTmpTensorPos=0, meanTmpTensorSize=mts, varianceTmpTensorPos=mts,
                varianceTmpTensorSize=mts, tmpBufSize=buf, oneTmpSize=one, firstTmpStartPos=mvt,
                secondTmpStartPos=mvt + one, thirdTmpStartPos=mvt + 2 * one, loopRound=x // one, inputRoundSize=one,
                inputTailSize=tail, inputTailPos=x - tail, meanVarRoundSize=one // h, meanVarTailSize=tail // h,
                meanVarTailPos=mv - tail // h, bshCurLength=one, bsCurLength=one // h,
                lastDimValueBack=float(F32(1) / F32(ori)))


@pytest.mark.parametrize("b, s, h, ori, ts, stack, reuse, basic", [
    (2, 7, 64, 60, 4, 3000, 0, 0),
    (1, 5, 48, 48, 2, 2000, 0, 0),
    (3, 3, 200, 200, 4, 9000, 1, 0),      # float reuse: two tmp tensors
    (2, 3, 32, 17, 2, 100000, 1, 0),      # half ignores isReuseSource; oneTmpSize capped at b*s*h
    (2, 8, 128, 128, 4, 3 * 9 * 128 * 4, 0, 1),  # basic: 9 rows fit, 8 taken
    (1, 8, 64, 64, 2, 4 * (3 * 5 * 64 + 16), 0, 1),  # basic: 5 rows fit (no 8): 5 kept
])
def test_host_tiling(lib, b, s, h, ori, ts, stack, reuse, basic):
    (mx, mn, ok, ok2), t = host(lib, b, s, h, ori, ts, stack, reuse, basic)
    assert (mx, mn) == sizes_ref(b, s, h, ts, reuse) and ok == 1 and ok2 == 1
    assert t == tiling_ref(b, s, h, ori, ts, stack, reuse, basic)


@pytest.mark.parametrize("args, ok, ok2", [
    ((1, 3, 60, 60, 4, 4096), 1, 0),            # h not 32-byte aligned
    ((1, 3, 64, 64, 4, 64), 1, 0),              # stack below the minimum
    ((1, 3, 64, 64, 4, 4096, 0, 1), 0, 0),      # basic block needs b*s % 8 == 0
    ((1, 8, 128, 120, 4, 65536, 0, 1), 1, 0),   # basic block needs originalH == H
    ((1, 3, 64, 0, 4, 4096), 1, 0),             # originalH 0
    ((1, 2, 2048, 2048, 4, 200000), 1, 0),      # H > 2040
])
def test_host_refusals(lib, args, ok, ok2):
    (_, _, got_ok, got_ok2), t = host(lib, *args)
    assert (got_ok, got_ok2) == (ok, ok2)
    if not got_ok2:
        assert t["hLength"] == 0  # the struct left as it was


HOST_SNIPPET = r'''
#include <cstdio>
#include "tiling/tiling_api.h"
int main() {
  uint32_t mx = 7, mn = 7;
  optiling::DeepNormTiling t;
  const bool a = AscendC::GetDeepNormMaxMinTmpSize(AscendC::TensorShape(std::vector<int64_t>{4, 16, 64}), 4, false,
                                                   true, mx, mn);
  const bool b = AscendC::GetDeepNormTilingInfo(AscendC::TensorShape(std::vector<int64_t>{4, 16, 64}),
                                                AscendC::TensorShape(std::vector<int64_t>{4, 16, 64}), mn, 4, false,
                                                true, t);
  std::printf("%d %d %u %u %u %u %u\n", a, b, mx, mn, t.oneTmpSize, t.loopRound, t.inputTailSize);
  const bool c = AscendC::GetDeepNormTilingInfo(AscendC::TensorShape(std::vector<int64_t>{1, 3, 60}),
                                                AscendC::TensorShape(std::vector<int64_t>{1, 3, 70}), 65536, 4, false,
                                                false, t);
  std::printf("%d\n", c);
  return 0;
}
'''


@pytest.mark.skipif(not compiler_available(), reason="no C++ compiler")
def test_host_side_include_order_and_logs(tmp_path):
    # An op_host file's include order (include_host/ first), as op projects compile host tiling code.
    src = tmp_path / "h.cpp"
    src.write_text(HOST_SNIPPET)
    incs = [INCLUDE_DIR.parent / "include_host", INCLUDE_DIR]
    subprocess.run([find_compiler(), "-std=c++17", *[f"-I{d}" for d in incs], str(src), "-o", str(tmp_path / "h")],
                   check=True)
    p = subprocess.run([str(tmp_path / "h")], capture_output=True, text=True, check=True)
    # asc-devkit's example shape: max = 3 * 16384 + 2 * 256, min = 3 * 256 + 2 * 256; one 1-row tmp tensor at min
    # (oneTmpSize 64 < 8h, so not rounded to 8 rows): 64 rounds, no tail
    assert p.stdout.split("\n")[:2] == ["1 1 49664 1280 64 64 0", "0"]
    assert "[ERROR] [DeepNorm][GetDeepNormTilingInfo] The last axis H must be 32B aligned!" in p.stderr
    assert "The range of originH is 70, must be (0, 60]!" in p.stderr


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
def test_asc_devkit_example_passes():
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api/02_normalization/deepnorm")
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
