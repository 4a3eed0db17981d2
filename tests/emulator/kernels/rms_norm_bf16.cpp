// Hand-written AscendC kernel in the documented style: row-wise RMSNorm, bf16 in/out, fp32 math.
// Rows are split over GetBlockNum() cores (front/tail); each row is loaded with DataCopyPad (the
// row need not be 32-byte aligned), cast up with CAST_NONE, squared, reduced with ReduceSum, the
// scalar rstd computed on the scalar unit between V_S / S_V flags, then scaled, multiplied by
// gamma and cast down with CAST_RINT. rstd (fp32, one per row) is written as a second output.
// Compiled unchanged against the trex emulator by tests/emulator/test_acceptance.py.
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BN = 2;  // double-buffer depth

class RmsNormBf16 {
 public:
  __aicore__ inline void Init(GM_ADDR x, GM_ADDR g, GM_ADDR y, GM_ADDR rstd, uint32_t rows, uint32_t d, float eps) {
    uint32_t per = (rows + GetBlockNum() - 1) / GetBlockNum();
    uint32_t start = GetBlockIdx() * per;
    n_ = start >= rows ? 0 : (rows - start < per ? rows - start : per);
    d_ = d;
    eps_ = eps;
    dAl_ = (d + 15) / 16 * 16;  // 32-byte aligned row length in bf16 elements
    xGm.SetGlobalBuffer((__gm__ bfloat16_t*)x + (uint64_t)start * d);
    yGm.SetGlobalBuffer((__gm__ bfloat16_t*)y + (uint64_t)start * d);
    rstdGm.SetGlobalBuffer((__gm__ float*)rstd + start);
    gGm.SetGlobalBuffer((__gm__ bfloat16_t*)g);
    pipe.InitBuffer(inQ, BN, dAl_ * sizeof(bfloat16_t));
    pipe.InitBuffer(outQ, BN, dAl_ * sizeof(bfloat16_t));
    pipe.InitBuffer(gammaQ, 1, dAl_ * sizeof(bfloat16_t));
    pipe.InitBuffer(xf, dAl_ * sizeof(float));
    pipe.InitBuffer(sq, dAl_ * sizeof(float));
    pipe.InitBuffer(gf, dAl_ * sizeof(float));
    pipe.InitBuffer(red, 256);
  }
  __aicore__ inline void Process() {
    if (n_ == 0) return;
    LoadGamma();
    for (uint32_t r = 0; r < n_; ++r) {
      CopyIn(r);
      Compute(r);
      CopyOut(r);
    }
  }

 private:
  __aicore__ inline void LoadGamma() {
    LocalTensor<bfloat16_t> g = gammaQ.AllocTensor<bfloat16_t>();
    DataCopyPad(g, gGm, DataCopyExtParams{1, d_ * 2u, 0, 0, 0}, DataCopyPadExtParams<bfloat16_t>{false, 0, 0, 0});
    gammaQ.EnQue(g);
    LocalTensor<bfloat16_t> gIn = gammaQ.DeQue<bfloat16_t>();
    LocalTensor<float> gF = gf.Get<float>();
    Cast(gF, gIn, RoundMode::CAST_NONE, d_);
    PipeBarrier<PIPE_V>();
    gammaQ.FreeTensor(gIn);
  }
  __aicore__ inline void CopyIn(uint32_t r) {
    LocalTensor<bfloat16_t> t = inQ.AllocTensor<bfloat16_t>();
    DataCopyPad(t, xGm[(uint64_t)r * d_], DataCopyExtParams{1, d_ * 2u, 0, 0, 0},
                DataCopyPadExtParams<bfloat16_t>{false, 0, 0, 0});
    inQ.EnQue(t);
  }
  __aicore__ inline void Compute(uint32_t r) {
    LocalTensor<bfloat16_t> x = inQ.DeQue<bfloat16_t>();
    LocalTensor<float> xF = xf.Get<float>();
    LocalTensor<float> s = sq.Get<float>();
    LocalTensor<float> gF = gf.Get<float>();
    LocalTensor<float> rd = red.Get<float>();
    Cast(xF, x, RoundMode::CAST_NONE, d_);
    PipeBarrier<PIPE_V>();
    inQ.FreeTensor(x);
    Mul(s, xF, xF, d_);
    PipeBarrier<PIPE_V>();
    ReduceSum<float>(rd, s, rd, d_);
    event_t eVS = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_S));
    SetFlag<HardEvent::V_S>(eVS);
    WaitFlag<HardEvent::V_S>(eVS);
    float rstd = 1.0f / sqrt(rd.GetValue(0) / d_ + eps_);  // scalar unit, as ops-nn does
    rstdGm.SetValue(r, rstd);
    event_t eSV = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::S_V));
    SetFlag<HardEvent::S_V>(eSV);
    WaitFlag<HardEvent::S_V>(eSV);
    Muls(xF, xF, rstd, d_);
    PipeBarrier<PIPE_V>();
    Mul(xF, xF, gF, d_);
    PipeBarrier<PIPE_V>();
    LocalTensor<bfloat16_t> y = outQ.AllocTensor<bfloat16_t>();
    Cast(y, xF, RoundMode::CAST_RINT, d_);  // float -> bf16 needs a real rounding mode on A2
    outQ.EnQue(y);
  }
  __aicore__ inline void CopyOut(uint32_t r) {
    LocalTensor<bfloat16_t> y = outQ.DeQue<bfloat16_t>();
    DataCopyPad(yGm[(uint64_t)r * d_], y, DataCopyExtParams{1, d_ * 2u, 0, 0, 0});
    outQ.FreeTensor(y);
  }

  TPipe pipe;
  TQue<QuePosition::VECIN, BN> inQ;
  TQue<QuePosition::VECOUT, BN> outQ;
  TQue<QuePosition::VECIN, 1> gammaQ;
  TBuf<TPosition::VECCALC> xf, sq, gf, red;
  GlobalTensor<bfloat16_t> xGm, yGm, gGm;
  GlobalTensor<float> rstdGm;
  uint32_t n_, d_, dAl_;
  float eps_;
};

extern "C" __global__ __aicore__ void rms_norm_bf16(GM_ADDR x, GM_ADDR g, GM_ADDR y, GM_ADDR rstd, uint32_t rows,
                                                   uint32_t d, float eps) {
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  RmsNormBf16 op;
  op.Init(x, g, y, rstd, rows, d, eps);
  op.Process();
}
