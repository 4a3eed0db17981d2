// trex test op project (written for trex): y = erf(x) (tiling key 1) or erfc(x) (key 2), framework launch,
// tiles of tileLength through double-buffered queues and a sharedTmpBuffer of tmpBytes.
#include "kernel_operator.h"
using namespace AscendC;

template <class T, bool COMPLEMENT>
class ErfCustomKernel {
 public:
  __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const ErfCustomTilingData& t) {
    const uint32_t start = t.blockLength * GetBlockIdx();
    length_ = GetBlockIdx() + 1 == GetBlockNum() ? t.totalLength - start : t.blockLength;
    tile_ = t.tileLength;
    xGm_.SetGlobalBuffer((__gm__ T*)x + start, length_);
    yGm_.SetGlobalBuffer((__gm__ T*)y + start, length_);
    pipe_.InitBuffer(inQ_, 2, tile_ * sizeof(T));
    pipe_.InitBuffer(outQ_, 2, tile_ * sizeof(T));
    pipe_.InitBuffer(tmp_, t.tmpBytes);
  }
  __aicore__ inline void Process() {
    for (uint32_t off = 0; off < length_; off += tile_) {
      const uint32_t n = length_ - off < tile_ ? length_ - off : tile_;
      const DataCopyExtParams copy{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0};
      LocalTensor<T> in = inQ_.AllocTensor<T>();
      DataCopyPad(in, xGm_[off], copy, DataCopyPadExtParams<T>{false, 0, 0, 0});
      inQ_.EnQue(in);
      LocalTensor<T> x = inQ_.DeQue<T>();
      LocalTensor<T> y = outQ_.AllocTensor<T>();
      if constexpr (COMPLEMENT) Erfc<T, false>(y, x, tmp_.Get<uint8_t>(), n);
      else Erf<T, false>(y, x, tmp_.Get<uint8_t>(), n);
      outQ_.EnQue(y);
      inQ_.FreeTensor(x);
      LocalTensor<T> out = outQ_.DeQue<T>();
      DataCopyPad(yGm_[off], out, copy);
      outQ_.FreeTensor(out);
    }
  }

 private:
  TPipe pipe_;
  TQue<TPosition::VECIN, 2> inQ_;
  TQue<TPosition::VECOUT, 2> outQ_;
  TBuf<TPosition::VECCALC> tmp_;
  GlobalTensor<T> xGm_, yGm_;
  uint32_t length_ = 0, tile_ = 0;
};

extern "C" __global__ __aicore__ void erf_custom(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA(t, tiling);
  if (TILING_KEY_IS(1)) {
    ErfCustomKernel<DTYPE_X, false> op;
    op.Init(x, y, t);
    op.Process();
  } else if (TILING_KEY_IS(2)) {
    ErfCustomKernel<DTYPE_X, true> op;
    op.Init(x, y, t);
    op.Process();
  }
}
