// trex tests (written for trex): kernel-launch kernels for the activation advanced APIs (adv_activation.h).
// Blocks split [0, n) into ranges of perBlock elements; DataCopyPad moves odd tails. tmpBytes 0: the form
// without sharedTmpBuffer.
#include "kernel_operator.h"
using namespace AscendC;

enum ActOp : uint32_t {
  kGelu = 0, kGeluHighPrec, kGeluHighPerf, kFasterGelu, kFasterGeluV2, kSilu, kSwish, kGeGLU, kSwiGLU, kInPlace
};

template <class T>
__aicore__ inline void ActBody(GM_ADDR a, GM_ADDR b, GM_ADDR y, uint32_t n, uint32_t perBlock, uint32_t op,
                               uint32_t tmpBytes, float beta) {
  const uint32_t start = perBlock * GetBlockIdx();
  if (start >= n) return;
  const uint32_t len = n - start < perBlock ? n - start : perBlock;
  GlobalTensor<T> aGm, bGm, yGm;
  aGm.SetGlobalBuffer((__gm__ T*)a + start, len);
  bGm.SetGlobalBuffer((__gm__ T*)b + start, len);
  yGm.SetGlobalBuffer((__gm__ T*)y + start, len);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inA, inB;
  TQue<TPosition::VECOUT, 1> outQ;
  TBuf<TPosition::VECCALC> tmpBuf;
  pipe.InitBuffer(inA, 1, perBlock * sizeof(T));
  pipe.InitBuffer(inB, 1, perBlock * sizeof(T));
  pipe.InitBuffer(outQ, 1, perBlock * sizeof(T));
  if (tmpBytes) pipe.InitBuffer(tmpBuf, tmpBytes);
  const DataCopyExtParams cp{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0};
  LocalTensor<T> la = inA.AllocTensor<T>();
  LocalTensor<T> lb = inB.AllocTensor<T>();
  DataCopyPad(la, aGm, cp, DataCopyPadExtParams<T>{false, 0, 0, 0});
  DataCopyPad(lb, bGm, cp, DataCopyPadExtParams<T>{false, 0, 0, 0});
  inA.EnQue(la);
  inB.EnQue(lb);
  LocalTensor<T> x = inA.DeQue<T>();
  LocalTensor<T> z = inB.DeQue<T>();
  LocalTensor<T> dst = outQ.AllocTensor<T>();
  LocalTensor<uint8_t> tmp;
  if (tmpBytes) tmp = tmpBuf.Get<uint8_t>();
  const bool t = tmpBytes != 0;
  switch (op) {
    case kGelu: if (t) Gelu(dst, x, tmp, len); else Gelu(dst, x, len); break;
    case kGeluHighPrec: if (t) Gelu<T, true>(dst, x, tmp, len); else Gelu<T, true>(dst, x, len); break;
    case kGeluHighPerf: Gelu<T, false, true>(dst, x, tmp, len); break;
    case kFasterGelu: if (t) FasterGelu(dst, x, tmp, len); else FasterGelu(dst, x, len); break;
    case kFasterGeluV2: FasterGeluV2(dst, x, tmp, len); break;
    case kSilu: Silu(dst, x, len); break;
    case kSwish: Swish(dst, x, len, static_cast<T>(beta)); break;
    case kGeGLU: if (t) GeGLU<T, false>(dst, x, z, tmp, len); else GeGLU<T, false>(dst, x, z, len); break;
    case kSwiGLU: if (t) SwiGLU<T, false>(dst, x, z, beta, tmp, len); else SwiGLU<T, false>(dst, x, z, beta, len); break;
    case kInPlace: Silu(x, x, len); DataCopy(dst, x, (len + 15) / 16 * 16); break;
  }
  outQ.EnQue(dst);
  inA.FreeTensor(x);
  inB.FreeTensor(z);
  LocalTensor<T> out = outQ.DeQue<T>();
  DataCopyPad(yGm, out, cp);
  outQ.FreeTensor(out);
}

extern "C" __global__ __aicore__ void act_float(GM_ADDR a, GM_ADDR b, GM_ADDR y, uint32_t n, uint32_t perBlock,
                                                uint32_t op, uint32_t tmpBytes, float beta) {
  ActBody<float>(a, b, y, n, perBlock, op, tmpBytes, beta);
}
extern "C" __global__ __aicore__ void act_half(GM_ADDR a, GM_ADDR b, GM_ADDR y, uint32_t n, uint32_t perBlock,
                                               uint32_t op, uint32_t tmpBytes, float beta) {
  ActBody<half>(a, b, y, n, perBlock, op, tmpBytes, beta);
}
