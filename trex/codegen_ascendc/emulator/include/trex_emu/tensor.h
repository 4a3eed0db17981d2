// trex AscendC emulator: GlobalTensor / LocalTensor and the enums the API uses.
#pragma once

#include <cstdint>

#include "trex_emu/adv_common.h"
#include "trex_emu/float16.h"
#include "trex_emu/runtime.h"

// Qualifiers of the AscendC language extension are no-ops on the host (as in CANN's CPU debug mode).
#ifndef __aicore__
#define __aicore__
#endif
#ifndef __global__
#define __global__
#endif
#ifndef __gm__
#define __gm__
#endif
#ifndef __ubuf__
#define __ubuf__
#endif
#ifndef __inline__
#define __inline__ inline
#endif
#define GM_ADDR __gm__ uint8_t*

namespace AscendC {

enum class TPosition : uint8_t {
  GM, A1, A2, B1, B2, C1, C2, CO1, CO2, VECIN, VECOUT, VECCALC, LCM = VECCALC, SPM, SHM = SPM, TSCM,
  C2PIPE2GM, C2PIPE2LOCAL, MAX,
};
using QuePosition = TPosition;

inline const char* PositionName(TPosition p) {
  switch (p) {
    case TPosition::VECIN: return "VECIN";
    case TPosition::VECOUT: return "VECOUT";
    case TPosition::VECCALC: return "VECCALC";
    case TPosition::GM: return "GM";
    default: return "non-UB position";
  }
}

enum class CacheMode : uint8_t { CACHE_MODE_NORMAL = 0, CACHE_MODE_DISABLE, CACHE_MODE_LAST, CACHE_MODE_PERSISTENT };

template <class T>
class LocalTensor;

// int4b_t: a 4-bit signed integer, two per byte (element 2k in the low nibble). A LocalTensor<int4b_t> is reached
// by ReinterpretCast of a byte tensor; Cast<int4b_t, half> (repeat form) writes it (vec_misc.h).
struct int4b_t {
  uint8_t storage;
};

// ShapeInfo (asc-devkit include/basic_api/kernel_tensor.h): a tensor's shape, original shape (e.g. the ND shape
// behind an NZ one) and format, up to K_MAX_SHAPE_DIM (8) dims, which a tensor carries for the advanced APIs
// (LocalTensor/GlobalTensor::SetShapeInfo / GetShapeInfo). The emulator zero-fills a default-constructed one.
#ifndef K_MAX_SHAPE_DIM
#define K_MAX_SHAPE_DIM 8
#endif
struct ShapeInfo {
 public:
  ShapeInfo() {}
  ShapeInfo(const uint8_t inputShapeDim, const uint32_t inputShape[], const uint8_t inputOriginalShapeDim,
            const uint32_t inputOriginalShape[], const DataFormat inputFormat)
      : shapeDim(inputShapeDim), originalShapeDim(inputOriginalShapeDim), dataFormat(inputFormat) {
    Check(inputShapeDim, inputOriginalShapeDim);
    for (int i = 0; i < shapeDim; ++i) shape[i] = inputShape[i];
    for (int i = 0; i < originalShapeDim; ++i) originalShape[i] = inputOriginalShape[i];
  }
  ShapeInfo(const uint8_t inputShapeDim, const uint32_t inputShape[], const DataFormat inputFormat)
      : shapeDim(inputShapeDim), originalShapeDim(inputShapeDim), dataFormat(inputFormat) {
    Check(inputShapeDim, inputShapeDim);
    for (int i = 0; i < shapeDim; ++i) shape[i] = originalShape[i] = inputShape[i];
  }
  ShapeInfo(const uint8_t inputShapeDim, const uint32_t inputShape[])
      : shapeDim(inputShapeDim), originalShapeDim(inputShapeDim), dataFormat(DataFormat::ND) {
    Check(inputShapeDim, inputShapeDim);
    for (int i = 0; i < shapeDim; ++i) shape[i] = originalShape[i] = inputShape[i];
  }
  uint8_t shapeDim = 0;
  uint8_t originalShapeDim = 0;
  uint32_t shape[K_MAX_SHAPE_DIM] = {};
  uint32_t originalShape[K_MAX_SHAPE_DIM] = {};
  DataFormat dataFormat = DataFormat::ND;

 private:
  static void Check(unsigned dim, unsigned odim) {
    if (dim > K_MAX_SHAPE_DIM || odim > K_MAX_SHAPE_DIM)
      trex_emu::Fail("ShapeInfo: inputShapeDim is ", dim, ", inputOriginalShapeDim is ", odim,
                     ", which should be at most ", K_MAX_SHAPE_DIM, " both");
  }
};
inline uint64_t GetShapeSize(const ShapeInfo& shapeInfo) {
  uint64_t n = 1;
  for (int i = 0; i < shapeInfo.shapeDim; ++i) n *= shapeInfo.shape[i];
  return n;
}

template <class T>
class GlobalTensor {
 public:
  GlobalTensor() = default;
  void SetGlobalBuffer(__gm__ T* buffer, uint64_t bufferSize) {
    addr_ = buffer;
    size_ = bufferSize;
  }
  void SetGlobalBuffer(__gm__ T* buffer) {
    addr_ = buffer;
    size_ = 0;
  }
  // L2 cache hints change only performance on the NPU.
  template <CacheMode = CacheMode::CACHE_MODE_NORMAL>
  void SetL2CacheHint() {}
  void SetL2CacheHint(CacheMode) {}
  GlobalTensor operator[](uint64_t offset) const {
    GlobalTensor r;
    r.addr_ = addr_ + offset;
    r.size_ = size_ > offset ? size_ - offset : 0;
    return r;
  }
  T GetValue(uint64_t offset) const {
    trex_emu::CheckGm("GlobalTensor::GetValue", addr_ + offset, sizeof(T));
    trex_emu::RT().counters.scalar_ops += 1;
    return addr_[offset];
  }
  // operator()(offset): a reference to one element (bounds-checked; recorded as a read for the race
  // check, since whether it is then written is not known here).
  T& operator()(uint64_t offset) const {
    trex_emu::CheckGm("GlobalTensor::operator()", addr_ + offset, sizeof(T));
    trex_emu::RT().counters.scalar_ops += 1;
    return addr_[offset];
  }
  void SetValue(uint64_t offset, const T& value) const {
    trex_emu::CheckGm("GlobalTensor::SetValue", addr_ + offset, sizeof(T), true, &value);
    trex_emu::RT().counters.scalar_ops += 1;
    addr_[offset] = value;
  }
  __gm__ T* GetPhyAddr() const { return addr_; }
  __gm__ T* GetPhyAddr(uint64_t offset) const { return addr_ + offset; }
  uint64_t GetSize() const { return size_; }
  void SetShapeInfo(const ShapeInfo& shapeInfo) { shapeInfo_ = shapeInfo; }
  ShapeInfo GetShapeInfo() const { return shapeInfo_; }

  __gm__ T* addr_ = nullptr;
  uint64_t size_ = 0;
  ShapeInfo shapeInfo_;
};

template <class T>
class LocalTensor {
 public:
  using PrimType = T;
  LocalTensor() = default;
  LocalTensor(T* addr, uint32_t size, const trex_emu::BufferInfo* buf) : addr_(addr), size_(size), buf_(buf) {}
  // Static construction at a UB byte address (CANN 8.x): LocalTensor<T>(TPosition::VECCALC, addr, tileSize)
  // is a tensor of tileSize elements at UB offset addr, outside any TPipe. The address must be 32-byte
  // aligned and the tensor inside UB; it becomes a buffer of its own for the bounds checks.
  LocalTensor(TPosition pos, uint32_t addr, uint32_t tileSize) {
    trex_emu::Runtime& rt = trex_emu::RT();
    const uint64_t bytes = uint64_t{tileSize} * sizeof(T);
    if (addr % 32 != 0) trex_emu::Fail("LocalTensor(pos, addr=", addr, ", tileSize): addr must be 32-byte aligned");
    if (rt.ub == nullptr || addr + bytes > rt.ub_bytes)
      trex_emu::Fail("LocalTensor(pos, addr=", addr, ", tileSize=", tileSize, "): [", addr, ", ", addr + bytes,
                     ") lies outside the ", rt.ub_bytes, " B unified buffer");
    rt.buffers.push_back(trex_emu::BufferInfo{"LocalTensor@" + std::to_string(addr), rt.ub + addr,
                                              rt.ub + addr + (bytes + 31) / 32 * 32, static_cast<int>(pos)});
    addr_ = reinterpret_cast<T*>(rt.ub + addr);
    size_ = tileSize;
    buf_ = &rt.buffers.back();
  }

  // Like the NPU, only the buffer bounds matter: a sub-tensor may start past this tensor's size.
  // dst = a + b, dst = a < b, ... (symbol_override.h): the expression issues its vector instruction into dst.
  template <class E, class = typename E::TrexTensorExpr>
  void operator=(const E& expr) const {
    expr.Process(*this);
  }
  LocalTensor operator[](uint32_t offset) const {
    if (buf_ != nullptr && reinterpret_cast<const uint8_t*>(addr_ + offset) > buf_->end) {
      if (!trex_emu::RT().device_bounds)
        trex_emu::Fail("LocalTensor::operator[]: offset ", offset, " lies beyond the end of buffer ", buf_->name);
      trex_emu::NoteFinding(trex_emu::kFindingUbBufferOverrun, "LocalTensor::operator[] past " + buf_->name);
    }
    return LocalTensor(addr_ + offset, offset < size_ ? size_ - offset : 0, buf_);
  }
  T GetValue(uint32_t index) const {
    trex_emu::CheckUbRange("LocalTensor::GetValue", "tensor", buf_, addr_ + index, addr_ + index + 1);
    trex_emu::RT().counters.scalar_ops += 1;
    trex_emu::EndInstr();
    return addr_[index];
  }
  // operator()(index): a reference to one element, read or written by the scalar unit (bounds-checked).
  T& operator()(uint32_t index) const {
    trex_emu::CheckUbRange("LocalTensor::operator()", "tensor", buf_, addr_ + index, addr_ + index + 1);
    trex_emu::RT().counters.scalar_ops += 1;
    trex_emu::EndInstr();
    return addr_[index];
  }
  template <class U>
  void SetValue(uint32_t index, const U& value) const {
    trex_emu::CheckUbRange("LocalTensor::SetValue", "tensor", buf_, addr_ + index, addr_ + index + 1);
    trex_emu::RT().counters.scalar_ops += 1;
    trex_emu::EndInstr();
    addr_[index] = static_cast<T>(value);
  }
  template <class U>
  LocalTensor<U> ReinterpretCast() const {
    return LocalTensor<U>(reinterpret_cast<U*>(addr_), static_cast<uint32_t>(uint64_t{size_} * sizeof(T) / sizeof(U)),
                          buf_);
  }
  uint32_t GetSize() const { return size_; }
  uint32_t GetLength() const { return size_ * static_cast<uint32_t>(sizeof(T)); }
  void SetSize(uint32_t size) { size_ = size; }
  // UB byte address of the first element (what the NPU reports as the physical address).
  uint64_t GetPhyAddr() const { return addr_ == nullptr ? 0 : trex_emu::RT().UbOffset(addr_); }
  uint64_t GetPhyAddr(uint32_t offset) const { return GetPhyAddr() + uint64_t{offset} * sizeof(T); }
  TPosition GetPosition() const { return buf_ ? static_cast<TPosition>(buf_->position) : TPosition::MAX; }
  // The shape an advanced API may read (asc-devkit: set on the tensor, kept by copies; a sub-tensor from
  // operator[] or ReinterpretCast starts without one).
  void SetShapeInfo(const ShapeInfo& shapeInfo) { shapeInfo_ = shapeInfo; }
  ShapeInfo GetShapeInfo() const { return shapeInfo_; }

  T* addr_ = nullptr;
  uint32_t size_ = 0;  // elements
  const trex_emu::BufferInfo* buf_ = nullptr;
  ShapeInfo shapeInfo_;
};

}  // namespace AscendC

namespace trex_emu {
template <class T>
inline const char* TypeName() {
  if constexpr (std::is_same<T, float>::value) return "float";
  else if constexpr (std::is_same<T, half>::value) return "half";
  else if constexpr (std::is_same<T, bfloat16_t>::value) return "bfloat16_t";
  else if constexpr (std::is_same<T, int32_t>::value) return "int32_t";
  else if constexpr (std::is_same<T, uint32_t>::value) return "uint32_t";
  else if constexpr (std::is_same<T, int16_t>::value) return "int16_t";
  else if constexpr (std::is_same<T, uint16_t>::value) return "uint16_t";
  else if constexpr (std::is_same<T, int8_t>::value) return "int8_t";
  else if constexpr (std::is_same<T, uint8_t>::value) return "uint8_t";
  else if constexpr (std::is_same<T, int64_t>::value) return "int64_t";
  else if constexpr (std::is_same<T, uint64_t>::value) return "uint64_t";
  else return "T";
}
}  // namespace trex_emu
