// trex emulator tests (written for trex): CANN CPU-debug conventions and the kernel-side op-project
// glue, in kernel-launch style. No `using namespace AscendC`: PIPE_*/EVENT_ID*/GetBlockNum at global scope.
#include "kernel_operator.h"

struct ConvTiling {
  uint32_t n;
  uint32_t assertWhen;  // block index that fails its ASSERT (>= block count: none)
};

// ASSERT, GetBlockNum/GetBlockIdx at global scope, PIPE_ALL/EVENT_ID0, printf/DumpTensor/GetSystemCycle,
// DivCeil, 3-argument InitBuffer on a TBuf; y[i] = x[i] + block index, one 8-float chunk per block.
extern "C" __global__ __aicore__ void conventions(GM_ADDR x, GM_ADDR y, GM_ADDR cycles, GM_ADDR tiling) {
  AscendC::InitSocState();
  const ConvTiling t = *reinterpret_cast<const ConvTiling*>(tiling);
  const uint32_t per = AscendC::DivCeil(t.n, static_cast<uint32_t>(GetBlockNum()));
  ASSERT(GetBlockIdx() != t.assertWhen && "block asked to fail");
  AscendC::TPipe pipe;
  AscendC::TBuf<AscendC::TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, 2, per * sizeof(float) / 2);  // 2 x half the chunk: one buffer of per floats
  AscendC::LocalTensor<float> v = buf.Get<float>();
  AscendC::GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x + per * GetBlockIdx(), per);
  yg.SetGlobalBuffer((__gm__ float*)y + per * GetBlockIdx(), per);
  AscendC::DataCopy(v, xg, per);
  AscendC::SetFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
  AscendC::WaitFlag<AscendC::HardEvent::MTE2_V>(EVENT_ID0);
  AscendC::Adds(v, v, static_cast<float>(GetBlockIdx()), per);
  AscendC::PipeBarrier<PIPE_ALL>();
  if (GetBlockIdx() == 0) {
    AscendC::printf("conventions: block %d of %d\n", static_cast<int>(GetBlockIdx()), static_cast<int>(GetBlockNum()));
    AscendC::DumpTensor(v, 7, 2);
  }
  AscendC::DataCopy(yg, v, per);
  const int64_t c0 = AscendC::GetSystemCycle();
  const int64_t c1 = AscendC::GetSystemCycle();
  if (GetBlockIdx() == 0) *reinterpret_cast<__gm__ int64_t*>(cycles) = c1 - c0;
}

// Cast half -> int8_t (listed for Atlas A2) with the given round mode, one block.
extern "C" __global__ __aicore__ void cast_half_int8(GM_ADDR x, GM_ADDR y, uint32_t n, int32_t mode) {
  AscendC::TPipe pipe;
  AscendC::TBuf<AscendC::TPosition::VECCALC> hb, ib;
  pipe.InitBuffer(hb, n * sizeof(half));
  pipe.InitBuffer(ib, n);
  AscendC::LocalTensor<half> h = hb.Get<half>();
  AscendC::LocalTensor<int8_t> i8 = ib.Get<int8_t>();
  AscendC::GlobalTensor<half> xg;
  AscendC::GlobalTensor<int8_t> yg;
  xg.SetGlobalBuffer((__gm__ half*)x, n);
  yg.SetGlobalBuffer((__gm__ int8_t*)y, n);
  AscendC::DataCopy(h, xg, n);
  AscendC::Cast(i8, h, static_cast<AscendC::RoundMode>(mode), n);
  AscendC::DataCopy(yg, i8, n);
}

// ascendc_assert (CANN 8.x) and the scalar min/max builtins: y[0] = min(a, b), y[1] = max(a, b).
extern "C" __global__ __aicore__ void assert_minmax(GM_ADDR y, int32_t a, int32_t b) {
  using namespace AscendC;
  ascendc_assert(a != 99, "a must not be 99\n");
  *reinterpret_cast<__gm__ int32_t*>(y) = min(a, b);
  *(reinterpret_cast<__gm__ int32_t*>(y) + 1) = max(a, b);
}
