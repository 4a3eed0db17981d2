// adv_pad.h: the Pad / UnPad advanced APIs (asc-devkit 高阶API/张量变换/Pad.md, UnPad.md) on Atlas A2/A3, as the
// arch-2201 implementation computes them (impl/adv_api/detail/pad/pad/pad_v220_impl.h, pad_base_impl.h; the CPU-debug
// checks of api_check/kernel_check/pad/pad/pad_check_common.h, unpad_check_common.h), with PadParams / UnPadParams.
//
// Pad<T>(dst, src, padParams{leftPad, rightPad, padValue}[, sharedTmpBuffer], tiling): src is [srcHeight, srcWidth]
// (the PadTiling's fields), pad value static_cast<T>(padValue) (half via float).
//   * srcWidth * sizeof(T) a multiple of 32 B (scenario 2: the row holds srcOriWidth valid columns): dst = src
//     (srcHeight * srcWidth elements), then columns [srcOriWidth, srcOriWidth + rightPad) of every row = padValue
//     (the impl's masked Duplicate over the row's last block). Needs leftPad == 0, rightPad != 0, srcOriWidth !=
//     srcWidth, the redundant columns inside the last 32 B block, srcOriWidth + rightPad <= srcWidth.
//   * otherwise (scenario 1): dst is [srcHeight, W], W = leftPad + srcWidth + rightPad, row j = leftPad pad values,
//     src row j, rightPad pad values. Needs W == srcWidth rounded up to 32 B (the impl streams the source through
//     Brcb / TransDataTo5HD in AlignUp(srcWidth) - leftPad - rightPad element steps per row: any other W shifts
//     every later row), the tiling split from PadTilingFunc with a tmp size (tmpBuffer1BlockNum > 0), and a tmp
//     buffer of tmpBuffer1BlockNum * 1024 B; dst apart from src.
//   Both: leftPad, rightPad under 32 B each; T int16/uint16/half/int32/uint32/float; src >= srcHeight * srcWidth,
//   dst >= its rows; the PadTiling equal to what PadTilingFunc makes for (srcHeight, srcWidth, srcOriWidth, the
//   tmpBuffer1BlockNum split) — the impl addresses dst and tmp through its fields. The used tmp bytes hold garbage
//   afterwards. Without sharedTmpBuffer: the library's stack buffer, the UB the TPipe left (too little: an error).
// UnPad<T>(dst, src, unPadParams{leftPad, rightPad}[, sharedTmpBuffer], tiling): on A2/A3 one GatherMask (pattern 7,
//   counter mode, srcWidth - rightPad elements per row): dst = the first srcWidth - rightPad elements of each of the
//   srcHeight rows, packed. leftPad is not applied (the impl warns "may not be effective"; printed on stderr). Needs
//   srcWidth * sizeof(T) a multiple of 32, 0 < rightPad, rightPad * sizeof(T) < 32, srcHeight <= 255 (GatherMask's
//   repeat field), src >= srcHeight * srcWidth, dst >= srcHeight * (srcWidth - rightPad). No tmp buffer is used.
// Errors name the API (trex_emu::Fail: the launch reports it).
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "trex_emu/pipe.h"
#include "trex_emu/tiling_pad.h"
#include "trex_emu/vec.h"

namespace AscendC {
struct PadParams {
  uint16_t leftPad = 0;
  uint16_t rightPad = 0;
  int32_t padValue = 0;
};
struct UnPadParams {
  uint16_t leftPad = 0;
  uint16_t rightPad = 0;
};
}  // namespace AscendC

namespace trex_emu {
template <class T>
constexpr bool kPadTypes = std::is_same<T, int16_t>::value || std::is_same<T, uint16_t>::value ||
                           std::is_same<T, half>::value || std::is_same<T, int32_t>::value ||
                           std::is_same<T, uint32_t>::value || std::is_same<T, float>::value;

// The library stack buffer (PopStackBuffer on arch 2201): from the TPipe's end to the UB's last 64 bytes.
inline uint64_t PadStackBytes(const char* api) {
  Runtime& rt = RT();
  if (rt.current_pipe == nullptr)
    Fail(api, ": the form without sharedTmpBuffer takes the TPipe's stack buffer, but no TPipe exists in this block");
  const uint64_t used = rt.current_pipe->UsedBytes();
  return rt.ub_bytes > used + 64 ? rt.ub_bytes - 64 - used : 0;
}

template <class T>
inline T PadValueAs(int32_t v) {
  if constexpr (std::is_same<T, half>::value) {
    return T(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

template <class T>
inline void PadOperand(const char* api, const char* name, const AscendC::LocalTensor<T>& t, uint64_t need) {
  if (t.GetSize() < need) Fail(api, ": ", name, " holds ", t.GetSize(), " elements; ", need, " are needed");
  CheckUbAlign(api, name, t.addr_);
  CheckUbRange(api, name, t.buf_, t.addr_, t.addr_ + need);
}

template <class T>
inline void PadImpl(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                    const AscendC::PadParams& pp, const AscendC::LocalTensor<uint8_t>* tmp, const PadTiling& tiling) {
  static_assert(kPadTypes<T>, "Pad: T must be int16_t/uint16_t/int32_t/uint32_t/half/float");
  const char* api = "Pad";
  constexpr uint32_t ts = sizeof(T), epb = 32 / ts;
  const uint32_t h = tiling.srcHeight, w = tiling.srcWidth, oriW = tiling.srcOriWidth;
  const uint32_t l = pp.leftPad, r = pp.rightPad;
  if (l * ts >= 32) Fail(api, ": padParams.leftPad * sizeof(T) is ", l * ts, " B; it must be less than 32");
  if (r * ts >= 32) Fail(api, ": padParams.rightPad * sizeof(T) is ", r * ts, " B; it must be less than 32");
  if (h == 0 || w == 0) Fail(api, ": tiling.srcHeight / srcWidth are ", h, " / ", w, "; both must be positive");
  const uint32_t blocks = tiling.tmpBuffer1BlockNum;
  const PadTiling want = PadTilingA2(h, w, oriW, blocks * 1024u, ts);
  if (std::memcmp(&want, &tiling, sizeof(PadTiling)) != 0)
    Fail(api, ": the PadTiling is not the one PadTilingFunc makes for srcShape [", h, ", ", w, "], srcOriWidth ", oriW,
         ", typeSize ", ts, " and its tmp split (tmpBuffer1BlockNum ", blocks,
         "); call PadTilingFunc with this T's size and shape");
  const T pad = PadValueAs<T>(pp.padValue);
  const uint64_t n = uint64_t{h} * w;
  PadOperand(api, "srcTensor", src, n);
  uint8_t* scratch = nullptr;
  uint64_t scratch_bytes = 0;
  if (w * ts % 32 == 0) {
    if (w == oriW) Fail(api, ": tiling.srcWidth is ", w, " and tiling.srcOriWidth is ", oriW, "; they can not be equal (a "
                        "32 B-aligned width with no redundant columns needs no Pad)");
    if (l != 0) Fail(api, ": padParams.leftPad is ", l, "; a 32 B-aligned width takes only a right pad (leftPad 0)");
    if (r == 0) Fail(api, ": padParams.rightPad is 0; it must not be 0");
    if (oriW > w || w - oriW > epb)
      Fail(api, ": srcOriWidth ", oriW, " must lie in the last 32 B block of srcWidth ", w, " (srcWidth - ", epb,
           " <= srcOriWidth < srcWidth)");
    if (oriW + r > w)
      Fail(api, ": srcOriWidth + rightPad = ", oriW + r, " exceeds srcWidth ", w,
           "; the padded width can not pass the 32 B-aligned width");
    PadOperand(api, "dstTensor", dst, n);
    std::vector<T> out(src.addr_, src.addr_ + n);
    for (uint32_t j = 0; j < h; ++j)
      for (uint32_t k = oriW; k < oriW + r; ++k) out[uint64_t{j} * w + k] = pad;
    std::memcpy(dst.addr_, out.data(), n * ts);
  } else {
    const uint32_t W = l + w + r, aligned = (w + epb - 1) / epb * epb;
    if (W * ts % 32 != 0)
      Fail(api, ": (srcWidth ", w, " + leftPad ", l, " + rightPad ", r, ") * sizeof(T) must be a multiple of 32 B");
    if (W != aligned)
      Fail(api, ": srcWidth + leftPad + rightPad is ", W, "; it must be srcWidth rounded up to 32 B, ", aligned,
           " (the padded width can not pass the aligned width; a smaller one shifts the later rows)");
    if (blocks == 0)
      Fail(api, ": the PadTiling has no tmp split (tmpBuffer1BlockNum 0: PadTilingFunc got stackBufferSize 0), but an "
           "unaligned width needs the tmp buffer; pass GetPadMaxMinTmpSize's size to PadTilingFunc");
    const uint64_t need = uint64_t{blocks} * 1024u;
    if (tmp != nullptr) {
      CheckUbAlign(api, "sharedTmpBuffer", tmp->addr_);
      if (tmp->GetSize() < need)
        Fail(api, ": sharedTmpBuffer holds ", tmp->GetSize(), " B; the tiling's split (tmpBuffer1BlockNum ", blocks,
             ") uses ", need, " B");
      CheckUbRange(api, "sharedTmpBuffer", tmp->buf_, tmp->addr_, tmp->addr_ + need);
      scratch = tmp->addr_;
      scratch_bytes = need;
    } else {
      const uint64_t have = PadStackBytes(api);
      if (have < need)
        Fail(api, ": the stack buffer (the UB the TPipe left) holds ", have, " B; the tiling's split (tmpBuffer1BlockNum ",
             blocks, ") uses ", need, " B: give a smaller tmp size to PadTilingFunc or leave more UB free");
    }
    const uint64_t m = uint64_t{h} * W;
    PadOperand(api, "dstTensor", dst, m);
    const uint8_t* d0 = reinterpret_cast<const uint8_t*>(dst.addr_);
    const uint8_t* s0 = reinterpret_cast<const uint8_t*>(src.addr_);
    if (d0 < s0 + n * ts && s0 < d0 + m * ts)
      Fail(api, ": dstTensor overlaps srcTensor in UB; an unaligned width needs separate buffers");
    if (scratch != nullptr) {
      const uint8_t* t0 = scratch;
      if ((t0 < s0 + n * ts && s0 < t0 + need) || (t0 < d0 + m * ts && d0 < t0 + need))
        Fail(api, ": sharedTmpBuffer overlaps srcTensor or dstTensor in UB");
    }
    for (uint32_t j = 0; j < h; ++j) {
      T* row = dst.addr_ + uint64_t{j} * W;
      for (uint32_t k = 0; k < l; ++k) row[k] = pad;
      std::memcpy(row + l, src.addr_ + uint64_t{j} * w, uint64_t{w} * ts);
      for (uint32_t k = l + w; k < W; ++k) row[k] = pad;
    }
  }
  EndAdvancedApi(api, scratch, scratch_bytes, (n * ts + 255) / 256 * 2);
}

template <class T>
inline void UnPadImpl(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                      const AscendC::UnPadParams& up, const UnPadTiling& tiling) {
  static_assert(kPadTypes<T>, "UnPad: T must be int16_t/uint16_t/int32_t/uint32_t/half/float");
  const char* api = "UnPad";
  constexpr uint32_t ts = sizeof(T);
  const uint32_t h = tiling.srcHeight, w = tiling.srcWidth, r = up.rightPad;
  if (uint64_t{w} * ts % 32 != 0)
    Fail(api, ": tiling.srcWidth * sizeof(T) is ", uint64_t{w} * ts, " B; it must be a multiple of 32");
  if (r == 0) Fail(api, ": unPadParams.rightPad is 0; it must be greater than 0");
  if (r * ts >= 32) Fail(api, ": unPadParams.rightPad * sizeof(T) is ", r * ts, " B; it must be less than 32");
  if (r >= w) Fail(api, ": unPadParams.rightPad ", r, " leaves nothing of srcWidth ", w);
  if (h == 0 || h > 255)
    Fail(api, ": tiling.srcHeight is ", h, "; it must be in [1, 255] (one GatherMask repeat per row on Atlas A2/A3)");
  if (up.leftPad != 0)
    std::fprintf(stderr, "[WARNING] [UnPad] The unPadParams.leftPad is %u, may not be effective.\n",
                 unsigned{up.leftPad});
  const uint32_t keep = w - r;
  PadOperand(api, "srcTensor", src, uint64_t{h} * w);
  PadOperand(api, "dstTensor", dst, uint64_t{h} * keep);
  std::vector<T> out(uint64_t{h} * keep);
  for (uint32_t j = 0; j < h; ++j)
    std::memcpy(out.data() + uint64_t{j} * keep, src.addr_ + uint64_t{j} * w, uint64_t{keep} * ts);
  std::memcpy(dst.addr_, out.data(), out.size() * ts);
  EndAdvancedApi(api, static_cast<uint8_t*>(nullptr), 0, h);
}
}  // namespace trex_emu

namespace AscendC {
template <typename T>
inline void Pad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, PadParams& padParams,
                const LocalTensor<uint8_t>& sharedTmpBuffer, PadTiling& tiling) {
  trex_emu::PadImpl(dstTensor, srcTensor, padParams, &sharedTmpBuffer, tiling);
}
template <typename T>
inline void Pad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, PadParams& padParams,
                PadTiling& tiling) {
  trex_emu::PadImpl(dstTensor, srcTensor, padParams, static_cast<const LocalTensor<uint8_t>*>(nullptr), tiling);
}
template <typename T>
inline void UnPad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, UnPadParams& unPadParams,
                  LocalTensor<uint8_t>& sharedTmpBuffer, UnPadTiling& tiling) {
  trex_emu::CheckUbAlign("UnPad", "sharedTmpBuffer", sharedTmpBuffer.addr_);
  trex_emu::UnPadImpl(dstTensor, srcTensor, unPadParams, tiling);
}
template <typename T>
inline void UnPad(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor, UnPadParams& unPadParams,
                  UnPadTiling& tiling) {
  trex_emu::UnPadImpl(dstTensor, srcTensor, unPadParams, tiling);
}
}  // namespace AscendC
