// trex AscendC emulator: LocalMemAllocator, Broadcast, Sigmoid (count form).
#pragma once
#include <cmath>
#include <string>

#include "trex_emu/pipe.h"
#include "trex_emu/vec.h"

namespace AscendC {

enum class Hardware : uint8_t { GM = 0, UB, L1, L0A, L0B, L0C, BIAS, FIXBUF, MAX };

// LocalMemAllocator<Hardware::UB>: hands out consecutive 32-byte-aligned UB tensors without a TPipe
// (CANN 8.x); Alloc<T, N>() / Alloc<T>(n). Exhausting UB raises like InitBuffer does. Only UB is
// emulated; using it next to a TPipe shares nothing (both start at UB offset 0, as on the NPU, where
// the two must not be mixed).
template <Hardware HW = Hardware::UB>
class LocalMemAllocator : public trex_emu::TPipeBase {
  static_assert(HW == Hardware::UB, "LocalMemAllocator: only Hardware::UB is emulated (cube memories are not)");

 public:
  template <class T, uint32_t N>
  LocalTensor<T> Alloc() {
    return Alloc<T>(N);
  }
  template <class T>
  LocalTensor<T> Alloc(uint32_t count) {
    const std::string name = "LocalMemAllocator#" + std::to_string(n_++);
    const std::string call = name + ", " + std::to_string(count) + " elements";
    trex_emu::BufferInfo* b = Allocate(name, count * static_cast<uint32_t>(sizeof(T)),
                                       static_cast<int>(TPosition::VECCALC), "LocalMemAllocator", 0, call.c_str(),
                                       count * static_cast<uint32_t>(sizeof(T)));
    return LocalTensor<T>(reinterpret_cast<T*>(b->begin), count, b);
  }

 private:
  int n_ = 0;
};

// Broadcast<T, dim, axis>(dst, src, dstShape, srcShape[, tmp]) (adv API): src of srcShape (dim 1 or 2,
// row-major) repeated along `axis` to dstShape; srcShape[axis] must be 1 and the other extents equal.
template <class T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void Broadcast(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], const LocalTensor<uint8_t>& = LocalTensor<uint8_t>()) {
  static_assert(dim == 1 || dim == 2, "Broadcast: dim must be 1 or 2");
  static_assert(axis >= 0 && axis < dim, "Broadcast: axis must be < dim");
  for (int32_t d = 0; d < dim; ++d) {
    if (d == axis && srcShape[d] != 1)
      trex_emu::Fail("Broadcast: srcShape[", axis, "] = ", srcShape[d], " must be 1 (the broadcast axis)");
    if (d != axis && srcShape[d] != dstShape[d])
      trex_emu::Fail("Broadcast: srcShape[", d, "] = ", srcShape[d], " differs from dstShape[", d, "] = ", dstShape[d]);
  }
  const uint32_t rows = dim == 2 ? dstShape[0] : 1, cols = dstShape[dim - 1];
  const uint64_t n = uint64_t{rows} * cols;
  trex_emu::CheckUbAlign("Broadcast", "dst", dst.addr_);
  trex_emu::CheckUbAlign("Broadcast", "src", src.addr_);
  trex_emu::CheckUbRange("Broadcast", "dst", dst.buf_, dst.addr_, dst.addr_ + n);
  const uint64_t sn = uint64_t{srcShape[0]} * (dim == 2 ? srcShape[1] : 1);
  trex_emu::CheckUbRange("Broadcast", "src", src.buf_, src.addr_, src.addr_ + sn);
  std::vector<T> in(src.addr_, src.addr_ + sn);  // dst may alias src
  for (uint32_t r = 0; r < rows; ++r)
    for (uint32_t c = 0; c < cols; ++c) {
      const uint32_t sr = (dim == 2 && axis == 0) ? 0 : r;
      const uint32_t sc = (axis == dim - 1) ? 0 : c;
      dst.addr_[uint64_t{r} * cols + c] = in[uint64_t{sr} * (dim == 2 ? srcShape[1] : 1) + sc];
    }
  trex_emu::CountRepeats("Broadcast", trex_emu::CountFormRepeats(n, sizeof(T)));
}

// Sigmoid(dst, src[, sharedTmpBuffer], count) (adv API): 1 / (1 + exp(-x)), computed in float and rounded
// once (the NPU composes Exp/Adds/Reciprocal, so its last bits can differ).
template <class T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count) {
  static_assert(trex_emu::kFloatTypes<T>, "Sigmoid: element type must be half or float");
  trex_emu::UnaryCount("Sigmoid", dst, src, count, trex_emu::SameType<T>([](auto a, auto) {
                         return decltype(a)(1.0f / (1.0f + std::exp(-static_cast<float>(a))));
                       }));
}
template <class T, bool isReuseSource = false>
inline void Sigmoid(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>&,
                    const uint32_t count) {
  Sigmoid<T, isReuseSource>(dst, src, count);
}

}  // namespace AscendC
