// tiling_pad.h: the Pad / UnPad advanced APIs' tiling structs, shared by the host (tiling_api.h: PadTilingFunc /
// UnPadTilingFunc fill them, SaveToBuffer) and the kernel (kernel_operator.h: Pad / UnPad read them), so the bytes
// the host saves are the layout the kernel reads.
//   UnPadTiling: asc-devkit include/adv_api/pad/pad_tilingdata.h — 8 uint32 fields (32 B).
//   PadTiling: the same header — 26 uint32 fields (104 B): common, the 32 B-aligned-width fields, the unaligned ones.
//   optiling::X (TILING_DATA_FIELD_DEF_STRUCT in an op's tiling data) and AscendC::tiling::X are one type here.
#pragma once
#include <cstdint>

#include "register/tilingdata_base.h"

BEGIN_TILING_DATA_DEF(UnPadTiling)
  TILING_DATA_FIELD_DEF(uint32_t, srcHeight);
  TILING_DATA_FIELD_DEF(uint32_t, srcWidth);
  TILING_DATA_FIELD_DEF(uint32_t, tmpBuffer1BlockNum);
  TILING_DATA_FIELD_DEF(uint32_t, tmpBuffer1RowNum);
  TILING_DATA_FIELD_DEF(uint32_t, tmpBuffer2Offset);
  TILING_DATA_FIELD_DEF(uint32_t, widthTiling);
  TILING_DATA_FIELD_DEF(uint32_t, widthFractal);
  TILING_DATA_FIELD_DEF(uint32_t, widthFractalTail);
END_TILING_DATA_DEF;

BEGIN_TILING_DATA_DEF(PadTiling)
  TILING_DATA_FIELD_DEF(uint32_t, srcHeight);
  TILING_DATA_FIELD_DEF(uint32_t, srcWidth);
  TILING_DATA_FIELD_DEF(uint32_t, srcOriWidth);
  TILING_DATA_FIELD_DEF(uint32_t, widthWithoutLastBlock);
  TILING_DATA_FIELD_DEF(uint32_t, blocksPerRow);
  TILING_DATA_FIELD_DEF(uint32_t, heightTiling);
  TILING_DATA_FIELD_DEF(uint32_t, heightFractal);
  TILING_DATA_FIELD_DEF(uint32_t, heightFractalTail);
  TILING_DATA_FIELD_DEF(uint32_t, mainLoopOffset);
  TILING_DATA_FIELD_DEF(uint32_t, tailBlockOffset);
  TILING_DATA_FIELD_DEF(uint32_t, tmpBuffer1BlockNum);
  TILING_DATA_FIELD_DEF(uint32_t, tmpBuffer1RowNum);
  TILING_DATA_FIELD_DEF(uint32_t, tmpBuffer2Offset);
  TILING_DATA_FIELD_DEF(uint32_t, widthTiling);
  TILING_DATA_FIELD_DEF(uint32_t, widthFractal);
  TILING_DATA_FIELD_DEF(uint32_t, widthFractalTail);
  TILING_DATA_FIELD_DEF(uint32_t, widthFractalTailAlingned);
  TILING_DATA_FIELD_DEF(uint32_t, brcbTiling);
  TILING_DATA_FIELD_DEF(uint32_t, brcbFractal);
  TILING_DATA_FIELD_DEF(uint32_t, brcbFractalTail);
  TILING_DATA_FIELD_DEF(uint32_t, maxRepeatTimes);
  TILING_DATA_FIELD_DEF(uint32_t, brcbTilingRepeatTimes);
  TILING_DATA_FIELD_DEF(uint32_t, brcbTilingRepeatTimesTail);
  TILING_DATA_FIELD_DEF(uint32_t, brcbFractalTailRepeatTimes);
  TILING_DATA_FIELD_DEF(uint32_t, brcbFractalTailRepeatTimesTail);
  TILING_DATA_FIELD_DEF(uint32_t, reserved);
END_TILING_DATA_DEF;

namespace optiling {
using ::PadTiling;
using ::UnPadTiling;
}  // namespace optiling
namespace AscendC {
namespace tiling {
using ::PadTiling;
using ::UnPadTiling;
}  // namespace tiling
using ::PadTiling;
using ::UnPadTiling;
}  // namespace AscendC

namespace trex_emu {
// PadTilingFunc / UnPadTilingFunc's values (pad_tiling_impl.cpp) from the shape, the original width, the tmp
// bytes and the type size; the kernel compares a tiling against them (Pad addresses its tmp buffer through them).
inline PadTiling PadTilingA2(uint32_t h, uint32_t w, uint32_t oriW, uint32_t stackBufferSize, uint32_t typeSize) {
  PadTiling t{};
  if (typeSize == 0) return t;
  const uint32_t epb = 32 / typeSize;
  t.srcHeight = h;
  t.srcWidth = w;
  t.srcOriWidth = oriW;
  t.widthWithoutLastBlock = w - epb;
  t.blocksPerRow = w * typeSize / 32;
  t.heightTiling = 255;
  t.heightFractal = h / 255;
  t.heightFractalTail = h % 255;
  t.mainLoopOffset = 255 * w;
  t.tailBlockOffset = h / 255 * 255 * w + (w - epb);
  if (stackBufferSize == 0) return t;
  const uint32_t baseBlockSize = 16 * 32 / typeSize;  // elements of one 16-block transpose unit
  const uint32_t blocks = stackBufferSize / typeSize / baseBlockSize / 2;
  t.tmpBuffer1RowNum = 16 * blocks;
  t.tmpBuffer1BlockNum = blocks;
  t.tmpBuffer2Offset = blocks * baseBlockSize;
  const uint32_t widthTiling = 16 * blocks;
  if (widthTiling == 0) return t;  // (the library divides by 0 here)
  const uint32_t tail = w % widthTiling;
  t.widthTiling = widthTiling;
  t.widthFractal = w / widthTiling;
  t.widthFractalTail = tail;
  t.widthFractalTailAlingned = ((tail - 1) / epb + 1) * epb;
  t.brcbTiling = widthTiling;
  t.brcbFractal = h * w / widthTiling;
  t.brcbFractalTail = h * w % widthTiling;
  t.maxRepeatTimes = 254;
  t.brcbTilingRepeatTimes = widthTiling / 8 / 254;
  t.brcbTilingRepeatTimesTail = widthTiling / 8 % 254;
  t.brcbFractalTailRepeatTimes = t.brcbFractalTail / 8 / 254;
  t.brcbFractalTailRepeatTimesTail = t.brcbFractalTail / 8 % 254;
  return t;
}

inline UnPadTiling UnPadTilingA2(uint32_t h, uint32_t w, uint32_t stackBufferSize, uint32_t typeSize) {
  UnPadTiling t{};
  t.srcHeight = h;
  t.srcWidth = w;
  if (stackBufferSize == 0 || typeSize == 0) return t;
  const uint32_t baseBlockSize = 16 * 32 / typeSize;
  const uint32_t blocks = stackBufferSize / typeSize / baseBlockSize / 2;
  t.tmpBuffer1BlockNum = blocks;
  t.tmpBuffer1RowNum = 16 * blocks;
  t.tmpBuffer2Offset = blocks * baseBlockSize;
  const uint32_t widthTiling = 16 * blocks;
  if (widthTiling == 0) return t;
  uint32_t fractal = w / widthTiling, tail = w % widthTiling;
  if (tail != 0) {
    fractal += 1;
  } else {
    tail = widthTiling;
  }
  t.widthTiling = widthTiling;
  t.widthFractal = fractal;
  t.widthFractalTail = tail;
  return t;
}
}  // namespace trex_emu
