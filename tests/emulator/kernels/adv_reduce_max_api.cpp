// trex tests (written for trex): ReduceMax / ReduceMin with Pattern::Reduce::AR / RA over a padded [first, last] tile.
#include "kernel_operator.h"
using namespace AscendC;

template <class T>
__aicore__ inline void RmBody(GM_ADDR x, GM_ADDR y, uint32_t first, uint32_t last, uint32_t op, uint32_t tmpBytes) {
  const uint32_t blk = 32 / sizeof(T), stride = (last + blk - 1) / blk * blk, b = GetBlockIdx();
  const uint32_t n = first * stride, outPad = 64;
  GlobalTensor<T> xg, yg;
  xg.SetGlobalBuffer((__gm__ T*)x + b * n, n);
  yg.SetGlobalBuffer((__gm__ T*)y + b * outPad, outPad);
  TPipe pipe;
  TBuf<TPosition::VECCALC> bx, by, bt;
  pipe.InitBuffer(bx, n * sizeof(T));
  pipe.InitBuffer(by, outPad * sizeof(T));
  pipe.InitBuffer(bt, tmpBytes ? tmpBytes : 32);
  LocalTensor<T> lx = bx.Get<T>(), ly = by.Get<T>();
  LocalTensor<uint8_t> t = bt.Get<uint8_t>();
  DataCopy(lx, xg, n);
  DataCopy(ly, yg, outPad);
  PipeBarrier<PIPE_ALL>();
  uint32_t shape[2] = {first, last};
  switch (op) {
    case 0: ReduceMax<T, Pattern::Reduce::AR, false>(ly, lx, t, shape, true); break;
    case 1: ReduceMax<T, Pattern::Reduce::RA, false>(ly, lx, t, shape, true); break;
    case 2: ReduceMin<T, Pattern::Reduce::AR, true>(ly, lx, shape, true); break;
    case 3: ReduceMin<T, Pattern::Reduce::RA, true>(ly, lx, shape, true); break;
  }
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, ly, outPad);
}
extern "C" __global__ __aicore__ void rm_float(GM_ADDR x, GM_ADDR y, uint32_t first, uint32_t last, uint32_t op,
                                               uint32_t tmpBytes) {
  RmBody<float>(x, y, first, last, op, tmpBytes);
}
extern "C" __global__ __aicore__ void rm_half(GM_ADDR x, GM_ADDR y, uint32_t first, uint32_t last, uint32_t op,
                                              uint32_t tmpBytes) {
  RmBody<half>(x, y, first, last, op, tmpBytes);
}
