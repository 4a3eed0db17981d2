// trex AscendC emulator: ListTensorDesc / TensorDesc — the kernel-side view of a dynamic (list) input
// (asc-devkit docs/zh/api/SIMD-API/基础API/辅助数据结构/ListTensorDesc.md; layout and checks from the A2/A3
// implementation impl/basic_api/dav_c220/kernel_operator_list_tensor_impl.h).
//
// The GM block a dynamic input's GM_ADDR points to, in uint64 words:
//   [0]                 dataPtrOffset: bytes from the block's start to the pointer array
//   per tensor i:       [dim | i << 32] then dim shape words (dim 0: one word 0xffffffff)
//   at dataPtrOffset:   count data pointers
// The count is the first descriptor's high word when non-zero, else the last descriptor's index + 1. The
// runner builds this block for a TensorList argument (emulator.TensorList, and an OpDef DYNAMIC input
// given a list of tensors). The layout checks of the implementation (dataPtrOffset consistent with
// count and dim; with length and shapeSize given, count == shapeSize and length == dataPtrOffset + 8 *
// count) and index < count raise instead of asserting. Words are read as GM (bounds- and race-checked).
#pragma once
#include <cstdint>

#include "trex_emu/tensor.h"

namespace AscendC {
class ListTensorDesc;

template <class T>
class TensorDesc {
 public:
  TensorDesc() = default;
  void SetShapeAddr(uint64_t* shapePtr) {
    if (shapePtr == nullptr) trex_emu::Fail("TensorDesc::SetShapeAddr: the shape address is a null pointer");
    shape_ = shapePtr;
  }
  uint64_t GetDim() const { return dim_; }
  uint64_t GetIndex() const { return index_; }
  uint64_t GetShape(uint32_t offset) const {
    if (offset >= dim_) trex_emu::Fail("TensorDesc::GetShape(", offset, "): the tensor has ", dim_, " dimensions");
    return shape_[offset];
  }
  __gm__ T* GetDataPtr() const { return ptr_; }
  // A GlobalTensor over the tensor (its size, as the implementation sets it: sizeof(T) * the shape's product).
  GlobalTensor<T> GetDataObj() const {
    uint64_t size = sizeof(T);
    for (uint32_t i = 0; i < dim_; ++i) size *= shape_[i];
    GlobalTensor<T> obj;
    obj.SetGlobalBuffer(ptr_, size);
    return obj;
  }

 private:
  friend class ListTensorDesc;
  uint32_t dim_ = 0, index_ = 0;
  uint64_t* shape_ = nullptr;
  __gm__ T* ptr_ = nullptr;
};

class ListTensorDesc {
 public:
  ListTensorDesc() = default;
  ListTensorDesc(__gm__ void* data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff) {
    Init(data, length, shapeSize);
  }
  void Init(__gm__ void* data, uint32_t length = 0xffffffff, uint32_t shapeSize = 0xffffffff) {
    if (data == nullptr) trex_emu::Fail("ListTensorDesc: the data address is a null pointer");
    head_ = static_cast<__gm__ uint64_t*>(data);
    const uint64_t offset = Word(0);
    if (offset % 8 != 0 || offset < 16)
      trex_emu::Fail("ListTensorDesc: dataPtrOffset ", offset, " (word 0) is not a multiple of 8 of at least 16; is this "
                     "GM_ADDR a list (dynamic) input?");
    const uint64_t first = Word(1);
    dim_ = static_cast<uint32_t>(first & 0xffffffffu);
    desc_words_ = dim_ == 0 ? 2 : 1 + dim_;
    const uint32_t stored_count = static_cast<uint32_t>(first >> 32);
    ptr_word_ = offset / 8;
    count_ = stored_count != 0 ? stored_count : static_cast<uint32_t>(Word(ptr_word_ - desc_words_) >> 32) + 1;
    const bool consistent = dim_ != 0 ? count_ == (offset - 8) / (desc_words_ * 8)
                                      : (Word(2) == 0xffffffffu && offset == 24);
    if (!consistent)
      trex_emu::Fail("ListTensorDesc: inconsistent layout (dataPtrOffset ", offset, ", dim ", dim_, ", count ", count_,
                     "): the implementation asserts dataPtrOffset == 8 + count * (1 + dim) * 8");
    if (length != 0xffffffff && shapeSize != 0xffffffff) {
      if (count_ != shapeSize)
        trex_emu::Fail("ListTensorDesc: shapeSize ", shapeSize, " but the list holds ", count_, " tensors");
      if (length != offset + uint64_t{count_} * 8)
        trex_emu::Fail("ListTensorDesc: length ", length, " but the block is ", offset + uint64_t{count_} * 8, " B");
    }
  }
  template <class T>
  void GetDesc(TensorDesc<T>& desc, uint32_t index) {
    Check("GetDesc", index);
    if (dim_ == 0) trex_emu::Fail("ListTensorDesc::GetDesc: the list carries no shapes (dim 0)");
    if (desc.shape_ == nullptr) trex_emu::Fail("ListTensorDesc::GetDesc: call desc.SetShapeAddr(buffer) first");
    desc.dim_ = dim_;
    desc.index_ = index;
    desc.ptr_ = reinterpret_cast<__gm__ T*>(Word(ptr_word_ + index));
    for (uint32_t i = 0; i < dim_; ++i) desc.shape_[i] = Word(1 + uint64_t{index} * desc_words_ + 1 + i);
  }
  template <class T>
  __gm__ T* GetDataPtr(uint32_t index) {
    Check("GetDataPtr", index);
    return reinterpret_cast<__gm__ T*>(Word(ptr_word_ + index));
  }
  uint32_t GetSize() const { return count_; }

 private:
  uint64_t Word(uint64_t i) const {
    trex_emu::CheckGm("ListTensorDesc", head_ + i, sizeof(uint64_t));
    return head_[i];
  }
  void Check(const char* api, uint32_t index) const {
    if (head_ == nullptr) trex_emu::Fail("ListTensorDesc::", api, " before Init (or the constructor with the data address)");
    if (index >= count_) trex_emu::Fail("ListTensorDesc::", api, "(", index, "): the list holds ", count_, " tensors");
  }
  __gm__ uint64_t* head_ = nullptr;
  uint32_t dim_ = 0, desc_words_ = 0, count_ = 0;
  uint64_t ptr_word_ = 0;
};
}  // namespace AscendC
