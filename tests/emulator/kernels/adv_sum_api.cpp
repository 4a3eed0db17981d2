// trex tests (written for trex): the Sum advanced API, outter rows of inner elements (n summed) a block.
#include "kernel_operator.h"
using namespace AscendC;

template <class T>
__aicore__ inline void SumBody(GM_ADDR x, GM_ADDR y, uint32_t outter, uint32_t inner, uint32_t n, uint32_t tmpBytes) {
  const uint32_t b = GetBlockIdx();
  const uint32_t outPad = (outter * sizeof(T) + 31) / 32 * 32 / sizeof(T);
  GlobalTensor<T> xg, yg;
  xg.SetGlobalBuffer((__gm__ T*)x + b * outter * inner, outter * inner);
  yg.SetGlobalBuffer((__gm__ T*)y + b * outPad, outPad);
  TPipe pipe;
  TBuf<TPosition::VECCALC> bs, bd, bt;
  pipe.InitBuffer(bs, outter * inner * sizeof(T));
  pipe.InitBuffer(bd, outPad * sizeof(T));
  if (tmpBytes) pipe.InitBuffer(bt, tmpBytes);
  LocalTensor<T> s = bs.Get<T>(), d = bd.Get<T>();
  DataCopy(s, xg, outter * inner);
  DataCopy(d, yg, outPad);  // keep the poison in the padding
  PipeBarrier<PIPE_ALL>();
  SumParams p{outter, inner, n};
  if (tmpBytes) Sum(d, s, bt.Get<uint8_t>(), p); else Sum(d, s, p);
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, d, outPad);
}
extern "C" __global__ __aicore__ void sum_float(GM_ADDR x, GM_ADDR y, uint32_t outter, uint32_t inner, uint32_t n,
                                                uint32_t tmpBytes) {
  SumBody<float>(x, y, outter, inner, n, tmpBytes);
}
extern "C" __global__ __aicore__ void sum_half(GM_ADDR x, GM_ADDR y, uint32_t outter, uint32_t inner, uint32_t n,
                                               uint32_t tmpBytes) {
  SumBody<half>(x, y, outter, inner, n, tmpBytes);
}
