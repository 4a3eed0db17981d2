// trex AscendC emulator: the Select advanced API with a bytes mask (asc-devkit 高阶API/筛选/Select, page
// atlasascendc_api_07_0859; SelectWithBytesMask is its earlier name) for Atlas A2/A3.
//
// dst[r, c] = mask[r, c] == 0 ? src0 : src1 over firstAxis rows of srcLastAxis elements, one of src0/src1 a tensor
// and the other a scalar; the mask's rows are maskLastAxis long and only their first srcLastAxis elements count
// (the implementation's GatherMask drops the rest). "== 0" is the value, not a bit (the implementation casts the mask
// to half and compares with 0). Checks (the page's): T half/float, U bool/int8/uint8/int16/uint16/int32/uint32 (a
// compile error otherwise); srcLastAxis * sizeof(T) and maskLastAxis * sizeof(U) multiples of 32 B, maskLastAxis a
// multiple of 16 and >= srcLastAxis; firstAxis * srcLastAxis == the source tensor's GetSize() and firstAxis *
// maskLastAxis == the mask's. dst may be the source tensor (the page allows reuse). The temporary buffer is scratch
// (UB fill byte afterwards); the mask is left unchanged (the page allows the API to rewrite it when the row lengths
// differ, so a kernel must not rely on either).
#pragma once
#include <cstring>

#include "trex_emu/vec.h"

namespace AscendC {
struct SelectWithBytesMaskShapeInfo {
  SelectWithBytesMaskShapeInfo() {}
  uint32_t firstAxis = 0;
  uint32_t srcLastAxis = 0;
  uint32_t maskLastAxis = 0;
};
}  // namespace AscendC

namespace trex_emu {
template <class T, class U, bool kTensorFirst>
inline void SelectBytesMask(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src, T scalar,
                            const AscendC::LocalTensor<U>& mask, const AscendC::LocalTensor<uint8_t>& tmp,
                            const AscendC::SelectWithBytesMaskShapeInfo& info) {
  static_assert(kFloatTypes<T>, "Select (bytes mask): T must be half or float on Atlas A2/A3");
  static_assert(std::is_same<U, bool>::value || std::is_same<U, int8_t>::value || std::is_same<U, uint8_t>::value ||
                    std::is_same<U, int16_t>::value || std::is_same<U, uint16_t>::value ||
                    std::is_same<U, int32_t>::value || std::is_same<U, uint32_t>::value,
                "Select (bytes mask): the mask type must be bool, int8_t, uint8_t, int16_t, uint16_t, int32_t or uint32_t");
  const char* api = "Select(SelectWithBytesMaskShapeInfo)";
  const uint64_t rows = info.firstAxis, cols = info.srcLastAxis, mcols = info.maskLastAxis;
  if (cols * sizeof(T) % 32 != 0)
    Fail(api, ": srcLastAxis = ", cols, " elements is ", cols * sizeof(T), " B, not a multiple of 32 B");
  if (mcols * sizeof(U) % 32 != 0 || mcols % 16 != 0)
    Fail(api, ": maskLastAxis = ", mcols, " must be a multiple of 16 elements and of 32 B (", mcols * sizeof(U), " B)");
  if (mcols < cols) Fail(api, ": maskLastAxis = ", mcols, " is shorter than srcLastAxis = ", cols);
  if (rows * cols != src.GetSize())
    Fail(api, ": firstAxis * srcLastAxis = ", rows * cols, " but the source tensor holds ", src.GetSize(),
         " elements (GetSize); they must be equal");
  if (rows * mcols != mask.GetSize())
    Fail(api, ": firstAxis * maskLastAxis = ", rows * mcols, " but the mask tensor holds ", mask.GetSize(),
         " elements (GetSize); they must be equal");
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src", src.addr_);
  CheckUbAlign(api, "mask", mask.addr_);
  CheckUbRange(api, "src", src.buf_, src.addr_, src.addr_ + rows * cols);
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + rows * cols);
  CheckUbRange(api, "mask", mask.buf_, mask.addr_, mask.addr_ + rows * mcols);
  CheckUbRange(api, "sharedTmpBuffer", tmp.buf_, tmp.addr_, tmp.addr_ + tmp.GetSize());
  const uint8_t* tb = tmp.addr_;
  const uint64_t tn = tmp.GetSize();
  auto overlaps = [&](const void* p, uint64_t n) {
    const uint8_t* b = static_cast<const uint8_t*>(p);
    return tn && n && tb < b + n && b < tb + tn;
  };
  if (overlaps(dst.addr_, rows * cols * sizeof(T)) || overlaps(src.addr_, rows * cols * sizeof(T)) ||
      overlaps(mask.addr_, rows * mcols * sizeof(U)))
    Fail(api, ": sharedTmpBuffer overlaps dst, src or the mask; give it its own buffer");
  for (uint64_t r = 0; r < rows; ++r)
    for (uint64_t c = 0; c < cols; ++c) {
      const bool zero = mask.addr_[r * mcols + c] == U(0);
      const T v = src.addr_[r * cols + c];
      dst.addr_[r * cols + c] = kTensorFirst ? (zero ? v : scalar) : (zero ? scalar : v);
    }
  EndAdvancedApi(api, tmp.addr_, tn, CountFormRepeats(rows * cols, sizeof(T)));
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, typename U, bool isReuseMask = true>
inline void Select(const LocalTensor<T>& dst, const LocalTensor<T>& src0, T src1, const LocalTensor<U>& mask,
                   const LocalTensor<uint8_t>& sharedTmpBuffer, const SelectWithBytesMaskShapeInfo& info) {
  trex_emu::SelectBytesMask<T, U, true>(dst, src0, src1, mask, sharedTmpBuffer, info);
}
template <typename T, typename U, bool isReuseMask = true>
inline void Select(const LocalTensor<T>& dst, T src0, const LocalTensor<T>& src1, const LocalTensor<U>& mask,
                   const LocalTensor<uint8_t>& sharedTmpBuffer, const SelectWithBytesMaskShapeInfo& info) {
  trex_emu::SelectBytesMask<T, U, false>(dst, src1, src0, mask, sharedTmpBuffer, info);
}
template <typename T, typename U, bool isReuseMask = true>
inline void SelectWithBytesMask(const LocalTensor<T>& dst, const LocalTensor<T>& src0, T src1, const LocalTensor<U>& mask,
                                const LocalTensor<uint8_t>& sharedTmpBuffer, const SelectWithBytesMaskShapeInfo& info) {
  trex_emu::SelectBytesMask<T, U, true>(dst, src0, src1, mask, sharedTmpBuffer, info);
}
template <typename T, typename U, bool isReuseMask = true>
inline void SelectWithBytesMask(const LocalTensor<T>& dst, T src0, const LocalTensor<T>& src1, const LocalTensor<U>& mask,
                                const LocalTensor<uint8_t>& sharedTmpBuffer, const SelectWithBytesMaskShapeInfo& info) {
  trex_emu::SelectBytesMask<T, U, false>(dst, src1, src0, mask, sharedTmpBuffer, info);
}
}  // namespace AscendC
