// trex emulator tests (written for trex): GatherMask (built-in and user patterns, Normal and Counter
// mode), Gather, and the mask/repeat form of ReduceMin/ReduceMax, kernel-launch style; every block
// works on its own slice. Outputs are written whole (Duplicate first) so a poisoned host buffer shows
// what the instruction left out.
#include "kernel_operator.h"
using namespace AscendC;

// y[b*n ...] = the elements of x[b*n ...] that built-in pattern `pattern` selects, then zeros;
// cnt[b*8] = rsvdCnt. n is a multiple of 64 (whole 256-byte repeats of float).
extern "C" __global__ __aicore__ void gather_mask_builtin(GM_ADDR x, GM_ADDR y, GM_ADDR cnt, uint32_t n,
                                                          uint32_t pattern) {
  GlobalTensor<float> xg, yg;
  GlobalTensor<int32_t> cg;
  xg.SetGlobalBuffer((__gm__ float*)x + n * GetBlockIdx(), n);
  yg.SetGlobalBuffer((__gm__ float*)y + n * GetBlockIdx(), n);
  cg.SetGlobalBuffer((__gm__ int32_t*)cnt + 8 * GetBlockIdx(), 8);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> qin;
  TQue<TPosition::VECOUT, 1> qout;
  TBuf<TPosition::VECCALC> cbuf;
  pipe.InitBuffer(qin, 1, n * sizeof(float));
  pipe.InitBuffer(qout, 1, n * sizeof(float));
  pipe.InitBuffer(cbuf, 32);
  LocalTensor<float> a = qin.AllocTensor<float>();
  DataCopy(a, xg, n);
  qin.EnQue(a);
  a = qin.DeQue<float>();
  LocalTensor<float> o = qout.AllocTensor<float>();
  Duplicate(o, 0.0f, n);
  uint64_t kept = 0;
  const uint16_t repeats = static_cast<uint16_t>(n / 64);
  GatherMask(o, a, static_cast<uint8_t>(pattern), false, 0, {1, repeats, 8, 0}, kept);
  qout.EnQue(o);
  qin.FreeTensor(a);
  o = qout.DeQue<float>();
  DataCopy(yg, o, n);
  qout.FreeTensor(o);
  LocalTensor<int32_t> c = cbuf.Get<int32_t>();
  Duplicate(c, 0, 8);
  c.SetValue(0, static_cast<int32_t>(kept));
  DataCopy(cg, c, 8);
}

// User pattern (uint32_t bits, the same 64 bits for every repeat: src1RepeatStride 0), Counter mode:
// `per` elements per repeat, `repeats` repeats, src0RepeatStride `stride` blocks.
extern "C" __global__ __aicore__ void gather_mask_user(GM_ADDR x, GM_ADDR bits, GM_ADDR y, GM_ADDR cnt, uint32_t n,
                                                       uint32_t per, uint32_t repeats, uint32_t stride) {
  GlobalTensor<float> xg, yg;
  GlobalTensor<uint32_t> bg;
  GlobalTensor<int32_t> cg;
  xg.SetGlobalBuffer((__gm__ float*)x + n * GetBlockIdx(), n);
  yg.SetGlobalBuffer((__gm__ float*)y + n * GetBlockIdx(), n);
  bg.SetGlobalBuffer((__gm__ uint32_t*)bits, 8);
  cg.SetGlobalBuffer((__gm__ int32_t*)cnt + 8 * GetBlockIdx(), 8);
  TPipe pipe;
  TBuf<TPosition::VECIN> xin, bin;
  TBuf<TPosition::VECOUT> yout, cout;
  pipe.InitBuffer(xin, n * sizeof(float));
  pipe.InitBuffer(bin, 32);
  pipe.InitBuffer(yout, n * sizeof(float));
  pipe.InitBuffer(cout, 32);
  LocalTensor<float> a = xin.Get<float>(), o = yout.Get<float>();
  LocalTensor<uint32_t> b = bin.Get<uint32_t>();
  DataCopy(a, xg, n);
  DataCopy(b, bg, 8);
  Duplicate(o, 0.0f, n);
  PipeBarrier<PIPE_ALL>();
  uint64_t kept = 0;
  GatherMask(o, a, b, true, per, {1, static_cast<uint16_t>(repeats), static_cast<uint16_t>(stride), 0}, kept);
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, o, n);
  LocalTensor<int32_t> c = cout.Get<int32_t>();
  Duplicate(c, 0, 8);
  c.SetValue(0, static_cast<int32_t>(kept));
  DataCopy(cg, c, 8);
}

// y[b*n + i] = table[b*m + off[b*n + i] / 4] (off in bytes, as Gather takes them); Gather in place
// when `in_place` (dst == src, the table holds n >= m slots).
extern "C" __global__ __aicore__ void gather_table(GM_ADDR table, GM_ADDR off, GM_ADDR y, uint32_t m, uint32_t n,
                                                   uint32_t in_place) {
  GlobalTensor<float> tg, yg;
  GlobalTensor<uint32_t> og;
  tg.SetGlobalBuffer((__gm__ float*)table + m * GetBlockIdx(), m);
  og.SetGlobalBuffer((__gm__ uint32_t*)off + n * GetBlockIdx(), n);
  yg.SetGlobalBuffer((__gm__ float*)y + n * GetBlockIdx(), n);
  TPipe pipe;
  TBuf<TPosition::VECCALC> tb, ob, yb;
  const uint32_t slots = m > n ? m : n;
  pipe.InitBuffer(tb, slots * sizeof(float));
  pipe.InitBuffer(ob, n * sizeof(uint32_t));
  pipe.InitBuffer(yb, n * sizeof(float));
  LocalTensor<float> t = tb.Get<float>(), o = yb.Get<float>();
  LocalTensor<uint32_t> of = ob.Get<uint32_t>();
  DataCopy(t, tg, m);
  DataCopy(of, og, n);
  PipeBarrier<PIPE_ALL>();
  if (in_place) {
    Gather(t, t, of, 0u, n);
    PipeBarrier<PIPE_ALL>();
    DataCopy(yg, t, n);
  } else {
    Gather(o, t, of, 0u, n);
    PipeBarrier<PIPE_ALL>();
    DataCopy(yg, o, n);
  }
}

// out[b*8 + 0..1] = ReduceMin (or ReduceMax when is_max) over `repeats` repeats of x[b*n ...] with the
// bit mask {lo, hi}, calIndex: [value, index bits]; srcRepStride `stride`.
extern "C" __global__ __aicore__ void reduce_masked(GM_ADDR x, GM_ADDR out, uint32_t n, uint32_t repeats,
                                                    uint32_t stride, uint64_t lo, uint64_t hi, uint32_t is_max) {
  GlobalTensor<float> xg, og;
  xg.SetGlobalBuffer((__gm__ float*)x + n * GetBlockIdx(), n);
  og.SetGlobalBuffer((__gm__ float*)out + 8 * GetBlockIdx(), 8);
  TPipe pipe;
  TBuf<TPosition::VECCALC> xb, ob, wb;
  pipe.InitBuffer(xb, n * sizeof(float));
  pipe.InitBuffer(ob, 32);
  pipe.InitBuffer(wb, 1024);
  LocalTensor<float> a = xb.Get<float>(), o = ob.Get<float>(), w = wb.Get<float>();
  DataCopy(a, xg, n);
  Duplicate(o, 0.0f, 8);
  PipeBarrier<PIPE_ALL>();
  uint64_t mask[2] = {lo, hi};
  if (is_max) ReduceMax(o, a, w, mask, static_cast<int32_t>(repeats), static_cast<int32_t>(stride), true);
  else ReduceMin(o, a, w, mask, static_cast<int32_t>(repeats), static_cast<int32_t>(stride), true);
  PipeBarrier<PIPE_ALL>();
  DataCopy(og, o, 8);
}
