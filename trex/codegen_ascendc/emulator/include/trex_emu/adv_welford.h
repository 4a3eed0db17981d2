// adv_welford.h: the WelfordUpdate and WelfordFinalize advanced APIs (asc-devkit 高阶API/数据归一化/WelfordUpdate,
// WelfordFinalize; impl/adv_api/detail/normalization/layernorm/layernorm_common_impl.h and
// welfordfinalize/welfordfinalize_common_impl.h) for Atlas A2/A3 (arch 2201), with their parameter structs.
//
// WelfordUpdate<T, U = float, isReuseSource, WelfordUpdateConfig{isInplace}>(outMean, outVar, inMean, inVar, x
//   [, sharedTmpBuffer], WelfordUpdateParam{rnLength, abLength, abComputeLength, nRec}): for i < abComputeLength,
//   in float (half x converted exactly): d = x - inMean; outMean = d * nRec + inMean; outVar = d * (x - outMean) +
//   inVar, each step one float op as the impl's Sub/Muls/Add/Sub/Mul/Add. isInplace: outputs i >= abComputeLength
//   take the inputs' values (the impl copies the last AlignUp(abLength - abComputeLength, 8) first); otherwise they are
//   left as they were. isReuseSource (float x): x[i] becomes x - inMean, as the impl leaves it.
//   Checks (errors naming WelfordUpdate): rnLength == 1, abLength * sizeof(T) a multiple of 32 B, 0 < abComputeLength
//   <= abLength, every operand at least rnLength * abLength elements and in UB, outputs apart from each other and from
//   the inputs and the tmp buffer; the tmp buffer must give sharedTmpBuffer bytes / (256 * k) > 0 (k: 3 for half x,
//   1 float with isReuseSource, 2 float: GetWelfordUpdateMaxMinTmpSize's min).
// WelfordFinalize<isReuseSource = false>(outMean, outVar, inMean, inVar[, counts][, sharedTmpBuffer],
//   WelfordFinalizePara&): reduces abLength partial means / variances to one mean and variance, outMean[0] / outVar[0]
//   (elements 1..7 are set to 0). As the impl: the buffer (float S) gives chunks of C = (S - 128) / 128 * 64
//   elements; each chunk's terms are summed as LayerNormReduceSumImpl does (64-lane blocks added onto the first, then
//   WholeReduceSum's tree), per-chunk sums by WholeReduceSum (64 at a time). Terms: mean without counts
//   inMean * abRec, or with tailCount / tailCountLength (tail form) inMean * tailCount * rRec, the first
//   headCountLength scaled by headCount / tailCount; variance ((inMean - mean)^2 * rnLength (tail form: * tailCount,
//   head * headCount / tailCount) + inVar) * rRec; with counts: mean inMean * counts * rRec, variance
//   ((inMean - mean)^2 * counts + inVar) * rRec.
//   Checks (errors naming WelfordFinalize): abLength > 0 and a multiple of 8; headCountLength + tailCountLength ==
//   abLength; tailCount 0 needs tailCountLength 0; abRec within 1e-4 of 1 / abLength; without counts rRec within
//   1e-4 of 1 / (rnLength * abLength); inputs (and counts) at least abLength elements, outputs at least 8; no
//   isReuseSource; sharedTmpBuffer at least 1024 B (GetWelfordFinalizeMaxMinTmpSize's min).
// The forms without sharedTmpBuffer use the library's stack buffer: the UB the TPipe left (its size sets the chunking
// as above; too little is an error). A given sharedTmpBuffer holds garbage afterwards (scribbled).
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "trex_emu/pipe.h"
#include "trex_emu/tiling_welford.h"
#include "trex_emu/vec.h"
#include "trex_emu/vec_misc.h"

namespace AscendC {
struct WelfordUpdateConfig {
  constexpr WelfordUpdateConfig(const bool isInplaceIn) : isInplace(isInplaceIn) {}
  bool isInplace = false;
};
constexpr WelfordUpdateConfig WFUPDATE_DEFAULT_CFG = {false};
struct WelfordUpdateParam {
  uint32_t rnLength;
  uint32_t abLength;
  uint32_t abComputeLength;
  float nRec;
};
struct WelfordFinalizeConfig {
  constexpr WelfordFinalizeConfig(const bool isCorrectionIn) : isCorrection(isCorrectionIn) {}
  bool isCorrection = false;
};
constexpr WelfordFinalizeConfig WFFINALIZE_DEFAULT_CFG = {false};
struct WelfordFinalizePara {  // Atlas A2/A3 layout (Ascend 950 adds rRecWithCorrection)
  uint32_t rnLength;
  uint32_t abLength;
  uint32_t headCount;
  uint32_t headCountLength;
  uint32_t tailCount;
  uint32_t tailCountLength;
  float abRec;
  float rRec;
};
}  // namespace AscendC

namespace trex_emu {
inline bool WfOverlap(const void* a, uint64_t an, const void* b, uint64_t bn) {
  const uint8_t* x = static_cast<const uint8_t*>(a);
  const uint8_t* y = static_cast<const uint8_t*>(b);
  return an && bn && x < y + bn && y < x + an;
}

// The library stack buffer (PopStackBuffer on arch 2201): from the TPipe's end to the UB's last 64 bytes.
inline uint64_t WfStackBytes(const char* api) {
  Runtime& rt = RT();
  if (rt.current_pipe == nullptr)
    Fail(api, ": the form without sharedTmpBuffer takes the TPipe's stack buffer, but no TPipe exists in this block");
  const uint64_t used = rt.current_pipe->UsedBytes();
  return rt.ub_bytes > used + 64 ? rt.ub_bytes - 64 - used : 0;
}

struct WfOperand {
  const char* name;
  const void* p;
  uint64_t bytes;
};

template <class T>
inline WfOperand WfUb(const char* api, const char* name, const AscendC::LocalTensor<T>& t, uint64_t need, bool out) {
  if (t.GetSize() < need)
    Fail(api, ": ", name, " holds ", t.GetSize(), " elements; ", need, " are needed");
  CheckUbAlign(api, name, t.addr_);
  CheckUbRange(api, name, t.buf_, t.addr_, t.addr_ + need);
  (void)out;
  return WfOperand{name, t.addr_, need * sizeof(T)};
}

// Outputs must not overlap one another, an input, or the tmp buffer.
inline void WfDisjoint(const char* api, const std::vector<WfOperand>& outs, const std::vector<WfOperand>& others) {
  for (size_t i = 0; i < outs.size(); ++i) {
    for (size_t j = i + 1; j < outs.size(); ++j)
      if (WfOverlap(outs[i].p, outs[i].bytes, outs[j].p, outs[j].bytes))
        Fail(api, ": ", outs[i].name, " and ", outs[j].name, " overlap in UB; give each its own buffer");
    for (const WfOperand& o : others)
      if (WfOverlap(outs[i].p, outs[i].bytes, o.p, o.bytes))
        Fail(api, ": ", outs[i].name, " overlaps ", o.name, " in UB; the implementation does not allow that reuse");
  }
}

template <class T, class U, bool isReuseSource, bool isInplace>
inline void WelfordUpdateImpl(const AscendC::LocalTensor<U>& outMean, const AscendC::LocalTensor<U>& outVar,
                              const AscendC::LocalTensor<U>& inMean, const AscendC::LocalTensor<U>& inVar,
                              const AscendC::LocalTensor<T>& x, const AscendC::LocalTensor<uint8_t>* tmp,
                              const AscendC::WelfordUpdateParam& p) {
  static_assert(std::is_same<T, float>::value || std::is_same<T, half>::value,
                "WelfordUpdate: inputX (T) must be half or float");
  static_assert(std::is_same<U, float>::value, "WelfordUpdate: mean / variance (U) must be float");
  const char* api = "WelfordUpdate";
  if (p.rnLength != 1) Fail(api, ": para.rnLength is ", p.rnLength, "; it must be 1");
  if (uint64_t{p.abLength} * sizeof(T) % 32 != 0)
    Fail(api, ": para.abLength is ", p.abLength, "; it must be a multiple of 32 / sizeof(T) = ", 32 / sizeof(T));
  if (p.abComputeLength == 0 || p.abComputeLength > p.abLength)
    Fail(api, ": para.abComputeLength is ", p.abComputeLength, "; it must be in [1, abLength = ", p.abLength, "]");
  const uint64_t n = uint64_t{p.rnLength} * p.abLength;
  std::vector<WfOperand> outs{WfUb(api, "outputMean", outMean, n, true), WfUb(api, "outputVariance", outVar, n, true)};
  std::vector<WfOperand> ins{WfUb(api, "inputMean", inMean, n, false), WfUb(api, "inputVariance", inVar, n, false),
                             WfUb(api, "inputX", x, n, false)};
  constexpr uint32_t k = sizeof(T) == 2 ? 3 : (isReuseSource ? 1 : 2);
  uint64_t tmp_bytes = 0;
  if (tmp != nullptr) {
    tmp_bytes = tmp->GetSize();
    CheckUbAlign(api, "sharedTmpBuffer", tmp->addr_);
    CheckUbRange(api, "sharedTmpBuffer", tmp->buf_, tmp->addr_, tmp->addr_ + tmp_bytes);
    ins.push_back(WfOperand{"sharedTmpBuffer", tmp->addr_, tmp_bytes});
  } else {
    tmp_bytes = WfStackBytes(api);
  }
  if (tmp_bytes / (256 * k) == 0)
    Fail(api, ": sharedTmpBuffer holds ", tmp_bytes, " B; the implementation needs at least ", 256 * k,
         " B (GetWelfordUpdateMaxMinTmpSize gives the sizes)");
  WfDisjoint(api, outs, ins);
  if (isInplace && p.abComputeLength < p.abLength) {
    const uint32_t len = (p.abLength - p.abComputeLength + 7) / 8 * 8;
    for (uint32_t i = p.abLength - len; i < p.abLength; ++i) {
      outMean.addr_[i] = inMean.addr_[i];
      outVar.addr_[i] = inVar.addr_[i];
    }
  }
  const float nRec = p.nRec;
  for (uint32_t i = 0; i < p.abComputeLength; ++i) {
    const float xi = ToF(x.addr_[i]);
    const float d = xi - inMean.addr_[i];
    const float o = d * nRec;
    outMean.addr_[i] = o + inMean.addr_[i];
    const float e = xi - outMean.addr_[i];
    if constexpr (isReuseSource && sizeof(T) == 4) x.addr_[i] = xi - inMean.addr_[i];
    const float v = d * e;
    outVar.addr_[i] = v + inVar.addr_[i];
  }
  EndAdvancedApi(api, tmp, 6 * CountFormRepeats(p.abComputeLength, sizeof(float)));
}

// LayerNormReduceSumImpl<true, false>(.., 1, len): 64-lane blocks 1.. added onto block 0 (the tail's lanes too),
// then one WholeReduceSum of min(len, 64) lanes (the lanes past len are 0). LayerNorm (adv_norm.h) reduces its rows
// with the same impl function.
inline float WfRowSum(const float* v, uint32_t len) {
  float acc[64] = {};
  const uint32_t lanes = std::min<uint32_t>(len, 64);
  for (uint32_t j = 0; j < lanes; ++j) acc[j] = v[j];
  if (len > 64) {
    for (uint32_t r = 1; r < (len >> 6); ++r)
      for (uint32_t j = 0; j < 64; ++j) acc[j] = v[64 * r + j] + acc[j];
    const uint32_t tail = len & 63u, base = len & ~63u;
    for (uint32_t j = 0; j < tail; ++j) acc[j] = v[base + j] + acc[j];
  }
  return TreeSum(acc, 64);
}

// Sums of per-chunk partials kept in a 64-slot tmp row: folded with WholeReduceSum when it fills, then at the end.
struct WfPartials {
  float slot[64] = {};
  uint32_t used = 0;
  void Push(float s) {
    slot[used++] = s;
    if (used == 64) {
      slot[0] = Fold(64);
      used = 1;
    }
  }
  float Fold(uint32_t lanes) {
    float v[64] = {};
    for (uint32_t j = 0; j < lanes; ++j) v[j] = slot[j];
    return TreeSum(v, 64);
  }
  float Final() { return Fold(used); }
};

inline void WelfordFinalizeImpl(const AscendC::LocalTensor<float>& outMean, const AscendC::LocalTensor<float>& outVar,
                                const AscendC::LocalTensor<float>& inMean, const AscendC::LocalTensor<float>& inVar,
                                const AscendC::LocalTensor<int32_t>* counts, const AscendC::LocalTensor<uint8_t>* tmp,
                                const AscendC::WelfordFinalizePara& p, bool isReuseSource) {
  const char* api = "WelfordFinalize";
  if (isReuseSource) Fail(api, ": isReuseSource must be false (the API does not support reusing the source)");
  if (p.abLength == 0 || p.abLength % 8 != 0)
    Fail(api, ": para.abLength is ", p.abLength, "; it must be non-zero and a multiple of 8 (32 B of float)");
  if (uint64_t{p.headCountLength} + p.tailCountLength != p.abLength)
    Fail(api, ": para.headCountLength ", p.headCountLength, " + para.tailCountLength ", p.tailCountLength,
         " must equal para.abLength ", p.abLength);
  if (p.tailCount == 0 && p.tailCountLength != 0)
    Fail(api, ": para.tailCountLength is ", p.tailCountLength, "; it must be 0 when para.tailCount is 0");
  const double abRecWant = 1.0 / p.abLength;
  if (!(p.abRec - abRecWant > -1e-4 && p.abRec - abRecWant < 1e-4))
    Fail(api, ": para.abRec is ", p.abRec, "; it must be 1 / para.abLength = ", abRecWant);
  if (counts == nullptr) {
    const double rRecWant = 1.0 / (double(p.rnLength) * p.abLength);
    if (!(p.rRec - rRecWant > -1e-4 && p.rRec - rRecWant < 1e-4))
      Fail(api, ": para.rRec is ", p.rRec, "; without counts it must be 1 / (rnLength * abLength) = ", rRecWant);
  }
  std::vector<WfOperand> outs{WfUb(api, "outputMean", outMean, 8, true), WfUb(api, "outputVariance", outVar, 8, true)};
  std::vector<WfOperand> ins{WfUb(api, "inputMean", inMean, p.abLength, false),
                             WfUb(api, "inputVariance", inVar, p.abLength, false)};
  if (counts != nullptr) ins.push_back(WfUb(api, "counts", *counts, p.abLength, false));
  uint64_t tmp_bytes;
  if (tmp != nullptr) {
    tmp_bytes = tmp->GetSize();
    CheckUbAlign(api, "sharedTmpBuffer", tmp->addr_);
    CheckUbRange(api, "sharedTmpBuffer", tmp->buf_, tmp->addr_, tmp->addr_ + tmp_bytes);
    ins.push_back(WfOperand{"sharedTmpBuffer", tmp->addr_, tmp_bytes});
  } else {
    tmp_bytes = WfStackBytes(api);
  }
  if (tmp_bytes / 4 < 256)
    Fail(api, ": sharedTmpBuffer holds ", tmp_bytes, " B; the implementation needs at least 1024 B "
         "(GetWelfordFinalizeMaxMinTmpSize gives the sizes)");
  WfDisjoint(api, outs, ins);

  const uint64_t chunk = (tmp_bytes / 4 - 128) / 128 * 64;
  const bool tailForm = !(p.tailCountLength == 0 || p.tailCount == 0);
  const float tailC = static_cast<float>(static_cast<int32_t>(p.tailCount));
  const float headScale = static_cast<float>(static_cast<int32_t>(p.headCount)) / tailC;
  const float rn = static_cast<float>(static_cast<int32_t>(p.rnLength));
  auto headLen = [&](uint64_t off, uint32_t len) {
    const int64_t h = int64_t(p.headCountLength) - int64_t(off);
    return static_cast<uint32_t>(std::clamp<int64_t>(h, 0, len));
  };
  std::vector<float> v;
  // Mean.
  WfPartials mp;
  for (uint64_t off = 0; off < p.abLength; off += chunk) {
    const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(chunk, p.abLength - off));
    v.assign(len, 0.0f);
    for (uint32_t j = 0; j < len; ++j) {
      const float m = inMean.addr_[off + j];
      if (counts != nullptr) {
        float t = static_cast<float>(counts->addr_[off + j]);
        t = m * t;
        v[j] = t * p.rRec;
      } else if (tailForm) {
        const float t = m * tailC;
        v[j] = t * p.rRec;
      } else {
        v[j] = m * p.abRec;
      }
    }
    if (counts == nullptr && tailForm)
      for (uint32_t j = 0, h = headLen(off, len); j < h; ++j) v[j] = v[j] * headScale;
    mp.Push(WfRowSum(v.data(), len));
  }
  const float mean = mp.Final();
  // Variance.
  WfPartials vp;
  for (uint64_t off = 0; off < p.abLength; off += chunk) {
    const uint32_t len = static_cast<uint32_t>(std::min<uint64_t>(chunk, p.abLength - off));
    v.assign(len, 0.0f);
    const uint32_t h = counts == nullptr && tailForm ? headLen(off, len) : 0;
    for (uint32_t j = 0; j < len; ++j) {
      const float d = inMean.addr_[off + j] - mean;
      float q = d * d;
      float t;
      if (counts != nullptr) {
        const float c = static_cast<float>(counts->addr_[off + j]);
        q = q * c;
        t = q + inVar.addr_[off + j];
      } else {
        t = q * (tailForm ? tailC : rn);
        if (j < h) t = t * headScale;
        t = inVar.addr_[off + j] + t;
      }
      v[j] = t * p.rRec;
    }
    vp.Push(WfRowSum(v.data(), len));
  }
  const float var = vp.Final();
  outMean.addr_[0] = mean + 0.0f;
  outVar.addr_[0] = var + 0.0f;
  for (int j = 1; j < 8; ++j) outMean.addr_[j] = outVar.addr_[j] = 0.0f;
  EndAdvancedApi(api, tmp, 14 * CountFormRepeats(p.abLength, sizeof(float)) + 6);
}
}  // namespace trex_emu

namespace AscendC {
template <typename T, typename U, bool isReuseSource = false, const WelfordUpdateConfig& config = WFUPDATE_DEFAULT_CFG>
inline void WelfordUpdate(const LocalTensor<U>& outputMean, const LocalTensor<U>& outputVariance,
                          const LocalTensor<U>& inputMean, const LocalTensor<U>& inputVariance,
                          const LocalTensor<T>& inputX, const LocalTensor<uint8_t>& sharedTmpBuffer,
                          const WelfordUpdateParam& para) {
  trex_emu::WelfordUpdateImpl<T, U, isReuseSource, config.isInplace>(outputMean, outputVariance, inputMean,
                                                                     inputVariance, inputX, &sharedTmpBuffer, para);
}
template <typename T, typename U, bool isReuseSource = false, const WelfordUpdateConfig& config = WFUPDATE_DEFAULT_CFG>
inline void WelfordUpdate(const LocalTensor<U>& outputMean, const LocalTensor<U>& outputVariance,
                          const LocalTensor<U>& inputMean, const LocalTensor<U>& inputVariance,
                          const LocalTensor<T>& inputX, const WelfordUpdateParam& para) {
  trex_emu::WelfordUpdateImpl<T, U, isReuseSource, config.isInplace>(outputMean, outputVariance, inputMean,
                                                                     inputVariance, inputX, nullptr, para);
}

template <bool isReuseSource = false>
inline void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                            const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                            const LocalTensor<uint8_t>& sharedTmpBuffer, WelfordFinalizePara& para) {
  trex_emu::WelfordFinalizeImpl(outputMean, outputVariance, inputMean, inputVariance, nullptr, &sharedTmpBuffer, para,
                                isReuseSource);
}
template <bool isReuseSource = false>
inline void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                            const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                            const LocalTensor<int32_t>& counts, const LocalTensor<uint8_t>& sharedTmpBuffer,
                            WelfordFinalizePara& para) {
  trex_emu::WelfordFinalizeImpl(outputMean, outputVariance, inputMean, inputVariance, &counts, &sharedTmpBuffer, para,
                                isReuseSource);
}
template <bool isReuseSource = false>
inline void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                            const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                            WelfordFinalizePara& para) {
  trex_emu::WelfordFinalizeImpl(outputMean, outputVariance, inputMean, inputVariance, nullptr, nullptr, para,
                                isReuseSource);
}
template <bool isReuseSource = false>
inline void WelfordFinalize(const LocalTensor<float>& outputMean, const LocalTensor<float>& outputVariance,
                            const LocalTensor<float>& inputMean, const LocalTensor<float>& inputVariance,
                            const LocalTensor<int32_t>& counts, WelfordFinalizePara& para) {
  trex_emu::WelfordFinalizeImpl(outputMean, outputVariance, inputMean, inputVariance, &counts, nullptr, para,
                                isReuseSource);
}
}  // namespace AscendC
