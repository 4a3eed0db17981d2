// trex test op project (written for trex): y *= 2 in place on a ref tensor (input y and output y), typed
// with DTYPE_Y_REF as CANN's build names the output of a same-named pair.
#include "kernel_operator.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void ref_scale(GM_ADDR yIn, GM_ADDR yOut, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA(t, tiling);
  static_assert(std::is_same<DTYPE_Y, DTYPE_Y_REF>::value, "a ref tensor has one type");
  GlobalTensor<DTYPE_Y_REF> y;
  y.SetGlobalBuffer((__gm__ DTYPE_Y_REF*)yOut, t.n);
  TPipe pipe;
  TBuf<TPosition::VECIN> b;
  pipe.InitBuffer(b, t.n * sizeof(DTYPE_Y_REF));
  LocalTensor<DTYPE_Y_REF> v = b.Get<DTYPE_Y_REF>();
  const DataCopyExtParams copy{1, static_cast<uint32_t>(t.n * sizeof(DTYPE_Y_REF)), 0, 0, 0};
  DataCopyPad(v, y, copy, DataCopyPadExtParams<DTYPE_Y_REF>{false, 0, 0, 0});
  PipeBarrier<PIPE_ALL>();
  Muls(v, v, static_cast<DTYPE_Y_REF>(2), t.n);
  PipeBarrier<PIPE_ALL>();
  DataCopyPad(y, v, copy);
}
