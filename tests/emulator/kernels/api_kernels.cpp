// Small AscendC kernels, one per API family, driven by tests/emulator/*.py. All compile into one
// shared library (one g++ run) to keep the test suite's compile time small.
#include "kernel_operator.h"
using namespace AscendC;

namespace {

// Rounds n elements of T up to a whole number of 32-byte blocks.
template <class T>
__aicore__ inline uint32_t AlignElems(uint32_t n) {
  const uint32_t per = 32 / sizeof(T);
  return (n + per - 1) / per * per;
}

// Loads n elements (any n) from GM into a fresh VECIN buffer of `que` with DataCopyPad.
template <class T, class Q>
__aicore__ inline LocalTensor<T> LoadPad(Q& que, const GlobalTensor<T>& gm, uint32_t n) {
  LocalTensor<T> t = que.template AllocTensor<T>();
  DataCopyPad(t, gm, DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0},
              DataCopyPadExtParams<T>{false, 0, 0, T(0)});
  que.EnQue(t);
  return que.template DeQue<T>();
}

template <class T>
__aicore__ inline void StorePad(const GlobalTensor<T>& gm, const LocalTensor<T>& t, uint32_t n) {
  DataCopyPad(gm, t, DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0});
}

}  // namespace

// ---- binary ops, count form; op: 0 Add 1 Sub 2 Mul 3 Div 4 Max 5 Min ----
template <class T>
__aicore__ inline void BinaryImpl(GM_ADDR a, GM_ADDR b, GM_ADDR out, uint32_t n, uint32_t op) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qa, qb;
  TQue<QuePosition::VECOUT, 1> qo;
  GlobalTensor<T> ga, gb, go;
  ga.SetGlobalBuffer((__gm__ T*)a);
  gb.SetGlobalBuffer((__gm__ T*)b);
  go.SetGlobalBuffer((__gm__ T*)out);
  const uint32_t bytes = AlignElems<T>(n) * sizeof(T);
  pipe.InitBuffer(qa, 1, bytes);
  pipe.InitBuffer(qb, 1, bytes);
  pipe.InitBuffer(qo, 1, bytes);
  LocalTensor<T> la = LoadPad(qa, ga, n);
  LocalTensor<T> lb = LoadPad(qb, gb, n);
  LocalTensor<T> lo = qo.AllocTensor<T>();
  switch (op) {
    case 0: Add(lo, la, lb, n); break;
    case 1: Sub(lo, la, lb, n); break;
    case 2: Mul(lo, la, lb, n); break;
    case 3: Div(lo, la, lb, n); break;
    case 4: Max(lo, la, lb, n); break;
    case 5: Min(lo, la, lb, n); break;
    default: break;
  }
  qo.EnQue(lo);
  LocalTensor<T> res = qo.DeQue<T>();
  StorePad(go, res, n);
  qo.FreeTensor(res);
  qa.FreeTensor(la);
  qb.FreeTensor(lb);
}

extern "C" __global__ __aicore__ void vec_binary(GM_ADDR a, GM_ADDR b, GM_ADDR out, uint32_t n, uint32_t op) {
  BinaryImpl<float>(a, b, out, n, op);
}
extern "C" __global__ __aicore__ void vec_binary_half(GM_ADDR a, GM_ADDR b, GM_ADDR out, uint32_t n, uint32_t op) {
  BinaryImpl<half>(a, b, out, n, op);
}

// ---- unary and tensor-scalar ops, count form (float) ----
// op: 0 Exp 1 Ln 2 Abs 3 Sqrt 4 Rsqrt 5 Reciprocal 6 Relu 7 Adds 8 Muls 9 Maxs 10 Mins 11 LeakyRelu 12 Duplicate
extern "C" __global__ __aicore__ void vec_unary(GM_ADDR a, GM_ADDR out, uint32_t n, uint32_t op, float scalar) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qa;
  TQue<QuePosition::VECOUT, 1> qo;
  GlobalTensor<float> ga, go;
  ga.SetGlobalBuffer((__gm__ float*)a);
  go.SetGlobalBuffer((__gm__ float*)out);
  const uint32_t bytes = AlignElems<float>(n) * sizeof(float);
  pipe.InitBuffer(qa, 1, bytes);
  pipe.InitBuffer(qo, 1, bytes);
  LocalTensor<float> la = LoadPad(qa, ga, n);
  LocalTensor<float> lo = qo.AllocTensor<float>();
  switch (op) {
    case 0: Exp(lo, la, n); break;
    case 1: Ln(lo, la, n); break;
    case 2: Abs(lo, la, n); break;
    case 3: Sqrt(lo, la, n); break;
    case 4: Rsqrt(lo, la, n); break;
    case 5: Reciprocal(lo, la, n); break;
    case 6: Relu(lo, la, n); break;
    case 7: Adds(lo, la, scalar, n); break;
    case 8: Muls(lo, la, scalar, n); break;
    case 9: Maxs(lo, la, scalar, n); break;
    case 10: Mins(lo, la, scalar, n); break;
    case 11: LeakyRelu(lo, la, scalar, n); break;
    case 12: Duplicate(lo, scalar, n); break;
    default: break;
  }
  qo.EnQue(lo);
  LocalTensor<float> res = qo.DeQue<float>();
  StorePad(go, res, n);
  qo.FreeTensor(res);
  qa.FreeTensor(la);
}

// ---- binary/unary repeat form with explicit strides (float). The dst buffer is pre-loaded from
// `out` so lanes the instruction does not write keep their values. kind: 0 Add (binary), 1 Exp (unary,
// uses dstBlk/s0Blk/dstRep/s0Rep), 2 Add with a bit mask {mask, 0}. ----
extern "C" __global__ __aicore__ void vec_repeat(GM_ADDR a, GM_ADDR b, GM_ADDR out, uint32_t na, uint32_t nb,
                                                 uint32_t nout, uint32_t kind, uint32_t mask, uint32_t repeat,
                                                 uint32_t dstBlk, uint32_t s0Blk, uint32_t s1Blk, uint32_t dstRep,
                                                 uint32_t s0Rep, uint32_t s1Rep) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qa, qb, qo;
  GlobalTensor<float> ga, gb, go;
  ga.SetGlobalBuffer((__gm__ float*)a);
  gb.SetGlobalBuffer((__gm__ float*)b);
  go.SetGlobalBuffer((__gm__ float*)out);
  pipe.InitBuffer(qa, 1, na * 4);
  pipe.InitBuffer(qb, 1, nb * 4);
  pipe.InitBuffer(qo, 1, nout * 4);
  LocalTensor<float> la = LoadPad(qa, ga, na);
  LocalTensor<float> lb = LoadPad(qb, gb, nb);
  LocalTensor<float> lo = LoadPad(qo, go, nout);
  BinaryRepeatParams bp(dstBlk, s0Blk, s1Blk, dstRep, s0Rep, s1Rep);
  if (kind == 0) {
    Add(lo, la, lb, static_cast<uint64_t>(mask), repeat, bp);
  } else if (kind == 1) {
    Exp(lo, la, static_cast<uint64_t>(mask), repeat, UnaryRepeatParams(dstBlk, s0Blk, dstRep, s0Rep));
  } else {
    uint64_t bits[2] = {static_cast<uint64_t>(mask), 0};
    Add(lo, la, lb, bits, repeat, bp);
  }
  StorePad(go, lo, nout);
  qo.FreeTensor(lo);
  qa.FreeTensor(la);
  qb.FreeTensor(lb);
}

// ---- the documented accumulate trick: per-row sum of a [rows, 64] float block into a 64-wide
// work vector with Add(work, src, work, 64, rows, {1,1,1, dstRep 0, src0Rep 8, src1Rep 0}) ----
extern "C" __global__ __aicore__ void vec_accumulate(GM_ADDR x, GM_ADDR out, uint32_t rows) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qx;
  TQue<QuePosition::VECOUT, 1> qw;
  GlobalTensor<float> gx, go;
  gx.SetGlobalBuffer((__gm__ float*)x);
  go.SetGlobalBuffer((__gm__ float*)out);
  pipe.InitBuffer(qx, 1, rows * 64 * 4);
  pipe.InitBuffer(qw, 1, 64 * 4);
  LocalTensor<float> lx = LoadPad(qx, gx, rows * 64);
  LocalTensor<float> w = qw.AllocTensor<float>();
  Duplicate(w, 0.0f, 64);
  PipeBarrier<PIPE_V>();
  Add(w, lx, w, 64, rows, {1, 1, 1, 0, 8, 0});
  qw.EnQue(w);
  LocalTensor<float> res = qw.DeQue<float>();
  StorePad(go, res, 64);
  qw.FreeTensor(res);
  qx.FreeTensor(lx);
}

// ---- Cast; which: 0 float->bf16, 1 bf16->float, 2 float->half, 3 half->float, 4 float->int32 ----
template <class TD, class TS>
__aicore__ inline void CastImpl(GM_ADDR src, GM_ADDR dst, uint32_t n, uint32_t mode) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qs;
  TQue<QuePosition::VECOUT, 1> qd;
  GlobalTensor<TS> gs;
  GlobalTensor<TD> gd;
  gs.SetGlobalBuffer((__gm__ TS*)src);
  gd.SetGlobalBuffer((__gm__ TD*)dst);
  pipe.InitBuffer(qs, 1, AlignElems<TS>(n) * sizeof(TS));
  pipe.InitBuffer(qd, 1, AlignElems<TD>(n) * sizeof(TD));
  LocalTensor<TS> ls = LoadPad(qs, gs, n);
  LocalTensor<TD> ld = qd.AllocTensor<TD>();
  Cast(ld, ls, static_cast<RoundMode>(mode), n);
  qd.EnQue(ld);
  LocalTensor<TD> res = qd.DeQue<TD>();
  StorePad(gd, res, n);
  qd.FreeTensor(res);
  qs.FreeTensor(ls);
}

extern "C" __global__ __aicore__ void vec_cast(GM_ADDR src, GM_ADDR dst, uint32_t n, uint32_t mode, uint32_t which) {
  switch (which) {
    case 0: CastImpl<bfloat16_t, float>(src, dst, n, mode); break;
    case 1: CastImpl<float, bfloat16_t>(src, dst, n, mode); break;
    case 2: CastImpl<half, float>(src, dst, n, mode); break;
    case 3: CastImpl<float, half>(src, dst, n, mode); break;
    case 4: CastImpl<int32_t, float>(src, dst, n, mode); break;
    default: break;
  }
}

// ---- row reductions of a [rows, d] float slab (d <= 64), one row per repeat ----
// kind: 0 WholeReduceSum, 1 WholeReduceMax (value, index pairs), 2 WholeReduceMax ORDER_ONLY_VALUE,
//       3 BlockReduceSum (8 block sums per row; d == 64)
extern "C" __global__ __aicore__ void vec_reduce_rows(GM_ADDR x, GM_ADDR out, uint32_t rows, uint32_t d, uint32_t kind) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qx;
  TQue<QuePosition::VECOUT, 1> qo;
  GlobalTensor<float> gx, go;
  gx.SetGlobalBuffer((__gm__ float*)x);
  go.SetGlobalBuffer((__gm__ float*)out);
  const uint32_t dAl = AlignElems<float>(d);
  pipe.InitBuffer(qx, 1, rows * dAl * 4);
  pipe.InitBuffer(qo, 1, AlignElems<float>(rows * 8) * 4);
  LocalTensor<float> lx = qx.AllocTensor<float>();
  DataCopyPad(lx, gx, DataCopyExtParams{static_cast<uint16_t>(rows), d * 4, 0, 0, 0},
              DataCopyPadExtParams<float>{true, 0, static_cast<uint8_t>(dAl - d), 0.0f});
  qx.EnQue(lx);
  lx = qx.DeQue<float>();
  LocalTensor<float> lo = qo.AllocTensor<float>();
  const int32_t srcRep = static_cast<int32_t>(dAl / 8);
  uint32_t nout = rows;
  if (kind == 0) {
    WholeReduceSum(lo, lx, d, rows, 1, 1, srcRep);
  } else if (kind == 1) {
    WholeReduceMax(lo, lx, d, rows, 1, 1, srcRep);
    nout = rows * 2;
  } else if (kind == 2) {
    WholeReduceMax(lo, lx, d, rows, 1, 1, srcRep, ReduceOrder::ORDER_ONLY_VALUE);
  } else {
    BlockReduceSum(lo, lx, rows, 64, 1, 1, 8);
    nout = rows * 8;
  }
  qo.EnQue(lo);
  LocalTensor<float> res = qo.DeQue<float>();
  StorePad(go, res, nout);
  qo.FreeTensor(res);
  qx.FreeTensor(lx);
}

// ---- whole-tensor reductions (count form): kind 0 ReduceSum, 1 ReduceMax with index, 2 ReduceMin ----
extern "C" __global__ __aicore__ void vec_reduce_all(GM_ADDR x, GM_ADDR out, uint32_t n, uint32_t kind) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qx;
  TBuf<TPosition::VECCALC> work;
  TQue<QuePosition::VECOUT, 1> qo;
  GlobalTensor<float> gx, go;
  gx.SetGlobalBuffer((__gm__ float*)x);
  go.SetGlobalBuffer((__gm__ float*)out);
  pipe.InitBuffer(qx, 1, AlignElems<float>(n) * 4);
  pipe.InitBuffer(work, AlignElems<float>(n) * 4);
  pipe.InitBuffer(qo, 1, 32);
  LocalTensor<float> lx = LoadPad(qx, gx, n);
  LocalTensor<float> lo = qo.AllocTensor<float>();
  LocalTensor<float> w = work.Get<float>();
  if (kind == 0) ReduceSum(lo, lx, w, n);
  else if (kind == 1) ReduceMax(lo, lx, w, n, true);
  else ReduceMin(lo, lx, w, n);
  qo.EnQue(lo);
  LocalTensor<float> res = qo.DeQue<float>();
  StorePad(go, res, 2);
  qo.FreeTensor(res);
  qx.FreeTensor(lx);
}

// ---- Brcb + row broadcast multiply: out[r, :] = x[r, :] * s[r] for a [rows, 8] slab (rows % 8 == 0) ----
extern "C" __global__ __aicore__ void vec_brcb(GM_ADDR s, GM_ADDR x, GM_ADDR bcast, GM_ADDR out, uint32_t rows) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qs, qx;
  TQue<QuePosition::VECOUT, 1> qb, qo;
  GlobalTensor<float> gs, gx, gb, go;
  gs.SetGlobalBuffer((__gm__ float*)s);
  gx.SetGlobalBuffer((__gm__ float*)x);
  gb.SetGlobalBuffer((__gm__ float*)bcast);
  go.SetGlobalBuffer((__gm__ float*)out);
  pipe.InitBuffer(qs, 1, rows * 4);
  pipe.InitBuffer(qx, 1, rows * 8 * 4);
  pipe.InitBuffer(qb, 1, rows * 8 * 4);
  pipe.InitBuffer(qo, 1, rows * 8 * 4);
  LocalTensor<float> ls = LoadPad(qs, gs, rows);
  LocalTensor<float> lx = LoadPad(qx, gx, rows * 8);
  LocalTensor<float> lb = qb.AllocTensor<float>();
  LocalTensor<float> lo = qo.AllocTensor<float>();
  Brcb(lb, ls, rows / 8, {1, 8});
  PipeBarrier<PIPE_V>();
  // every element of row r (one 32-byte block) times block r of lb
  Mul(lo, lx, lb, 64, rows / 8, {1, 1, 1, 8, 8, 8});
  StorePad(gb, lb, rows * 8);
  StorePad(go, lo, rows * 8);
  qb.FreeTensor(lb);
  qo.FreeTensor(lo);
  qs.FreeTensor(ls);
  qx.FreeTensor(lx);
}

// ---- Compare / Compares / Select (n % 64 == 0 floats) ----
// which 0: Compare(mask, a, b, mode) then Select(out, mask, a, b, VSEL_TENSOR_TENSOR_MODE)
// which 1: Compares(mask, a, scalar, mode) then Select(out, mask, a, scalar, VSEL_TENSOR_SCALAR_MODE)
// which 2: Compare(mask, a, b, mode) then Select(out, mask, a, b, VSEL_CMPMASK_SPR) (first 64 bits reused)
extern "C" __global__ __aicore__ void vec_cmpsel(GM_ADDR a, GM_ADDR b, GM_ADDR out, GM_ADDR maskOut, uint32_t n,
                                                 uint32_t mode, float scalar, uint32_t which) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qa, qb;
  TQue<QuePosition::VECOUT, 1> qo, qm;
  GlobalTensor<float> ga, gb, go;
  GlobalTensor<uint8_t> gm;
  ga.SetGlobalBuffer((__gm__ float*)a);
  gb.SetGlobalBuffer((__gm__ float*)b);
  go.SetGlobalBuffer((__gm__ float*)out);
  gm.SetGlobalBuffer((__gm__ uint8_t*)maskOut);
  pipe.InitBuffer(qa, 1, n * 4);
  pipe.InitBuffer(qb, 1, n * 4);
  pipe.InitBuffer(qo, 1, n * 4);
  pipe.InitBuffer(qm, 1, AlignElems<uint8_t>(n / 8));
  LocalTensor<float> la = LoadPad(qa, ga, n);
  LocalTensor<float> lb = LoadPad(qb, gb, n);
  LocalTensor<float> lo = qo.AllocTensor<float>();
  LocalTensor<uint8_t> lm = qm.AllocTensor<uint8_t>();
  const CMPMODE cmp = static_cast<CMPMODE>(mode);
  if (which == 1) {
    Compares(lm, la, scalar, cmp, n);
    PipeBarrier<PIPE_V>();
    Select(lo, lm, la, scalar, SELMODE::VSEL_TENSOR_SCALAR_MODE, n);
  } else {
    Compare(lm, la, lb, cmp, n);
    PipeBarrier<PIPE_V>();
    Select(lo, lm, la, lb, which == 0 ? SELMODE::VSEL_TENSOR_TENSOR_MODE : SELMODE::VSEL_CMPMASK_SPR, n);
  }
  StorePad(go, lo, n);
  StorePad(gm, lm, n / 8);
  qo.FreeTensor(lo);
  qm.FreeTensor(lm);
  qa.FreeTensor(la);
  qb.FreeTensor(lb);
}

// ---- DataCopy round trip of `count` floats (count*4 need not be a multiple of 32: truncation) ----
extern "C" __global__ __aicore__ void copy_truncation(GM_ADDR src, GM_ADDR dst, uint32_t count) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> q;
  GlobalTensor<float> gs, gd;
  gs.SetGlobalBuffer((__gm__ float*)src);
  gd.SetGlobalBuffer((__gm__ float*)dst);
  pipe.InitBuffer(q, 1, AlignElems<float>(count) * 4);
  LocalTensor<float> t = q.AllocTensor<float>();
  DataCopy(t, gs, count);
  q.EnQue(t);
  t = q.DeQue<float>();
  DataCopy(gd, t, count);
  q.FreeTensor(t);
}

// ---- DataCopyPad GM->UB with strides and padding; the whole UB buffer is dumped to `dump` ----
extern "C" __global__ __aicore__ void copy_pad_in(GM_ADDR src, GM_ADDR dump, uint32_t rows, uint32_t cols,
                                                  uint32_t srcGapBytes, uint32_t dstGapBlocks, uint32_t left,
                                                  uint32_t right, uint32_t isPad, float padValue, uint32_t dumpElems) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> q;
  GlobalTensor<float> gs, gd;
  gs.SetGlobalBuffer((__gm__ float*)src);
  gd.SetGlobalBuffer((__gm__ float*)dump);
  pipe.InitBuffer(q, 1, dumpElems * 4);
  LocalTensor<float> t = q.AllocTensor<float>();
  DataCopyPad(t, gs, DataCopyExtParams{static_cast<uint16_t>(rows), cols * 4, srcGapBytes, dstGapBlocks, 0},
              DataCopyPadExtParams<float>{isPad != 0, static_cast<uint8_t>(left), static_cast<uint8_t>(right), padValue});
  q.EnQue(t);
  t = q.DeQue<float>();
  DataCopy(gd, t, dumpElems);
  q.FreeTensor(t);
}

// ---- DataCopyPad UB->GM: `src` holds the UB image (rows of align8(cols) + gap blocks) ----
extern "C" __global__ __aicore__ void copy_pad_out(GM_ADDR src, GM_ADDR dst, uint32_t ubElems, uint32_t rows,
                                                   uint32_t cols, uint32_t srcGapBlocks, uint32_t dstGapBytes) {
  TPipe pipe;
  TQue<QuePosition::VECOUT, 1> q;
  GlobalTensor<float> gs, gd;
  gs.SetGlobalBuffer((__gm__ float*)src);
  gd.SetGlobalBuffer((__gm__ float*)dst);
  pipe.InitBuffer(q, 1, ubElems * 4);
  LocalTensor<float> t = q.AllocTensor<float>();
  DataCopy(t, gs, ubElems);
  DataCopyPad(gd, t, DataCopyExtParams{static_cast<uint16_t>(rows), cols * 4, srcGapBlocks, dstGapBytes, 0});
  q.FreeTensor(t);
}

// ---- scalar access and the V_S / S_V hand-off idiom: out[i] = x[i] * sum(x) for n <= 64 floats ----
extern "C" __global__ __aicore__ void scalar_handoff(GM_ADDR x, GM_ADDR out, uint32_t n) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qx;
  TBuf<TPosition::VECCALC> red;
  TQue<QuePosition::VECOUT, 1> qo;
  GlobalTensor<float> gx, go;
  gx.SetGlobalBuffer((__gm__ float*)x);
  go.SetGlobalBuffer((__gm__ float*)out);
  pipe.InitBuffer(qx, 1, 256);
  pipe.InitBuffer(red, 32);
  pipe.InitBuffer(qo, 1, 256);
  LocalTensor<float> lx = LoadPad(qx, gx, n);
  LocalTensor<float> r = red.Get<float>();
  WholeReduceSum(r, lx, n, 1, 1, 1, 8);
  event_t e = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
  SetFlag<HardEvent::V_S>(e);
  WaitFlag<HardEvent::V_S>(e);
  const float total = r.GetValue(0);
  event_t e2 = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::S_V));
  SetFlag<HardEvent::S_V>(e2);
  WaitFlag<HardEvent::S_V>(e2);
  LocalTensor<float> lo = qo.AllocTensor<float>();
  Muls(lo, lx, total, n);
  // a few scalar element writes, counted as scalar ops
  for (uint32_t i = 0; i < 4 && i < n; ++i) lo.SetValue(i, lo.GetValue(i) + 1.0f);
  StorePad(go, lo, n);
  qo.FreeTensor(lo);
  qx.FreeTensor(lx);
}

// ---- multi-block atomic accumulation: out[i] += x[block*n + i] over all blocks ----
extern "C" __global__ __aicore__ void atomic_accumulate(GM_ADDR x, GM_ADDR out, uint32_t n) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> q;
  GlobalTensor<float> gx, go;
  gx.SetGlobalBuffer((__gm__ float*)x + GetBlockIdx() * n);
  go.SetGlobalBuffer((__gm__ float*)out);
  pipe.InitBuffer(q, 1, AlignElems<float>(n) * 4);
  LocalTensor<float> t = LoadPad(q, gx, n);
  SetAtomicAdd<float>();
  StorePad(go, t, n);
  SetAtomicNone();
  q.FreeTensor(t);
}

// ---- API misuse, one case per `which`; every case must raise a clear error ----
extern "C" __global__ __aicore__ void misuse(GM_ADDR x, uint32_t which) {
  TPipe pipe;
  GlobalTensor<float> gx;
  gx.SetGlobalBuffer((__gm__ float*)x);
  TQue<QuePosition::VECIN, 2> inQueueX;
  TBuf<TPosition::VECCALC> calcBuf;
  pipe.InitBuffer(inQueueX, 2, 64 * 1024);
  switch (which) {
    case 0: {  // UB overflow: 128 KB + 96 KB > 192 KB
      pipe.InitBuffer(calcBuf, 96 * 1024);
      break;
    }
    case 1: {  // misaligned vector operand: float offset 3 = 12 bytes
      LocalTensor<float> t = inQueueX.AllocTensor<float>();
      Add(t[3], t[8], t[16], 8);
      break;
    }
    case 2: {  // more AllocTensor than buffers without FreeTensor
      LocalTensor<float> a = inQueueX.AllocTensor<float>();
      LocalTensor<float> b = inQueueX.AllocTensor<float>();
      LocalTensor<float> c = inQueueX.AllocTensor<float>();
      (void)a; (void)b; (void)c;
      break;
    }
    case 3: {  // DeQue on an empty queue
      LocalTensor<float> t = inQueueX.DeQue<float>();
      (void)t;
      break;
    }
    case 4: {  // GM read beyond the argument buffer (x holds 64 floats)
      LocalTensor<float> t = inQueueX.AllocTensor<float>();
      DataCopy(t, gx, 128);
      break;
    }
    case 5: {  // WaitFlag without SetFlag
      WaitFlag<HardEvent::V_S>(0);
      break;
    }
    case 6: {  // Compare count form with count*4 not a multiple of 256
      pipe.InitBuffer(calcBuf, 1024);
      LocalTensor<float> t = inQueueX.AllocTensor<float>();
      LocalTensor<uint8_t> m = calcBuf.Get<uint8_t>();
      Compare(m, t, t[64], CMPMODE::LT, 40);
      break;
    }
    case 7: {  // float -> bf16 with CAST_NONE is not supported on A2
      pipe.InitBuffer(calcBuf, 1024);
      LocalTensor<float> t = inQueueX.AllocTensor<float>();
      LocalTensor<bfloat16_t> o = calcBuf.Get<bfloat16_t>();
      Cast(o, t, RoundMode::CAST_NONE, 64);
      break;
    }
    case 8: {  // repeatTimes > 255
      LocalTensor<float> t = inQueueX.AllocTensor<float>();
      Add(t, t, t, 64, 300, {1, 1, 1, 0, 0, 0});
      break;
    }
    case 10: {  // double FreeTensor
      LocalTensor<float> t = inQueueX.AllocTensor<float>();
      inQueueX.FreeTensor(t);
      inQueueX.FreeTensor(t);
      break;
    }
    case 12: {  // dst partially overlapping a source (shifted by 8 elements)
      LocalTensor<float> t = inQueueX.AllocTensor<float>();
      Add(t[8], t, t[128], 64);
      break;
    }
    // ---- synchronisation mistakes (reported with launch(check_sync=True)) ----
    case 13: {  // dependent vector instructions without PipeBarrier<PIPE_V>
      pipe.InitBuffer(calcBuf, 1024);
      LocalTensor<float> t = calcBuf.Get<float>();
      Duplicate(t, 1.0f, 64);
      Exp(t[64], t, 64);
      break;
    }
    case 14: {  // vector read of DataCopy'd data without DeQue or MTE2_V flag
      LocalTensor<float> t = inQueueX.AllocTensor<float>();
      DataCopy(t, gx, 64);
      Exp(t[64], t, 64);
      break;
    }
    case 15: {  // the same with the documented flag: no hazard
      LocalTensor<float> t = inQueueX.AllocTensor<float>();
      DataCopy(t, gx, 64);
      SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
      WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
      Exp(t[64], t, 64);
      PipeBarrier<PIPE_V>();
      Muls(t[128], t[64], 2.0f, 64);
      break;
    }
    case 16: {  // scalar read of a vector result without V_S
      pipe.InitBuffer(calcBuf, 1024);
      LocalTensor<float> t = calcBuf.Get<float>();
      Duplicate(t, 1.0f, 64);
      (void)t.GetValue(3);
      break;
    }
    case 17: {  // vector result copied out without V_MTE3 / queue hand-off
      LocalTensor<float> t = inQueueX.AllocTensor<float>();
      Duplicate(t, 1.0f, 64);
      DataCopy(gx, t, 64);
      break;
    }
    case 11: {  // vector op running past the end of its buffer
      pipe.InitBuffer(calcBuf, 256);
      LocalTensor<float> t = calcBuf.Get<float>();
      Exp(t, t, 128);
      break;
    }
    default: break;
  }
}

// Dereferences a null pointer: crashes the process (used with launch(isolate=True)).
extern "C" __global__ __aicore__ void crash(GM_ADDR x) {
  volatile float* p = reinterpret_cast<volatile float*>(reinterpret_cast<uintptr_t>(x) * 0);
  *p = 1.0f;
}

// ---- less common forms; `a` holds 128 floats, `h` 128 halves, `out` 128 floats (pre-loaded) ----
// which 0: counter mask mode, Add<float, false> over 100 elements
// which 1: normal mask register {0, 0x0F0F}, Muls<float, false> over 2 repeats
// which 2: Cast half -> float, repeat form (64 elements per repeat, src repeat stride 4 blocks)
// which 3: Copy repeat form
// which 4: CreateVecIndex from 5
// which 5: BlockReduceMax over one repeat (8 block maxima)
// which 6: widening Cast in place: 128 halves DMA'd into the upper half of the float buffer
extern "C" __global__ __aicore__ void misc_forms(GM_ADDR a, GM_ADDR h, GM_ADDR out, uint32_t which) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qa, qh, qo;
  GlobalTensor<float> ga, go;
  GlobalTensor<half> gh;
  ga.SetGlobalBuffer((__gm__ float*)a);
  gh.SetGlobalBuffer((__gm__ half*)h);
  go.SetGlobalBuffer((__gm__ float*)out);
  pipe.InitBuffer(qa, 1, 128 * 4);
  pipe.InitBuffer(qh, 1, 128 * 2);
  pipe.InitBuffer(qo, 1, 128 * 4);
  LocalTensor<float> la = LoadPad(qa, ga, 128);
  LocalTensor<half> lh = LoadPad(qh, gh, 128);
  LocalTensor<float> lo = LoadPad(qo, go, 128);
  switch (which) {
    case 0:
      SetMaskCount();
      SetVectorMask<float, MaskMode::COUNTER>(0, 100);
      Add<float, false>(lo, la, la, MASK_PLACEHOLDER, 1, {1, 1, 1, 8, 8, 8});
      SetMaskNorm();
      ResetMask();
      break;
    case 1:
      SetVectorMask<float>(0, 0x0F0F);
      Muls<float, false>(lo, la, 2.0f, MASK_PLACEHOLDER, 2, {1, 1, 8, 8});
      ResetMask();
      break;
    case 2:
      Cast(lo, lh, RoundMode::CAST_NONE, 64, 2, {1, 1, 8, 4});
      break;
    case 3:
      Copy(lo, la, 64, 2, {1, 1, 8, 8});
      break;
    case 4:
      CreateVecIndex(lo, 5.0f, 100);
      break;
    case 5:
      BlockReduceMax(lo, la, 1, 64, 1, 1, 8);
      break;
    case 6: {
      LocalTensor<half> upper = lo.ReinterpretCast<half>()[128];
      DataCopy(upper, gh, 128);
      Cast(lo, upper, RoundMode::CAST_NONE, 128);
      break;
    }
    default: break;
  }
  StorePad(go, lo, 128);
  qo.FreeTensor(lo);
  qa.FreeTensor(la);
  qh.FreeTensor(lh);
}

// ---- cross-block GM races; each block copies n floats ----
// which 0: every block writes out[0, n)                    -> write/write race
// which 1: block b writes out[b*n, ...) and reads out[((b+1) % B) * n, ...) -> write/read race
// which 2: block b reads x[b*n, ...) and writes out[b*n, ...)              -> no race
extern "C" __global__ __aicore__ void block_race(GM_ADDR x, GM_ADDR out, uint32_t n, uint32_t which) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> q;
  GlobalTensor<float> gx, go;
  const uint32_t b = GetBlockIdx(), blocks = GetBlockNum();
  gx.SetGlobalBuffer((__gm__ float*)x);
  go.SetGlobalBuffer((__gm__ float*)out);
  pipe.InitBuffer(q, 1, AlignElems<float>(n) * 4);
  LocalTensor<float> t = LoadPad(q, which == 1 ? go[((b + 1) % blocks) * n] : gx[b * n], n);
  StorePad(which == 0 ? go : go[b * n], t, n);
  q.FreeTensor(t);
}

// ---- tiling passed as a GM struct (the kernel direct-call way; GET_TILING_DATA is not available) ----
struct ScaleTiling {
  uint32_t n;
  float scale;
};
extern "C" __global__ __aicore__ void tiling_struct(GM_ADDR x, GM_ADDR out, GM_ADDR tiling) {
  const ScaleTiling t = *reinterpret_cast<__gm__ ScaleTiling*>(tiling);
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> q;
  GlobalTensor<float> gx, go;
  gx.SetGlobalBuffer((__gm__ float*)x);
  go.SetGlobalBuffer((__gm__ float*)out);
  pipe.InitBuffer(q, 1, AlignElems<float>(t.n) * 4);
  LocalTensor<float> v = LoadPad(q, gx, t.n);
  Muls(v, v, t.scale, t.n);
  StorePad(go, v, t.n);
  q.FreeTensor(v);
}

// ---- SetPadValue with isPad = false: paddings take the register value ----
extern "C" __global__ __aicore__ void copy_pad_register(GM_ADDR src, GM_ADDR dump, float value) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> q;
  GlobalTensor<float> gs, gd;
  gs.SetGlobalBuffer((__gm__ float*)src);
  gd.SetGlobalBuffer((__gm__ float*)dump);
  pipe.InitBuffer(q, 1, 64);
  LocalTensor<float> t = q.AllocTensor<float>();
  SetPadValue(value);
  DataCopyPad(t, gs, DataCopyExtParams{2, 5 * 4, 0, 0, 0}, DataCopyPadExtParams<float>{false, 1, 2, 0.0f});
  q.EnQue(t);
  t = q.DeQue<float>();
  DataCopy(gd, t, 16);
  q.FreeTensor(t);
}

// ---- Compare/Select repeat and register forms on 128 floats ----
// which 0: Compare(dst, a, b, LT, mask 64, repeat 2, params)
// which 1: register Compare(a, b, GT, mask 64, params) + GetCmpMask(dst)
// which 2: Compare count form (LT) + Select repeat form, VSEL_TENSOR_TENSOR_MODE
extern "C" __global__ __aicore__ void cmpsel_forms(GM_ADDR a, GM_ADDR b, GM_ADDR out, GM_ADDR maskOut, uint32_t which) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> qa, qb;
  TQue<QuePosition::VECOUT, 1> qo, qm;
  GlobalTensor<float> ga, gb, go;
  GlobalTensor<uint8_t> gm;
  ga.SetGlobalBuffer((__gm__ float*)a);
  gb.SetGlobalBuffer((__gm__ float*)b);
  go.SetGlobalBuffer((__gm__ float*)out);
  gm.SetGlobalBuffer((__gm__ uint8_t*)maskOut);
  pipe.InitBuffer(qa, 1, 512);
  pipe.InitBuffer(qb, 1, 512);
  pipe.InitBuffer(qo, 1, 512);
  pipe.InitBuffer(qm, 1, 32);
  LocalTensor<float> la = LoadPad(qa, ga, 128);
  LocalTensor<float> lb = LoadPad(qb, gb, 128);
  LocalTensor<float> lo = LoadPad(qo, go, 128);
  LocalTensor<uint8_t> lm = qm.AllocTensor<uint8_t>();
  Duplicate(lm.ReinterpretCast<uint16_t>(), static_cast<uint16_t>(0), 16);
  BinaryRepeatParams p;
  if (which == 0) {
    Compare(lm, la, lb, CMPMODE::LT, 64, 2, p);
  } else if (which == 1) {
    Compare(la, lb, CMPMODE::GT, 64, p);
    GetCmpMask(lm);
  } else {
    Compare(lm, la, lb, CMPMODE::LT, 128);
    Select(lo, lm, la, lb, SELMODE::VSEL_TENSOR_TENSOR_MODE, 64, 2, p);
  }
  StorePad(go, lo, 128);
  StorePad(gm, lm, 16);
  qo.FreeTensor(lo);
  qm.FreeTensor(lm);
  qa.FreeTensor(la);
  qb.FreeTensor(lb);
}
