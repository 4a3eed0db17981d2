// trex tests (written for trex): DropOut over [rows, srcLast] with a [rows, maskLast] byte or bit mask, a tile a block.
#include "kernel_operator.h"
using namespace AscendC;

template <class T>
__aicore__ inline void DoBody(GM_ADDR x, GM_ADDR mk, GM_ADDR y, uint32_t rows, uint32_t sl, uint32_t ml, float keep,
                              uint32_t tmpBytes) {
  const uint32_t b = GetBlockIdx(), n = rows * sl, mn = rows * ml;
  GlobalTensor<T> xg, yg;
  GlobalTensor<uint8_t> mg;
  xg.SetGlobalBuffer((__gm__ T*)x + b * n, n);
  yg.SetGlobalBuffer((__gm__ T*)y + b * n, n);
  mg.SetGlobalBuffer((__gm__ uint8_t*)mk + b * mn, mn);
  TPipe pipe;
  TBuf<TPosition::VECCALC> bx, bm, by, bt;
  pipe.InitBuffer(bx, n * sizeof(T));
  pipe.InitBuffer(bm, (mn + 31) / 32 * 32);
  pipe.InitBuffer(by, n * sizeof(T));
  pipe.InitBuffer(bt, tmpBytes ? tmpBytes : 32);
  LocalTensor<T> lx = bx.Get<T>(), ly = by.Get<T>();
  LocalTensor<uint8_t> lm = bm.Get<uint8_t>();
  DataCopy(lx, xg, n);
  DataCopy(lm, mg, (mn + 31) / 32 * 32);
  PipeBarrier<PIPE_ALL>();
  DropOutShapeInfo info;
  info.firstAxis = rows;
  info.srcLastAxis = sl;
  info.maskLastAxis = ml;
  if (tmpBytes) DropOut(ly, lx, lm, bt.Get<uint8_t>(), keep, info);
  else DropOut(ly, lx, lm, keep, info);
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, ly, n);
}
extern "C" __global__ __aicore__ void do_float(GM_ADDR x, GM_ADDR mk, GM_ADDR y, uint32_t rows, uint32_t sl, uint32_t ml,
                                               float keep, uint32_t tmpBytes) {
  DoBody<float>(x, mk, y, rows, sl, ml, keep, tmpBytes);
}
extern "C" __global__ __aicore__ void do_half(GM_ADDR x, GM_ADDR mk, GM_ADDR y, uint32_t rows, uint32_t sl, uint32_t ml,
                                              float keep, uint32_t tmpBytes) {
  DoBody<half>(x, mk, y, rows, sl, ml, keep, tmpBytes);
}
