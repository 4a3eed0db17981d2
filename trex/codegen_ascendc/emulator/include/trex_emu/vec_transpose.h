// trex AscendC emulator: Transpose (16x16 and the [N,C,H,W] <-> [N,H,W,C] enhanced form) and TransDataTo5HD,
// per asc-devkit's API pages (Memory矢量计算/.../Transpose.md, TransDataTo5HD.md) for Atlas A2/A3, with the
// structs of include/basic_api/kernel_struct_transpose.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "trex_emu/runtime.h"
#include "trex_emu/tensor.h"
#include "trex_emu/vec.h"

namespace AscendC {

enum class TransposeType : uint8_t {
  TRANSPOSE_TYPE_NONE,
  TRANSPOSE_NZ2ND_0213,
  TRANSPOSE_NZ2NZ_0213,
  TRANSPOSE_NZ2NZ_012_WITH_N,
  TRANSPOSE_NZ2ND_012_WITH_N,
  TRANSPOSE_NZ2ND_012_WITHOUT_N,
  TRANSPOSE_NZ2NZ_012_WITHOUT_N,
  TRANSPOSE_ND2ND_ONLY,
  TRANSPOSE_ND_UB_GM,
  TRANSPOSE_GRAD_ND_UB_GM,
  TRANSPOSE_ND2ND_B16,
  TRANSPOSE_NCHW2NHWC,
  TRANSPOSE_NHWC2NCHW,
};

struct TransposeParamsExt {
  constexpr TransposeParamsExt() = default;
  constexpr TransposeParamsExt(const uint16_t nSizeIn, const uint16_t cSizeIn, const uint16_t hSizeIn,
                               const uint16_t wSizeIn, const TransposeType transposeTypeIn)
      : nSize(nSizeIn), cSize(cSizeIn), hSize(hSizeIn), wSize(wSizeIn), transposeType(transposeTypeIn) {}
  uint16_t nSize = 0;
  uint16_t cSize = 0;
  uint16_t hSize = 0;
  uint16_t wSize = 0;
  TransposeType transposeType = TransposeType::TRANSPOSE_ND2ND_B16;
};

struct TransDataTo5HDParams {
  constexpr TransDataTo5HDParams() = default;
  constexpr TransDataTo5HDParams(const bool dstHighHalfIn, const bool srcHighHalfIn, const uint8_t repeatTimesIn,
                                 const uint16_t dstRepStrideIn, const uint16_t srcRepStrideIn)
      : dstHighHalf(dstHighHalfIn), srcHighHalf(srcHighHalfIn), repeatTimes(repeatTimesIn),
        dstRepStride(dstRepStrideIn), srcRepStride(srcRepStrideIn) {}
  bool dstHighHalf = false;
  bool srcHighHalf = false;
  uint8_t repeatTimes = 1;
  uint16_t dstRepStride = 0;
  uint16_t srcRepStride = 0;
};

constexpr int32_t NCHW_CONV_ADDR_LIST_SIZE = 16;

}  // namespace AscendC

namespace trex_emu {

template <class T>
inline void Transpose16x16(const char* api, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src) {
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src", src.addr_);
  CheckUbRange(api, "src", src.buf_, src.addr_, src.addr_ + 256);
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + 256);
  T m[256];
  std::memcpy(m, src.addr_, sizeof(m));  // src and dst may be the same tensor (the page)
  for (int i = 0; i < 16; ++i)
    for (int j = 0; j < 16; ++j) dst.addr_[j * 16 + i] = m[i * 16 + j];
  CountRepeats(api, 1);
}

// The buffer of the running block that holds UB byte offset `off` (address-list APIs name UB by GetPhyAddr()).
inline const BufferInfo* UbBufferAt(const char* api, const char* operand, uint64_t off, uint64_t bytes) {
  Runtime& rt = RT();
  if (off + bytes > rt.ub_bytes)
    Fail(api, ": ", operand, " address ", off, " + ", bytes, " B lies past the ", rt.ub_bytes, " B unified buffer");
  const uint8_t* p = rt.ub + off;
  for (const BufferInfo& b : rt.buffers)
    if (p >= b.begin && p + bytes <= b.end) return &b;
  Fail(api, ": ", operand, " UB bytes [", off, ", ", off + bytes, ") are not inside one buffer of this block");
  return nullptr;
}

}  // namespace trex_emu

namespace AscendC {

// Transpose(dst, src): one 16x16 matrix of 2-byte elements (int16_t, uint16_t, half); dst may be src.
template <class T>
inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src) {
  static_assert(trex_emu::kOneOf<T, int16_t, uint16_t, half>, "Transpose: 16x16 form supports int16_t, uint16_t, half");
  trex_emu::Transpose16x16("Transpose", dst, src);
}

// Transpose(dst, src, sharedTmpBuffer, params): TRANSPOSE_ND2ND_B16 (uint16_t on A2/A3) is the 16x16 form;
// TRANSPOSE_NCHW2NHWC / TRANSPOSE_NHWC2NCHW permute [N,C,H,W] <-> [N,H,W,C] (int8/uint8/int16/uint16/half/
// int32/uint32/float). The page's constraints raise: cSize > 4095, hSize*wSize > 4095 or hSize*wSize*sizeof(T)
// not 32-byte aligned, a sharedTmpBuffer under (cSize+2)*h0*w0*sizeof(T) B (NCHW2NHWC) or (2*cSize+1)*h0*w0*
// sizeof(T) B (NHWC2NCHW) (h0 = 32 for 8-bit types, else 16; w0 = 32/sizeof(T)), dst overlapping src for the
// permutations, another transposeType (the page: not supported). sharedTmpBuffer holds garbage afterwards.
template <class T>
inline void Transpose(const LocalTensor<T>& dst, const LocalTensor<T>& src, const LocalTensor<uint8_t>& sharedTmpBuffer,
                      const TransposeParamsExt& p) {
  const char* api = "Transpose";
  if (p.transposeType == TransposeType::TRANSPOSE_ND2ND_B16) {
    if constexpr (std::is_same<T, uint16_t>::value) {
      trex_emu::Transpose16x16(api, dst, src);
    } else {
      trex_emu::Fail(api, ": TRANSPOSE_ND2ND_B16 with sharedTmpBuffer supports uint16_t only on Atlas A2/A3 "
                          "(use Transpose(dst, src) for int16_t/half)");
    }
    return;
  }
  if (p.transposeType != TransposeType::TRANSPOSE_NCHW2NHWC && p.transposeType != TransposeType::TRANSPOSE_NHWC2NCHW)
    trex_emu::Fail(api, ": transposeType ", int(p.transposeType), " is not supported (the page: only "
                        "TRANSPOSE_ND2ND_B16, TRANSPOSE_NCHW2NHWC, TRANSPOSE_NHWC2NCHW)");
  static_assert(trex_emu::kOneOf<T, int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float>,
                "Transpose NCHW<->NHWC: Atlas A2/A3 support int8_t, uint8_t, int16_t, uint16_t, half, int32_t, "
                "uint32_t, float");
  const bool to_nhwc = p.transposeType == TransposeType::TRANSPOSE_NCHW2NHWC;
  const uint64_t n = p.nSize, c = p.cSize, hw = uint64_t{p.hSize} * p.wSize;
  if (c > 4095) trex_emu::Fail(api, ": cSize=", c, " is outside [0, 4095]");
  if (hw > 4095) trex_emu::Fail(api, ": hSize*wSize=", hw, " is outside [0, 4095]");
  if (hw * sizeof(T) % 32 != 0)
    trex_emu::Fail(api, ": hSize*wSize*sizeof(T) = ", hw * sizeof(T), " B is not 32-byte aligned");
  const uint64_t h0 = sizeof(T) == 1 ? 32 : 16, w0 = 32 / sizeof(T);
  const uint64_t need = (to_nhwc ? c + 2 : 2 * c + 1) * h0 * w0 * sizeof(T);
  if (sharedTmpBuffer.GetSize() < need)
    trex_emu::Fail(api, ": sharedTmpBuffer holds ", sharedTmpBuffer.GetSize(), " B; ", to_nhwc ? "NCHW2NHWC" : "NHWC2NCHW",
                   " with cSize=", c, " needs ", need, " B (the page's tmpBufferSize)");
  const uint64_t total = n * c * hw;
  trex_emu::CheckUbAlign(api, "dst", dst.addr_);
  trex_emu::CheckUbAlign(api, "src", src.addr_);
  trex_emu::CheckUbRange(api, "src", src.buf_, src.addr_, src.addr_ + total);
  trex_emu::CheckUbRange(api, "dst", dst.buf_, dst.addr_, dst.addr_ + total);
  trex_emu::CheckUbRange(api, "sharedTmpBuffer", sharedTmpBuffer.buf_, sharedTmpBuffer.addr_, sharedTmpBuffer.addr_ + need);
  if (total && dst.addr_ < src.addr_ + total && src.addr_ < dst.addr_ + total)
    trex_emu::Fail(api, ": dst overlaps src; the NCHW<->NHWC transposes do not support reusing src as dst (the page)");
  for (uint64_t b = 0; b < n; ++b)
    for (uint64_t ci = 0; ci < c; ++ci)
      for (uint64_t k = 0; k < hw; ++k) {
        const uint64_t nchw = (b * c + ci) * hw + k, nhwc = (b * hw + k) * c + ci;
        if (to_nhwc) dst.addr_[nhwc] = src.addr_[nchw];
        else dst.addr_[nchw] = src.addr_[nhwc];
      }
  std::memset(sharedTmpBuffer.addr_, trex_emu::RT().ub_fill, need);
  trex_emu::CountRepeats(api, trex_emu::CountFormRepeats(total, sizeof(T)));
}

// TransDataTo5HD (address lists of 16 UB addresses, GetPhyAddr() values): repeat r reads the 32-byte blocks at
// srcList[i] + r*srcRepStride*32 and writes the blocks at dstList[j] + r*dstRepStride*32. For 16-bit types the
// 16 source blocks form a 16x16 matrix (row i = block i) and dst block j receives its column j. 8- and 32-bit
// types are not emulated (they raise). repeatTimes 0 is a NOP; every address must be 32-byte aligned and in a
// buffer of the block.
template <class T>
inline void TransDataTo5HD(uint64_t dstList[NCHW_CONV_ADDR_LIST_SIZE], uint64_t srcList[NCHW_CONV_ADDR_LIST_SIZE],
                           const TransDataTo5HDParams& p) {
  const char* api = "TransDataTo5HD";
  static_assert(trex_emu::kOneOf<T, int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float>,
                "TransDataTo5HD: Atlas A2/A3 support int8_t, uint8_t, int16_t, uint16_t, half, int32_t, uint32_t, float");
  if (p.repeatTimes == 0) return;
  if constexpr (sizeof(T) != 2) {
    (void)dstList;
    (void)srcList;
    trex_emu::Fail(api, ": only 16-bit element types are emulated (8- and 32-bit layouts are not)");
  } else {
    trex_emu::Runtime& rt = trex_emu::RT();
    for (int i = 0; i < 16; ++i) {
      if (srcList[i] % 32 || dstList[i] % 32)
        trex_emu::Fail(api, ": srcList[", i, "] = ", srcList[i], " / dstList[", i, "] = ", dstList[i],
                       " must be 32-byte aligned UB addresses");
    }
    for (int r = 0; r < p.repeatTimes; ++r) {
      T m[256];
      for (int i = 0; i < 16; ++i) {
        const uint64_t off = srcList[i] + uint64_t{p.srcRepStride} * 32 * r;
        trex_emu::UbBufferAt(api, "srcList", off, 32);
        std::memcpy(&m[i * 16], rt.ub + off, 32);
      }
      for (int j = 0; j < 16; ++j) {
        const uint64_t off = dstList[j] + uint64_t{p.dstRepStride} * 32 * r;
        trex_emu::UbBufferAt(api, "dstList", off, 32);
        T* d = reinterpret_cast<T*>(rt.ub + off);
        for (int i = 0; i < 16; ++i) d[i] = m[i * 16 + j];
      }
    }
    trex_emu::CountRepeats(api, p.repeatTimes);
  }
}
template <class T>
inline void TransDataTo5HD(const LocalTensor<T> (&dstList)[NCHW_CONV_ADDR_LIST_SIZE],
                           const LocalTensor<T> (&srcList)[NCHW_CONV_ADDR_LIST_SIZE], const TransDataTo5HDParams& p) {
  uint64_t d[16], s[16];
  for (int i = 0; i < 16; ++i) {
    d[i] = dstList[i].GetPhyAddr();
    s[i] = srcList[i].GetPhyAddr();
  }
  TransDataTo5HD<T>(d, s, p);
}
template <class T>
inline void TransDataTo5HD(const LocalTensor<uint64_t>& dst, const LocalTensor<uint64_t>& src, const TransDataTo5HDParams& p) {
  trex_emu::CheckUbRange("TransDataTo5HD", "dst", dst.buf_, dst.addr_, dst.addr_ + 16);
  trex_emu::CheckUbRange("TransDataTo5HD", "src", src.buf_, src.addr_, src.addr_ + 16);
  uint64_t d[16], s[16];
  std::memcpy(d, dst.addr_, sizeof(d));
  std::memcpy(s, src.addr_, sizeof(s));
  TransDataTo5HD<T>(d, s, p);
}

}  // namespace AscendC
