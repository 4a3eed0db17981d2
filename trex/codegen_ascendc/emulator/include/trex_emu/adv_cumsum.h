// trex AscendC emulator: the CumSum advanced API (asc-devkit 高阶API/数学计算/CumSum; impl/adv_api/detail/math/cumsum/
// cumsum_common_impl.h) for Atlas A2/A3, [outter, inner] ND (inner * sizeof(T) a multiple of 32 B):
//   isLastAxis: dst[r][j] = dst[r][j-1] + src[r][j] along each row; else dst[i][c] = dst[i-1][c] + src[i][c] down each
//   column; the implementation adds one line at a time, so the sums here run in that order. half accumulates in float
//   (Cast CAST_NONE up, float Adds, Cast CAST_NONE back); float in float. outputLastRow: lastRow = dst's last row.
// sharedTmpBuffer (an error naming CumSum when smaller; the CPU-debug check): first axis, half: outter * inner * 4 B;
//   last axis: (half ? inner * 16 * 2 : 0) + 16 * inner * sizeof(T) * 2 B (the two transposes' scratch).
// Host: GetCumSumMaxMinTmpSize(shape, typeSize, isLastAxis, isReuseSource, max, min) (tiling/math/cumsum_tiling.cpp).
#pragma once
#include <vector>

#include "trex_emu/adv_math.h"

namespace AscendC {
enum class CumSumAlgorithm { CUMSUM_ALGORITHM_LINEBYLINE = 0, CUMSUM_ALGORITHM_SKLANSKY = 1 };
struct CumSumConfig {
  bool isLastAxis{true};
  bool isReuseSource{false};
  bool outputLastRow{false};
  CumSumAlgorithm algorithm{CumSumAlgorithm::CUMSUM_ALGORITHM_LINEBYLINE};
};
struct CumSumInfo {
  uint32_t outter{0};
  uint32_t inner{0};
};
constexpr CumSumConfig defaultCumSumConfig = {true, false, true};

template <class Shape>
inline void GetCumSumMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isLastAxis, const bool,
                                   uint32_t& maxValue, uint32_t& minValue) {
  if (srcShape.GetDimNum() != 2 || (typeSize != 2 && typeSize != 4)) return;
  const uint32_t o = static_cast<uint32_t>(srcShape.GetDim(0)), i = static_cast<uint32_t>(srcShape.GetDim(1));
  if (!isLastAxis) {
    maxValue = minValue = typeSize == 2 ? o * i * 4 : 0;
    return;
  }
  const uint32_t align_o = (o + 15) / 16 * 16;
  const uint32_t min_cast = typeSize == 2 ? i * 16 * 2 : 0, max_cast = typeSize == 2 ? i * align_o * 2 : 0;
  minValue = min_cast + 16 * i * typeSize * 2;
  maxValue = max_cast + align_o * i * typeSize * 2;
}
}  // namespace AscendC

namespace trex_emu {
template <class T, const AscendC::CumSumConfig& config>
inline void CumSumAdv(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& lastRow,
                      const AscendC::LocalTensor<T>& src, const AscendC::LocalTensor<uint8_t>* tmp,
                      const AscendC::CumSumInfo& info) {
  static_assert(kFloatTypes<T>, "CumSum: element type must be half or float (Atlas A2/A3)");
  const char* api = "CumSum";
  const uint32_t o = info.outter, in = info.inner;
  if (o == 0 || in == 0) Fail(api, ": CumSumInfo {outter ", o, ", inner ", in, "} must both be positive");
  if (uint64_t{in} * sizeof(T) % 32 != 0)
    Fail(api, ": CumSumInfo.inner = ", in, " elements is not a multiple of 32 B (inner must be 32-byte aligned)");
  const uint64_t n = uint64_t{o} * in;
  AdvOperand(api, "dst", dst, n);
  AdvOperand(api, "src", src, n);
  CheckOverlap(api, "src", dst.addr_, n, src.addr_, n);
  if (config.outputLastRow) AdvOperand(api, "lastRow", lastRow, in);
  if (tmp != nullptr) {
    const uint64_t need = !config.isLastAxis ? (sizeof(T) == 2 ? n * 4 : 0)
                                             : (sizeof(T) == 2 ? in * 16 * 2 : 0) + 16 * uint64_t{in} * sizeof(T) * 2;
    if (tmp->GetSize() < need)
      Fail(api, ": sharedTmpBuffer holds ", tmp->GetSize(), " B; the implementation needs ", need,
           " B (Insufficient temporary space; GetCumSumMaxMinTmpSize gives the sizes)");
    if (need) AdvTmpCheck(api, tmp, 1, 1, 0, dst.addr_, n * sizeof(T), src.addr_, n * sizeof(T));
  }
  std::vector<float> acc(n);
  for (uint64_t k = 0; k < n; ++k) acc[k] = ToF(src.addr_[k]);
  if (config.isLastAxis) {
    for (uint32_t r = 0; r < o; ++r)
      for (uint32_t j = 1; j < in; ++j) acc[uint64_t{r} * in + j] = acc[uint64_t{r} * in + j - 1] + acc[uint64_t{r} * in + j];
  } else {
    for (uint32_t r = 1; r < o; ++r)
      for (uint32_t c = 0; c < in; ++c) acc[uint64_t{r} * in + c] = acc[uint64_t{r - 1} * in + c] + acc[uint64_t{r} * in + c];
  }
  for (uint64_t k = 0; k < n; ++k) dst.addr_[k] = Down<T>(acc[k]);
  if (config.outputLastRow)
    for (uint32_t c = 0; c < in; ++c) lastRow.addr_[c] = dst.addr_[uint64_t{o - 1} * in + c];
  EndAdvancedApi(api, tmp, CountFormRepeats(n, 4));
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, const CumSumConfig& config = defaultCumSumConfig>
inline void CumSum(LocalTensor<T>& dstTensor, LocalTensor<T>& lastRowTensor, const LocalTensor<T>& srcTensor,
                   LocalTensor<uint8_t>& sharedTmpBuffer, const CumSumInfo& cumSumInfo) {
  trex_emu::CumSumAdv<T, config>(dstTensor, lastRowTensor, srcTensor, &sharedTmpBuffer, cumSumInfo);
}
template <typename T, const CumSumConfig& config = defaultCumSumConfig>
inline void CumSum(LocalTensor<T>& dstTensor, LocalTensor<T>& lastRowTensor, const LocalTensor<T>& srcTensor,
                   const CumSumInfo& cumSumInfo) {
  trex_emu::CumSumAdv<T, config>(dstTensor, lastRowTensor, srcTensor, nullptr, cumSumInfo);
}
}  // namespace AscendC
