// trex emulator tests (written for trex): the gather APIs in a framework-launch, ops-repo style
// kernel: GET_TILING_DATA, a templated kernel class instantiated with DTYPE_X, TILING_KEY_IS choosing
// the instruction. Key 1: GatherMask built-in pattern 2 (odd elements); key 2: Gather reversing each
// block's slice; key 3: ReduceMax over the slice (continuous mask, calIndex) into y[0..1].
#include "kernel_operator.h"
using namespace AscendC;

template <typename T>
class KernelGatherKeyed {
 public:
  __aicore__ inline void Init(GM_ADDR x, GM_ADDR y, uint32_t per) {
    per_ = per;
    xg_.SetGlobalBuffer((__gm__ T*)x + per * GetBlockIdx(), per);
    yg_.SetGlobalBuffer((__gm__ T*)y + per * GetBlockIdx(), per);
    pipe_.InitBuffer(qin_, 1, per * sizeof(T));
    pipe_.InitBuffer(qout_, 1, per * sizeof(T));
    pipe_.InitBuffer(offsets_, per * sizeof(uint32_t));
    pipe_.InitBuffer(work_, 1024);
  }
  __aicore__ inline void Process(uint64_t key) {
    LocalTensor<T> a = qin_.AllocTensor<T>();
    DataCopy(a, xg_, per_);
    qin_.EnQue(a);
    a = qin_.DeQue<T>();
    LocalTensor<T> o = qout_.AllocTensor<T>();
    Duplicate(o, static_cast<T>(0), per_);
    if (key == 1) {
      uint64_t kept = 0;
      GatherMask(o, a, static_cast<uint8_t>(2), false, 0,
                 {1, static_cast<uint16_t>(per_ * sizeof(T) / 256), 8, 0}, kept);
    } else if (key == 2) {
      LocalTensor<uint32_t> off = offsets_.Get<uint32_t>();
      for (uint32_t i = 0; i < per_; ++i) off.SetValue(i, (per_ - 1 - i) * sizeof(T));
      Gather(o, a, off, 0u, per_);
    } else if (key == 3) {
      ReduceMax(o, a, work_.Get<T>(), static_cast<int32_t>(256 / sizeof(T)),
                static_cast<int32_t>(per_ * sizeof(T) / 256), 8, true);
    }
    qout_.EnQue(o);
    qin_.FreeTensor(a);
    o = qout_.DeQue<T>();
    DataCopy(yg_, o, per_);
    qout_.FreeTensor(o);
  }

 private:
  TPipe pipe_;
  TQue<TPosition::VECIN, 1> qin_;
  TQue<TPosition::VECOUT, 1> qout_;
  TBuf<TPosition::VECCALC> offsets_, work_;
  GlobalTensor<T> xg_, yg_;
  uint32_t per_ = 0;
};

extern "C" __global__ __aicore__ void gather_keyed(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA(t, tiling);
  KernelGatherKeyed<DTYPE_X> op;
  op.Init(x, y, t.perBlock);
  if (TILING_KEY_IS(1)) op.Process(1);
  else if (TILING_KEY_IS(2)) op.Process(2);
  else if (TILING_KEY_IS(3)) op.Process(3);
}
