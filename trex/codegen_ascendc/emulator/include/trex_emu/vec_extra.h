// trex AscendC emulator: LocalMemAllocator, Sigmoid (count form).
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
// the two must not be mixed). The cube memories (Hardware::L1, L0A, ...) compile, so that a program whose
// cube kernel sits next to its vector kernels builds, and raise when a block allocates from them.
template <Hardware HW = Hardware::UB>
class LocalMemAllocator : public trex_emu::TPipeBase {
 public:
  template <class T, uint32_t N>
  LocalTensor<T> Alloc() {
    return Alloc<T>(N);
  }
  template <class T>
  LocalTensor<T> Alloc(uint32_t count) {
    static const char* const kNames[] = {"GM", "UB", "L1", "L0A", "L0B", "L0C", "BIAS", "FIXBUF", "MAX"};
    if (HW != Hardware::UB)
      trex_emu::Fail("LocalMemAllocator<Hardware::", kNames[static_cast<int>(HW)], ">::Alloc: only Hardware::UB is emulated "
                     "(the cube unit's memories L1/L0A/L0B/L0C/BIAS/FIXBUF are not)");
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

// Broadcast / BroadCast (adv API): trex_emu/adv_broadcast.h.

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
