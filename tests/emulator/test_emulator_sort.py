"""The sort family on Atlas A2/A3 (trex_emu/sort.h; asc-devkit 高阶API/排序操作 Sort, MrgSort, Concat, Extract,
GetSortLen, GetSortOffset; 基础API 排序组合 MrgSort (MrgSort4Info), GetMrgSortResult; 索引计算 Arange /
ArithProgression), against torch: Sort<T, true> = a stable descending sort of the whole input (Sort32 groups merged
four at a time, as dav_c220's DoFullSort does), Sort<T, false> = each group of 32 on its own, MrgSort = a merge that
keeps list order for equal scores and with isExhaustedSuspension stops at the first emptied list. Several blocks,
half and float, ties, +-inf, NaN (ranked largest, as Sort32), counts that are not a multiple of 32 (padded with
-inf the way cann-ops' moe_init_routing_v2 pads with MIN_FP32), poisoned outputs; the misuses the pages and the
implementation's checks name raise."""
import numpy as np
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError

MAXN = 17 * 32          # elements a block sorts at most
MAXS = 1024             # structures of the merge inputs a block holds
SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;
constexpr int32_t MAXN = 17 * 32;
constexpr int32_t MAXS = 1024;

template <class T, bool kFull>
__aicore__ inline void SortWith(LocalTensor<T>& sorted, LocalTensor<T>& concat, LocalTensor<uint32_t>& idx,
                                LocalTensor<T>& tmp, int32_t r) {
  Sort<T, kFull>(sorted, concat, idx, tmp, r);
}

// Sort `count` scores of x (padded to whole Sort32 repeats with -inf), indices block * 1000 + i, then Extract.
template <class T>
__aicore__ inline void SortBody(GM_ADDR x, GM_ADDR outv, GM_ADDR outi, int32_t count, int32_t full) {
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inQ;
  TQue<TPosition::VECOUT, 1> vQ, iQ;
  TBuf<TPosition::VECCALC> idxBuf, sortedBuf, tmpBuf;
  pipe.InitBuffer(inQ, 1, MAXN * sizeof(T));
  pipe.InitBuffer(vQ, 1, MAXN * sizeof(T));
  pipe.InitBuffer(iQ, 1, MAXN * 4);
  pipe.InitBuffer(idxBuf, MAXN * 4);
  pipe.InitBuffer(sortedBuf, MAXN * 8);
  pipe.InitBuffer(tmpBuf, MAXN * 8);
  GlobalTensor<T> xg, vg;
  GlobalTensor<uint32_t> ig;
  xg.SetGlobalBuffer((__gm__ T*)x + GetBlockIdx() * MAXN, MAXN);
  vg.SetGlobalBuffer((__gm__ T*)outv + GetBlockIdx() * MAXN, MAXN);
  ig.SetGlobalBuffer((__gm__ uint32_t*)outi + GetBlockIdx() * MAXN, MAXN);
  LocalTensor<T> s = inQ.AllocTensor<T>();
  DataCopy(s, xg, MAXN);
  inQ.EnQue(s);
  s = inQ.DeQue<T>();
  const int32_t n = (count + 31) / 32 * 32;
  for (int32_t i = count; i < n; ++i) s.SetValue(i, (T)(-1.0f / 0.0f));
  LocalTensor<uint32_t> idx = idxBuf.Get<uint32_t>();
  ArithProgression<int32_t>(idx.ReinterpretCast<int32_t>(), (int32_t)(GetBlockIdx() * 1000), 1, n);
  LocalTensor<T> concat;
  LocalTensor<T> tmp = tmpBuf.Get<T>(GetSortLen<T>(n));
  Concat(concat, s, tmp, n / 32);
  LocalTensor<T> sorted = sortedBuf.Get<T>(GetSortLen<T>(n));
  if (full) SortWith<T, true>(sorted, concat, idx, tmp, n / 32);
  else SortWith<T, false>(sorted, concat, idx, tmp, n / 32);
  LocalTensor<T> v = vQ.AllocTensor<T>();
  LocalTensor<uint32_t> iv = iQ.AllocTensor<uint32_t>();
  Extract(v, iv, sorted, n / 32);
  vQ.EnQue(v); iQ.EnQue(iv);
  v = vQ.DeQue<T>(); iv = iQ.DeQue<uint32_t>();
  DataCopy(vg, v, (uint32_t)n);
  DataCopy(ig, iv, (uint32_t)n);
  vQ.FreeTensor(v); iQ.FreeTensor(iv); inQ.FreeTensor(s);
}
extern "C" __global__ __aicore__ void sort_float(GM_ADDR x, GM_ADDR v, GM_ADDR i, int32_t count, int32_t full) {
  SortBody<float>(x, v, i, count, full);
}
extern "C" __global__ __aicore__ void sort_half(GM_ADDR x, GM_ADDR v, GM_ADDR i, int32_t count, int32_t full) {
  SortBody<half>(x, v, i, count, full);
}

// Merge up to four sorted lists of structures. desc (per block, int32): off[4] (in structures), len[4],
// validBit, mode (0: MrgSort<T, false>, 1: MrgSort<T, true>, 2: basic MrgSort with MrgSort4Info{len, false,
// validBit, repeat = desc[10]}). nums gets sortedNum[4] then GetMrgSortResult's four counts.
template <class T, bool kSusp>
__aicore__ inline void Merge(const LocalTensor<T>& dst, const MrgSortSrcList<T>& l, const uint16_t cnt[4],
                             uint32_t sortedNum[4], uint16_t valid) {
  MrgSort<T, kSusp>(dst, l, cnt, sortedNum, valid, 1);
}
template <class T>
__aicore__ inline void MergeBody(GM_ADDR lists, GM_ADDR desc, GM_ADDR out, GM_ADDR nums) {
  constexpr int32_t E = 8 / sizeof(T);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inQ;
  TQue<TPosition::VECOUT, 1> outQ;
  pipe.InitBuffer(inQ, 1, MAXS * 8);
  pipe.InitBuffer(outQ, 1, MAXS * 8);
  GlobalTensor<T> lg, og;
  lg.SetGlobalBuffer((__gm__ T*)lists + GetBlockIdx() * MAXS * E, MAXS * E);
  og.SetGlobalBuffer((__gm__ T*)out + GetBlockIdx() * MAXS * E, MAXS * E);
  GlobalTensor<int32_t> dg;
  dg.SetGlobalBuffer((__gm__ int32_t*)desc + GetBlockIdx() * 16, 16);
  GlobalTensor<uint32_t> ng;
  ng.SetGlobalBuffer((__gm__ uint32_t*)nums + GetBlockIdx() * 8, 8);
  LocalTensor<T> src = inQ.AllocTensor<T>();
  DataCopy(src, lg, MAXS * E);
  inQ.EnQue(src);
  src = inQ.DeQue<T>();
  LocalTensor<T> dst = outQ.AllocTensor<T>();
  Duplicate(dst.template ReinterpretCast<uint16_t>(), (uint16_t)0xBEEF, MAXS * 4);
  int32_t d[16];
  for (int i = 0; i < 16; ++i) d[i] = dg.GetValue(i);
  uint16_t cnt[4] = {(uint16_t)d[4], (uint16_t)d[5], (uint16_t)d[6], (uint16_t)d[7]};
  MrgSortSrcList<T> l(src[d[0] * E], src[d[1] * E], src[d[2] * E], src[d[3] * E]);
  uint32_t sortedNum[4] = {0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu, 0xFFFFFFFFu};
  if (d[9] == 0) Merge<T, false>(dst, l, cnt, sortedNum, (uint16_t)d[8]);
  else if (d[9] == 1) Merge<T, true>(dst, l, cnt, sortedNum, (uint16_t)d[8]);
  else MrgSort(dst, l, MrgSort4Info(cnt, false, (uint16_t)d[8], (uint16_t)d[10]));
  uint16_t r[4];
  GetMrgSortResult(r[0], r[1], r[2], r[3]);
  for (int i = 0; i < 4; ++i) ng.SetValue(i, sortedNum[i]);
  for (int i = 0; i < 4; ++i) ng.SetValue(4 + i, r[i]);
  outQ.EnQue(dst);
  dst = outQ.DeQue<T>();
  DataCopy(og, dst, MAXS * E);
  outQ.FreeTensor(dst); inQ.FreeTensor(src);
}
extern "C" __global__ __aicore__ void merge_float(GM_ADDR l, GM_ADDR d, GM_ADDR o, GM_ADDR n) { MergeBody<float>(l, d, o, n); }
extern "C" __global__ __aicore__ void merge_half(GM_ADDR l, GM_ADDR d, GM_ADDR o, GM_ADDR n) { MergeBody<half>(l, d, o, n); }

// ArithProgression over a sentinel-filled buffer of 512: first = first0 + block, diff.
template <class T>
__aicore__ inline void ArithBody(GM_ADDR out, int32_t count, float first0, float diff, float sentinel) {
  TPipe pipe;
  TQue<TPosition::VECOUT, 1> q;
  pipe.InitBuffer(q, 1, 512 * sizeof(T));
  GlobalTensor<T> og;
  og.SetGlobalBuffer((__gm__ T*)out + GetBlockIdx() * 512, 512);
  LocalTensor<T> t = q.AllocTensor<T>();
  Duplicate(t, (T)sentinel, 512);
  ArithProgression<T>(t, (T)(first0 + GetBlockIdx()), (T)diff, count);
  q.EnQue(t);
  t = q.DeQue<T>();
  DataCopy(og, t, 512);
  q.FreeTensor(t);
}
extern "C" __global__ __aicore__ void arith_float(GM_ADDR o, int32_t c, float a, float d, float s) { ArithBody<float>(o, c, a, d, s); }
extern "C" __global__ __aicore__ void arith_half(GM_ADDR o, int32_t c, float a, float d, float s) { ArithBody<half>(o, c, a, d, s); }
extern "C" __global__ __aicore__ void arith_int32(GM_ADDR o, int32_t c, float a, float d, float s) { ArithBody<int32_t>(o, c, a, d, s); }
extern "C" __global__ __aicore__ void arith_int16(GM_ADDR o, int32_t c, float a, float d, float s) { ArithBody<int16_t>(o, c, a, d, s); }

extern "C" __global__ __aicore__ void sort_len(GM_ADDR out, uint32_t n) {
  GlobalTensor<uint32_t> og;
  og.SetGlobalBuffer((__gm__ uint32_t*)out + GetBlockIdx() * 4, 4);
  const uint32_t k = n + GetBlockIdx();
  og.SetValue(0, GetSortLen<float>(k));
  og.SetValue(1, GetSortLen<half>(k));
  og.SetValue(2, GetSortOffset<float>(k));
  og.SetValue(3, GetSortOffset<half>(k));
}

// The misuses: 0 Sort repeat 256, 1 MrgSort validBit 5, 2 elementLengths 4096, 3 repeat 2 over lists that are not
// contiguous, 4 dst overlapping a source, 5 GetMrgSortResult before any MrgSort, 6 ArithProgression count 0,
// 7 diffValue < 0, 8 Concat repeat 256, 9 Extract past its buffer.
extern "C" __global__ __aicore__ void misuse(int32_t mode) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> a, b, c;
  pipe.InitBuffer(a, 8192);
  pipe.InitBuffer(b, 8192);
  pipe.InitBuffer(c, 1024);
  LocalTensor<float> fa = a.Get<float>(), fb = b.Get<float>();
  LocalTensor<uint32_t> ic = c.Get<uint32_t>();
  uint16_t cnt[4] = {32, 32, 32, 32};
  uint32_t sortedNum[4];
  MrgSortSrcList<float> contiguous(fa[0], fa[64], fa[128], fa[192]);
  if (mode == 0) Sort<float, true>(fb, fa, ic, fa, 256);
  if (mode == 1) MrgSort<float, false>(fb, contiguous, cnt, sortedNum, 5, 1);
  if (mode == 2) { cnt[1] = 4096; MrgSort<float, false>(fb, contiguous, cnt, sortedNum, 3, 1); }
  if (mode == 3) MrgSort(fb, MrgSortSrcList<float>(fa[0], fa[64], fa[256], fa[320]), MrgSort4Info(cnt, false, 15, 2));
  if (mode == 4) MrgSort<float, false>(fa[64], contiguous, cnt, sortedNum, 15, 1);
  if (mode == 5) { uint16_t r0, r1, r2, r3; GetMrgSortResult(r0, r1, r2, r3); }
  if (mode == 6) ArithProgression<int32_t>(ic.ReinterpretCast<int32_t>(), 0, 1, 0);
  if (mode == 7) ArithProgression<float>(fa, 0.0f, -1.0f, 16);
  if (mode == 8) { LocalTensor<float> cc; Concat(cc, fa, fb, 256); }
  if (mode == 9) { LocalTensor<float> v = fb; Extract(v, ic, fa, 33); }
}
"""


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(SOURCE, extra_flags=("-O1",))


def scores(dtype, blocks, seed):
    """Scores with many ties, some +-inf, a NaN per block."""
    g = torch.Generator().manual_seed(seed)
    x = (torch.randint(-12, 12, (blocks, MAXN), generator=g).float() / 4)
    x[:, 3] = float("inf")
    x[:, 40] = float("-inf")
    x[:, 77] = float("-inf")
    x[:, 100] = float("nan")
    return x.to(dtype)


def stable_desc(keys):
    """Positions of a stable descending sort with NaN ranked as +inf (Sort32's order): equal keys keep input order."""
    k = torch.where(torch.isnan(keys), torch.full_like(keys, float("inf")), keys)
    return torch.tensor(sorted(range(len(k)), key=lambda i: (-k[i].item(), i)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("count", [32, 96, 150, 160, 256, 300, 520, 544])
def test_full_sort_is_a_stable_descending_sort(lib, dtype, count):
    blocks = 3
    x = scores(dtype, blocks, count)
    v = torch.full((blocks, MAXN), float("nan"), dtype=dtype)
    idx = torch.full((blocks, MAXN), 0x5A5A5A5A, dtype=torch.int32)
    lib.launch("sort_float" if dtype == torch.float32 else "sort_half", blocks, x, v, idx, count, 1)
    n = -(-count // 32) * 32
    for b in range(blocks):
        keys = torch.cat([x[b, :count].float(), torch.full((n - count,), float("-inf"))])
        order = stable_desc(keys)
        assert torch.equal(idx[b, :n].long(), order + 1000 * b), (b, idx[b, :n], order)
        want = keys[order]
        got = v[b, :n].float()
        assert torch.equal(torch.isnan(got), torch.isnan(want)) and torch.equal(got.nan_to_num(7), want.nan_to_num(7))
        # the -inf data come before the -inf padding (lower positions first), the padding last
        assert ((idx[b, count:n] - 1000 * b) >= count).all()
        assert torch.isnan(v[b, n:].float()).all()  # past n: still poisoned


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_sort_without_full_sort_sorts_each_group_of_32(lib, dtype):
    blocks, count = 2, 160
    x = scores(dtype, blocks, 11)
    v = torch.full((blocks, MAXN), float("nan"), dtype=dtype)
    idx = torch.full((blocks, MAXN), 0x5A5A5A5A, dtype=torch.int32)
    lib.launch("sort_float" if dtype == torch.float32 else "sort_half", blocks, x, v, idx, count, 0)
    for b in range(blocks):
        for r in range(count // 32):
            keys = x[b, 32 * r:32 * r + 32].float()
            order = stable_desc(keys) + 32 * r
            assert torch.equal(idx[b, 32 * r:32 * r + 32].long(), order + 1000 * b)


def pack(dtype, lists):
    """Sorted lists of (score, index) as the 8-byte structures of one block's MAXS slots, back to back."""
    buf = np.zeros(MAXS * 8, dtype=np.uint8)
    offs, at = [], 0
    for sc, ix in lists:
        offs.append(at)
        for k, (s, i) in enumerate(zip(sc, ix)):
            slot = buf[(at + k) * 8:(at + k + 1) * 8]
            slot[:] = 0
            if dtype == torch.float32:
                slot[:4] = np.frombuffer(np.float32(s).tobytes(), np.uint8)
            else:
                slot[:2] = np.frombuffer(np.float16(s).tobytes(), np.uint8)
            slot[4:] = np.frombuffer(np.uint32(i).tobytes(), np.uint8)
        at += len(sc)
    return buf, offs


def unpack(dtype, raw, n):
    b = raw.numpy().view(np.uint8)[:n * 8].reshape(n, 8)
    s = b[:, :4].copy().view(np.float32)[:, 0] if dtype == torch.float32 else b[:, :2].copy().view(np.float16)[:, 0]
    return s.astype(np.float64), b[:, 4:].copy().view(np.uint32)[:, 0]


def make_lists(lens, seed, dtype):
    g = torch.Generator().manual_seed(seed)
    out = []
    for li, n in enumerate(lens):
        s = (torch.randint(-6, 6, (n,), generator=g).float() / 2).sort(descending=True, stable=True).values
        out.append((s.to(dtype).float().tolist(), [li * 1000 + k for k in range(n)]))
    return out


def merge_ref(lists, suspension):
    pos = [0] * len(lists)
    res = []
    while True:
        live = [i for i in range(len(lists)) if pos[i] < len(lists[i][0])]
        if not live or (suspension and len(live) < len(lists)):
            break
        best = max(live, key=lambda i: (lists[i][0][pos[i]], -i))
        res.append((lists[best][0][pos[best]], lists[best][1][pos[best]]))
        pos[best] += 1
    return res, pos


def run_merge(lib, dtype, per_block, mode, repeat=1):
    """per_block: (lists, offsets or None, validBit) per block."""
    blocks = len(per_block)
    E = 8 // (4 if dtype == torch.float32 else 2)
    raw = np.zeros((blocks, MAXS * 8), dtype=np.uint8)
    desc = torch.zeros((blocks, 16), dtype=torch.int32)
    for b, (lists, offs, valid) in enumerate(per_block):
        buf, packed_offs = pack(dtype, lists)
        raw[b] = buf
        offs = (offs or packed_offs)[:4]  # repeat 2: lists 4..7 follow lists 0..3
        offs = offs + [0] * (4 - len(offs))
        lens = ([len(s) for s, _ in lists] + [0] * 4)[:4]
        desc[b] = torch.tensor(offs + lens + [valid, mode, repeat] + [0] * 5, dtype=torch.int32)
    lists_t = torch.from_numpy(raw).view(dtype).clone()
    out = torch.full((blocks, MAXS * E), float("nan"), dtype=dtype)
    nums = torch.full((blocks, 8), 0x5A5A5A5A, dtype=torch.int32)
    lib.launch("merge_float" if dtype == torch.float32 else "merge_half", blocks, lists_t, desc, out, nums)
    return out, nums


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("suspension", [False, True])
def test_mrgsort_merges_keeping_list_order_for_ties(lib, dtype, suspension):
    cases = [(make_lists([20, 7], 1, dtype), None, 0b11), (make_lists([5, 33, 12], 2, dtype), None, 0b111),
             (make_lists([40, 1, 17, 26], 3, dtype), None, 0b1111)]
    out, nums = run_merge(lib, dtype, cases, 1 if suspension else 0)
    for b, (lists, _, _) in enumerate(cases):
        want, pos = merge_ref(lists, suspension)
        got_s, got_i = unpack(dtype, out[b], len(want))
        assert got_i.tolist() == [i for _, i in want]
        assert got_s.tolist() == [s for s, _ in want]
        rest = out[b].view(torch.uint16)[len(want) * 4:]
        assert (rest == 0xBEEF).all()  # nothing written past the merged structures
        taken = nums[b, 4:4 + len(lists)].tolist()
        if suspension:
            assert nums[b, :len(lists)].tolist() == pos
            assert max(p - len(s) for p, (s, _) in zip(pos, lists)) == 0  # it stopped at an emptied list
        else:
            assert (nums[b, :4] == -1).all()  # sortedNum untouched without suspension
        assert taken == pos


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_basic_mrgsort_repeat_merges_consecutive_groups_of_four(lib, dtype):
    per_block = [make_lists([16] * 8, 5, dtype), make_lists([16] * 8, 6, dtype)]
    out, nums = run_merge(lib, dtype, [(lists, None, 0b1111) for lists in per_block], 2, repeat=2)
    E = 8 // (4 if dtype == torch.float32 else 2)
    for b, lists in enumerate(per_block):
        for r in range(2):  # repeat r merges lists 4r..4r+3 into structures 64r..64r+63
            want, _ = merge_ref(lists[4 * r:4 * r + 4], False)
            got_s, got_i = unpack(dtype, out[b][64 * r * E:], 64)
            assert got_i.tolist() == [i for _, i in want]
            assert got_s.tolist() == [s for s, _ in want]
        assert (out[b].view(torch.uint16)[128 * 4:] == 0xBEEF).all()
        assert nums[b, 4:].tolist() == [16, 16, 16, 16]  # VMS4_SR: the last repeat's counts


@pytest.mark.parametrize("name, dtype", [("arith_float", torch.float32), ("arith_half", torch.float16),
                                         ("arith_int32", torch.int32), ("arith_int16", torch.int16)])
@pytest.mark.parametrize("count", [5, 8, 16, 40, 64, 100, 128, 300, 512])
def test_arith_progression(lib, name, dtype, count):
    blocks = 3
    first, diff, sentinel = 1.5 if dtype.is_floating_point else 3, 0.1 if dtype.is_floating_point else 7, -77
    out = torch.full((blocks, 512), 0x5A5A if not dtype.is_floating_point else float("nan"), dtype=dtype)
    lib.launch(name, blocks, out, count, float(first), float(diff), float(sentinel))
    epb = 32 // out.element_size()
    written = count if count <= epb else -(-count // epb) * epb  # past one block: whole 32-B blocks
    for b in range(blocks):
        want = reference_arith(dtype, first + b, diff, written)
        got = out[b, :written]
        assert torch.equal(got[:count], want[:count]), (got[:count], want[:count])
        assert torch.equal(got, want)  # the implementation writes whole blocks
        assert (out[b, written:] == sentinel).all()


def reference_arith(dtype, first, diff, n):
    """arithprogression_common_impl.h's steps in the element type: the first block by scalar (half in float), then
    each block += 32 B of steps, then each repeat += 256 B of steps (each add rounded to the type)."""
    np_t = {torch.float32: np.float32, torch.float16: np.float16, torch.int32: np.int32, torch.int16: np.int16}[dtype]
    epb, per = 32 // np.dtype(np_t).itemsize, 256 // np.dtype(np_t).itemsize
    out = np.zeros(-(-n // per) * per, dtype=np_t)
    f, d = np_t(first), np_t(diff)
    for i in range(min(n, epb)):
        out[i] = np_t(np.float32(f) + np.float32(d) * np.float32(i)) if np_t == np.float16 else np_t(f + d * np_t(i))
    step_b = np_t(int(d) * epb) if np.issubdtype(np_t, np.integer) else np_t(np.float32(d) * np.float32(epb))
    step_r = np_t(int(d) * per) if np.issubdtype(np_t, np.integer) else np_t(np.float32(d) * np.float32(per))
    if n > epb:
        for i in range(1, min(8, -(-n // epb))):
            out[i * epb:(i + 1) * epb] = (out[(i - 1) * epb:i * epb].astype(np.float32) + np.float32(step_b)).astype(np_t) \
                if np_t == np.float16 else out[(i - 1) * epb:i * epb] + step_b
        for i in range(1, -(-n // per)):
            src = out[(i - 1) * per:i * per]
            out[i * per:(i + 1) * per] = ((src.astype(np.float32) + np.float32(step_r)).astype(np_t)
                                          if np_t == np.float16 else src + step_r)
    return torch.from_numpy(out[:n].copy())


def test_sort_len_and_offset(lib):
    out = torch.full((3, 4), 0x5A5A5A5A, dtype=torch.int32)
    lib.launch("sort_len", 3, out, 100)
    for b in range(3):
        k = 100 + b
        assert out[b].tolist() == [2 * k, 4 * k, 2 * k, 4 * k]  # float: 2 elements per 8 B, half: 4


@pytest.mark.parametrize("mode, message", [
    (0, r"repeatTimes=256 is outside \[0, 255\]"),
    (1, r"validBit=5 is not one of 3"),
    (2, r"elementLengths\[1\]=4096 is outside \[0, 4095\]"),
    (3, r"repeatTimes=2 needs four valid lists .* stored one after another"),
    (4, r"MrgSort: dst UB bytes .* overlap src"),
    (5, r"GetMrgSortResult: no MrgSort ran in this block"),
    (6, r"ArithProgression: count=0 must be greater than 0"),
    (7, r"ArithProgression: diffValue=-1 must be greater than or equal to 0"),
    (8, r"Concat: repeatTimes=256"),
    (9, r"Extract: sorted accesses UB bytes .* outside its buffer"),
])
def test_misuse_raises(lib, mode, message):
    with pytest.raises(EmulatorError, match=message):
        lib.launch("misuse", 1, mode)
