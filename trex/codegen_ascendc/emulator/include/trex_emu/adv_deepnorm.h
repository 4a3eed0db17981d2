// trex AscendC emulator: DeepNorm (asc-devkit docs/zh/api/SIMD-API/高阶API/归一化操作/DeepNorm.md) for Atlas A2/A3:
//   DeepNorm<T, isReuseSrc, isBasicBlock>(dst, mean, rstd, src, gx, beta, gamma, [sharedTmpBuffer], alpha, epsilon,
//   tiling), T half/float, src/gx/dst [b*s, h] rows (h = tiling.hLength), beta/gamma [h], mean/rstd [b*s].
// The steps are impl/adv_api/detail/normalization/deepnorm/deepnorm_common_impl.h + deepnorm_v220_impl.h, done here
// one vector instruction at a time on the same memory the implementation uses: three float tmp tensors A, B, C of
// tiling.oneTmpSize floats in the tmp buffer (float with isReuseSrc: A is srcLocal itself, B and C in the buffer),
// float mean / variance in meanLocal / rstdLocal (half: in the tmp buffer at meanTmpTensorPos / varianceTmpTensorPos,
// cast CAST_NONE to half at the end over all meanVarSize rows). Per round of bsCurLength rows (bshCurLength elements):
//   X1 = gx + x * alpha (half: both cast to float first, A = float(x) * float(alpha), A = C + A);
//   C = X1 * lastDimValueBack, mean = RepeatReduceSum levels over the first originalHLength columns of each row
//     (64-float repeats, each a pairwise tree, zero-padded, until one value; isBasicBlock: the row's 64-column chunks
//     added into the first, then one tree over it);
//   B = X1 + (-mean) (isBasicBlock with oneTmpSize % 8h == 0 and bs > h/64: B = X1 - (mean + 0), the Brcb path);
//   C = B * B, A = C * lastDimValueBack, variance = the same reduce of A;
//   A = variance + epsilon, C = 1, A = sqrt(A), rstd = A = C / A; y = B * rstd (Brcb path: (rstd + 0) * B, + 0);
//   float: A = y * gamma, dst = A + beta; half: A = float(gamma), B = y * A, C = float(beta), A = B + C, dst = half(A).
// The rstdLocal output therefore holds the variance (as the implementation writes it; the example's golden is the
// variance), not 1/sqrt(var + eps) as the API page's parameter table says. Rounds: loopRound rounds of inputRoundSize
// elements, then the tail (inputTailSize at inputTailPos); before the tail the implementation sets
// tiling.bshCurLength / bsCurLength to the tail's lengths, and so does this (a second call with the same tiling
// then runs its rounds with the tail's lengths, as on the NPU). originalHLength 1 runs no reduce at all, so mean /
// variance are whatever meanLocal / rstdLocal (half: the tmp buffer) held, as on the NPU.
// Checks (the implementation's CPU-debug asserts and the API page): tensors in UB (VECIN/VECOUT/VECCALC), 32-byte
// aligned; beta / gamma GetSize a 32-byte multiple and <= 2040; tiling.oneTmpSize > 0; isBasicBlock needs
// hLength % 64, originalHLength % 64 and b*s % 8 all 0; the tmp buffer non-empty, >= tiling.tmpBufSize floats and
// thirdTmpStartPos (float with isReuseSrc: secondTmpStartPos) + oneTmpSize <= tmpBufSize. The emulator adds: the
// tiling consistent (h > 0, bshCurLength == bsCurLength * h and the round / tail sizes alike, each at most oneTmpSize),
// every tensor holds what the tiling makes the implementation touch, the tmp buffer overlaps no operand, and no
// output overlaps another operand (dst == src is the documented reuse, allowed only with isReuseSrc, and for
// float only in one round: later rounds would overwrite the first round's results with tmp tensor A). isReuseSrc with
// half is the implementation's warning only ("may not be effective"): the half path never reuses srcLocal.
// Afterwards the tmp buffer holds the UB fill byte (EndAdvancedApi); with float isReuseSrc, srcLocal's first
// oneTmpSize elements hold A's last contents (y * gamma of the last round), as on the NPU.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "trex_emu/adv_math.h"
#include "trex_emu/adv_rmsnorm.h"  // PopStackBuffer
#include "trex_emu/pipe.h"
#include "trex_emu/tiling_deepnorm.h"
#include "trex_emu/vec_misc.h"

namespace trex_emu {
namespace deepnorm {
// RepeatReduceSum<float> in counter mode over n floats (deepnorm_common_impl.h): ceil(n / 64) repeats, repeat r the
// pairwise tree of src[64r .. 64r + 64) (lanes past n are 0), written to dst[r] in repeat order.
inline void ReduceLevel(float* dst, const float* src, uint32_t n) {
  for (uint32_t r = 0; r * 64 < n; ++r) {
    float lane[64];
    for (uint32_t l = 0; l < 64; ++l) lane[l] = r * 64 + l < n ? src[r * 64 + l] : 0.0f;
    dst[r] = TreeSum(lane, 64);
  }
}
// DeepNormReduceSumImpl: per row, levels of RepeatReduceSum until one value; the last level writes dstMV[i] and then
// dst[i] (the tmp copy the next step reads). A row of one column runs no level.
inline void ReduceRows(float* dstMV, float* dst, const float* src, uint32_t bs, uint32_t h, uint32_t oriH) {
  for (uint32_t i = 0; i < bs; ++i) {
    uint32_t total = oriH;
    const float* s = src + uint64_t{i} * h;
    float* d = dst + uint64_t{i} * h;
    while (total > 1) {
      if (total <= 64) {
        ReduceLevel(dstMV + i, s, total);
        d = dst + i;
      }
      ReduceLevel(d, s, total);
      total = (total + 63) / 64;
      s = d;
    }
  }
}
// DeepNormBasicBlockReduceSum: each row's 64-column chunks 1..n-1 added into chunk 0 (chunk + acc), then one
// RepeatReduceSum per row into output, then again into tmp.
inline void ReduceBasic(float* out, float* tmp, float* in, uint32_t bs, uint32_t h) {
  const uint32_t num = static_cast<uint8_t>(h / 64);
  for (uint32_t c = 1; c < num; ++c)
    for (uint32_t r = 0; r < bs; ++r)
      for (uint32_t l = 0; l < 64; ++l) in[uint64_t{r} * h + l] = in[uint64_t{r} * h + c * 64 + l] + in[uint64_t{r} * h + l];
  for (uint32_t r = 0; r < bs; ++r) ReduceLevel(out + r, in + uint64_t{r} * h, 64);
  for (uint32_t r = 0; r < bs; ++r) ReduceLevel(tmp + r, in + uint64_t{r} * h, 64);
}
// DeepNormBasicBlockVbrcb: Brcb of bs / 8 repeats (src[q] into dst[64q .. 64q + 8)), then Adds(dst, dst, 0) over
// bs * 64 with source block stride 0: dst[64q + l] = dst[64q + l % 8] + 0.
inline void Vbrcb(float* dst, const float* src, uint32_t bs) {
  const uint32_t rows = uint32_t{static_cast<uint8_t>(bs / 8)} * 8;
  for (uint32_t q = 0; q < rows; ++q)
    for (uint32_t l = 0; l < 8; ++l) dst[uint64_t{q} * 64 + l] = src[q];
  for (uint32_t q = 0; q < bs; ++q) {
    float blk[8];
    for (uint32_t l = 0; l < 8; ++l) blk[l] = dst[uint64_t{q} * 64 + l];
    for (uint32_t l = 0; l < 64; ++l) dst[uint64_t{q} * 64 + l] = blk[l % 8] + 0.0f;
  }
}

struct Bufs {
  float* A;
  float* B;
  float* C;
  float* meanT;  // float mean / variance of all rows (float T: meanLocal / rstdLocal)
  float* varT;
};

// One round: DeepNormExec + DeepNormLayerNormExec over t.bsCurLength rows at element offset offX, row offset offM.
template <class T, bool isBasicBlock>
inline void Round(const Bufs& p, const T* x, const T* gx, const T* gamma, const T* beta, T* dst, uint32_t offM,
                  float alpha, float eps, const DeepNormTiling& t) {
  const uint32_t cur = t.bshCurLength, bs = t.bsCurLength, h = t.hLength;
  const float ldv = t.lastDimValueBack;
  float *A = p.A, *B = p.B, *C = p.C;
  float* mean = p.meanT + offM;
  float* var = p.varT + offM;
  if constexpr (std::is_same<T, half>::value) {
    for (uint32_t k = 0; k < cur; ++k) A[k] = ToF(x[k]);
    for (uint32_t k = 0; k < cur; ++k) C[k] = ToF(gx[k]);
    for (uint32_t k = 0; k < cur; ++k) A[k] = A[k] * alpha;
    for (uint32_t k = 0; k < cur; ++k) A[k] = C[k] + A[k];
  } else {
    for (uint32_t k = 0; k < cur; ++k) B[k] = x[k] * alpha;
    for (uint32_t k = 0; k < cur; ++k) A[k] = gx[k] + B[k];
  }
  // mean
  for (uint32_t k = 0; k < cur; ++k) C[k] = A[k] * ldv;
  if constexpr (isBasicBlock) ReduceBasic(mean, C, C, bs, h);
  else ReduceRows(mean, C, C, bs, h, t.originalHLength);
  // variance (IsBasicBlockTmp8HBetter picks the Brcb path)
  const bool brcb = isBasicBlock && t.oneTmpSize % (h * 8) == 0 && bs > h / 64;
  const uint32_t num = h / 64;
  if (brcb) {
    Vbrcb(C, mean, bs);
    const uint32_t n = cur / num;
    for (uint32_t c = 0; c < num; ++c)
      for (uint32_t e = 0; e < n; ++e) {
        const uint64_t at = uint64_t{e / 64} * h + c * 64 + e % 64;
        B[at] = A[at] - C[e];
      }
  } else {
    for (uint32_t i = 0; i < bs; ++i) {
      const float nm = mean[i] * -1;
      for (uint32_t j = 0; j < h; ++j) B[uint64_t{i} * h + j] = A[uint64_t{i} * h + j] + nm;
    }
  }
  for (uint32_t k = 0; k < cur; ++k) C[k] = B[k] * B[k];
  for (uint32_t k = 0; k < cur; ++k) A[k] = C[k] * ldv;
  if constexpr (isBasicBlock) ReduceBasic(var, C, A, bs, h);
  else ReduceRows(var, C, A, bs, h, t.originalHLength);
  // rstd and y (GetDeepNormOutputPre), y into C
  for (uint32_t k = 0; k < bs; ++k) A[k] = C[k] + eps;
  for (uint32_t k = 0; k < bs; ++k) C[k] = 1.0f;
  for (uint32_t k = 0; k < bs; ++k) A[k] = std::sqrt(A[k]);
  for (uint32_t k = 0; k < bs; ++k) A[k] = C[k] / A[k];
  if (brcb) {
    Vbrcb(C, A, bs);
    const uint32_t n = cur / num;
    for (uint32_t c = 0; c < num; ++c)
      for (uint32_t e = 0; e < n; ++e) {
        const uint64_t at = uint64_t{e / 64} * h + c * 64 + e % 64;
        A[at] = C[e] * B[at];
      }
    for (uint32_t k = 0; k < cur; ++k) C[k] = A[k] + 0.0f;
  } else {
    for (uint32_t i = 0; i < bs; ++i) {
      const float r = A[i];
      for (uint32_t j = 0; j < h; ++j) C[uint64_t{i} * h + j] = B[uint64_t{i} * h + j] * r;
    }
  }
  // gamma / beta (GetDeepNormOutput)
  if constexpr (std::is_same<T, half>::value) {
    for (uint32_t j = 0; j < h; ++j) A[j] = ToF(gamma[j]);
    for (uint32_t i = 0; i < bs; ++i)
      for (uint32_t j = 0; j < h; ++j) B[uint64_t{i} * h + j] = C[uint64_t{i} * h + j] * A[j];
    for (uint32_t j = 0; j < h; ++j) C[j] = ToF(beta[j]);
    for (uint32_t i = 0; i < bs; ++i)
      for (uint32_t j = 0; j < h; ++j) A[uint64_t{i} * h + j] = B[uint64_t{i} * h + j] + C[j];
    for (uint32_t k = 0; k < cur; ++k) dst[k] = Down<half>(A[k]);
  } else {
    for (uint32_t i = 0; i < bs; ++i)
      for (uint32_t j = 0; j < h; ++j) A[uint64_t{i} * h + j] = C[uint64_t{i} * h + j] * gamma[j];
    for (uint32_t i = 0; i < bs; ++i)
      for (uint32_t j = 0; j < h; ++j) dst[uint64_t{i} * h + j] = A[uint64_t{i} * h + j] + beta[j];
  }
}

struct Operand {
  const char* name;
  const uint8_t* p;
  uint64_t bytes;
  bool written;
};

template <class T>
inline void CheckTensor(const char* api, const char* name, const AscendC::LocalTensor<T>& t) {
  using AscendC::TPosition;
  const TPosition pos = t.GetPosition();
  if (pos != TPosition::VECIN && pos != TPosition::VECOUT && pos != TPosition::VECCALC)
    Fail("[", api, "] Failed to check tensor position of ", name, ", current api support positions are "
         "UB(VECIN/VECOUT/VECCALC), current position is ", AscendC::PositionName(pos), ".");
  CheckUbAlign(api, name, t.addr_);
}
}  // namespace deepnorm

template <class T, bool isReuseSrc, bool isBasicBlock>
inline void DeepNormRun(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& mean,
                        const AscendC::LocalTensor<T>& rstd, const AscendC::LocalTensor<T>& src,
                        const AscendC::LocalTensor<T>& gx, const AscendC::LocalTensor<T>& beta,
                        const AscendC::LocalTensor<T>& gamma, const AscendC::LocalTensor<uint8_t>& tmp, const T alpha,
                        const T epsilon, DeepNormTiling& t) {
  static_assert(kFloatTypes<T>, "DeepNorm only support data type: float/half");
  const char* api = "DeepNorm";
  constexpr bool kHalf = std::is_same<T, half>::value;
  constexpr bool kReuse = isReuseSrc && !kHalf;
  deepnorm::CheckTensor(api, "dstLocal", dst);
  deepnorm::CheckTensor(api, "meanLocal", mean);
  deepnorm::CheckTensor(api, "rstdLocal", rstd);
  deepnorm::CheckTensor(api, "srcLocal", src);
  deepnorm::CheckTensor(api, "gxLocal", gx);
  deepnorm::CheckTensor(api, "betaLocal", beta);
  deepnorm::CheckTensor(api, "gammaLocal", gamma);
  deepnorm::CheckTensor(api, "sharedTmpBuffer", tmp);
  if (beta.GetSize() * sizeof(T) % 32 != 0)
    Fail("[DeepNorm] The betaLocal length is ", beta.GetSize() * sizeof(T), ", should be 32B aligned.");
  if (gamma.GetSize() * sizeof(T) % 32 != 0)
    Fail("[DeepNorm] The gammaLocal length is ", gamma.GetSize() * sizeof(T), ", should be 32B aligned.");
  if (beta.GetSize() > 2040 || gamma.GetSize() > 2040)
    Fail("[DeepNorm] The value of last axis can not be greater than 2040! current size is ",
         beta.GetSize() > 2040 ? beta.GetSize() : gamma.GetSize());
  if (t.oneTmpSize == 0) Fail("In DeepNorm, Reduce axis is too long to put it in Pop Stack Buffer! (tiling.oneTmpSize 0)");
  if constexpr (isBasicBlock) {
    if (t.hLength % 64 != 0 || t.originalHLength % 64 != 0 || uint64_t{t.bLength} * t.sLength % 8 != 0)
      Fail("In DeepNorm, when isBasicBlock is true, input must have hLength % 64 = 0, originalHLength % 64 = 0 and "
           "(bLength * sLength) % 8 = 0 ! (hLength ", t.hLength, ", originalHLength ", t.originalHLength,
           ", bLength * sLength ", uint64_t{t.bLength} * t.sLength, ")");
  }
  if (tmp.GetSize() == 0) Fail("DeepNorm: sharedTmpBuffer size must > 0!");
  const uint64_t tmpFloats = tmp.GetSize() / 4;
  const uint64_t lastPos = kReuse ? t.secondTmpStartPos : t.thirdTmpStartPos;
  if (lastPos + t.oneTmpSize > t.tmpBufSize)
    Fail("DeepNorm: ", kReuse ? "secondTmpStartPos" : "thirdTmpStartPos", " (", lastPos, ") + oneTmpSize (",
         t.oneTmpSize, ") should be <= tmpBufSize (", t.tmpBufSize, ")");
  if (tmpFloats < t.tmpBufSize)
    Fail("DeepNorm: stackBuffer.GetSize (", tmpFloats, ") should be >= tiling.tmpBufSize (", t.tmpBufSize,
         "): sharedTmpBuffer holds ", tmp.GetSize(), " B; size the tiling by the buffer (GetDeepNormTilingInfo's "
         "stackBufferSize)");
  // The emulator's own consistency checks: every access below stays inside the tensors.
  const uint32_t h = t.hLength;
  if (h == 0) Fail("DeepNorm: tiling.hLength is 0; compute the tiling with GetDeepNormTilingInfo");
  if (t.originalHLength == 0 || t.originalHLength > h)
    Fail("DeepNorm: tiling.originalHLength ", t.originalHLength, " must be in [1, hLength ", h, "]");
  auto lengths = [&](const char* what, uint64_t bsh, uint64_t rows) {
    if (bsh != rows * h)
      Fail("DeepNorm: tiling.", what, " elements (", bsh, ") != rows (", rows, ") * hLength (", h,
           "); compute the tiling with GetDeepNormTilingInfo");
    if (bsh > t.oneTmpSize)
      Fail("DeepNorm: tiling.", what, " (", bsh, " elements) exceeds oneTmpSize (", t.oneTmpSize,
           "), the float tmp tensor it is computed in");
  };
  lengths("bshCurLength / bsCurLength", t.bshCurLength, t.bsCurLength);
  lengths("inputRoundSize / meanVarRoundSize", t.inputRoundSize, t.meanVarRoundSize);
  lengths("inputTailSize / meanVarTailSize", t.inputTailSize, t.meanVarTailSize);
  if (h > t.oneTmpSize) Fail("DeepNorm: hLength ", h, " exceeds tiling.oneTmpSize ", t.oneTmpSize);
  const uint64_t lr = t.loopRound;
  uint64_t bshEnd = lr ? (lr - 1) * t.inputRoundSize + t.bshCurLength : 0;
  uint64_t bsEnd = lr ? (lr - 1) * t.meanVarRoundSize + t.bsCurLength : 0;
  if (t.inputTailSize) {
    bshEnd = std::max<uint64_t>(bshEnd, uint64_t{t.inputTailPos} + t.inputTailSize);
    bsEnd = std::max<uint64_t>(bsEnd, uint64_t{t.meanVarTailPos} + t.meanVarTailSize);
  }
  uint64_t srcEnd = bshEnd;
  if (kReuse) srcEnd = std::max<uint64_t>(srcEnd, std::max(t.bshCurLength, t.inputTailSize));
  const uint64_t mvEnd = kHalf ? std::max<uint64_t>(bsEnd, t.meanVarSize) : bsEnd;
  auto holds = [&](const char* name, uint64_t size, uint64_t need) {
    if (size < need)
      Fail("DeepNorm: ", name, " holds ", size, " elements; the tiling (", t.loopRound, " rounds of ",
           t.meanVarRoundSize, " rows, tail ", t.meanVarTailSize, " rows at row ", t.meanVarTailPos, ", h ", h,
           ") reaches element ", need);
  };
  holds("srcLocal", src.GetSize(), srcEnd);
  holds("gxLocal", gx.GetSize(), bshEnd);
  holds("dstLocal", dst.GetSize(), bshEnd);
  holds("meanLocal", mean.GetSize(), mvEnd);
  holds("rstdLocal", rstd.GetSize(), mvEnd);
  holds("gammaLocal", gamma.GetSize(), h);
  holds("betaLocal", beta.GetSize(), h);
  auto inTmp = [&](const char* what, uint64_t pos, uint64_t n) {
    if (pos + n > tmpFloats)
      Fail("DeepNorm: the tmp tensor at tiling.", what, " (floats [", pos, ", ", pos + n,
           ")) lies outside sharedTmpBuffer (", tmpFloats, " floats)");
  };
  if (!kReuse) inTmp("firstTmpStartPos", t.firstTmpStartPos, t.oneTmpSize);
  inTmp("secondTmpStartPos", t.secondTmpStartPos, t.oneTmpSize);
  if (!kReuse) inTmp("thirdTmpStartPos", t.thirdTmpStartPos, t.oneTmpSize);
  if (kHalf) {
    inTmp("meanTmpTensorPos", t.meanTmpTensorPos, mvEnd);
    inTmp("varianceTmpTensorPos", t.varianceTmpTensorPos, mvEnd);
  }
  // Overlaps: tmp with any operand; an output with any other operand (dst == src only as isReuseSrc's reuse).
  const deepnorm::Operand ops[] = {
      {"dstLocal", reinterpret_cast<const uint8_t*>(dst.addr_), bshEnd * sizeof(T), true},
      {"meanLocal", reinterpret_cast<const uint8_t*>(mean.addr_), mvEnd * sizeof(T), true},
      {"rstdLocal", reinterpret_cast<const uint8_t*>(rstd.addr_), mvEnd * sizeof(T), true},
      {"srcLocal", reinterpret_cast<const uint8_t*>(src.addr_), srcEnd * sizeof(T), kReuse},
      {"gxLocal", reinterpret_cast<const uint8_t*>(gx.addr_), bshEnd * sizeof(T), false},
      {"betaLocal", reinterpret_cast<const uint8_t*>(beta.addr_), uint64_t{h} * sizeof(T), false},
      {"gammaLocal", reinterpret_cast<const uint8_t*>(gamma.addr_), uint64_t{h} * sizeof(T), false},
  };
  const uint8_t* tb = tmp.addr_;
  const uint64_t tbytes = tmpFloats * 4;
  auto hit = [](const uint8_t* a, uint64_t an, const uint8_t* b, uint64_t bn) {
    return an && bn && a < b + bn && b < a + an;
  };
  for (const auto& o : ops) {
    if (hit(tb, tbytes, o.p, o.bytes))
      Fail("DeepNorm: sharedTmpBuffer UB bytes [", RT().UbOffset(tb), ", ", RT().UbOffset(tb + tbytes),
           ") overlap ", o.name, "; give it its own buffer");
  }
  for (size_t i = 0; i < 7; ++i)
    for (size_t j = i + 1; j < 7; ++j) {
      const auto &a = ops[i], &b = ops[j];
      if (!(a.written || b.written) || !hit(a.p, a.bytes, b.p, b.bytes)) continue;
      if (i == 0 && j == 3 && a.p == b.p) {
        if (!isReuseSrc)
          Fail("DeepNorm: dstLocal is srcLocal; with isReuseSrc false srcLocal and dstLocal may not share memory "
               "(API page, constraints)");
        const uint64_t rounds = uint64_t{t.loopRound} + (t.inputTailSize ? 1 : 0);
        if (kReuse && rounds > 1)
          Fail("DeepNorm: dstLocal is srcLocal with isReuseSrc and ", rounds, " rounds: srcLocal's first oneTmpSize (",
               t.oneTmpSize, ") elements are tmp tensor A of every round, so each later round overwrites the first "
               "round's results there; give dstLocal its own buffer or a tmp buffer for one round");
        continue;
      }
      Fail("DeepNorm: ", a.name, " UB bytes [", RT().UbOffset(a.p), ", ", RT().UbOffset(a.p + a.bytes), ") overlap ",
           b.name, " [", RT().UbOffset(b.p), ", ", RT().UbOffset(b.p + b.bytes), "); give each its own buffer");
    }
  // UB accesses for the bounds and sync checks: reads, then each output as a write of its own.
  CheckUbRange(api, "srcLocal", src.buf_, src.addr_, src.addr_ + srcEnd);
  CheckUbRange(api, "gxLocal", gx.buf_, gx.addr_, gx.addr_ + bshEnd);
  CheckUbRange(api, "betaLocal", beta.buf_, beta.addr_, beta.addr_ + h);
  CheckUbRange(api, "gammaLocal", gamma.buf_, gamma.addr_, gamma.addr_ + h);
  CheckUbRange(api, "sharedTmpBuffer", tmp.buf_, tb, tb + tbytes);
  EndInstr();
  const AscendC::LocalTensor<T>* outs[] = {&dst, &mean, &rstd, &src};
  const uint64_t outEnd[] = {bshEnd, mvEnd, mvEnd, srcEnd};
  for (int k = 0; k < (kReuse ? 4 : 3); ++k) {
    CheckUbRange(api, "dst", outs[k]->buf_, outs[k]->addr_, outs[k]->addr_ + outEnd[k]);
    EndInstr();
  }

  float* stack = reinterpret_cast<float*>(tmp.addr_);
  deepnorm::Bufs p{};
  if constexpr (kHalf) {
    p.A = stack + t.firstTmpStartPos;
    p.B = stack + t.secondTmpStartPos;
    p.C = stack + t.thirdTmpStartPos;
    p.meanT = stack + t.meanTmpTensorPos;
    p.varT = stack + t.varianceTmpTensorPos;
  } else {
    p.meanT = mean.addr_;
    p.varT = rstd.addr_;
    if constexpr (kReuse) {
      p.A = src.addr_;
      p.B = stack + t.firstTmpStartPos;
      p.C = stack + t.secondTmpStartPos;
    } else {
      p.A = stack + t.firstTmpStartPos;
      p.B = stack + t.secondTmpStartPos;
      p.C = stack + t.thirdTmpStartPos;
    }
  }
  const float fa = ToF(alpha), fe = ToF(epsilon);
  uint64_t offX = 0, offM = 0;
  for (uint32_t r = 0; r < t.loopRound; ++r) {
    deepnorm::Round<T, isBasicBlock>(p, src.addr_ + offX, gx.addr_ + offX, gamma.addr_, beta.addr_, dst.addr_ + offX,
                                     static_cast<uint32_t>(offM), fa, fe, t);
    offX += t.inputRoundSize;
    offM += t.meanVarRoundSize;
  }
  if (t.inputTailSize > 0) {
    t.bshCurLength = t.inputTailSize;
    t.bsCurLength = t.meanVarTailSize;
    deepnorm::Round<T, isBasicBlock>(p, src.addr_ + t.inputTailPos, gx.addr_ + t.inputTailPos, gamma.addr_,
                                     beta.addr_, dst.addr_ + t.inputTailPos, t.meanVarTailPos, fa, fe, t);
  }
  if constexpr (kHalf) {
    for (uint32_t k = 0; k < t.meanVarSize; ++k) mean.addr_[k] = Down<half>(p.meanT[k]);
    for (uint32_t k = 0; k < t.meanVarSize; ++k) rstd.addr_[k] = Down<half>(p.varT[k]);
  }
  // About 12 (half: 17) bsh-sized float passes per call.
  EndAdvancedApi(api, &tmp, CountFormRepeats(bshEnd, sizeof(float)) * (kHalf ? 17 : 12));
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, bool isReuseSrc = false, bool isBasicBlock = false>
inline void DeepNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& meanLocal, const LocalTensor<T>& rstdLocal,
                     const LocalTensor<T>& srcLocal, const LocalTensor<T>& gxLocal, const LocalTensor<T>& betaLocal,
                     const LocalTensor<T>& gammaLocal, const LocalTensor<uint8_t>& sharedTmpBuffer, const T alpha,
                     const T epsilon, DeepNormTiling& tiling) {
  trex_emu::DeepNormRun<T, isReuseSrc, isBasicBlock>(dstLocal, meanLocal, rstdLocal, srcLocal, gxLocal, betaLocal,
                                                     gammaLocal, sharedTmpBuffer, alpha, epsilon, tiling);
}
template <typename T, bool isReuseSrc = false, bool isBasicBlock = false>
inline void DeepNorm(const LocalTensor<T>& dstLocal, const LocalTensor<T>& meanLocal, const LocalTensor<T>& rstdLocal,
                     const LocalTensor<T>& srcLocal, const LocalTensor<T>& gxLocal, const LocalTensor<T>& betaLocal,
                     const LocalTensor<T>& gammaLocal, const T alpha, const T epsilon, DeepNormTiling& tiling) {
  LocalTensor<uint8_t> stack;
  PopStackBuffer<uint8_t, TPosition::LCM>(stack);
  trex_emu::DeepNormRun<T, isReuseSrc, isBasicBlock>(dstLocal, meanLocal, rstdLocal, srcLocal, gxLocal, betaLocal,
                                                     gammaLocal, stack, alpha, epsilon, tiling);
}
}  // namespace AscendC
