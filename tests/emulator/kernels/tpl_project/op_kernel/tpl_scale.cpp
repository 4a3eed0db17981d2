// trex test op project (written for trex): y = x * SCALE as an ASCENDC_TPL_* template kernel. D_T is the
// element type, SCALE a UINT template parameter, USE_PAD selects DataCopyPad for lengths that are not a
// multiple of 32 B (without it the tail is truncated, as DataCopy does).
#include "kernel_operator.h"
#include "tpl_scale_tiling.h"
#include "tiling_key_tpl_scale.h"

template <typename D_T, int SCALE, bool USE_PAD>
class TplScaleKernel {
 public:
  __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, const TplScaleTiling& t) {
    const uint32_t start = t.blockLength * AscendC::GetBlockIdx();
    length_ = AscendC::GetBlockIdx() + 1 == AscendC::GetBlockNum() ? t.totalLength - start : t.blockLength;
    tile_ = t.tileLength;
    xGm_.SetGlobalBuffer((__gm__ D_T*)x + start, length_);
    yGm_.SetGlobalBuffer((__gm__ D_T*)y + start, length_);
    pipe_.InitBuffer(inQ_, 2, tile_ * sizeof(D_T));
    pipe_.InitBuffer(outQ_, 2, tile_ * sizeof(D_T));
  }
  __aicore__ inline void Process() {
    for (uint32_t off = 0; off < length_; off += tile_) {
      const uint32_t n = length_ - off < tile_ ? length_ - off : tile_;
      AscendC::LocalTensor<D_T> in = inQ_.AllocTensor<D_T>();
      if constexpr (USE_PAD) {
        AscendC::DataCopyPad(in, xGm_[off], AscendC::DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(D_T)), 0, 0, 0},
                             AscendC::DataCopyPadExtParams<D_T>{false, 0, 0, 0});
      } else {
        AscendC::DataCopy(in, xGm_[off], n);
      }
      inQ_.EnQue(in);
      AscendC::LocalTensor<D_T> x = inQ_.DeQue<D_T>();
      AscendC::LocalTensor<D_T> y = outQ_.AllocTensor<D_T>();
      AscendC::Muls(y, x, static_cast<D_T>(SCALE), n);
      outQ_.EnQue(y);
      inQ_.FreeTensor(x);
      AscendC::LocalTensor<D_T> out = outQ_.DeQue<D_T>();
      if constexpr (USE_PAD) {
        AscendC::DataCopyPad(yGm_[off], out, AscendC::DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(D_T)), 0, 0, 0});
      } else {
        AscendC::DataCopy(yGm_[off], out, n);
      }
      outQ_.FreeTensor(out);
    }
  }

 private:
  AscendC::TPipe pipe_;
  AscendC::TQue<AscendC::TPosition::VECIN, 2> inQ_;
  AscendC::TQue<AscendC::TPosition::VECOUT, 2> outQ_;
  AscendC::GlobalTensor<D_T> xGm_, yGm_;
  uint32_t length_ = 0, tile_ = 0;
};

template <typename D_T, int SCALE, bool USE_PAD>
__global__ __aicore__ void tpl_scale(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(TplScaleTiling);
  GET_TILING_DATA_WITH_STRUCT(TplScaleTiling, t, tiling);
  TplScaleKernel<D_T, SCALE, USE_PAD> op;
  op.Init(x, y, t);
  op.Process();
}
