// trex tests (written for trex): BroadCast of 2- and 4-byte element types ([m, 1] -> [m, k] and [1, k] -> [m, k]),
// one [m, k] tile a block.
#include "kernel_operator.h"
using namespace AscendC;

template <class T>
__aicore__ inline void BcBody(GM_ADDR x, GM_ADDR y, uint32_t m, uint32_t k, uint32_t axis) {
  const uint32_t b = GetBlockIdx();
  const uint32_t src_n = axis == 1 ? m : k;
  GlobalTensor<T> xg, yg;
  xg.SetGlobalBuffer((__gm__ T*)x + b * src_n, src_n);
  yg.SetGlobalBuffer((__gm__ T*)y + b * m * k, m * k);
  TPipe pipe;
  TBuf<TPosition::VECCALC> bs, bd, bt;
  pipe.InitBuffer(bs, (src_n * sizeof(T) + 31) / 32 * 32);
  pipe.InitBuffer(bd, m * k * sizeof(T));
  pipe.InitBuffer(bt, 4096);
  LocalTensor<T> s = bs.Get<T>(), d = bd.Get<T>();
  LocalTensor<uint8_t> t = bt.Get<uint8_t>();
  DataCopyPad(s, xg, DataCopyExtParams{1, static_cast<uint32_t>(src_n * sizeof(T)), 0, 0, 0},
              DataCopyPadExtParams<T>{false, 0, 0, 0});
  PipeBarrier<PIPE_ALL>();
  uint32_t dst_shape[2] = {m, k};
  if (axis == 1) {
    uint32_t src_shape[2] = {m, 1};
    BroadCast<T, 2, 1>(d, s, dst_shape, src_shape, t);
  } else {
    uint32_t src_shape[2] = {1, k};
    Broadcast<T, 2, 0>(d, s, dst_shape, src_shape);
  }
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, d, m * k);
}
extern "C" __global__ __aicore__ void bc_int16(GM_ADDR x, GM_ADDR y, uint32_t m, uint32_t k, uint32_t axis) {
  BcBody<int16_t>(x, y, m, k, axis);
}
extern "C" __global__ __aicore__ void bc_int32(GM_ADDR x, GM_ADDR y, uint32_t m, uint32_t k, uint32_t axis) {
  BcBody<int32_t>(x, y, m, k, axis);
}
extern "C" __global__ __aicore__ void bc_bf16(GM_ADDR x, GM_ADDR y, uint32_t m, uint32_t k, uint32_t axis) {
  BcBody<bfloat16_t>(x, y, m, k, axis);
}
