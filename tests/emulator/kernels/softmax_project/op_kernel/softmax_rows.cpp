// trex emulator tests: op_kernel of SoftmaxRows, ops-repo style: a templated kernel class over
// DTYPE_X, GET_TILING_DATA with the embedded SoftMaxTiling, TILING_KEY_IS per dtype.
#include "kernel_operator.h"
using namespace AscendC;

template <typename T>
class KernelSoftmaxRows {
 public:
  __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint32_t rows, uint32_t cols, const SoftMaxTiling& tiling) {
    rows_ = rows;
    cols_ = cols;
    tiling_ = tiling;
    xg_.SetGlobalBuffer((__gm__ T*)x + rows * cols * GetBlockIdx(), rows * cols);
    yg_.SetGlobalBuffer((__gm__ T*)y + rows * cols * GetBlockIdx(), rows * cols);
    pipe_.InitBuffer(qx_, 1, rows * cols * sizeof(T));
    pipe_.InitBuffer(qy_, 1, rows * cols * sizeof(T));
    pipe_.InitBuffer(stats_, 2 * rows * 32);
  }
  __aicore__ inline void Process() {
    LocalTensor<T> a = qx_.AllocTensor<T>();
    DataCopy(a, xg_, rows_ * cols_);
    qx_.EnQue(a);
    a = qx_.DeQue<T>();
    LocalTensor<T> o = qy_.AllocTensor<T>();
    LocalTensor<T> st = stats_.Get<T>();
    const uint32_t per = 32 / sizeof(T);
    SoftMax<T>(o, st, st[rows_ * per], a, tiling_);  // the shape from the tiling
    qy_.EnQue(o);
    qx_.FreeTensor(a);
    o = qy_.DeQue<T>();
    DataCopy(yg_, o, rows_ * cols_);
    qy_.FreeTensor(o);
  }

 private:
  TPipe pipe_;
  TQue<TPosition::VECIN, 1> qx_;
  TQue<TPosition::VECOUT, 1> qy_;
  TBuf<TPosition::VECCALC> stats_;
  GlobalTensor<T> xg_, yg_;
  SoftMaxTiling tiling_;
  uint32_t rows_ = 0, cols_ = 0;
};

extern "C" __global__ __aicore__ void softmax_rows(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA(t, tiling);
  KernelSoftmaxRows<DTYPE_X> op;
  op.Init(x, y, t.rowsPerBlock, t.cols, t.softmax);
  if (TILING_KEY_IS(1) || TILING_KEY_IS(2)) op.Process();
}
