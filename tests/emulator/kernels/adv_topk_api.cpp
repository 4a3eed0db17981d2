// trex tests (written for trex): kernel-launch kernels for the TopK advanced API (adv_topk.h).
// Each block takes rowsPerBlock rows of a [rows, inner] source (the last block fewer: a tail that still uses the
// tiling made for rowsPerBlock rows); the tiling bytes come from the host helpers (a TopkTiling in GM, copied word
// by word as asc-devkit's examples do). dst buffers are filled with sentinels (values 7, indices -5) first, so the
// test sees which elements TopK writes (and, with !isLargest, the padding it negates). tmpBytes 0: the form without
// tmpLocal; otherwise a VECCALC buffer of tmpBytes. srcIndex: Normal [inner] shared by every row, Small [rows, inner].
#include "kernel_operator.h"
using namespace AscendC;

template <class T, bool isInitIndex, bool isHasfinish, TopKMode mode>
__aicore__ inline void TopkBody(GM_ADDR src, GM_ADDR idx, GM_ADDR finish, GM_ADDR dstV, GM_ADDR dstI, GM_ADDR tiling,
                                uint32_t rows, uint32_t rowsPerBlock, uint32_t inner, uint32_t n, uint32_t k,
                                uint32_t isLargest, uint32_t tmpBytes) {
  constexpr bool small = mode == TopKMode::TOPK_NSMALL;
  const uint32_t first = rowsPerBlock * GetBlockIdx();
  if (first >= rows) return;
  const uint32_t my = rows - first < rowsPerBlock ? rows - first : rowsPerBlock;
  const uint32_t kAlignV = small ? k : (k + 32 / sizeof(T) - 1) / (32 / sizeof(T)) * (32 / sizeof(T));
  const uint32_t kAlignI = small ? k : (k + 7) / 8 * 8;
  const uint32_t idxLen = small ? rowsPerBlock * inner : inner;

  TopkTiling tl;
  {
    uint32_t* w = reinterpret_cast<uint32_t*>(&tl);
    auto g = reinterpret_cast<__gm__ uint32_t*>(tiling);
    for (uint32_t i = 0; i < sizeof(TopkTiling) / sizeof(uint32_t); ++i) w[i] = g[i];
  }

  GlobalTensor<T> srcGm, dvGm;
  GlobalTensor<int32_t> idxGm, diGm;
  GlobalTensor<uint8_t> finGm;
  srcGm.SetGlobalBuffer((__gm__ T*)src + first * inner, my * inner);
  idxGm.SetGlobalBuffer((__gm__ int32_t*)idx + (small ? first * inner : 0), small ? my * inner : inner);
  finGm.SetGlobalBuffer((__gm__ uint8_t*)finish + first, my);
  dvGm.SetGlobalBuffer((__gm__ T*)dstV + first * kAlignV, my * kAlignV);
  diGm.SetGlobalBuffer((__gm__ int32_t*)dstI + first * kAlignI, my * kAlignI);

  TPipe pipe;
  TQue<TPosition::VECIN, 1> qSrc, qIdx, qFin;
  TQue<TPosition::VECOUT, 1> qV, qI;
  TBuf<TPosition::VECCALC> tmpBuf;
  auto up32 = [](uint32_t b) { return (b + 31) / 32 * 32; };
  pipe.InitBuffer(qSrc, 1, rowsPerBlock * inner * sizeof(T));
  pipe.InitBuffer(qIdx, 1, idxLen * sizeof(int32_t));
  pipe.InitBuffer(qFin, 1, up32(rowsPerBlock));
  pipe.InitBuffer(qV, 1, up32(rowsPerBlock * kAlignV * sizeof(T)));
  pipe.InitBuffer(qI, 1, up32(rowsPerBlock * kAlignI * sizeof(int32_t)));
  if (tmpBytes) pipe.InitBuffer(tmpBuf, tmpBytes);

  LocalTensor<T> s = qSrc.AllocTensor<T>();
  LocalTensor<int32_t> ix = qIdx.AllocTensor<int32_t>();
  LocalTensor<bool> fin = qFin.AllocTensor<bool>();
  DataCopy(s, srcGm, my * inner);
  if (isInitIndex) DataCopy(ix, idxGm, small ? my * inner : inner);
  if (isHasfinish)
    DataCopyPad(fin.template ReinterpretCast<uint8_t>(), finGm, DataCopyExtParams{1, my, 0, 0, 0},
                DataCopyPadExtParams<uint8_t>{false, 0, 0, 0});
  qSrc.EnQue(s);
  qIdx.EnQue(ix);
  qFin.EnQue(fin);
  s = qSrc.DeQue<T>();
  ix = qIdx.DeQue<int32_t>();
  fin = qFin.DeQue<bool>();

  LocalTensor<T> dv = qV.AllocTensor<T>();
  LocalTensor<int32_t> di = qI.AllocTensor<int32_t>();
  Duplicate(dv, static_cast<T>(7.0f), static_cast<int32_t>(up32(rowsPerBlock * kAlignV * sizeof(T)) / sizeof(T)));
  Duplicate(di, -5, static_cast<int32_t>(up32(rowsPerBlock * kAlignI * sizeof(int32_t)) / sizeof(int32_t)));
  PipeBarrier<PIPE_V>();

  TopKInfo info;
  info.outter = static_cast<int32_t>(my);
  info.inner = static_cast<int32_t>(inner);
  info.n = static_cast<int32_t>(n);
  if (tmpBytes) {
    LocalTensor<uint8_t> tmp = tmpBuf.Get<uint8_t>();
    TopK<T, isInitIndex, isHasfinish, false, mode>(dv, di, s, ix, fin, tmp, static_cast<int32_t>(k), tl, info,
                                                   isLargest != 0);
  } else {
    TopK<T, isInitIndex, isHasfinish, false, mode>(dv, di, s, ix, fin, static_cast<int32_t>(k), tl, info,
                                                   isLargest != 0);
  }
  qV.EnQue(dv);
  qI.EnQue(di);
  qSrc.FreeTensor(s);
  qIdx.FreeTensor(ix);
  qFin.FreeTensor(fin);
  dv = qV.DeQue<T>();
  di = qI.DeQue<int32_t>();
  DataCopyPad(dvGm, dv, DataCopyExtParams{1, static_cast<uint32_t>(my * kAlignV * sizeof(T)), 0, 0, 0});
  DataCopyPad(diGm, di, DataCopyExtParams{1, static_cast<uint32_t>(my * kAlignI * sizeof(int32_t)), 0, 0, 0});
  qV.FreeTensor(dv);
  qI.FreeTensor(di);
}

extern "C" __global__ __aicore__ void normal_f32(GM_ADDR src, GM_ADDR idx, GM_ADDR finish, GM_ADDR dstV, GM_ADDR dstI,
    GM_ADDR tiling, uint32_t rows, uint32_t rowsPerBlock, uint32_t inner, uint32_t n, uint32_t k, uint32_t isLargest,
    uint32_t tmpBytes) {
  TopkBody<float, false, true, TopKMode::TOPK_NORMAL>(src, idx, finish, dstV, dstI, tiling, rows, rowsPerBlock, inner, n, k, isLargest,
                                         tmpBytes);
}

extern "C" __global__ __aicore__ void normal_f32_init(GM_ADDR src, GM_ADDR idx, GM_ADDR finish, GM_ADDR dstV, GM_ADDR dstI,
    GM_ADDR tiling, uint32_t rows, uint32_t rowsPerBlock, uint32_t inner, uint32_t n, uint32_t k, uint32_t isLargest,
    uint32_t tmpBytes) {
  TopkBody<float, true, false, TopKMode::TOPK_NORMAL>(src, idx, finish, dstV, dstI, tiling, rows, rowsPerBlock, inner, n, k, isLargest,
                                         tmpBytes);
}

extern "C" __global__ __aicore__ void normal_f16(GM_ADDR src, GM_ADDR idx, GM_ADDR finish, GM_ADDR dstV, GM_ADDR dstI,
    GM_ADDR tiling, uint32_t rows, uint32_t rowsPerBlock, uint32_t inner, uint32_t n, uint32_t k, uint32_t isLargest,
    uint32_t tmpBytes) {
  TopkBody<half, false, true, TopKMode::TOPK_NORMAL>(src, idx, finish, dstV, dstI, tiling, rows, rowsPerBlock, inner, n, k, isLargest,
                                         tmpBytes);
}

extern "C" __global__ __aicore__ void normal_f16_init(GM_ADDR src, GM_ADDR idx, GM_ADDR finish, GM_ADDR dstV, GM_ADDR dstI,
    GM_ADDR tiling, uint32_t rows, uint32_t rowsPerBlock, uint32_t inner, uint32_t n, uint32_t k, uint32_t isLargest,
    uint32_t tmpBytes) {
  TopkBody<half, true, true, TopKMode::TOPK_NORMAL>(src, idx, finish, dstV, dstI, tiling, rows, rowsPerBlock, inner, n, k, isLargest,
                                         tmpBytes);
}

extern "C" __global__ __aicore__ void small_f32(GM_ADDR src, GM_ADDR idx, GM_ADDR finish, GM_ADDR dstV, GM_ADDR dstI,
    GM_ADDR tiling, uint32_t rows, uint32_t rowsPerBlock, uint32_t inner, uint32_t n, uint32_t k, uint32_t isLargest,
    uint32_t tmpBytes) {
  TopkBody<float, false, false, TopKMode::TOPK_NSMALL>(src, idx, finish, dstV, dstI, tiling, rows, rowsPerBlock, inner, n, k, isLargest,
                                         tmpBytes);
}

extern "C" __global__ __aicore__ void small_f32_init(GM_ADDR src, GM_ADDR idx, GM_ADDR finish, GM_ADDR dstV, GM_ADDR dstI,
    GM_ADDR tiling, uint32_t rows, uint32_t rowsPerBlock, uint32_t inner, uint32_t n, uint32_t k, uint32_t isLargest,
    uint32_t tmpBytes) {
  TopkBody<float, true, false, TopKMode::TOPK_NSMALL>(src, idx, finish, dstV, dstI, tiling, rows, rowsPerBlock, inner, n, k, isLargest,
                                         tmpBytes);
}

extern "C" __global__ __aicore__ void small_f16(GM_ADDR src, GM_ADDR idx, GM_ADDR finish, GM_ADDR dstV, GM_ADDR dstI,
    GM_ADDR tiling, uint32_t rows, uint32_t rowsPerBlock, uint32_t inner, uint32_t n, uint32_t k, uint32_t isLargest,
    uint32_t tmpBytes) {
  TopkBody<half, false, false, TopKMode::TOPK_NSMALL>(src, idx, finish, dstV, dstI, tiling, rows, rowsPerBlock, inner, n, k, isLargest,
                                         tmpBytes);
}

extern "C" __global__ __aicore__ void small_f16_init(GM_ADDR src, GM_ADDR idx, GM_ADDR finish, GM_ADDR dstV, GM_ADDR dstI,
    GM_ADDR tiling, uint32_t rows, uint32_t rowsPerBlock, uint32_t inner, uint32_t n, uint32_t k, uint32_t isLargest,
    uint32_t tmpBytes) {
  TopkBody<half, true, false, TopKMode::TOPK_NSMALL>(src, idx, finish, dstV, dstI, tiling, rows, rowsPerBlock, inner, n, k, isLargest,
                                         tmpBytes);
}

extern "C" __global__ __aicore__ void small_f32_finish(GM_ADDR src, GM_ADDR idx, GM_ADDR finish, GM_ADDR dstV, GM_ADDR dstI,
    GM_ADDR tiling, uint32_t rows, uint32_t rowsPerBlock, uint32_t inner, uint32_t n, uint32_t k, uint32_t isLargest,
    uint32_t tmpBytes) {
  TopkBody<float, false, true, TopKMode::TOPK_NSMALL>(src, idx, finish, dstV, dstI, tiling, rows, rowsPerBlock, inner, n, k, isLargest,
                                         tmpBytes);
}
