// trex tests (written for trex): kernel-launch kernels for the Erf / Erfc advanced APIs and Fill /
// InitGlobalMemory. Blocks split [0, n) into ranges of perBlock elements; DataCopyPad moves odd tails.
#include "kernel_operator.h"
using namespace AscendC;

enum ErfMode : uint32_t { kErfTmp = 0, kErfNoTmp, kErfcTmp, kErfcNoTmp, kErfSmallTmp, kErfInPlace, kErfTmpOverlap };

template <class T>
__aicore__ inline void ErfBody(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t perBlock, uint32_t mode) {
  const uint32_t start = perBlock * GetBlockIdx();
  if (start >= n) return;
  const uint32_t len = n - start < perBlock ? n - start : perBlock;
  GlobalTensor<T> xGm, yGm;
  xGm.SetGlobalBuffer((__gm__ T*)x + start, len);
  yGm.SetGlobalBuffer((__gm__ T*)y + start, len);
  TPipe pipe;
  TQue<TPosition::VECIN, 1> inQ;
  TQue<TPosition::VECOUT, 1> outQ;
  TBuf<TPosition::VECCALC> tmpBuf;
  pipe.InitBuffer(inQ, 1, perBlock * sizeof(T));
  pipe.InitBuffer(outQ, 1, perBlock * sizeof(T));
  pipe.InitBuffer(tmpBuf, mode == kErfSmallTmp ? 256 : 4096);
  LocalTensor<T> in = inQ.AllocTensor<T>();
  DataCopyPad(in, xGm, DataCopyExtParams{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0}, DataCopyPadExtParams<T>{false, 0, 0, 0});
  inQ.EnQue(in);
  LocalTensor<T> src = inQ.DeQue<T>();
  LocalTensor<T> dst = outQ.AllocTensor<T>();
  LocalTensor<uint8_t> tmp = tmpBuf.Get<uint8_t>();
  switch (mode) {
    case kErfTmp: case kErfSmallTmp: Erf<T, false>(dst, src, tmp, len); break;
    case kErfNoTmp: Erf(dst, src, len); break;
    case kErfcTmp: Erfc<T, false>(dst, src, tmp, len); break;
    case kErfcNoTmp: Erfc(dst, src, len); break;
    case kErfInPlace: Erf(src, src, len); break;
    case kErfTmpOverlap: Erf(dst, src, src.template ReinterpretCast<uint8_t>(), len); break;
  }
  outQ.EnQue(dst);
  inQ.FreeTensor(src);
  LocalTensor<T> out = outQ.DeQue<T>();
  DataCopyPad(yGm, out, DataCopyExtParams{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0});
  outQ.FreeTensor(out);
}

extern "C" __global__ __aicore__ void erf_half(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t perBlock, uint32_t mode) {
  ErfBody<half>(x, y, n, perBlock, mode);
}
extern "C" __global__ __aicore__ void erf_float(GM_ADDR x, GM_ADDR y, uint32_t n, uint32_t perBlock, uint32_t mode) {
  ErfBody<float>(x, y, n, perBlock, mode);
}

enum FillMode : uint32_t { kFill = 0, kInitGlobalMemory, kFillAfterInitBuffer, kFillSameRange, kFillZeroThenAccumulate };

// Each block fills its perBlock elements (the last block the rest) with value + blockIdx. kFillZeroThenAccumulate
// is the workspace idiom: every block zeroes its slice of z, SyncAll, then every block atomically adds 1 to all
// of z, so z ends as blockNum everywhere.
template <class T>
__aicore__ inline void FillBody(GM_ADDR z, uint32_t n, uint32_t perBlock, float value, uint32_t mode) {
  const uint32_t start = perBlock * GetBlockIdx();
  const uint32_t len = GetBlockIdx() + 1 == GetBlockNum() ? n - start : perBlock;
  GlobalTensor<T> zGm;
  zGm.SetGlobalBuffer((__gm__ T*)z + start, len);
  const T v = static_cast<T>(value + static_cast<float>(GetBlockIdx()));
  TPipe pipe;
  switch (mode) {
    case kFill: Fill(zGm, len, v); break;
    case kInitGlobalMemory: InitGlobalMemory(zGm, len, v); break;
    case kFillAfterInitBuffer: {
      TBuf<TPosition::VECCALC> b;
      pipe.InitBuffer(b, 1024);
      Fill(zGm, len, v);
      break;
    }
    case kFillSameRange: {
      GlobalTensor<T> all;
      all.SetGlobalBuffer((__gm__ T*)z, n);
      Fill(all, n, v);
      break;
    }
    case kFillZeroThenAccumulate: if constexpr (!std::is_same<T, uint16_t>::value) {  // no uint16 atomic add
      Fill(zGm, len, static_cast<T>(0));
      SyncAll();
      GlobalTensor<T> all;
      all.SetGlobalBuffer((__gm__ T*)z, n);
      TBuf<TPosition::VECOUT> ones;
      pipe.InitBuffer(ones, n * sizeof(T));
      LocalTensor<T> o = ones.Get<T>();
      Duplicate(o, static_cast<T>(1), n);
      SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
      WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
      SetAtomicAdd<T>();
      DataCopyPad(all, o, DataCopyExtParams{1, static_cast<uint32_t>(n * sizeof(T)), 0, 0, 0});
      SetAtomicNone();
      break;
    }
  }
}

extern "C" __global__ __aicore__ void fill_float(GM_ADDR z, uint32_t n, uint32_t perBlock, float value, uint32_t mode) {
  FillBody<float>(z, n, perBlock, value, mode);
}
extern "C" __global__ __aicore__ void fill_half(GM_ADDR z, uint32_t n, uint32_t perBlock, float value, uint32_t mode) {
  FillBody<half>(z, n, perBlock, value, mode);
}
extern "C" __global__ __aicore__ void fill_int32(GM_ADDR z, uint32_t n, uint32_t perBlock, float value, uint32_t mode) {
  FillBody<int32_t>(z, n, perBlock, value, mode);
}
extern "C" __global__ __aicore__ void fill_uint16(GM_ADDR z, uint32_t n, uint32_t perBlock, float value, uint32_t mode) {
  FillBody<uint16_t>(z, n, perBlock, value, mode);
}
