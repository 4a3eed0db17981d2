// trex test op project (written for trex): y[c] += sum of x[r, c] over each block's rows, added into y
// with SetAtomicAdd (tiling key 1); key 2 writes nothing. It includes CANN's kernel_utils.h and its own
// tiling header by name (both as cann-ops kernels do) and writes ASSERT without a semicolon after it.
#include "kernel_operator.h"
#include "kernel_utils.h"
#include "row_sum_tiling.h"
using namespace AscendC;

extern "C" __global__ __aicore__ void row_sum(GM_ADDR x, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA(t, tiling);
  ASSERT(GetBlockNum() != 0 && "block dim can not be zero!")
  const uint32_t b = GetBlockIdx();
  if (TILING_KEY_IS(2)) return;
  static_assert(sizeof(t.firstRow) == (optiling::MAX_BLOCKS + 1) * sizeof(uint32_t), "the array's size");
  GlobalTensor<DTYPE_X> xGm;
  GlobalTensor<DTYPE_Y> yGm;
  xGm.SetGlobalBuffer((__gm__ DTYPE_X*)x, t.rows * t.cols);
  yGm.SetGlobalBuffer((__gm__ DTYPE_Y*)y, t.cols);
  TPipe pipe;
  TBuf<TPosition::VECCALC> accBuf, rowBuf;
  pipe.InitBuffer(accBuf, t.cols * sizeof(DTYPE_Y));
  pipe.InitBuffer(rowBuf, t.cols * sizeof(DTYPE_X));
  LocalTensor<DTYPE_Y> acc = accBuf.Get<DTYPE_Y>();
  LocalTensor<DTYPE_X> row = rowBuf.Get<DTYPE_X>();
  Duplicate(acc, static_cast<DTYPE_Y>(0), t.cols);
  for (uint32_t r = t.firstRow[b]; r < t.firstRow[b + 1]; ++r) {
    PipeBarrier<PIPE_ALL>();
    DataCopy(row, xGm[r * t.cols], t.cols);
    PipeBarrier<PIPE_ALL>();
    Add(acc, acc, row, t.cols);
  }
  PipeBarrier<PIPE_ALL>();
  SetAtomicAdd<DTYPE_Y>();
  DataCopy(yGm, acc, t.cols);
  SetAtomicNone();
}
