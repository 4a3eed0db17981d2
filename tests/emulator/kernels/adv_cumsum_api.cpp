// trex tests (written for trex): CumSum along the last / first axis with the last row output, one [outter, inner]
// tile a block.
#include "kernel_operator.h"
using namespace AscendC;

constexpr CumSumConfig kLast = {true, false, true};
constexpr CumSumConfig kFirst = {false, false, true};

template <class T>
__aicore__ inline void CsBody(GM_ADDR x, GM_ADDR y, GM_ADDR last, uint32_t o, uint32_t in, uint32_t lastAxis,
                              uint32_t tmpBytes) {
  const uint32_t b = GetBlockIdx(), n = o * in;
  GlobalTensor<T> xg, yg, lg;
  xg.SetGlobalBuffer((__gm__ T*)x + b * n, n);
  yg.SetGlobalBuffer((__gm__ T*)y + b * n, n);
  lg.SetGlobalBuffer((__gm__ T*)last + b * in, in);
  TPipe pipe;
  TBuf<TPosition::VECCALC> bx, by, bl, bt;
  pipe.InitBuffer(bx, n * sizeof(T));
  pipe.InitBuffer(by, n * sizeof(T));
  pipe.InitBuffer(bl, in * sizeof(T));
  pipe.InitBuffer(bt, tmpBytes ? tmpBytes : 32);
  LocalTensor<T> lx = bx.Get<T>(), ly = by.Get<T>(), ll = bl.Get<T>();
  LocalTensor<uint8_t> t = bt.Get<uint8_t>();
  DataCopy(lx, xg, n);
  PipeBarrier<PIPE_ALL>();
  const CumSumInfo info{o, in};
  if (lastAxis) CumSum<T, kLast>(ly, ll, lx, t, info);
  else CumSum<T, kFirst>(ly, ll, lx, t, info);
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, ly, n);
  DataCopy(lg, ll, in);
}
extern "C" __global__ __aicore__ void cs_float(GM_ADDR x, GM_ADDR y, GM_ADDR last, uint32_t o, uint32_t in,
                                               uint32_t lastAxis, uint32_t tmpBytes) {
  CsBody<float>(x, y, last, o, in, lastAxis, tmpBytes);
}
extern "C" __global__ __aicore__ void cs_half(GM_ADDR x, GM_ADDR y, GM_ADDR last, uint32_t o, uint32_t in,
                                              uint32_t lastAxis, uint32_t tmpBytes) {
  CsBody<half>(x, y, last, o, in, lastAxis, tmpBytes);
}
