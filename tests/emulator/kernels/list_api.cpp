// trex tests (written for trex): ListTensorDesc over a list (dynamic) input. y = the sum of the list's
// tensors (all of n elements); each block sums its perBlock elements (the last block the rest).
#include "kernel_operator.h"
#include "kernel_operator_list_tensor_intf.h"
using namespace AscendC;

enum ListMode : uint32_t { kDescObj = 0, kDataPtr, kIndexPastEnd, kWrongShapeSize, kOverrun };

extern "C" __global__ __aicore__ void list_sum(GM_ADDR xs, GM_ADDR y, uint32_t perBlock, uint32_t count, uint32_t mode) {
  ListTensorDesc list;
  if (mode == kWrongShapeSize) list.Init(xs, 8 + count * 16 + count * 8, count + 1);
  else list.Init(xs, 8 + count * 16 + count * 8, count);  // 1-D tensors: length = dataPtrOffset + 8 * count
  uint64_t shape[8] = {};
  TensorDesc<float> desc;
  desc.SetShapeAddr(shape);
  list.GetDesc(desc, 0);
  const uint32_t n = static_cast<uint32_t>(desc.GetShape(0));
  const uint32_t start = perBlock * GetBlockIdx();
  const uint32_t len = GetBlockIdx() + 1 == GetBlockNum() ? n - start : perBlock;
  TPipe pipe;
  TBuf<TPosition::VECIN> inBuf;
  TBuf<TPosition::VECOUT> accBuf;
  pipe.InitBuffer(inBuf, (perBlock + 64) * sizeof(float));
  pipe.InitBuffer(accBuf, perBlock * sizeof(float));
  LocalTensor<float> in = inBuf.Get<float>(), acc = accBuf.Get<float>();
  Duplicate(acc, 0.0f, perBlock);
  const uint32_t tensors = list.GetSize() + (mode == kIndexPastEnd ? 1 : 0);
  const uint32_t copyLen = mode == kOverrun && GetBlockIdx() + 1 == GetBlockNum() ? len + 64 : len;
  for (uint32_t i = 0; i < tensors; ++i) {
    GlobalTensor<float> x;
    if (mode == kDataPtr) {
      x.SetGlobalBuffer(list.GetDataPtr<float>(i) + start, len);
    } else {
      list.GetDesc(desc, i);
      x = desc.GetDataObj()[start];
    }
    SetFlag<HardEvent::V_MTE2>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);
    DataCopyPad(in, x, DataCopyExtParams{1, static_cast<uint32_t>(copyLen * sizeof(float)), 0, 0, 0},
                DataCopyPadExtParams<float>{false, 0, 0, 0});
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
    Add(acc, acc, in, len);
  }
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  GlobalTensor<float> yGm;
  yGm.SetGlobalBuffer((__gm__ float*)y + start, len);
  DataCopyPad(yGm, acc, DataCopyExtParams{1, static_cast<uint32_t>(len * sizeof(float)), 0, 0, 0});
}
