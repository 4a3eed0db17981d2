// trex tests (written for trex): TBufPool as asc-devkit's tbufpool_management example uses it. Stage 1
// computes z = x + y in pool1, stage 2 w = x * y in pool2, which reuses pool1's memory; mode 1 carves both
// from a parent pool0. The other modes misuse the API. Blocks take perBlock elements each (the last the
// rest); DataCopyPad moves odd lengths.
#include "kernel_operator.h"
using namespace AscendC;

enum PoolMode : uint32_t {
  kReuse = 0, kSubdivide, kNoResetBetween, kResetWhileAllocated, kPoolOverflow, kTooManyIds, kStaleAfterReset,
  kSharedTooLong
};

class PoolKernel {
 public:
  __aicore__ inline void Run(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR w, uint32_t n, uint32_t perBlock, uint32_t mode) {
    const uint32_t start = perBlock * GetBlockIdx();
    len_ = GetBlockIdx() + 1 == GetBlockNum() ? n - start : perBlock;
    xGm_.SetGlobalBuffer((__gm__ float*)x + start, len_);
    yGm_.SetGlobalBuffer((__gm__ float*)y + start, len_);
    zGm_.SetGlobalBuffer((__gm__ float*)z + start, len_);
    wGm_.SetGlobalBuffer((__gm__ float*)w + start, len_);
    const uint32_t bufSize = perBlock * sizeof(float);
    if (mode == kSubdivide) {
      pipe_.InitBufPool(pool0_, bufSize * 4);
      pool0_.InitBufPool(pool1_, bufSize * 3);
      pool0_.InitBuffer(spare_, bufSize);
      pool0_.InitBufPool(pool2_, bufSize * 3, pool1_);
    } else {
      pipe_.InitBufPool(pool1_, bufSize * 3);
      pipe_.InitBufPool(pool2_, mode == kSharedTooLong ? bufSize * 4 : bufSize * 3, pool1_);
    }
    pool1_.InitBuffer(inX_, 1, bufSize);
    pool1_.InitBuffer(inY_, 1, bufSize);
    pool1_.InitBuffer(out_, 1, mode == kPoolOverflow ? bufSize * 2 : bufSize);
    if (mode == kTooManyIds) pool1_.InitBuffer(spare_, 32);
    Stage(inX_, inY_, out_, zGm_, false, mode == kResetWhileAllocated);
    if (mode != kNoResetBetween) pool1_.Reset();
    pool2_.InitBuffer(inX2_, 1, bufSize);
    pool2_.InitBuffer(inY2_, 1, bufSize);
    pool2_.InitBuffer(out2_, 1, bufSize);
    if (mode == kStaleAfterReset) {  // pool1's output buffer after Reset: its data is gone
      LocalTensor<float> stale = out_.AllocTensor<float>();
      DataCopyPad(wGm_, stale, DataCopyExtParams{1, static_cast<uint32_t>(len_ * sizeof(float)), 0, 0, 0});
      out_.FreeTensor(stale);
      return;
    }
    Stage(inX2_, inY2_, out2_, wGm_, true, false);
    pool2_.Reset();
  }

 private:
  template <class Q>
  __aicore__ inline void Stage(Q& qx, Q& qy, TQue<TPosition::VECOUT, 1>& qo, GlobalTensor<float>& dst, bool mul,
                               bool leak) {
    const DataCopyExtParams copy{1, static_cast<uint32_t>(len_ * sizeof(float)), 0, 0, 0};
    LocalTensor<float> a = qx.template AllocTensor<float>();
    LocalTensor<float> b = qy.template AllocTensor<float>();
    DataCopyPad(a, xGm_, copy, DataCopyPadExtParams<float>{false, 0, 0, 0});
    DataCopyPad(b, yGm_, copy, DataCopyPadExtParams<float>{false, 0, 0, 0});
    qx.EnQue(a);
    qy.EnQue(b);
    a = qx.template DeQue<float>();
    b = qy.template DeQue<float>();
    LocalTensor<float> c = qo.AllocTensor<float>();
    if (mul) Mul(c, a, b, len_);
    else Add(c, a, b, len_);
    qo.EnQue(c);
    qx.FreeTensor(a);
    if (!leak) qy.FreeTensor(b);
    c = qo.DeQue<float>();
    DataCopyPad(dst, c, copy);
    qo.FreeTensor(c);
  }

  TPipe pipe_;
  TBufPool<TPosition::VECCALC, 6> pool0_;
  TBufPool<TPosition::VECCALC, 3> pool1_, pool2_;
  TQue<TPosition::VECIN, 1> inX_, inY_, inX2_, inY2_;
  TQue<TPosition::VECOUT, 1> out_, out2_;
  TBuf<TPosition::VECCALC> spare_;
  GlobalTensor<float> xGm_, yGm_, zGm_, wGm_;
  uint32_t len_ = 0;
};

extern "C" __global__ __aicore__ void bufpool_kernel(GM_ADDR x, GM_ADDR y, GM_ADDR z, GM_ADDR w, uint32_t n,
                                                     uint32_t perBlock, uint32_t mode) {
  PoolKernel k;
  k.Run(x, y, z, w, n, perBlock, mode);
}
