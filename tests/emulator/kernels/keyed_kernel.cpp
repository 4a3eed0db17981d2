// trex emulator tests (written for trex): a framework-launch kernel run without host code
// (run_kernel_with_tiling): GET_TILING_DATA from a tiling header, DTYPE_X, TILING_KEY_IS.
#include "kernel_operator.h"
using namespace AscendC;
// CANN's build for ascend910b defines these (kernels choose code paths on them, e.g. DataCopyPad under 220)
#if __CCE_AICORE__ != 220 || __NPU_ARCH__ != 2201
#error "a framework kernel compiles with ascend910b's __CCE_AICORE__ 220 and __NPU_ARCH__ 2201"
#endif

extern "C" __global__ __aicore__ void keyed(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA(t, tiling);
  const uint32_t per = t.perBlock;
  GlobalTensor<DTYPE_X> xg, yg;
  xg.SetGlobalBuffer((__gm__ DTYPE_X*)x + per * GetBlockIdx(), per);
  yg.SetGlobalBuffer((__gm__ DTYPE_X*)y + per * GetBlockIdx(), per);
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, per * sizeof(DTYPE_X));
  LocalTensor<DTYPE_X> v = buf.Get<DTYPE_X>();
  DataCopy(v, xg, per);
  PipeBarrier<PIPE_ALL>();
  if (TILING_KEY_IS(10)) {
    Muls(v, v, static_cast<DTYPE_X>(t.scale), per);
  } else if (TILING_KEY_IS(20)) {
    Adds(v, v, static_cast<DTYPE_X>(t.scale), per);
  }
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, v, per);
}
