// trex tests (written for trex): AscendQuant (per tensor / per channel) and AscendDequant (tensor / scalar scale).
#include "kernel_operator.h"
using namespace AscendC;

// x: float [blocks * n]; y: int8 [blocks * n]; sc: float [ch] per-channel scales (mode 1) or unused.
extern "C" __global__ __aicore__ void quant_float(GM_ADDR x, GM_ADDR sc, GM_ADDR y, uint32_t n, uint32_t ch,
                                                  uint32_t mode, uint32_t tmpBytes, float scale, float offset) {
  const uint32_t b = GetBlockIdx();
  GlobalTensor<float> xg, sg;
  GlobalTensor<int8_t> yg;
  xg.SetGlobalBuffer((__gm__ float*)x + b * n, n);
  sg.SetGlobalBuffer((__gm__ float*)sc, ch);
  yg.SetGlobalBuffer((__gm__ int8_t*)y + b * n, n);
  TPipe pipe;
  TBuf<TPosition::VECCALC> bx, bs, by, bt;
  pipe.InitBuffer(bx, n * 4);
  pipe.InitBuffer(bs, (ch * 4 + 31) / 32 * 32);
  pipe.InitBuffer(by, (n + 31) / 32 * 32);
  pipe.InitBuffer(bt, tmpBytes ? tmpBytes : 32);
  LocalTensor<float> lx = bx.Get<float>(), ls = bs.Get<float>();
  LocalTensor<int8_t> ly = by.Get<int8_t>();
  DataCopy(lx, xg, n);
  DataCopy(ls, sg, (ch + 7) / 8 * 8);
  PipeBarrier<PIPE_ALL>();
  if (mode == 0) {
    if (tmpBytes) AscendQuant<float>(ly, lx, bt.Get<uint8_t>(), scale, offset, n);
    else AscendQuant<float>(ly, lx, scale, offset, n);
  } else {
    AscendQuant<float>(ly, lx, ls, offset, ch, n);
  }
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, ly, n);
}

// src int32 [blocks][m, n]; scale float [n]; dst float/half [blocks][m, alignN]
template <class D>
__aicore__ inline void DeqBody(GM_ADDR x, GM_ADDR sc, GM_ADDR y, uint32_t m, uint32_t n, uint32_t cal, uint32_t mode,
                               uint32_t tmpBytes) {
  const uint32_t b = GetBlockIdx();
  const uint32_t blk = 32 / sizeof(D), an = (n + blk - 1) / blk * blk;
  GlobalTensor<int32_t> xg;
  GlobalTensor<float> sg;
  GlobalTensor<D> yg;
  xg.SetGlobalBuffer((__gm__ int32_t*)x + b * m * n, m * n);
  sg.SetGlobalBuffer((__gm__ float*)sc, n);
  yg.SetGlobalBuffer((__gm__ D*)y + b * m * an, m * an);
  TPipe pipe;
  TBuf<TPosition::VECCALC> bx, bs, by, bt;
  pipe.InitBuffer(bx, m * n * 4);
  pipe.InitBuffer(bs, n * 4);
  pipe.InitBuffer(by, m * an * sizeof(D));
  pipe.InitBuffer(bt, tmpBytes ? tmpBytes : 32);
  LocalTensor<int32_t> lx = bx.Get<int32_t>();
  LocalTensor<float> ls = bs.Get<float>();
  LocalTensor<D> ly = by.Get<D>();
  DataCopy(lx, xg, m * n);
  DataCopy(ls, sg, n);
  DataCopy(ly, yg, m * an);
  PipeBarrier<PIPE_ALL>();
  if (mode == 0) {
    if (tmpBytes) AscendDequant(ly, lx, ls, bt.Get<uint8_t>(), {m, n, cal});
    else AscendDequant(ly, lx, ls, {m, n, cal});
  } else {
    AscendDequant(ly, lx, 0.5f, {m, n, cal});
  }
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, ly, m * an);
}
extern "C" __global__ __aicore__ void deq_float(GM_ADDR x, GM_ADDR sc, GM_ADDR y, uint32_t m, uint32_t n, uint32_t cal,
                                                uint32_t mode, uint32_t tmpBytes) {
  DeqBody<float>(x, sc, y, m, n, cal, mode, tmpBytes);
}
extern "C" __global__ __aicore__ void deq_half(GM_ADDR x, GM_ADDR sc, GM_ADDR y, uint32_t m, uint32_t n, uint32_t cal,
                                               uint32_t mode, uint32_t tmpBytes) {
  DeqBody<half>(x, sc, y, m, n, cal, mode, tmpBytes);
}
