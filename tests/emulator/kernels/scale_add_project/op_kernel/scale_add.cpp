// trex test op project: the kernel half, in the style of CANN's framework-launch samples: DTYPE_*,
// GET_TILING_DATA, TILING_KEY_IS, ASSERT, global PIPE_ALL, a tail block whose 32-byte-rounded
// DataCopy reads past an unaligned input end (inside the device allocation's padding).
#include "kernel_operator.h"
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;

template <typename T>
class KernelScaleAdd {
 public:
  __aicore__ inline KernelScaleAdd() {}
  __aicore__ inline void Init(GM_ADDR x, GM_ADDR bias, GM_ADDR y, uint32_t total, uint32_t blockLength,
                              uint32_t tileLength, float alpha) {
    ASSERT(GetBlockNum() != 0 && "block dim can not be zero!");
    const uint32_t start = blockLength * GetBlockIdx();
    this->length = total - start < blockLength ? total - start : blockLength;
    this->tileLength = tileLength ASSERT(tileLength != 0);
    this->alpha = static_cast<T>(alpha);
    xGm.SetGlobalBuffer((__gm__ T*)x + start, this->length);
    biasGm.SetGlobalBuffer((__gm__ T*)bias + start, this->length);
    yGm.SetGlobalBuffer((__gm__ T*)y + start, this->length);
    pipe.InitBuffer(inQueue, BUFFER_NUM, 2 * tileLength * sizeof(T));
    pipe.InitBuffer(outQueue, BUFFER_NUM, tileLength * sizeof(T));
  }
  __aicore__ inline void Process() {
    for (uint32_t done = 0; done < length; done += tileLength) {
      const uint32_t n = length - done < tileLength ? length - done : tileLength;
      const uint32_t aligned = DivCeil(n * (uint32_t)sizeof(T), 32u) * 32u / (uint32_t)sizeof(T);
      LocalTensor<T> in = inQueue.AllocTensor<T>();
      DataCopy(in, xGm[done], aligned);            // may read up to 31 B past the input's end
      DataCopy(in[tileLength], biasGm[done], aligned);
      inQueue.EnQue(in);
      in = inQueue.DeQue<T>();
      LocalTensor<T> out = outQueue.AllocTensor<T>();
      Muls(out, in, alpha, n);
      Add(out, out, in[tileLength], n);
      PipeBarrier<PIPE_V>();
      outQueue.EnQue(out);
      inQueue.FreeTensor(in);
      out = outQueue.DeQue<T>();
      DataCopyPad(yGm[done], out, DataCopyExtParams{1, n * (uint32_t)sizeof(T), 0, 0, 0});
      outQueue.FreeTensor(out);
    }
  }

 private:
  TPipe pipe;
  TQue<QuePosition::VECIN, BUFFER_NUM> inQueue;
  TQue<QuePosition::VECOUT, BUFFER_NUM> outQueue;
  GlobalTensor<T> xGm, biasGm, yGm;
  uint32_t length = 0, tileLength = 0;
  T alpha;
};

extern "C" __global__ __aicore__ void scale_add(GM_ADDR x, GM_ADDR bias, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA(tiling_data, tiling);
  InitSocState();
  GM_ADDR usr = GetUserWorkspace(workspace);
  ASSERT(usr != nullptr);
  ASSERT(tiling_data.shape[0] * tiling_data.shape[1] == tiling_data.totalLength);
  if (TILING_KEY_IS(1)) {
    KernelScaleAdd<float> op;
    op.Init(x, bias, y, tiling_data.totalLength, tiling_data.blockLength, tiling_data.tileLength, tiling_data.alpha);
    op.Process();
  } else if (TILING_KEY_IS(2)) {
    KernelScaleAdd<DTYPE_X> op;
    op.Init(x, bias, y, tiling_data.totalLength, tiling_data.blockLength, tiling_data.tileLength, tiling_data.alpha);
    op.Process();
  }
}
