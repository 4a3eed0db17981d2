// trex test op project (written for trex): AddList's kernel. x is a list input: ListTensorDesc gives each
// tensor's address; the block sums its slice of every tensor, adds bias, and writes y.
#include "kernel_operator.h"
#include "add_list_tiling.h"
using namespace AscendC;

template <class T>
__aicore__ inline void AddListBody(GM_ADDR x, GM_ADDR bias, GM_ADDR y, const AddListTiling& t) {
  ListTensorDesc list(x);
  ASSERT(list.GetSize() == t.count && "the list length differs from the tiling's");
  const uint32_t start = t.perBlock * GetBlockIdx();
  const uint32_t len = GetBlockIdx() + 1 == GetBlockNum() ? t.n - start : t.perBlock;
  const DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(T)), 0, 0, 0};
  TPipe pipe;
  TQue<TPosition::VECIN, 2> inQ;
  TQue<TPosition::VECOUT, 1> outQ;
  pipe.InitBuffer(inQ, 2, t.perBlock * sizeof(T));
  pipe.InitBuffer(outQ, 1, t.perBlock * sizeof(T));
  GlobalTensor<T> biasGm, yGm;
  biasGm.SetGlobalBuffer((__gm__ T*)bias + start, len);
  yGm.SetGlobalBuffer((__gm__ T*)y + start, len);
  LocalTensor<T> acc = outQ.AllocTensor<T>();
  LocalTensor<T> b = inQ.AllocTensor<T>();
  DataCopyPad(b, biasGm, copy, DataCopyPadExtParams<T>{false, 0, 0, 0});
  inQ.EnQue(b);
  b = inQ.DeQue<T>();
  Adds(acc, b, static_cast<T>(0), len);
  inQ.FreeTensor(b);
  for (uint32_t i = 0; i < list.GetSize(); ++i) {
    GlobalTensor<T> xi;
    xi.SetGlobalBuffer(list.GetDataPtr<T>(i) + start, len);
    LocalTensor<T> v = inQ.AllocTensor<T>();
    DataCopyPad(v, xi, copy, DataCopyPadExtParams<T>{false, 0, 0, 0});
    inQ.EnQue(v);
    v = inQ.DeQue<T>();
    Add(acc, acc, v, len);
    inQ.FreeTensor(v);
  }
  outQ.EnQue(acc);
  acc = outQ.DeQue<T>();
  DataCopyPad(yGm, acc, copy);
  outQ.FreeTensor(acc);
}

extern "C" __global__ __aicore__ void add_list(GM_ADDR x, GM_ADDR bias, GM_ADDR y, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA_WITH_STRUCT(AddListTiling, t, tiling);
  if (TILING_KEY_IS(1)) AddListBody<float>(x, bias, y, t);
  else if (TILING_KEY_IS(2)) AddListBody<half>(x, bias, y, t);
}
