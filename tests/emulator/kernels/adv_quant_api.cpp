// trex tests (written for trex): AscendQuant (per tensor / per channel), AscendDequant (tensor / scalar scale),
// AscendAntiQuant (int8 -> half: tensor / stack / scalar / scale-only forms) and host GetAscendAntiQuantMaxMinTmpSize.
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
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

// AscendAntiQuant<int8_t, half, false>: src int8 [blocks][k, n], offset / scale half [groups, n] (groups = 1 except
// the scale-only modes), dst half [blocks][k, n]. mode 0: tensor offset + scale with tmp; 1: the same from the stack
// buffer; 2: scalar offset / scale (so, sc); 3: scale only, groups from the scale's SetShapeInfo; 4: scale only,
// groups from AntiQuantShapeInfo.
extern "C" __global__ __aicore__ void antiquant_half(GM_ADDR x, GM_ADDR off, GM_ADDR sc, GM_ADDR y, uint32_t k,
                                                     uint32_t n, uint32_t groups, uint32_t mode, float so, float ss) {
  const uint32_t b = GetBlockIdx(), cnt = k * n, pn = groups * n;
  GlobalTensor<int8_t> xg;
  GlobalTensor<half> og, sg, yg;
  xg.SetGlobalBuffer((__gm__ int8_t*)x + b * cnt, cnt);
  og.SetGlobalBuffer((__gm__ half*)off, pn);
  sg.SetGlobalBuffer((__gm__ half*)sc, pn);
  yg.SetGlobalBuffer((__gm__ half*)y + b * cnt, cnt);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> qx, qo, qs;
  TQue<TPosition::VECOUT, 1> qy, qt;
  pipe.InitBuffer(qx, 1, cnt);
  pipe.InitBuffer(qo, 1, pn * 2);
  pipe.InitBuffer(qs, 1, pn * 2);
  pipe.InitBuffer(qy, 1, cnt * 2);
  pipe.InitBuffer(qt, 1, 1024);
  LocalTensor<int8_t> lx = qx.AllocTensor<int8_t>();
  LocalTensor<half> lo = qo.AllocTensor<half>(), ls = qs.AllocTensor<half>();
  DataCopy(lx, xg, cnt);
  DataCopy(lo, og, pn);
  DataCopy(ls, sg, pn);
  qx.EnQue(lx);
  qo.EnQue(lo);
  qs.EnQue(ls);
  lx = qx.DeQue<int8_t>();
  lo = qo.DeQue<half>();
  ls = qs.DeQue<half>();
  LocalTensor<half> ly = qy.AllocTensor<half>();
  LocalTensor<uint8_t> tmp = qt.AllocTensor<uint8_t>();
  uint32_t shape[2] = {groups, n};
  switch (mode) {
    case 0: AscendAntiQuant<int8_t, half, false>(ly, lx, lo, ls, tmp, k); break;
    case 1: AscendAntiQuant<int8_t, half, false>(ly, lx, lo, ls, k); break;
    case 2: AscendAntiQuant<int8_t, half, false>(ly, lx, static_cast<half>(so), static_cast<half>(ss), tmp, k); break;
    case 3:
      ls.SetShapeInfo(ShapeInfo(2, shape, DataFormat::ND));
      AscendAntiQuant<int8_t, half, false>(ly, lx, ls, tmp, k);
      break;
    default: AscendAntiQuant<int8_t, half, false>(ly, lx, ls, tmp, k, AntiQuantShapeInfo{0, 0, groups, n}); break;
  }
  qy.EnQue(ly);
  ly = qy.DeQue<half>();
  DataCopy(yg, ly, cnt);
  qy.FreeTensor(ly);
  qt.FreeTensor(tmp);
  qx.FreeTensor(lx);
  qo.FreeTensor(lo);
  qs.FreeTensor(ls);
}

// Host: out = {max, min} of GetAscendAntiQuantMaxMinTmpSize for src [k, n], scale [scaleN], out dtype (1 half, 27 bf16).
extern "C" __global__ __aicore__ void antiquant_host(GM_ADDR out, uint32_t k, uint32_t n, uint32_t scaleN,
                                                     uint32_t transpose, int32_t outType) {
  ge::Shape src({k, n}), scale({scaleN});
  uint32_t mx = 7, mn = 7;
  GetAscendAntiQuantMaxMinTmpSize(src, scale, transpose != 0, int32_t{2}, outType, mx, mn);  // ge::DT_INT8 = 2
  GlobalTensor<uint32_t> o;
  o.SetGlobalBuffer((__gm__ uint32_t*)out, 2);
  o.SetValue(0, mx);
  o.SetValue(1, mn);
}
