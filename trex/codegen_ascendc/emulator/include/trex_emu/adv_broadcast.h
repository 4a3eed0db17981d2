// trex AscendC emulator: the BroadCast advanced API (asc-devkit 高阶API/张量变换/BroadCast, "Broadcast" in CANN 8.1+;
// include/adv_api/pad/broadcast.h) for Atlas A2/A3: dim 1 or 2, the source's length-1 axis repeated to the
// destination's length, both tensors dense ND ([m, 1] -> [m, k], [1, k] -> [m, k], [1] -> [k]).
// Both prototypes (with sharedTmpBuffer, whose bytes are the UB fill byte afterwards: scratch; and the framework's).
// Checks: srcShape[axis] == 1 and every other dimension equal to dstShape's (what broadcasting means), src and dst in
// their buffers and not overlapping (the implementation writes dst while reading src through brcb), the element type
// of 1, 2 or 4 bytes (the implementation's; the page lists int8_t, uint8_t, half, float) and dim/axis as the page allows (a compile error otherwise).
#pragma once
#include <cstring>

#include "trex_emu/vec.h"

namespace trex_emu {
template <class T, int32_t dim, int32_t axis>
inline void BroadCastImpl(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, const uint32_t* dst_shape,
                          const uint32_t* src_shape, const AscendC::LocalTensor<uint8_t>* tmp) {
  // The page lists int8_t, uint8_t, half and float for A2/A3; the A2/A3 implementation (broadcast_common_impl.h,
  // BroadCastCommon) moves 1-byte types through half and every other type as its bits (brcb / copy), so 2- and 4-byte
  // types (bfloat16_t, int16_t, int32_t, ...: asc-devkit's own add_broadcast example) broadcast too.
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4,
                "BroadCast moves 1-, 2- and 4-byte element types on Atlas A2/A3");
  static_assert(dim == 1 || dim == 2, "BroadCast: dim must be 1 or 2");
  static_assert(axis >= 0 && axis < dim, "BroadCast: axis must be 0 or 1 and less than dim");
  const char* api = "BroadCast";
  for (int i = 0; i < dim; ++i) {
    if (i == axis && src_shape[i] != 1)
      Fail(api, ": srcShape[", i, "] = ", src_shape[i], " but axis ", axis, " is the one broadcast, so it must be 1");
    if (i != axis && src_shape[i] != dst_shape[i])
      Fail(api, ": srcShape[", i, "] = ", src_shape[i], " differs from dstShape[", i, "] = ", dst_shape[i],
           "; only axis ", axis, " is broadcast");
    if (dst_shape[i] == 0) Fail(api, ": dstShape[", i, "] is 0");
  }
  const uint64_t rows = dim == 2 ? dst_shape[0] : 1, cols = dst_shape[dim - 1];
  const uint64_t dst_n = rows * cols, src_n = dim == 1 ? 1 : (axis == 1 ? rows : cols);
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src", src.addr_);
  CheckUbRange(api, "src", src.buf_, src.addr_, src.addr_ + src_n);
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + dst_n);
  const uint8_t* db = reinterpret_cast<const uint8_t*>(dst.addr_);
  const uint8_t* sb = reinterpret_cast<const uint8_t*>(src.addr_);
  if (db < sb + src_n * sizeof(T) && sb < db + dst_n * sizeof(T))
    Fail(api, ": dst UB bytes [", RT().UbOffset(db), ", ", RT().UbOffset(db + dst_n * sizeof(T)), ") overlap src [",
         RT().UbOffset(sb), ", ", RT().UbOffset(sb + src_n * sizeof(T)), "); use a separate buffer");
  if (tmp != nullptr) {
    CheckUbRange(api, "sharedTmpBuffer", tmp->buf_, tmp->addr_, tmp->addr_ + tmp->GetSize());
    const uint8_t* tb = tmp->addr_;
    const uint64_t tn = tmp->GetSize();
    if ((tb < db + dst_n * sizeof(T) && db < tb + tn) || (tb < sb + src_n * sizeof(T) && sb < tb + tn))
      Fail(api, ": sharedTmpBuffer overlaps src or dst; give it its own buffer");
  }
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) dst.addr_[r * cols + c] = src.addr_[dim == 1 ? 0 : (axis == 1 ? r : c)];
  EndAdvancedApi(api, tmp, CountFormRepeats(dst_n, sizeof(T)));
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void BroadCast(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], LocalTensor<uint8_t>& sharedTmpBuffer) {
  trex_emu::BroadCastImpl<T, dim, axis>(dstLocal, srcLocal, dstShape, srcShape, &sharedTmpBuffer);
}
template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void BroadCast(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim]) {
  trex_emu::BroadCastImpl<T, dim, axis>(dstLocal, srcLocal, dstShape, srcShape, nullptr);
}
// CANN 8.1+ spells it Broadcast.
template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void Broadcast(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim], LocalTensor<uint8_t>& sharedTmpBuffer) {
  trex_emu::BroadCastImpl<T, dim, axis>(dstLocal, srcLocal, dstShape, srcShape, &sharedTmpBuffer);
}
template <typename T, int32_t dim, int32_t axis, bool isReuseSource = false>
inline void Broadcast(const LocalTensor<T>& dstLocal, const LocalTensor<T>& srcLocal, const uint32_t dstShape[dim],
                      const uint32_t srcShape[dim]) {
  trex_emu::BroadCastImpl<T, dim, axis>(dstLocal, srcLocal, dstShape, srcShape, nullptr);
}
}  // namespace AscendC
