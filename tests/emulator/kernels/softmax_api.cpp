// trex emulator tests (written for trex): the SoftMax advanced API, kernel-launch style. Each block
// runs SoftMax over `rows` rows of `cols` (of which `valid` are data) of its slice; y, max and sum are
// written whole (max/sum: one 32-byte block per row). `mixed`: half data with float max/sum.
#include "kernel_operator.h"
using namespace AscendC;

template <typename T, typename U>
__aicore__ inline void SoftMaxBlock(GM_ADDR x, GM_ADDR y, GM_ADDR mx, GM_ADDR sm, uint32_t rows, uint32_t cols,
                                    uint32_t valid, bool with_tmp) {
  const uint32_t n = rows * cols, per = 32 / sizeof(U);
  GlobalTensor<T> xg, yg;
  GlobalTensor<U> mg, sg;
  xg.SetGlobalBuffer((__gm__ T*)x + n * GetBlockIdx(), n);
  yg.SetGlobalBuffer((__gm__ T*)y + n * GetBlockIdx(), n);
  mg.SetGlobalBuffer((__gm__ U*)mx + rows * per * GetBlockIdx(), rows * per);
  sg.SetGlobalBuffer((__gm__ U*)sm + rows * per * GetBlockIdx(), rows * per);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> qx;
  TQue<TPosition::VECOUT, 1> qy, qm, qs;
  TBuf<TPosition::VECCALC> tmp;
  pipe.InitBuffer(qx, 1, n * sizeof(T));
  pipe.InitBuffer(qy, 1, n * sizeof(T));
  pipe.InitBuffer(qm, 1, rows * 32);
  pipe.InitBuffer(qs, 1, rows * 32);
  pipe.InitBuffer(tmp, 1024);
  LocalTensor<T> a = qx.AllocTensor<T>();
  DataCopy(a, xg, n);
  qx.EnQue(a);
  a = qx.DeQue<T>();
  LocalTensor<T> o = qy.AllocTensor<T>();
  LocalTensor<U> m = qm.AllocTensor<U>(), s = qs.AllocTensor<U>();
  Duplicate(o, static_cast<T>(0), n);
  SoftMaxTiling tiling{};  // no host tiling: the shape info gives the shape
  SoftMaxShapeInfo shape = {rows, cols, rows, valid};
  if (with_tmp) SoftMax<T>(o, s, m, a, tmp.Get<uint8_t>(), tiling, shape);
  else SoftMax<T>(o, s, m, a, tiling, shape);
  qy.EnQue(o);
  qm.EnQue(m);
  qs.EnQue(s);
  qx.FreeTensor(a);
  o = qy.DeQue<T>();
  m = qm.DeQue<U>();
  s = qs.DeQue<U>();
  DataCopy(yg, o, n);
  DataCopy(mg, m, rows * per);
  DataCopy(sg, s, rows * per);
  qy.FreeTensor(o);
  qm.FreeTensor(m);
  qs.FreeTensor(s);
}

extern "C" __global__ __aicore__ void softmax_rows(GM_ADDR x, GM_ADDR y, GM_ADDR mx, GM_ADDR sm, uint32_t rows,
                                                   uint32_t cols, uint32_t valid, uint32_t half_data, uint32_t mixed,
                                                   uint32_t with_tmp) {
  if (!half_data) SoftMaxBlock<float, float>(x, y, mx, sm, rows, cols, valid, with_tmp);
  else if (mixed) SoftMaxBlock<half, float>(x, y, mx, sm, rows, cols, valid, with_tmp);
  else SoftMaxBlock<half, half>(x, y, mx, sm, rows, cols, valid, with_tmp);
}
