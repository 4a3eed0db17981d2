// trex emulator tests (written for trex): SyncAll between blocks. Each block sums its slice into
// ws[b*8] (GM), SyncAll, then reads every block's partial and writes the total to out[b*8]:
// correct only if the barrier orders every block's write before every block's read.
#include "kernel_operator.h"
using namespace AscendC;

template <typename T>
class KernelBlockTotal {
 public:
  __aicore__ inline void Init(GM_ADDR x, GM_ADDR ws, GM_ADDR out, uint32_t n) {
    n_ = n;
    xg_.SetGlobalBuffer((__gm__ T*)x + n * GetBlockIdx(), n);
    wg_.SetGlobalBuffer((__gm__ float*)ws, 8 * GetBlockNum());
    og_.SetGlobalBuffer((__gm__ float*)out + 8 * GetBlockIdx(), 8);
    pipe_.InitBuffer(xb_, n * sizeof(T));
    pipe_.InitBuffer(fb_, n * sizeof(float));
    pipe_.InitBuffer(sb_, 8 * GetBlockNum() * sizeof(float));
    pipe_.InitBuffer(work_, n * sizeof(float));
  }
  // skip: the block leaves out the barrier (misuse 1: every block; misuse 2: block 0 only)
  __aicore__ inline void Process(uint32_t misuse, bool software) {
    LocalTensor<T> a = xb_.Get<T>();
    LocalTensor<float> f = fb_.Get<float>(), s = sb_.Get<float>();
    DataCopy(a, xg_, n_);
    PipeBarrier<PIPE_ALL>();
    if constexpr (std::is_same_v<T, float>) {
      ReduceSum(s, a, work_.Get<float>(), n_);
    } else {
      Cast(f, a, RoundMode::CAST_NONE, n_);
      ReduceSum(s, f, work_.Get<float>(), n_);
    }
    PipeBarrier<PIPE_ALL>();
    for (int i = 1; i < 8; ++i) s.SetValue(i, 0.0f);
    DataCopy(wg_[8 * GetBlockIdx()], s, 8);
    PipeBarrier<PIPE_ALL>();
    const bool skip = misuse == 1 || (misuse == 2 && GetBlockIdx() == 0);
    if (!skip) {
      if (software) {
        LocalTensor<int32_t> u = work_.Get<int32_t>();
        GlobalTensor<int32_t> sync;
        sync.SetGlobalBuffer((__gm__ int32_t*)wg_.GetPhyAddr(), 8 * GetBlockNum());
        SyncAll(sync, u);
      } else {
        SyncAll();
      }
    }
    DataCopy(s, wg_, 8 * GetBlockNum());
    PipeBarrier<PIPE_ALL>();
    float total = 0;
    for (uint32_t b = 0; b < GetBlockNum(); ++b) total += s.GetValue(8 * b);
    Duplicate(f, 0.0f, 8);
    PipeBarrier<PIPE_ALL>();
    f.SetValue(0, total);
    DataCopy(og_, f, 8);
  }

 private:
  TPipe pipe_;
  TBuf<TPosition::VECCALC> xb_, fb_, sb_, work_;
  GlobalTensor<T> xg_;
  GlobalTensor<float> wg_, og_;
  uint32_t n_ = 0;
};

// kernel-launch style
extern "C" __global__ __aicore__ void block_total(GM_ADDR x, GM_ADDR ws, GM_ADDR out, uint32_t n, uint32_t misuse) {
  KernelBlockTotal<float> op;
  op.Init(x, ws, out, n);
  op.Process(misuse, false);
}
