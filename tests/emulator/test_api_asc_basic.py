"""Basic APIs asc-devkit's kernel-launch examples use (issue 23), each against its API page / impl semantics, with
own small kernels: Copy in counter mode (per-repeat count, block strides), DataCopyPad GM->UB into a VECCALC
buffer, the ReduceSum mask/repeat form and GetReduceRepeatSumSpr, ReducePairElem, Gatherb, IBSet/IBWait,
InitDetermineComputeWorkspace/WaitPreBlock/NotifyNextBlock, Read/WriteGmByPassDCache polls, WaitPreTaskEnd/
SetNextTaskStart, LocalMemAllocator<L1>, K_MAX_DIM, Conditional. Outputs are poisoned (NaN / -1) so an
unwritten element shows; the inter-block protocols run over several blocks in both directions."""
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError

SOURCE = r"""
#include "kernel_operator.h"
using namespace AscendC;

static_assert(K_MAX_DIM == 8, "K_MAX_DIM");
static_assert(std::is_same<Conditional<true, float, half>::type, float>::value, "Conditional");
static_assert(std::is_same<Conditional<false, float, half>::type, half>::value, "Conditional");

// Copy<int32_t, false> in counter mode: n elements per repeat, `repeat` repeats, strides in 32-B blocks.
extern "C" __global__ __aicore__ void copy_counter(GM_ADDR x, GM_ADDR y, uint32_t n, int32_t repeat, uint32_t dstBlk,
                                                   uint32_t srcBlk, uint32_t dstRep, uint32_t srcRep, uint32_t tile) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> sb, db;
  pipe.InitBuffer(sb, tile * 4);
  pipe.InitBuffer(db, tile * 4);
  GlobalTensor<int32_t> xg, yg;
  xg.SetGlobalBuffer((__gm__ int32_t*)x + GetBlockIdx() * tile, tile);
  yg.SetGlobalBuffer((__gm__ int32_t*)y + GetBlockIdx() * tile, tile);
  LocalTensor<int32_t> s = sb.Get<int32_t>(), d = db.Get<int32_t>();
  DataCopy(s, xg, tile);
  Duplicate(d, -1, tile);
  PipeBarrier<PIPE_ALL>();
  SetMaskCount();
  SetVectorMask<int32_t, MaskMode::COUNTER>(n);
  Copy<int32_t, false>(d, s, MASK_PLACEHOLDER, repeat, {uint16_t(dstBlk), uint16_t(srcBlk), uint16_t(dstRep), uint16_t(srcRep)});
  SetMaskNorm();
  ResetMask();
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, d, tile);
}

// DataCopyPad GM -> a VECCALC TBuf (the implementation accepts any UB position), then out.
extern "C" __global__ __aicore__ void pad_into_calc(GM_ADDR x, GM_ADDR y, uint32_t len) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> calc;
  pipe.InitBuffer(calc, 1024);
  GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * len, len);
  yg.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * len, len);
  LocalTensor<float> t = calc.Get<float>();
  DataCopyPad(t, xg, DataCopyExtParams{1, uint32_t(len * 4), 0, 0, 0}, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
  PipeBarrier<PIPE_ALL>();
  DataCopyPad(yg, t, DataCopyExtParams{1, uint32_t(len * 4), 0, 0, 0});
}

// ReduceSum: mode 0 count form (+ GetReduceRepeatSumSpr into y[1]), 1 continuous mask, 2 bit mask (even lanes),
// 3 GetReduceRepeatSumSpr with no ReduceSum before it, 4 sharedTmpBuffer too small, 5 spr after the mask form.
extern "C" __global__ __aicore__ void reduce_sum(GM_ADDR x, GM_ADDR y, int32_t mode, int32_t mask, int32_t repeat,
                                                 int32_t srcRepStride, uint32_t count, uint32_t tile) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> sb, db, wb;
  pipe.InitBuffer(sb, tile * 4);
  pipe.InitBuffer(db, 64);
  pipe.InitBuffer(wb, mode == 4 ? 32 : 4096);
  GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * tile, tile);
  yg.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * 16, 16);
  LocalTensor<float> s = sb.Get<float>(), d = db.Get<float>(), w = wb.Get<float>();
  DataCopy(s, xg, tile);
  Duplicate(d, -1.0f, 16);
  PipeBarrier<PIPE_ALL>();
  if (mode == 0) {
    ReduceSum(d, s, w, count);
    PipeBarrier<PIPE_ALL>();
    d.SetValue(1, GetReduceRepeatSumSpr<float>());
  } else if (mode == 1 || mode == 4 || mode == 5) {
    ReduceSum<float>(d, s, w, mask, repeat, srcRepStride);
    if (mode == 5) d.SetValue(1, GetReduceRepeatSumSpr<float>());
  } else if (mode == 2) {
    uint64_t bits[2] = {0x5555555555555555ull, 0};
    ReduceSum<float>(d, s, w, bits, repeat, srcRepStride);
  } else if (mode == 3) {
    d.SetValue(1, GetReduceRepeatSumSpr<float>());
  }
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, d, 16);
}

// ReducePairElem<SUM> next to PairReduceSum on the same input: y = [pair-elem results | pair-reduce results].
extern "C" __global__ __aicore__ void pair_elem(GM_ADDR x, GM_ADDR y, int32_t mask, int32_t repeat) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> sb, ab, bb;
  pipe.InitBuffer(sb, 4096);
  pipe.InitBuffer(ab, 2048);
  pipe.InitBuffer(bb, 2048);
  GlobalTensor<half> xg, yg;
  xg.SetGlobalBuffer((__gm__ half*)x + GetBlockIdx() * 2048, 2048);
  yg.SetGlobalBuffer((__gm__ half*)y + GetBlockIdx() * 2048, 2048);
  LocalTensor<half> s = sb.Get<half>(), a = ab.Get<half>(), b = bb.Get<half>();
  DataCopy(s, xg, 2048);
  Duplicate(a, half(-1.0f), 1024);
  Duplicate(b, half(-1.0f), 1024);
  PipeBarrier<PIPE_ALL>();
  ReducePairElem<ReduceType::SUM, half>(a, s, mask, repeat, 1, 1, 8);
  PairReduceSum<half>(b, s, repeat, mask, 1, 1, 8);
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, a, 1024);
  DataCopy(yg[1024], b, 1024);
}

// Gatherb: offsets (bytes) from GM, repeat repeats of 8 blocks, dst strides.
extern "C" __global__ __aicore__ void gatherb(GM_ADDR x, GM_ADDR off, GM_ADDR y, int32_t repeat, uint32_t dstBlk,
                                              uint32_t dstRep) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> sb, ob, db;
  pipe.InitBuffer(sb, 8192);
  pipe.InitBuffer(ob, 1024);
  pipe.InitBuffer(db, 16384);
  GlobalTensor<uint32_t> xg, og, yg;
  xg.SetGlobalBuffer((__gm__ uint32_t*)x + GetBlockIdx() * 2048, 2048);
  og.SetGlobalBuffer((__gm__ uint32_t*)off + GetBlockIdx() * 256, 256);
  yg.SetGlobalBuffer((__gm__ uint32_t*)y + GetBlockIdx() * 4096, 4096);
  LocalTensor<uint32_t> s = sb.Get<uint32_t>(), o = ob.Get<uint32_t>(), d = db.Get<uint32_t>();
  DataCopy(s, xg, 2048);
  DataCopy(o, og, 256);
  Duplicate(d, uint32_t(0xFFFFFFFFu), 4096);
  PipeBarrier<PIPE_ALL>();
  GatherRepeatParams p{uint8_t(dstBlk), uint8_t(dstRep)};
  Gatherb<uint32_t>(d, s, o, uint8_t(repeat), p);
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, d, 4096);
}

// IBSet/IBWait: block `producer` writes y[0, 64) = x + 1, then IBSet(producer, ev) once per consumer; every
// other block IBWaits for it and copies y[0, 64) into its own row y[64 * (b + 1), +64). skip = 1: no IBWait (a race);
// skip = 2: no IBSet (a hang).
extern "C" __global__ __aicore__ void ib_pair(GM_ADDR x, GM_ADDR y, GM_ADDR sync, int32_t producer, int32_t ev,
                                              int32_t skip) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> db, ub;
  pipe.InitBuffer(db, 256);
  pipe.InitBuffer(ub, 32);
  GlobalTensor<float> xg, yg;
  GlobalTensor<int32_t> sg;
  xg.SetGlobalBuffer((__gm__ float*)x);
  yg.SetGlobalBuffer((__gm__ float*)y);
  sg.SetGlobalBuffer((__gm__ int32_t*)sync, skip == 3 ? 8 : 8 * GetBlockNum() * (ev + 1));  // 3: declared too small
  LocalTensor<float> d = db.Get<float>();
  LocalTensor<int32_t> u = ub.Get<int32_t>();
  const int32_t b = GetBlockIdx();
  if (b == producer) {
    DataCopy(d, xg, 64);
    PipeBarrier<PIPE_ALL>();
    Adds(d, d, 1.0f, 64);
    PipeBarrier<PIPE_ALL>();
    DataCopy(yg, d, 64);
    PipeBarrier<PIPE_ALL>();
    if (skip != 2)
      for (int32_t k = 0; k + 1 < int32_t(GetBlockNum()); ++k) IBSet(sg, u, producer, ev);  // one per consumer
  } else {
    if (skip != 1) IBWait(sg, u, producer, ev);
    DataCopy(d, yg, 64);
    PipeBarrier<PIPE_ALL>();
    DataCopy(yg[64 * (b + 1)], d, 64);
  }
}

// WaitPreBlock/NotifyNextBlock: `rounds` rounds, each block atomically adds its row of x into y in turn.
extern "C" __global__ __aicore__ void seq_blocks(GM_ADDR x, GM_ADDR y, GM_ADDR ws, int32_t rounds) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> wb, db;
  pipe.InitBuffer(wb, 32 * GetBlockNum() + 32);
  pipe.InitBuffer(db, 256);
  GlobalTensor<float> xg, yg;
  GlobalTensor<int32_t> wg;
  xg.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * 64, 64);
  yg.SetGlobalBuffer((__gm__ float*)y, 64);
  wg.SetGlobalBuffer((__gm__ int32_t*)ws, 8 * GetBlockNum());
  LocalTensor<int32_t> w = wb.Get<int32_t>();
  LocalTensor<float> d = db.Get<float>();
  InitDetermineComputeWorkspace(wg, w);
  DataCopy(d, xg, 64);
  PipeBarrier<PIPE_ALL>();
  for (int32_t r = 0; r < rounds; ++r) {
    WaitPreBlock(wg, w);
    SetAtomicAdd<float>();
    DataCopy(yg, d, 64);
    SetAtomicNone();
    NotifyNextBlock(wg, w);
  }
}

// Read/WriteGmByPassDCache: the LAST block publishes a value and then a flag; block 0 polls the flag (it runs
// first, so the poll must hand the baton on) and writes 2 * value to y[0].
extern "C" __global__ __aicore__ void bypass_poll(GM_ADDR flag, GM_ADDR y, int32_t value) {
  __gm__ int32_t* f = (__gm__ int32_t*)flag;
  __gm__ int32_t* out = (__gm__ int32_t*)y;
  const int32_t last = GetBlockNum() - 1;
  if (GetBlockIdx() == last) {
    WriteGmByPassDCache<int32_t>(f + 1, value);
    DataSyncBarrier<MemDsbT::DDR>();
    WriteGmByPassDCache<int32_t>(f, 1);
  } else if (GetBlockIdx() == 0) {
    while (ReadGmByPassDCache<int32_t>(f) != 1) {
    }
    WriteGmByPassDCache<int32_t>(out, 2 * ReadGmByPassDCache<int32_t>(f + 1));
  }
}

// WaitPreTaskEnd / SetNextTaskStart `times` times each.
extern "C" __global__ __aicore__ void task_sync(GM_ADDR y, int32_t times) {
  for (int32_t i = 0; i < times; ++i) WaitPreTaskEnd();
  ((__gm__ int32_t*)y)[GetBlockIdx()] = 7;
  for (int32_t i = 0; i < times; ++i) SetNextTaskStart();
}

// Axpy<T, U>: mixed half src -> float dst (y = y + x * scalar), and <half, half>; overlap = 1 aliases src and dst.
extern "C" __global__ __aicore__ void axpy_tu(GM_ADDR x, GM_ADDR y, GM_ADDR xh, GM_ADDR yh, float scalar, int32_t n,
                                             int32_t overlap) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> xb, yb, hb, gb;
  pipe.InitBuffer(xb, 4096);
  pipe.InitBuffer(yb, 8192);
  pipe.InitBuffer(hb, 4096);
  pipe.InitBuffer(gb, 4096);
  GlobalTensor<half> xg, xhg, yhg;
  GlobalTensor<float> yg;
  xg.SetGlobalBuffer((__gm__ half*)x + GetBlockIdx() * 2048, 2048);
  yg.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * 2048, 2048);
  xhg.SetGlobalBuffer((__gm__ half*)xh + GetBlockIdx() * 2048, 2048);
  yhg.SetGlobalBuffer((__gm__ half*)yh + GetBlockIdx() * 2048, 2048);
  LocalTensor<half> xs = xb.Get<half>(), hs = hb.Get<half>(), gs = gb.Get<half>();
  LocalTensor<float> ys = yb.Get<float>();
  DataCopy(xs, xg, 2048);
  DataCopy(ys, yg, 2048);
  DataCopy(hs, xhg, 2048);
  DataCopy(gs, yhg, 2048);
  PipeBarrier<PIPE_ALL>();
  if (overlap) Axpy<float, half>(ys, ys.ReinterpretCast<half>(), half(scalar), n);
  Axpy<float, half>(ys, xs, half(scalar), n);
  Axpy<half, half>(gs, hs, half(scalar), n);
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, ys, 2048);
  DataCopy(yhg, gs, 2048);
}

// Cast<int4b_t, half> (repeat form, CAST_CEIL) into a byte tensor: 2 repeats of 128, dstRepStride 2 blocks.
extern "C" __global__ __aicore__ void cast_int4(GM_ADDR x, GM_ADDR y, uint32_t mask) {
  LocalMemAllocator<Hardware::UB> ub;
  LocalTensor<half> xs = ub.Alloc<half, 256>();
  LocalTensor<int8_t> ys = ub.Alloc<int8_t, 128>();
  GlobalTensor<half> xg;
  GlobalTensor<int8_t> yg;
  xg.SetGlobalBuffer((__gm__ half*)x + GetBlockIdx() * 256, 256);
  yg.SetGlobalBuffer((__gm__ int8_t*)y + GetBlockIdx() * 128, 128);
  DataCopy(xs, xg, 256);
  Duplicate(ys.ReinterpretCast<int16_t>(), int16_t(0x7777), 64);  // poison: every nibble 7
  PipeBarrier<PIPE_ALL>();
  LocalTensor<int4b_t> y4 = ys.ReinterpretCast<int4b_t>();
  Cast<int4b_t, half>(y4, xs, RoundMode::CAST_CEIL, mask, 2, {1, 1, 2, 8});
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, ys, 128);
}

// Transpose: mode 0 the 16x16 form in place; 1 NCHW2NHWC, 2 NHWC2NCHW over [n, c, hw]; 3 a too-small tmp;
// 4 TransDataTo5HD over `rep` repeats of 16 blocks (rows of 16 at srcStride blocks apart, dst rows contiguous).
extern "C" __global__ __aicore__ void transpose_k(GM_ADDR x, GM_ADDR y, int32_t mode, uint32_t n, uint32_t c,
                                                 uint32_t hw, int32_t rep) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> sb, db, tb;
  pipe.InitBuffer(sb, 16384);
  pipe.InitBuffer(db, 16384);
  pipe.InitBuffer(tb, mode == 3 ? 512 : 8192);
  GlobalTensor<half> xg, yg;
  xg.SetGlobalBuffer((__gm__ half*)x + GetBlockIdx() * 8192, 8192);
  yg.SetGlobalBuffer((__gm__ half*)y + GetBlockIdx() * 8192, 8192);
  LocalTensor<half> s = sb.Get<half>(), d = db.Get<half>();
  LocalTensor<uint8_t> t = tb.Get<uint8_t>();
  DataCopy(s, xg, 8192);
  Duplicate(d, half(-1.0f), 8192);
  PipeBarrier<PIPE_ALL>();
  if (mode == 0) {
    Transpose<half>(s, s);
    PipeBarrier<PIPE_ALL>();
    DataCopy(d, s, 256);
  } else if (mode == 1 || mode == 2 || mode == 3) {
    TransposeParamsExt p;
    p.nSize = n; p.cSize = c; p.hSize = 1; p.wSize = hw;
    p.transposeType = mode == 2 ? TransposeType::TRANSPOSE_NHWC2NCHW : TransposeType::TRANSPOSE_NCHW2NHWC;
    Transpose(d, s, t, p);
  } else if (mode == 4) {
    TransDataTo5HDParams p;
    p.repeatTimes = rep; p.srcRepStride = 1; p.dstRepStride = 16;
    uint64_t dl[16], sl[16];
    for (int i = 0; i < 16; ++i) {
      sl[i] = s[i * 16 * rep].GetPhyAddr();
      dl[i] = d[i * 16].GetPhyAddr();
    }
    TransDataTo5HD<half>(dl, sl, p);
  }
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, d, 8192);
}

// LocalMemAllocator of the cube's L1: compiles, raises when a block allocates from it.
extern "C" __global__ __aicore__ void l1_alloc(GM_ADDR y) {
  LocalMemAllocator<Hardware::L1> l1;
  LocalTensor<half> t = l1.Alloc<half, 256>();
  (void)t;
  (void)y;
}
"""


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(SOURCE, extra_flags=("-O1",))


# ---------------------------------------------------------------------------------------------- Copy


def copy_reference(x, n, repeat, dst_blk, src_blk, dst_rep, src_rep):
    y = torch.full_like(x, -1)
    for r in range(repeat):
        for i in range(n):
            d = r * dst_rep * 8 + (i // 8) * dst_blk * 8 + i % 8
            s = r * src_rep * 8 + (i // 8) * src_blk * 8 + i % 8
            y[:, d] = x[:, s]
    return y


@pytest.mark.parametrize("n, repeat, dst_blk, src_blk, dst_rep, src_rep, blocks", [
    (144, 1, 1, 8, 8, 8, 1),   # copy_ub2ub scenario 3: 18 rows of 8 from [18, 64], one repeat of 18 blocks
    (20, 3, 1, 2, 4, 9, 3),    # partial last block, three repeats with repeat strides
    (64, 2, 2, 1, 16, 8, 2),   # a full 256-B repeat spread over every other dst block
])
def test_copy_counter_mode_counts_per_repeat(lib, n, repeat, dst_blk, src_blk, dst_rep, src_rep, blocks):
    tile = 2048
    x = torch.randint(-1000, 1000, (blocks, tile), dtype=torch.int32)
    y = torch.full_like(x, 12345)
    lib.launch("copy_counter", blocks, x, y, n, repeat, dst_blk, src_blk, dst_rep, src_rep, tile)
    assert torch.equal(y, copy_reference(x, n, repeat, dst_blk, src_blk, dst_rep, src_rep))


def test_copy_counter_mode_outside_the_buffer_raises(lib):
    x = torch.zeros(1, 256, dtype=torch.int32)
    with pytest.raises(EmulatorError, match=r"Copy: src accesses UB bytes"):
        lib.launch("copy_counter", 1, x, torch.zeros_like(x), 144, 1, 1, 8, 8, 8, 256)


# ---------------------------------------------------------------------------------------------- DataCopyPad


@pytest.mark.parametrize("len_, blocks", [(40, 1), (13, 4)])
def test_datacopypad_into_a_veccalc_buffer(lib, len_, blocks):
    x = torch.randn(blocks * len_)
    y = torch.full_like(x, float("nan"))
    lib.launch("pad_into_calc", blocks, x, y, len_)
    assert torch.equal(y, x)


# ---------------------------------------------------------------------------------------------- ReduceSum


def tree(v):
    v = list(v)
    while len(v) > 1:
        v = [torch.tensor(float(v[2 * i]), dtype=torch.float32) + torch.tensor(float(v[2 * i + 1]), dtype=torch.float32)
             for i in range(len(v) // 2)]
    return float(v[0])


def reduce_repeat_reference(x, active, repeat, rep_stride):
    parts = [tree(torch.where(active, x[r * rep_stride * 8:r * rep_stride * 8 + 64], torch.zeros(64)))
             for r in range(repeat)]
    while len(parts) > 1:
        parts = [tree(parts[g * 64:(g + 1) * 64] + [0.0] * (64 - len(parts[g * 64:(g + 1) * 64])))
                 for g in range((len(parts) + 63) // 64)]
    return parts[0]


@pytest.mark.parametrize("mode, mask, repeat, stride, blocks", [(1, 64, 65, 8, 2), (1, 37, 3, 16, 1),
                                                                (2, 0, 70, 8, 3)])
def test_reduce_sum_mask_form(lib, mode, mask, repeat, stride, blocks):
    tile = 8192
    x = torch.randn(blocks, tile)
    y = torch.full((blocks, 16), float("nan"))
    lib.launch("reduce_sum", blocks, x, y, mode, mask, repeat, stride, 0, tile)
    active = torch.arange(64) < mask if mode == 1 else torch.arange(64) % 2 == 0
    for b in range(blocks):
        assert y[b, 0].item() == pytest.approx(reduce_repeat_reference(x[b], active, repeat, stride), rel=1e-6)
        assert torch.all(y[b, 1:] == -1)  # only dst[0] is written


def test_reduce_sum_count_form_and_spr(lib):
    x = torch.randn(2, 2048)
    y = torch.full((2, 16), float("nan"))
    lib.launch("reduce_sum", 2, x, y, 0, 0, 0, 0, 1000, 2048)
    assert torch.allclose(y[:, 0], x[:, :1000].sum(1), rtol=1e-5, atol=1e-4)
    assert torch.equal(y[:, 1], y[:, 0])  # GetReduceRepeatSumSpr reads the same result


@pytest.mark.parametrize("mode, match", [
    (3, r"GetReduceRepeatSumSpr: no count-form ReduceSum"),
    (5, r"GetReduceRepeatSumSpr: no count-form ReduceSum"),
    (4, r"ReduceSum: sharedTmpBuffer holds 8 elements; repeatTime=65 needs 72"),
])
def test_reduce_sum_misuse_raises(lib, mode, match):
    x = torch.randn(1, 8192)
    with pytest.raises(EmulatorError, match=match):
        lib.launch("reduce_sum", 1, x, torch.zeros(1, 16), mode, 64, 65, 8, 0, 8192)


# ---------------------------------------------------------------------------------------------- ReducePairElem


@pytest.mark.parametrize("mask, repeat, blocks", [(128, 4, 2), (51, 3, 1)])
def test_reduce_pair_elem_is_pair_reduce_sum(lib, mask, repeat, blocks):
    x = torch.randn(blocks, 2048).half()
    y = torch.full((blocks, 2048), float("nan")).half()
    lib.launch("pair_elem", blocks, x, y, mask, repeat)
    assert torch.equal(y[:, :1024], y[:, 1024:])
    per = 128
    for r in range(repeat):
        seg = x[:, r * per:(r + 1) * per].float() * (torch.arange(per) < mask).float()
        ref = seg.view(blocks, 64, 2).sum(-1).half()
        on = (torch.arange(per) < mask).view(64, 2).any(-1)
        assert torch.equal(y[:, r * 64:(r + 1) * 64][:, on], ref[:, on])
    assert torch.all(y[:, repeat * 64:1024] == -1)


# ---------------------------------------------------------------------------------------------- Gatherb


@pytest.mark.parametrize("repeat, dst_blk, dst_rep, blocks", [(4, 1, 8, 1), (3, 2, 16, 2), (2, 0, 8, 1)])
def test_gatherb_collects_blocks_by_byte_offset(lib, repeat, dst_blk, dst_rep, blocks):
    g = torch.Generator().manual_seed(repeat)
    x = torch.randint(0, 2**31 - 1, (blocks, 2048), generator=g, dtype=torch.int64).to(torch.int32)
    off = torch.zeros(blocks, 256, dtype=torch.int32)
    off[:, :repeat * 8] = torch.randint(0, 256, (blocks, repeat * 8), generator=g, dtype=torch.int32) * 32
    y = torch.zeros(blocks, 4096, dtype=torch.int32)
    lib.launch("gatherb", blocks, x, off, y, repeat, dst_blk, dst_rep)
    ref = torch.full_like(y, -1)
    blk = dst_blk or 1
    for b in range(blocks):
        for i in range(repeat):
            for j in range(8):
                d = (i * dst_rep + j * blk) * 8
                s = int(off[b, i * 8 + j]) // 4
                ref[b, d:d + 8] = x[b, s:s + 8]
    assert torch.equal(y, ref)


def test_gatherb_misaligned_offset_raises(lib):
    off = torch.zeros(1, 256, dtype=torch.int32)
    off[0, 5] = 36
    with pytest.raises(EmulatorError, match=r"Gatherb: offset\[5\] = 36 B is not 32-byte aligned"):
        lib.launch("gatherb", 1, torch.zeros(1, 2048, dtype=torch.int32), off, torch.zeros(1, 4096, dtype=torch.int32),
                   1, 1, 8)


# ---------------------------------------------------------------------------------------------- IBSet / IBWait


@pytest.mark.parametrize("blocks, producer, ev", [(2, 0, 0), (2, 1, 0), (4, 3, 2)])
def test_ibset_ibwait_orders_blocks(lib, blocks, producer, ev):
    """The consumers read what the producer wrote, whichever runs first (producer 1 or 3: the waiting block 0
    runs first and hands on); the race check accepts the IBSet -> IBWait ordering."""
    x = torch.randn(64)
    y = torch.full((blocks + 1, 64), float("nan"))
    sync = torch.zeros(8 * blocks * (ev + 1), dtype=torch.int32)
    lib.launch("ib_pair", blocks, x, y, sync, producer, ev, 0)
    assert torch.equal(y[0], x + 1)
    for b in range(blocks):
        assert torch.equal(y[b + 1], x + 1) if b != producer else bool(torch.isnan(y[b + 1]).all())
    assert int(sync.abs().sum()) == 0  # every IBSet's 1 was consumed by an IBWait


def test_ib_without_wait_races(lib):
    sync = torch.zeros(16, dtype=torch.int32)
    with pytest.raises(EmulatorError, match="cross-block GM race"):
        lib.launch("ib_pair", 2, torch.randn(64), torch.zeros(192), sync, 0, 0, 1)


def test_ibwait_without_ibset_hangs(lib):
    sync = torch.zeros(16, dtype=torch.int32)
    with pytest.raises(EmulatorError, match="hangs"):
        lib.launch("ib_pair", 2, torch.randn(64), torch.zeros(192), sync, 0, 0, 2)


def test_ib_workspace_too_small_raises(lib):
    sync = torch.zeros(8, dtype=torch.int32)  # 2 blocks, eventID 1 needs 2*32*1 + 0*32 + 32 = 96 B
    with pytest.raises(EmulatorError, match=r"IBSet: gmWorkspace holds 32 B; blockIdx=0, eventID=1 with 2 cores "
                                            r"needs 96 B"):
        lib.launch("ib_pair", 2, torch.randn(64), torch.zeros(192), sync, 0, 1, 3)
    with pytest.raises(EmulatorError, match=r"IBSet touches GM bytes .* outside every kernel argument buffer"):
        lib.launch("ib_pair", 2, torch.randn(64), torch.zeros(192), sync, 0, 1, 0)  # declared big enough, is not


# ---------------------------------------------------------------------------------------------- WaitPreBlock


@pytest.mark.parametrize("blocks, rounds", [(4, 1), (3, 3), (1, 2)])
def test_wait_pre_block_turns(lib, blocks, rounds):
    x = torch.randn(blocks, 64)
    y = torch.zeros(64)
    ws = torch.full((8 * blocks,), 99, dtype=torch.int32)  # need not be zeroed (the page)
    lib.launch("seq_blocks", blocks, x, y, ws, rounds)
    ref = torch.zeros(64)
    for _ in range(rounds):
        for b in range(blocks):
            ref = ref + x[b]  # in block order: float sums come out exactly so
    assert torch.equal(y, ref)
    assert int(ws.abs().sum()) == 0  # the last block resets the words every round


# ---------------------------------------------------------------------------------------------- ByPassDCache


@pytest.mark.parametrize("blocks", [2, 3])
def test_bypass_dcache_poll_hands_on(lib, blocks):
    flag = torch.zeros(8, dtype=torch.int32)
    y = torch.full((8,), -1, dtype=torch.int32)
    lib.launch("bypass_poll", blocks, flag, y, 21)
    assert int(y[0]) == 42 and torch.all(y[1:] == -1)


# ---------------------------------------------------------------------------------------------- task sync, L1


def test_task_sync_once_per_block(lib):
    y = torch.zeros(4, dtype=torch.int32)
    lib.launch("task_sync", 4, y, 1)
    assert torch.all(y == 7)
    with pytest.raises(EmulatorError, match=r"WaitPreTaskEnd: called a second time in this block"):
        lib.launch("task_sync", 2, torch.zeros(2, dtype=torch.int32), 2)


def test_l1_allocator_raises_when_used(lib):
    with pytest.raises(EmulatorError, match=r"LocalMemAllocator<Hardware::L1>::Alloc: only Hardware::UB is emulated"):
        lib.launch("l1_alloc", 1, torch.zeros(4))


# ---------------------------------------------------------------------------------------------- Axpy<T, U>


@pytest.mark.parametrize("n, blocks", [(2048, 1), (1000, 3)])
def test_axpy_two_types(lib, n, blocks):
    x = torch.randn(blocks, 2048).half()
    y = torch.randn(blocks, 2048)
    xh = torch.randn(blocks, 2048).half()
    yh = torch.randn(blocks, 2048).half()
    y0, yh0 = y.clone(), yh.clone()
    lib.launch("axpy_tu", blocks, x, y, xh, yh, 1.5, n, 0)
    assert torch.equal(y[:, :n], y0[:, :n] + x[:, :n].float() * 1.5)
    assert torch.equal(y[:, n:], y0[:, n:])
    ref = ((xh[:, :n].float() * 1.5).half().float() + yh0[:, :n].float()).half()  # product rounded to half, then add
    assert torch.equal(yh[:, :n], ref)
    assert torch.equal(yh[:, n:], yh0[:, n:])


def test_axpy_half_to_float_overlap_raises(lib):
    z = torch.zeros(1, 2048)
    with pytest.raises(EmulatorError, match=r"Axpy: the half src overlaps the float dst"):
        lib.launch("axpy_tu", 1, z.half(), z, z.half(), z.half(), 1.0, 64, 1)


# ---------------------------------------------------------------------------------------------- Cast to int4b_t


@pytest.mark.parametrize("mask, blocks", [(128, 2), (70, 1)])
def test_cast_half_to_int4(lib, mask, blocks):
    x = (torch.rand(blocks, 256) * 20 - 10).half()
    y = torch.zeros(blocks, 128, dtype=torch.int8)
    lib.launch("cast_int4", blocks, x, y, mask)
    nib = torch.ceil(x.float()).clamp(-8, 7).to(torch.int32) & 0xF
    active = (torch.arange(256) % 128) < mask
    nib = torch.where(active, nib, torch.full_like(nib, 7))  # inactive lanes keep the poison
    ref = (nib[:, 0::2] | (nib[:, 1::2] << 4)).to(torch.uint8).view(torch.int8)
    assert torch.equal(y, ref)


# ---------------------------------------------------------------------------------------------- Transpose


def run_transpose(lib, blocks, mode, n=0, c=0, hw=0, rep=0):
    x = torch.randn(blocks, 8192).half()
    y = torch.full((blocks, 8192), float("nan")).half()
    lib.launch("transpose_k", blocks, x, y, mode, n, c, hw, rep)
    return x, y


def test_transpose_16x16_in_place(lib):
    x, y = run_transpose(lib, 2, 0)
    assert torch.equal(y[:, :256], x[:, :256].view(2, 16, 16).transpose(1, 2).reshape(2, 256))
    assert torch.all(y[:, 256:] == -1)


@pytest.mark.parametrize("n, c, hw", [(2, 3, 16), (1, 5, 48)])
def test_transpose_nchw_nhwc(lib, n, c, hw):
    total = n * c * hw
    x, y = run_transpose(lib, 2, 1, n, c, hw)
    ref = x[:, :total].view(2, n, c, hw).permute(0, 1, 3, 2).reshape(2, total)
    assert torch.equal(y[:, :total], ref) and torch.all(y[:, total:] == -1)
    x, y = run_transpose(lib, 1, 2, n, c, hw)
    ref = x[:, :total].view(1, n, hw, c).permute(0, 1, 3, 2).reshape(1, total)
    assert torch.equal(y[:, :total], ref)


def test_transpose_tmp_buffer_too_small_raises(lib):
    with pytest.raises(EmulatorError, match=r"Transpose: sharedTmpBuffer holds 512 B; NCHW2NHWC with cSize=3 needs 2560 B"):
        run_transpose(lib, 1, 3, 1, 3, 16)


@pytest.mark.parametrize("rep", [1, 3])
def test_transdata_to_5hd_transposes_16_blocks_per_repeat(lib, rep):
    x, y = run_transpose(lib, 2, 4, rep=rep)
    for r in range(rep):
        # repeat r: source row i is the block at s[i*16*rep + r*16]; dst block j at d[j*16 + r*256]
        m = x[:, :256 * rep].view(2, 16, rep, 16)[:, :, r, :]
        assert torch.equal(y[:, r * 256:(r + 1) * 256].view(2, 16, 16), m.transpose(1, 2))
    assert torch.all(y[:, 256 * rep:] == -1)
