// adv_norm_tiling_host.h: host tiling helpers of the LayerNorm family (namespace AscendC, CANN's tiling_api.h), the
// Atlas A2/A3 branch of asc-devkit impl/adv_api/tiling/normalization/{layernorm,normalize,layernorm_grad,
// layernorm_grad_beta}_tiling_impl.cpp. align32(n): n rounded up to 32 bytes.
//  * GetLayerNormMaxMinTmpSize(shape [B, S, H, originH], typeSize, isReuseSource, max, min): mv = align32(B*S*4);
//    max = k * align32(B*S*H*4) + 2 * mv, min = k * align32(H*4) + 2 * mv, k = 2 for float with isReuseSource, else 3.
//  * GetLayerNormNDTilingInfo(shape [B, S, H, originH], stackBufferSize, typeSize, isReuseSource, LayerNormTiling&)
//    (and the deprecated GetLayerNormNDTillingInfo): tmpBufSize = stack / 4 floats; half keeps mean / variance in the
//    buffer first (2 * align8(B*S) floats, meanTmpTensorPos 0, varianceTmpTensorPos align8(B*S)); the rest is split
//    into k tensors of oneTmpSize floats (a multiple of H, at most B*S*H); rounds of oneTmpSize / H rows and a tail;
//    lastDimValueBack = 1 / originH. A oneTmpSize of 0 leaves the tiling unwritten (the impl returns).
//  * GetLayerNormMaxMinTmpSize(shape [A, R], typeSize, isReuseSource, isComputeRstd, isOnlyOutput, max, min) (the
//    separate / rstd form): rp = R padded to 32 B of typeSize; max = 2 * align32(A*rp*4) + align32(A*4), min =
//    2 * align32(rp*4) + align32(A*4), each raised to GetNormalizeMaxMinTmpSize's value + align32(A*4) when that is
//    larger.
//  * GetLayerNormNDTilingInfo(shape [A, R], stackBufferSize, typeSize, isReuseSource, isComputeRstd,
//    LayerNormSeparateTiling&): variance in the buffer first (align8(A) floats at 0), then 2 tensors of oneTmpSize
//    floats (a multiple of rp, at most A*rp); rounds and tail as above; rValueBack = 1 / R.
//  * GetNormalizeMaxMinTmpSize(shape [A, R], typeSizeU, typeSizeT, isReuseSource, isComputeRstd, isOnlyOutput, max,
//    min): rp = R padded to 32 B of typeSizeT; max = 2 * align32(rp*4) + 2 * align32(align8(A)*rp*4); min =
//    max(align32(A*4), (U float ? 2 : 4) * align32(rp*4)). isComputeRstd must be true, isOnlyOutput false.
//  * GetLayerNormGradMaxMinTmpSize(shape [B, S, H, originH], typeSize, isReuseSource, max, min): with n = B*S*H:
//    max = k * max(n, H*H) * typeSize, min = k * min(n, H*H) * typeSize, k = 9 (half), 4 (float, isReuseSource), 6.
//  * GetLayerNormGradNDTilingInfo(shape, stackBufferSize, typeSize, isReuseSource, LayerNormGradTiling&): oneCalSize =
//    stack / 4 / k rounded down to rows, its rows rounded up to a block (8 float / 16 half); tensor positions in
//    that order (tmpTensorBSH, pdVar, pdMean, x1, x2, x3, then tmp, tmp1, tmp2 for half; float with isReuseSource
//    drops x1 / x2); lastDimValueBack / lastDimValueBackMulTwo = the bits of 1 / originH and 2 / originH.
//  * GetLayerNormGradBetaMaxMinTmpSize(shape, typeSize, isReuseSource, max, min): max = (half ? 4 : 2) * B*S*H*4,
//    min = (half ? 4 : 2) * H*4.
//  * GetLayerNormGradBetaNDTilingInfo(shape, stackBufferSize, typeSize, isReuseSource, LayerNormGradBetaTiling&):
//    stackBufferSize in floats (stack / 4, at least 2H); oneCalSize = that (half: (that - 2H) / 2) in whole rows, at
//    most B*S*H; rounds, tail, and for half the gamma / beta / dy / resForGamma float areas.
// Argument checks are CANN's ASCENDC_HOST_ASSERTs: a message on stderr, then the function returns with its outputs
// as they were.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "trex_emu/tiling_norm.h"

namespace AscendC {
namespace trex_lnorm_host {
inline uint32_t Align32(uint32_t bytes) { return (bytes + 31) / 32 * 32; }
inline uint32_t Align8(uint32_t n) { return (n + 7) / 8 * 8; }
inline bool Err(const char* api, const char* fn, const char* msg) {
  std::fprintf(stderr, "[ERROR] [%s][%s] %s\n", api, fn, msg);
  return false;
}
// CheckLayerNormHostCommon / CheckLayerNormGradHostCommon: shape size > 0, 4 dims [B, S, H, originH], typeSize 2 / 4.
template <class Shape>
inline bool Common4(const char* api, const char* fn, const Shape& s, uint32_t typeSize) {
  if (typeSize != 2 && typeSize != 4) {
    std::fprintf(stderr, "[ERROR] [%s][%s] Type size %u is unsupported!\n", api, fn, typeSize);
    return false;
  }
  if (s.GetShapeSize() <= 0) return Err(api, fn, "Input Shape size must be greater than 0.");
  if (s.GetDimNum() != 4) {
    std::fprintf(stderr,
                 "[ERROR] [%s][%s] The dims of srcShape is %zu, should be 4 (e.g. [B, S, storageHLength, "
                 "originHLength])!\n",
                 api, fn, static_cast<size_t>(s.GetDimNum()));
    return false;
  }
  return true;
}
template <class Shape>
inline uint32_t Dim(const Shape& s, size_t i) {
  return static_cast<uint32_t>(s.GetDim(i));
}
inline uint32_t PadTo32B(uint32_t r, uint32_t typeSize) {
  const uint32_t a = 32 / typeSize;
  return (r + a - 1) / a * a;
}
template <class Shape>
inline bool NormalizeSizes(const Shape& s, uint32_t typeSizeU, uint32_t typeSizeT, bool isComputeRstd,
                           bool isOnlyOutput, uint32_t& maxValue, uint32_t& minValue) {
  const char* fn = "GetNormalizeMaxMinTmpSize";
  if (!isComputeRstd) return Err("Normalize", fn, "isComputeRstd current only support true");
  if (isOnlyOutput) return Err("Normalize", fn, "isOnlyOutput current only support false");
  if (typeSizeU == 0) return Err("Normalize", fn, "typeSizeU can not be 0!");
  if (typeSizeT == 0) return Err("Normalize", fn, "typeSizeT can not be 0!");
  if (s.GetDimNum() < 2) return Err("Normalize", fn, "srcShape must be [A, R].");
  const uint32_t a = Dim(s, 0), r = Dim(s, 1);
  const uint32_t align = 32 / typeSizeT ? 32 / typeSizeT : 1;
  const uint32_t rp = (r + align - 1) / align * align;
  const uint32_t rBytes = Align32(rp * 4);
  maxValue = 2 * rBytes + 2 * Align32(Align8(a) * rp * 4);
  const uint32_t aBytes = Align32(a * 4);
  const uint32_t nr = (typeSizeU == 4 ? 2 : 4) * rBytes;
  minValue = aBytes >= nr ? aBytes : nr;
  return true;
}
}  // namespace trex_lnorm_host

// ---- LayerNorm, LayerNormTiling form (outputs mean and variance) ----
template <class Shape>
inline void GetLayerNormMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                      uint32_t& maxValue, uint32_t& minValue) {
  if (!trex_lnorm_host::Common4("LayerNorm", "GetLayerNormMaxMinTmpSize", srcShape, typeSize)) return;
  using trex_lnorm_host::Align32;
  const uint32_t b = trex_lnorm_host::Dim(srcShape, 0), s = trex_lnorm_host::Dim(srcShape, 1),
                 h = trex_lnorm_host::Dim(srcShape, 2);
  const uint32_t mv = Align32(b * s * 4);
  const uint32_t k = (isReuseSource && typeSize == 4) ? 2 : 3;
  maxValue = k * Align32(b * s * h * 4) + 2 * mv;
  minValue = k * Align32(h * 4) + 2 * mv;
}

template <class Shape>
inline void GetLayerNormNDTilingInfo(const Shape& srcShape, const uint32_t stackBufferSize, const uint32_t typeSize,
                                     const bool isReuseSource, LayerNormTiling& tiling) {
  if (!trex_lnorm_host::Common4("LayerNorm", "GetLayerNormNDTilingInfo", srcShape, typeSize)) return;
  const uint32_t b = trex_lnorm_host::Dim(srcShape, 0), s = trex_lnorm_host::Dim(srcShape, 1),
                 h = trex_lnorm_host::Dim(srcShape, 2), oh = trex_lnorm_host::Dim(srcShape, 3);
  const uint32_t inputXSize = b * s * h, meanVarSize = b * s;
  const uint32_t numberOfTmpBuf = (isReuseSource && typeSize == 4) ? 2 : 3;
  const uint32_t meanTmpTensorSize = trex_lnorm_host::Align8(meanVarSize);
  const uint32_t meanVarTotalSize = typeSize == 4 ? 0 : 2 * meanTmpTensorSize;
  const uint32_t tmpBufSize = stackBufferSize / 4;
  if (h == 0) {
    trex_lnorm_host::Err("LayerNorm", "GetLayerNormNDTilingInfo", "the value of hLength should not be zero.");
    return;
  }
  uint32_t oneTmpSize = (tmpBufSize - meanVarTotalSize) / numberOfTmpBuf;  // unsigned, as the impl computes it
  oneTmpSize = oneTmpSize / h * h;
  if (oneTmpSize > inputXSize) oneTmpSize = inputXSize;
  if (oneTmpSize == 0) return;
  const uint32_t inputTailSize = inputXSize % oneTmpSize;
  tiling.set_bLength(b);
  tiling.set_sLength(s);
  tiling.set_hLength(h);
  tiling.set_originalHLength(oh);
  tiling.set_inputXSize(inputXSize);
  tiling.set_meanVarSize(meanVarSize);
  tiling.set_numberOfTmpBuf(numberOfTmpBuf);
  tiling.set_meanTmpTensorPos(0);
  tiling.set_meanTmpTensorSize(meanTmpTensorSize);
  tiling.set_varianceTmpTensorPos(meanTmpTensorSize);
  tiling.set_varianceTmpTensorSize(meanTmpTensorSize);
  tiling.set_tmpBufSize(tmpBufSize);
  tiling.set_oneTmpSize(oneTmpSize);
  tiling.set_firstTmpStartPos(meanVarTotalSize);
  tiling.set_secondTmpStartPos(meanVarTotalSize + oneTmpSize);
  tiling.set_thirdTmpStartPos(meanVarTotalSize + 2 * oneTmpSize);
  tiling.set_loopRound(inputXSize / oneTmpSize);
  tiling.set_inputRoundSize(oneTmpSize);
  tiling.set_inputTailSize(inputTailSize);
  tiling.set_inputTailPos(inputXSize - inputTailSize);
  tiling.set_meanVarRoundSize(oneTmpSize / h);
  tiling.set_meanVarTailSize(inputTailSize / h);
  tiling.set_meanVarTailPos(meanVarSize - inputTailSize / h);
  tiling.set_bshCurLength(oneTmpSize);
  tiling.set_bsCurLength(oneTmpSize / h);
  tiling.set_lastDimValueBack(1.0f / static_cast<float>(oh));
}

template <class Shape>
[[deprecated("GetLayerNormNDTillingInfo is deprecated, please use GetLayerNormNDTilingInfo instead!")]] inline void
GetLayerNormNDTillingInfo(const Shape& srcShape, const uint32_t stackBufferSize, const uint32_t typeSize,
                          const bool isReuseSource, LayerNormTiling& tilling) {
  GetLayerNormNDTilingInfo(srcShape, stackBufferSize, typeSize, isReuseSource, tilling);
}

// ---- Normalize ----
template <class Shape>
inline void GetNormalizeMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSizeU, const uint32_t typeSizeT,
                                      const bool isReuseSource, const bool isComputeRstd, const bool isOnlyOutput,
                                      uint32_t& maxValue, uint32_t& minValue) {
  (void)isReuseSource;
  trex_lnorm_host::NormalizeSizes(srcShape, typeSizeU, typeSizeT, isComputeRstd, isOnlyOutput, maxValue, minValue);
}

// ---- LayerNorm, separate form (LayerNormPara / LayerNormSeparateTiling; outputs mean and rstd) ----
template <class Shape>
inline void GetLayerNormMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                      const bool isComputeRstd, const bool isOnlyOutput, uint32_t& maxValue,
                                      uint32_t& minValue) {
  const char* fn = "GetLayerNormMaxMinTmpSize";
  if (typeSize == 0) {
    trex_lnorm_host::Err("LayerNorm", fn, "typeSize can not be 0!");
    return;
  }
  if (isOnlyOutput) {
    trex_lnorm_host::Err("LayerNorm", fn, "isOnlyOutput current only support false.");
    return;
  }
  if (srcShape.GetDimNum() < 2) {
    trex_lnorm_host::Err("LayerNorm", fn, "srcShape must be [A, R].");
    return;
  }
  // The impl runs CheckLayerNormHostCommon here as well, whose 4-dim assert only logs; the [A, R] sizes follow.
  using trex_lnorm_host::Align32;
  const uint32_t a = trex_lnorm_host::Dim(srcShape, 0), r = trex_lnorm_host::Dim(srcShape, 1);
  const uint32_t rp = trex_lnorm_host::PadTo32B(r, typeSize);
  const uint32_t mv = Align32(a * 4);
  uint32_t mx = 2 * Align32(a * rp * 4) + mv;
  uint32_t mn = 2 * Align32(rp * 4) + mv;
  uint32_t nmax = 0, nmin = 0;
  trex_lnorm_host::NormalizeSizes(srcShape, typeSize, typeSize, isComputeRstd, isOnlyOutput, nmax, nmin);
  if (mn - mv <= nmin) mn = nmin + mv;
  if (mx - mv <= nmax) mx = nmax + mv;
  (void)isReuseSource;
  maxValue = mx;
  minValue = mn;
}

template <class Shape>
inline void GetLayerNormNDTilingInfo(const Shape& srcShape, const uint32_t stackBufferSize, const uint32_t typeSize,
                                     const bool isReuseSource, const bool isComputeRstd,
                                     LayerNormSeparateTiling& tiling) {
  (void)isReuseSource;
  (void)isComputeRstd;
  if (typeSize == 0) {
    trex_lnorm_host::Err("LayerNorm", "GetLayerNormNDTilingInfo", "typeSize can not be 0!");
    return;
  }
  if (srcShape.GetDimNum() < 2) {
    trex_lnorm_host::Err("LayerNorm", "GetLayerNormNDTilingInfo", "srcShape must be [A, R].");
    return;
  }
  const uint32_t a = trex_lnorm_host::Dim(srcShape, 0), r = trex_lnorm_host::Dim(srcShape, 1);
  const uint32_t rp = trex_lnorm_host::PadTo32B(r, typeSize);
  const uint32_t inputXSize = a * rp;
  const uint32_t varSize = trex_lnorm_host::Align8(a);
  const uint32_t tmpBufSize = stackBufferSize / 4;
  uint32_t oneTmpSize = (tmpBufSize - varSize) / 2;  // unsigned, as the impl computes it
  oneTmpSize = rp ? oneTmpSize / rp * rp : 0;
  if (oneTmpSize > inputXSize) oneTmpSize = inputXSize;
  if (oneTmpSize == 0) return;
  const uint32_t inputTailSize = inputXSize % oneTmpSize;
  tiling.set_aLength(a);
  tiling.set_rLength(r);
  tiling.set_inputXSize(inputXSize);
  tiling.set_meanVarSize(a);
  tiling.set_numberOfTmpBuf(2);
  tiling.set_varianceTmpTensorPos(0);
  tiling.set_varianceTmpTensorSize(varSize);
  tiling.set_tmpBufSize(tmpBufSize);
  tiling.set_oneTmpSize(oneTmpSize);
  tiling.set_firstTmpStartPos(varSize);
  tiling.set_secondTmpStartPos(varSize + oneTmpSize);
  tiling.set_loopRound(inputXSize / oneTmpSize);
  tiling.set_inputRoundSize(oneTmpSize);
  tiling.set_inputTailSize(inputTailSize);
  tiling.set_inputTailPos(inputXSize - inputTailSize);
  tiling.set_meanVarRoundSize(oneTmpSize / rp);
  tiling.set_meanVarTailSize(inputTailSize / rp);
  tiling.set_meanVarTailPos(a - inputTailSize / rp);
  tiling.set_arCurLength(oneTmpSize);
  tiling.set_aCurLength(oneTmpSize / rp);
  tiling.set_rValueBack(1.0f / static_cast<float>(r));
}

// ---- LayerNormGrad ----
namespace trex_lnorm_host {
inline uint32_t GradBufNum(uint32_t typeSize, bool isReuseSource) {
  return typeSize == 2 ? 9 : (isReuseSource ? 4 : 6);
}
template <class Shape>
inline bool GradShape(const char* fn, const Shape& s, uint32_t typeSize) {
  if (!Common4("LayerNormGrad", fn, s, typeSize)) return false;
  for (size_t i = 0; i < 4; ++i)
    if (s.GetDim(i) <= 0) {
      std::fprintf(stderr, "[ERROR] srcShape[%zu] must be greater than 0.\n", i);
      return false;
    }
  return true;
}
inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
}  // namespace trex_lnorm_host

template <class Shape>
inline void GetLayerNormGradMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize, const bool isReuseSource,
                                          uint32_t& maxValue, uint32_t& minValue) {
  if (!trex_lnorm_host::GradShape("GetLayerNormGradMaxMinTmpSize", srcShape, typeSize)) return;
  const uint32_t b = trex_lnorm_host::Dim(srcShape, 0), s = trex_lnorm_host::Dim(srcShape, 1),
                 h = trex_lnorm_host::Dim(srcShape, 2);
  const uint32_t n = b * s * h, hh = h * h;
  const uint32_t k = trex_lnorm_host::GradBufNum(typeSize, isReuseSource);
  maxValue = k * (n > hh ? n : hh) * typeSize;
  minValue = (n < hh ? n : hh) * k * typeSize;
}

template <class Shape>
inline void GetLayerNormGradNDTilingInfo(const Shape srcShape, const uint32_t stackBufferSize, const uint32_t typeSize,
                                         const bool isReuseSource, LayerNormGradTiling& tiling) {
  const char* fn = "GetLayerNormGradNDTilingInfo";
  if (!trex_lnorm_host::GradShape(fn, srcShape, typeSize)) return;
  const uint32_t b = trex_lnorm_host::Dim(srcShape, 0), s = trex_lnorm_host::Dim(srcShape, 1),
                 h = trex_lnorm_host::Dim(srcShape, 2), oh = trex_lnorm_host::Dim(srcShape, 3);
  const uint32_t inputXSize = b * s * h;
  uint32_t one = stackBufferSize / 4 / trex_lnorm_host::GradBufNum(typeSize, isReuseSource);
  one = one / h * h;
  if (one == 0) {
    trex_lnorm_host::Err("LayerNormGrad", fn, "stackBufferSize is not enough.");
    return;
  }
  const uint32_t per = typeSize == 4 ? 8 : 16;
  const uint32_t noh = (one / h + per - 1) / per * per;
  one = noh * h;
  const uint32_t bsh = 0, pdVar = bsh + one, pdMean = pdVar + one;
  uint32_t x1 = 0, x2 = 0, x3 = pdMean + one;
  if (!(isReuseSource && typeSize == 4)) {
    x1 = pdMean + one;
    x2 = x1 + one;
    x3 = x2 + one;
  }
  uint32_t t0 = 0, t1 = 0, t2 = 0;
  if (typeSize == 2) {
    t0 = x3 + one;
    t1 = t0 + one;
    t2 = t1 + one;
  }
  tiling.set_tmpTensorBSHPos(bsh);
  tiling.set_pdVarTensorPos(pdVar);
  tiling.set_pdMeanTensorPos(pdMean);
  tiling.set_x1TensorPos(x1);
  tiling.set_x2TensorPos(x2);
  tiling.set_x3TensorPos(x3);
  tiling.set_tmpTensorPos(t0);
  tiling.set_tmpTensor1Pos(t1);
  tiling.set_tmpTensor2Pos(t2);
  tiling.set_tmpTensorBSHSize(one);
  tiling.set_pdVarTensorSize(one);
  tiling.set_pdMeanTensorSize(one);
  tiling.set_x1TensorSize(one);
  tiling.set_x2TensorSize(one);
  tiling.set_x3TensorSize(one);
  tiling.set_tmpTensorSize(one);
  tiling.set_tmpTensor1Size(one);
  tiling.set_tmpTensor2Size(one);
  tiling.set_stackBufferSize(stackBufferSize);
  tiling.set_bLength(b);
  tiling.set_sLength(s);
  tiling.set_hLength(h);
  tiling.set_originalHLength(oh);
  tiling.set_oneCalSize(one);
  tiling.set_nohCalSize(noh);
  tiling.set_loopNum(inputXSize / one);
  tiling.set_tailSize(inputXSize % one);
  tiling.set_nohTailSize(inputXSize % one / h);
  tiling.set_lastDimValueBack(trex_lnorm_host::FloatBits(1.0f / static_cast<float>(oh)));
  tiling.set_lastDimValueBackMulTwo(trex_lnorm_host::FloatBits(2.0f / static_cast<float>(oh)));
}

// ---- LayerNormGradBeta ----
template <class Shape>
inline void GetLayerNormGradBetaMaxMinTmpSize(const Shape& srcShape, const uint32_t typeSize,
                                              const bool isReuseSource, uint32_t& maxValue, uint32_t& minValue) {
  (void)isReuseSource;
  if (!trex_lnorm_host::Common4("LayerNormGradBeta", "GetLayerNormGradBetaMaxMinTmpSize", srcShape, typeSize)) return;
  const uint32_t b = trex_lnorm_host::Dim(srcShape, 0), s = trex_lnorm_host::Dim(srcShape, 1),
                 h = trex_lnorm_host::Dim(srcShape, 2);
  const uint32_t k = typeSize == 2 ? 4 : 2;
  maxValue = k * b * s * h * 4;
  minValue = k * h * 4;
}

template <class Shape>
inline void GetLayerNormGradBetaNDTilingInfo(const Shape srcShape, const uint32_t stackBufferSize,
                                             const uint32_t typeSize, const bool isReuseSource,
                                             LayerNormGradBetaTiling& tiling) {
  (void)isReuseSource;
  const char* fn = "GetLayerNormGradBetaNDTilingInfo";
  if (!trex_lnorm_host::Common4("LayerNormGradBeta", fn, srcShape, typeSize)) return;
  const uint32_t b = trex_lnorm_host::Dim(srcShape, 0), s = trex_lnorm_host::Dim(srcShape, 1),
                 h = trex_lnorm_host::Dim(srcShape, 2), oh = trex_lnorm_host::Dim(srcShape, 3);
  const uint32_t bsh = b * s * h, bs = b * s;
  const uint32_t stack = stackBufferSize / 4;
  if (stack < h + h) {
    trex_lnorm_host::Err("LayerNormGradBeta", fn, "stackBufferSize is not enough.");
    return;
  }
  uint32_t one = stack, nbuf = 1;
  if (typeSize == 2) {
    nbuf = 2;
    one = (one - h - h) / nbuf;
  }
  if (h == 0) {
    trex_lnorm_host::Err("LayerNormGradBeta", fn, "the value of hLength should not be zero.");
    return;
  }
  one = one / h * h;
  if (one == 0) {
    trex_lnorm_host::Err("LayerNormGradBeta", fn, "stackBufferSize is not enough.");
    return;
  }
  if (one >= bsh) one = bsh;
  const uint32_t tail = bsh % one;
  uint32_t gammaPos = 0, betaPos = 0, dyPos = 0, resPos = 0;
  if (typeSize == 2) {
    betaPos = h;
    dyPos = betaPos + h;
    resPos = dyPos + one;
  }
  tiling.set_stackBufferSize(stack);
  tiling.set_bLength(b);
  tiling.set_sLength(s);
  tiling.set_hLength(h);
  tiling.set_originalHLength(oh);
  tiling.set_bshLength(bsh);
  tiling.set_bsLength(bs);
  tiling.set_oneCalSize(one);
  tiling.set_numberOfTmpBuf(nbuf);
  tiling.set_loopRound(bsh / one);
  tiling.set_inputTailSize(tail);
  tiling.set_inputTailPos(bsh - tail);
  tiling.set_bsTailSize(tail / h);
  tiling.set_bshCurLength(one);
  tiling.set_bsCurLength(one / h);
  tiling.set_gammaTempTensorPos(gammaPos);
  tiling.set_betaTempTensorPos(betaPos);
  tiling.set_inputDyTmpTensorPos(dyPos);
  tiling.set_resForGammaTmpTensorPos(resPos);
}
}  // namespace AscendC
