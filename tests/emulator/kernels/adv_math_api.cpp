// trex tests (written for trex): kernel-launch kernels for the elementwise math advanced APIs (adv_math.h).
// Blocks split [0, n) into ranges of perBlock elements; DataCopyPad moves odd tails. tmpBytes 0: the form
// without sharedTmpBuffer; otherwise a VECCALC buffer of tmpBytes is passed.
#include "kernel_operator.h"
using namespace AscendC;

enum AdvOp : uint32_t {
  kCeil = 0, kFloor, kTrunc, kFrac, kClampMin, kClampMax, kFmod, kAxpy, kPowTT, kPowTS, kPowST, kLog, kLog2, kLog10,
  kSigmoid, kXor, kTmpOverlap, kAcosh, kAsinh, kAtanh, kAcoshWhole
};

template <class T>
__aicore__ inline void AdvBody(GM_ADDR a, GM_ADDR b, GM_ADDR y, uint32_t n, uint32_t perBlock, uint32_t op,
                               uint32_t tmpBytes) {
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
  LocalTensor<T> dst = outQ.AllocTensor<T>();
  DataCopyPad(la, aGm, cp, DataCopyPadExtParams<T>{false, 0, 0, 0});
  DataCopyPad(lb, bGm, cp, DataCopyPadExtParams<T>{false, 0, 0, 0});
  DataCopyPad(dst, bGm, cp, DataCopyPadExtParams<T>{false, 0, 0, 0});  // Axpy accumulates onto b
  inA.EnQue(la);
  inB.EnQue(lb);
  LocalTensor<T> x = inA.DeQue<T>();
  LocalTensor<T> z = inB.DeQue<T>();
  PipeBarrier<PIPE_ALL>();
  LocalTensor<uint8_t> tmp;
  if (tmpBytes) tmp = tmpBuf.Get<uint8_t>();
  const bool t = tmpBytes != 0;
  if constexpr (std::is_same<T, int16_t>::value || std::is_same<T, uint16_t>::value) {
    if (t) Xor<T, false>(dst, x, z, tmp, len); else Xor(dst, x, z, len);
  } else {
    switch (op) {
      case kCeil: if (t) Ceil<T, false>(dst, x, tmp, len); else Ceil(dst, x, len); break;
      case kFloor: if (t) Floor<T, false>(dst, x, tmp, len); else Floor(dst, x, len); break;
      case kTrunc: if (t) Trunc<T, false>(dst, x, tmp, len); else Trunc(dst, x, len); break;
      case kFrac: if (t) Frac<T, false>(dst, x, tmp, len); else Frac(dst, x, len); break;
      case kClampMin: ClampMin<T, false>(dst, x, tmp, static_cast<T>(0.5f), len); break;
      case kClampMax: ClampMax<T, false>(dst, x, tmp, static_cast<T>(0.5f), len); break;
      case kFmod: if (t) Fmod<T, false>(dst, x, z, tmp, len); else Fmod(dst, x, z, len); break;
      case kAxpy: Axpy<T, T, false>(dst, x, static_cast<T>(2.0f), tmp, len); break;
      case kPowTT: if (t) Power<T, false>(dst, x, z, tmp, len); else Power(dst, x, z, len); break;
      case kPowTS: if (t) Power<T, false>(dst, x, static_cast<T>(2.5f), tmp, len); else Power(dst, x, static_cast<T>(2.5f), len); break;
      case kPowST: if (t) Power<T, false>(dst, static_cast<T>(2.0f), z, tmp, len); else Power(dst, static_cast<T>(2.0f), z, len); break;
      case kLog: Log<T, false>(dst, x, len); break;
      case kLog2: if (t) Log2<T, false>(dst, x, tmp, len); else Log2(dst, x, len); break;
      case kLog10: if (t) Log10<T, false>(dst, x, tmp, len); else Log10(dst, x, len); break;
      case kSigmoid: if (t) Sigmoid<T, false>(dst, x, tmp); else Sigmoid<T, false>(dst, x); break;
      case kTmpOverlap: Ceil<T, false>(dst, x, x.template ReinterpretCast<uint8_t>(), len); break;
      case kAcosh: if (t) Acosh<T, false>(dst, x, tmp, len); else Acosh<T>(dst, x, len); break;
      case kAsinh: if (t) Asinh(dst, x, tmp, len); else Asinh(dst, x, len); break;
      case kAtanh: if (t) Atanh<T, false>(dst, x, tmp, len); else Atanh<T, false>(dst, x, len); break;
      case kAcoshWhole: if (t) Acosh<T>(dst, x, tmp); else Acosh(dst, x); break;  // the whole tensor (perBlock elements)
    }
  }
  outQ.EnQue(dst);
  inA.FreeTensor(x);
  inB.FreeTensor(z);
  LocalTensor<T> out = outQ.DeQue<T>();
  DataCopyPad(yGm, out, cp);
  outQ.FreeTensor(out);
}

// Axpy with a float accumulator and half source (T float, U half): y = b + a * 2.
__aicore__ inline void AxpyMixedBody(GM_ADDR a, GM_ADDR b, GM_ADDR y, uint32_t n, uint32_t tmpBytes) {
  GlobalTensor<half> aGm;
  GlobalTensor<float> bGm, yGm;
  aGm.SetGlobalBuffer((__gm__ half*)a, n);
  bGm.SetGlobalBuffer((__gm__ float*)b, n);
  yGm.SetGlobalBuffer((__gm__ float*)y, n);
  TPipe pipe;
  TBuf<TPosition::VECCALC> ba, bd, bt;
  pipe.InitBuffer(ba, n * sizeof(half));
  pipe.InitBuffer(bd, n * sizeof(float));
  pipe.InitBuffer(bt, tmpBytes);
  LocalTensor<half> la = ba.Get<half>();
  LocalTensor<float> ld = bd.Get<float>();
  DataCopy(la, aGm, n);
  DataCopy(ld, bGm, n);
  PipeBarrier<PIPE_ALL>();
  Axpy(ld, la, static_cast<half>(2.0f), bt.Get<uint8_t>(), n);
  PipeBarrier<PIPE_ALL>();
  DataCopy(yGm, ld, n);
}

extern "C" __global__ __aicore__ void adv_float(GM_ADDR a, GM_ADDR b, GM_ADDR y, uint32_t n, uint32_t perBlock,
                                           uint32_t op, uint32_t tmpBytes) {
  AdvBody<float>(a, b, y, n, perBlock, op, tmpBytes);
}
extern "C" __global__ __aicore__ void adv_half(GM_ADDR a, GM_ADDR b, GM_ADDR y, uint32_t n, uint32_t perBlock,
                                           uint32_t op, uint32_t tmpBytes) {
  AdvBody<half>(a, b, y, n, perBlock, op, tmpBytes);
}
extern "C" __global__ __aicore__ void adv_int16(GM_ADDR a, GM_ADDR b, GM_ADDR y, uint32_t n, uint32_t perBlock,
                                           uint32_t op, uint32_t tmpBytes) {
  AdvBody<int16_t>(a, b, y, n, perBlock, op, tmpBytes);
}
extern "C" __global__ __aicore__ void adv_uint16(GM_ADDR a, GM_ADDR b, GM_ADDR y, uint32_t n, uint32_t perBlock,
                                           uint32_t op, uint32_t tmpBytes) {
  AdvBody<uint16_t>(a, b, y, n, perBlock, op, tmpBytes);
}
extern "C" __global__ __aicore__ void adv_axpy_mixed(GM_ADDR a, GM_ADDR b, GM_ADDR y, uint32_t n, uint32_t tmpBytes) {
  AxpyMixedBody(a, b, y, n, tmpBytes);
}
