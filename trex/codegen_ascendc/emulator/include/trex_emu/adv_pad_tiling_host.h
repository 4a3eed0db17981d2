// adv_pad_tiling_host.h: host tiling helpers of Pad / UnPad (asc-devkit include/adv_api/pad/pad_tiling.h,
// impl/adv_api/tiling/pad/pad_tiling_impl.cpp) and TransData's GetTransDataMaxMinTmpSize (include/adv_api/transpose/
// transdata_tiling.h, impl/adv_api/tiling/transpose/transdata_tiling.cpp), for the emulated chip, Atlas A2/A3
// (DAV_2201). Templates on the shape / platform so both ge::Shape models (kernel side and include_host) take them.
//   GetPadMaxMinTmpSize(shape[h, w], typeSize, max, min): max = ceil(h*w / 16) * 16 * (32 / typeSize) * 2 * typeSize,
//     min = 16 * (32 / typeSize) * 2 * typeSize (1024 B) — bytes.
//   PadTilingFunc(shape, oriShape, stackBufferSize, typeSize, tiling): the fields as the impl computes them (the
//     unaligned-width fields only when stackBufferSize != 0).
//   GetUnPadMaxMinTmpSize(platform, shape, typeSize, max, min): 0 / 0 on A2/A3 (UnPad is one GatherMask there).
//   UnPadTilingFunc(shape, stackBufferSize, typeSize, tiling).
//   GetTransDataMaxMinTmpSize(platform, srcShape, dstShape, dataType, config, max, min): max == min, bytes, as
//     GetTmpBufferSize; false (with the impl's message) for a wrong data type, format pair, or mismatched shapes.
// Argument checks are CANN's ASCENDC_HOST_ASSERTs: the "continue" ones print and carry on, as the library does.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "trex_emu/adv_common.h"  // AscendC::DataFormat
#include "trex_emu/tiling_pad.h"

#ifndef TREX_EMU_TRANSDATA_CONFIG
#define TREX_EMU_TRANSDATA_CONFIG
namespace AscendC {
struct TransDataConfig {
  DataFormat srcFormat;
  DataFormat dstFormat;
};
}  // namespace AscendC
#endif

namespace trex_emu {
template <class Shape>
inline bool PadHostCheck(const char* api, const char* fn, const Shape& shape, uint32_t typeSize) {
  if (typeSize != 2 && typeSize != 4)
    std::fprintf(stderr, "[ERROR] [%s][%s] The value of typeSize is %u, should be 2 or 4.\n", api, fn, typeSize);
  if (shape.GetDimNum() != 2) {
    std::fprintf(stderr, "[ERROR] [%s][%s] The dims of srcShape is %zu, should be 2.\n", api, fn,
                 static_cast<size_t>(shape.GetDimNum()));
    return false;  // (the library would index past the dims; nothing sensible to compute)
  }
  if (typeSize == 0) {
    std::fprintf(stderr, "[ERROR] typeSize must be greater than 0.\n");
    return false;
  }
  return true;
}
}  // namespace trex_emu

namespace AscendC {
template <class Shape>
inline void GetPadMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, uint32_t& maxValue,
                                uint32_t& minValue) {
  if (!trex_emu::PadHostCheck("Pad", "GetPadMaxMinTmpSize", srcShape, typeSize)) return;
  const uint32_t h = static_cast<uint32_t>(srcShape.GetDim(0)), w = static_cast<uint32_t>(srcShape.GetDim(1));
  maxValue = ((h * w - 1) / 16 + 1) * 16 * (32 / typeSize) * 2 * typeSize;
  minValue = 16 * (32 / typeSize) * 2 * typeSize;
}

template <class Shape>
inline void PadTilingFunc(const Shape srcShape, const Shape oriSrcShape, const uint32_t stackBufferSize,
                          const uint32_t typeSize, PadTiling& tiling) {
  if (!trex_emu::PadHostCheck("Pad", "PadTilingFunc", srcShape, typeSize)) return;
  if (oriSrcShape.GetDimNum() != 2) {
    std::fprintf(stderr, "[ERROR] [Pad][PadTilingFunc] The dims of oriSrcShape is %zu, should be 2.\n",
                 static_cast<size_t>(oriSrcShape.GetDimNum()));
    return;
  }
  if (oriSrcShape.GetShapeSize() > srcShape.GetShapeSize())
    std::fprintf(stderr,
                 "[ERROR] [Pad][PadTilingFunc] The size of oriSrcShape is %li, should be less than or equal to "
                 "srcShape size %li.\n",
                 static_cast<long>(oriSrcShape.GetShapeSize()), static_cast<long>(srcShape.GetShapeSize()));
  if (stackBufferSize != 0 && stackBufferSize / typeSize / (16 * 32 / typeSize) / 2 == 0)
    std::fprintf(stderr, "[ERROR] [Pad][PadTilingFunc] stackBufferSize %u is below the minimum %u bytes.\n",
                 stackBufferSize, 16 * (32 / typeSize) * 2 * typeSize);
  tiling = trex_emu::PadTilingA2(static_cast<uint32_t>(srcShape.GetDim(0)), static_cast<uint32_t>(srcShape.GetDim(1)),
                                 static_cast<uint32_t>(oriSrcShape.GetDim(1)), stackBufferSize, typeSize);
}

template <class Platform, class Shape>
inline void GetUnPadMaxMinTmpSize(const Platform& /*ascendcPlatform*/, const Shape& srcShape, const uint32_t typeSize,
                                  uint32_t& maxValue, uint32_t& minValue) {
  if (!trex_emu::PadHostCheck("UnPad", "GetUnPadMaxMinTmpSize", srcShape, typeSize)) return;
  maxValue = 0;  // DAV_2201: no tmp buffer
  minValue = 0;
}

template <class Shape>
inline void UnPadTilingFunc(const Shape srcShape, const uint32_t stackBufferSize, const uint32_t typeSize,
                            UnPadTiling& tiling) {
  if (!trex_emu::PadHostCheck("UnPad", "UnPadTilingFunc", srcShape, typeSize)) return;
  tiling = trex_emu::UnPadTilingA2(static_cast<uint32_t>(srcShape.GetDim(0)),
                                   static_cast<uint32_t>(srcShape.GetDim(1)), stackBufferSize, typeSize);
}

template <class Platform, class Shape, class DType>
inline bool GetTransDataMaxMinTmpSize(const Platform& /*platform*/, const Shape& srcShape, const Shape& dstShape,
                                      const DType dataType, const TransDataConfig& config, uint32_t& maxValue,
                                      uint32_t& minValue) {
  auto err = [](const char* msg) {
    std::fprintf(stderr, "[ERROR] [TransData][GetTransDataMaxMinTmpSize] %s\n", msg);
    return false;
  };
  const int dt = static_cast<int>(dataType);
  if (dt != 1 && dt != 27 && dt != 7 && dt != 6)  // ge::DT_FLOAT16 / DT_BF16 / DT_UINT16 / DT_INT16
    return err("it only supports DT_FLOAT16/DT_BF16/DT_UINT16/DT_INT16 data type");
  using F = DataFormat;
  const bool toFz = config.srcFormat == F::NCDHW && config.dstFormat == F::FRACTAL_Z_3D;
  const bool fromFz = config.srcFormat == F::FRACTAL_Z_3D && config.dstFormat == F::NCDHW;
  const bool to6hd = config.srcFormat == F::NCDHW && config.dstFormat == F::NDC1HWC0;
  const bool from6hd = config.srcFormat == F::NDC1HWC0 && config.dstFormat == F::NCDHW;
  if (!(toFz || fromFz || to6hd || from6hd))
    return err("The parameter config srcFormat/dstFormat only supports (NCDHW, FRACTAL_Z_3D)/(FRACTAL_Z_3D, NCDHW)/"
               "(NCDHW, NDC1HWC0)/(NDC1HWC0, NCDHW)!");
  const std::vector<int64_t> s = srcShape.GetDims(), d = dstShape.GetDims();
  const std::vector<int64_t>& nc = (toFz || to6hd) ? s : d;     // the NCDHW side
  const std::vector<int64_t>& other = (toFz || to6hd) ? d : s;  // the packed side
  const size_t otherDims = (toFz || fromFz) ? 7 : 6;
  if (nc.size() != 5 || other.size() != otherDims) {
    err("input shapes are not matched with DataFormat.");
    return err("failed to validate inputs informations.");
  }
  const int64_t n = nc[0], c = nc[1], dd = nc[2], h = nc[3], w = nc[4];
  auto alignUp = [](int64_t a, int64_t b) { return (a + b - 1) / b * b; };
  if (toFz || fromFz) {
    if (!(dd == other[0] && h == other[2] && w == other[3])) {
      err("shapeInfo d,h,w is not matched.");
      return err("failed to validate inputs informations.");
    }
    if (!(other[6] == 16 && other[1] * 16 == alignUp(c, 16))) {
      err(toFz ? "dst c0, c1 is not able to be converted to c." : "src c0, c1 is not able to be converted to c.");
      return err("failed to validate inputs informations.");
    }
    if (!(other[5] == 16 && other[4] * 16 == alignUp(n, 16))) {
      err(toFz ? "dst n0, n1 is not able to be converted to n." : "src n0, n1 is not able to be converted to n.");
      return err("failed to validate inputs informations.");
    }
  } else {
    if (!(n == other[0] && dd == other[1] && h == other[3] && w == other[4])) {
      err("shapeInfo n,d,h,w is not matched.");
      return err("failed to validate inputs informations.");
    }
    if (!(other[5] == 16 && other[2] * 16 == alignUp(c, 16))) {
      err(to6hd ? "dst c0, c1 is not able to be converted to c." : " src c0, c1 is not able to be converted to c.");
      return err("failed to validate inputs informations.");
    }
  }
  const int64_t c1 = (c + 15) / 16, n1 = (n + 15) / 16, padHw = alignUp(h * w, 16);
  int64_t bytes = 0;
  if (to6hd) bytes = dd * padHw * 2 + dd * c1 * 16 * padHw * 2;
  if (from6hd) bytes = dd * c1 * 16 * padHw * 2 + 512;
  if (toFz) bytes = std::max(c * dd * padHw * 2, dd * h * w * n1 * 16 * 2) + n1 * 16 * dd * c1 * 16 * padHw * 2;
  if (fromFz) bytes = n1 * 16 * c1 * 16 * dd * padHw * 2 * ((n == n1 * 16 && c == c1 * 16) ? 1 : 2);
  maxValue = minValue = static_cast<uint32_t>(bytes);
  return true;
}
}  // namespace AscendC
