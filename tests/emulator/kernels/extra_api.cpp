// trex emulator tests (written for trex): LocalMemAllocator, static LocalTensor construction,
// ShiftLeft/ShiftRight, Sigmoid, Broadcast; multi-block, kernel-launch style.
#include "kernel_operator.h"
using namespace AscendC;

// y = sigmoid(x) per block of `per` floats, through LocalMemAllocator tensors.
extern "C" __global__ __aicore__ void sigmoid_alloc(GM_ADDR x, GM_ADDR y, uint32_t per) {
  LocalMemAllocator<Hardware::UB> ub;
  LocalTensor<float> a = ub.Alloc<float>(per);
  LocalTensor<float> b = ub.Alloc<float, 64>();
  GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x + per * GetBlockIdx(), per);
  yg.SetGlobalBuffer((__gm__ float*)y + per * GetBlockIdx(), per);
  DataCopy(a, xg, per);
  PipeBarrier<PIPE_ALL>();
  Sigmoid(a, a, per);
  Duplicate(b, 0.0f, 64);
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, a, per);
}

// out[0:n] = x << s, out[n:2n] = x >> s (int32, arithmetic), on a statically placed tensor.
extern "C" __global__ __aicore__ void shifts(GM_ADDR x, GM_ADDR out, uint32_t n, int32_t s) {
  LocalTensor<int32_t> a(TPosition::VECCALC, 0, n);
  LocalTensor<int32_t> b(TPosition::VECCALC, 4096, 2 * n);
  GlobalTensor<int32_t> xg, og;
  xg.SetGlobalBuffer((__gm__ int32_t*)x, n);
  og.SetGlobalBuffer((__gm__ int32_t*)out, 2 * n);
  DataCopy(a, xg, n);
  PipeBarrier<PIPE_ALL>();
  ShiftLeft(b, a, s, n);
  ShiftRight(b[n], a, s, n);
  PipeBarrier<PIPE_ALL>();
  DataCopy(og, b, 2 * n);
}

// y (rows x cols) = row vector v broadcast over rows (axis 0), or column vector broadcast over
// columns (axis 1); one row block per block.
extern "C" __global__ __aicore__ void broadcast2d(GM_ADDR v, GM_ADDR y, uint32_t rows, uint32_t cols, uint32_t axis) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> vb, yb;
  pipe.InitBuffer(vb, 4096);
  pipe.InitBuffer(yb, rows * cols * sizeof(float));
  LocalTensor<float> vl = vb.Get<float>(), yl = yb.Get<float>();
  GlobalTensor<float> vg, yg;
  const uint32_t vn = axis == 0 ? cols : rows;
  vg.SetGlobalBuffer((__gm__ float*)v, vn);
  yg.SetGlobalBuffer((__gm__ float*)y + GetBlockIdx() * rows * cols, rows * cols);
  DataCopy(vl, vg, vn);
  PipeBarrier<PIPE_ALL>();
  const uint32_t dst[2] = {rows, cols};
  if (axis == 0) {
    const uint32_t src[2] = {1, cols};
    Broadcast<float, 2, 0>(yl, vl, dst, src);
  } else {
    const uint32_t src[2] = {rows, 1};
    Broadcast<float, 2, 1>(yl, vl, dst, src);
  }
  PipeBarrier<PIPE_ALL>();
  DataCopy(yg, yl, rows * cols);
}

// operator() element access: y[i] = x[i] * 2 + l(i) through LocalTensor and GlobalTensor references.
extern "C" __global__ __aicore__ void element_refs(GM_ADDR x, GM_ADDR y, uint32_t n) {
  TPipe pipe;
  TBuf<TPosition::VECCALC> buf;
  pipe.InitBuffer(buf, n * sizeof(float));
  LocalTensor<float> l = buf.Get<float>();
  GlobalTensor<float> xg, yg;
  xg.SetGlobalBuffer((__gm__ float*)x, n);
  yg.SetGlobalBuffer((__gm__ float*)y, n);
  for (uint32_t i = 0; i < n; ++i) l(i) = static_cast<float>(i);
  for (uint32_t i = 0; i < n; ++i) yg(i) = xg(i) * 2.0f + l(i);
  if (n > 0) (void)l(n);  // one past the end: raises
}
