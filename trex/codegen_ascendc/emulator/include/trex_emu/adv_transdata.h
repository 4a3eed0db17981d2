// adv_transdata.h: the TransData advanced API (asc-devkit 高阶API/张量变换/TransData.md; impl/adv_api/detail/transpose/
// transdata/transdata_impl.h and the CPU-debug checks of api_check/kernel_check/transpose/transdata/) on Atlas A2/A3,
// with TransDataParams / TransDataConfig and the Layout helpers it takes (impl/basic_api/kernel_operator_layout.h):
//   Std::tuple / get / make_tuple / tuple_size / tuple_element / is_tuple(_v) (std::tuple's, under AscendC::Std),
//   Shape<...> / Stride<...> (tuples), MakeShape(xs...), MakeStride(xs...), Layout<Shape, Stride> (GetShape(),
//   GetStride(), GetShape<I...>() picks dims), MakeLayout(shape, stride), is_layout(_v). Not modelled: Layout's
//   coordinate mapping (operator(), Crd2Idx) and static-layout sizes.
//
// TransData<config>(dst, src[, sharedTmpBuffer], TransDataParams<U, S>{srcLayout, dstLayout}), T half / bfloat16_t /
// uint16_t / int16_t (pure data movement). n, c, d, h, w come from the NCDHW side's shape; c0 = n0 = 16,
// c1 = ceil(c / 16), n1 = ceil(n / 16), padHw = h * w rounded up to 16. An NCDHW tensor in UB is [n][c][d][padHw]
// (each h*w row padded to 32 B, as DataCopyPad leaves it).
//   NCDHW -> FRACTAL_Z_3D: dst[d][c1][h*w][n1*16][16] = src (ignoring the padHw tail), 0 where n >= N or c >= C.
//   FRACTAL_Z_3D -> NCDHW: dst[n][c][d][padHw], the padHw tail 0.
//   NCDHW -> NDC1HWC0: dst[n][d][c1][h*w][16], 0 where c >= C.
//   NDC1HWC0 -> NCDHW: dst[n][c][d][padHw]; the padHw tail is what the impl leaves there: the tmp buffer's bytes in
//     its C1DHWC0 staging area (tmp + 512 B), as previous contents or the redundant-channel rows the impl parks at the
//     tmp's start (simulated block for block).
// Checks (errors naming TransData): the format pair one of the four; the other layout's dims consistent (d, h, w
// [and n] equal, c1 = ceil(c / c0), n1 = ceil(n / n0)), c0 (and n0) 16; tensor sizes (NCDHW >= n*c*d*padHw,
// FRACTAL_Z_3D >= d*c1*h*w*n1*n0*c0, NDC1HWC0 >= n*d*c1*h*w*c0); the tmp buffer at least GetTransDataMaxMinTmpSize's
// size; dst / src / tmp pairwise apart; each TransDataTo5HD at most 255 repeats. The tmp buffer holds garbage after.
// The form without sharedTmpBuffer uses the library's stack buffer (the UB the TPipe left, too little: an error).
#pragma once
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <vector>

#include "trex_emu/adv_common.h"
#include "trex_emu/pipe.h"
#include "trex_emu/std_type_traits.h"
#include "trex_emu/vec.h"

#ifndef TREX_EMU_STD_TUPLE
#define TREX_EMU_STD_TUPLE
namespace AscendC {
namespace Std {
using std::get;
using std::make_tuple;
using std::tuple;
using std::tuple_element;
using std::tuple_size;
template <class T>
struct is_tuple : false_type {};
template <class... Ts>
struct is_tuple<std::tuple<Ts...>> : true_type {};
template <class T>
constexpr bool is_tuple_v = is_tuple<T>::value;
}  // namespace Std
}  // namespace AscendC
#endif

#ifndef TREX_EMU_TRANSDATA_CONFIG
#define TREX_EMU_TRANSDATA_CONFIG
namespace AscendC {
struct TransDataConfig {
  DataFormat srcFormat;
  DataFormat dstFormat;
};
}  // namespace AscendC
#endif

namespace AscendC {
template <typename... Shapes>
using Shape = Std::tuple<Shapes...>;
template <typename... Strides>
using Stride = Std::tuple<Strides...>;

template <typename... Ts>
inline constexpr Shape<Ts...> MakeShape(const Ts&... t) {
  return {t...};
}
template <typename... Ts>
inline constexpr Stride<Ts...> MakeStride(const Ts&... t) {
  return {t...};
}

template <typename T, typename U>
struct Layout : private Std::tuple<T, U> {
  constexpr Layout(const T& shape = {}, const U& stride = {}) : Std::tuple<T, U>(shape, stride) {
    static_assert(Std::is_tuple_v<T> && Std::is_tuple_v<U>, "Shape or Stride is not tuple!");
  }
  constexpr decltype(auto) layout() const { return *this; }
  template <size_t... I>
  constexpr decltype(auto) GetShape() const {
    return Pick<0, I...>();
  }
  template <size_t... I>
  constexpr decltype(auto) GetStride() const {
    return Pick<1, I...>();
  }

 private:
  template <size_t which, size_t... I>
  constexpr auto Pick() const {
    const auto& all = Std::get<which>(static_cast<const Std::tuple<T, U>&>(*this));
    if constexpr (sizeof...(I) == 0) {
      return all;
    } else {
      return Std::make_tuple(Std::get<I>(all)...);
    }
  }
};

template <typename T, typename U>
inline constexpr auto MakeLayout(const T& shape, const U& stride) {
  static_assert(Std::is_tuple_v<T> && Std::is_tuple_v<U>, "Shape or Stride is not tuple!");
  return Layout<T, U>(shape, stride);
}
template <typename T>
struct is_layout : Std::false_type {};
template <typename T, typename U>
struct is_layout<Layout<T, U>> : Std::true_type {};
template <typename T>
constexpr bool is_layout_v = is_layout<T>::value;

template <typename T, typename U>
struct TransDataParams {
  T srcLayout;
  U dstLayout;
};
}  // namespace AscendC

namespace trex_emu {
inline const char* TdFormatName(AscendC::DataFormat f) {
  switch (f) {
    case AscendC::DataFormat::ND: return "ND";
    case AscendC::DataFormat::NZ: return "NZ";
    case AscendC::DataFormat::NCHW: return "NCHW";
    case AscendC::DataFormat::NC1HWC0: return "NC1HWC0";
    case AscendC::DataFormat::NHWC: return "NHWC";
    case AscendC::DataFormat::NCDHW: return "NCDHW";
    case AscendC::DataFormat::NDC1HWC0: return "NDC1HWC0";
    case AscendC::DataFormat::FRACTAL_Z_3D: return "FRACTAL_Z_3D";
  }
  return "Unknown";
}

template <class Tup, size_t... I>
inline std::vector<int64_t> TdDims(const Tup& t, std::index_sequence<I...>) {
  return {static_cast<int64_t>(std::get<I>(t))...};
}
template <class Tup>
inline std::vector<int64_t> TdDims(const Tup& t) {
  return TdDims(t, std::make_index_sequence<std::tuple_size<Tup>::value>{});
}

inline bool TdOverlap(const void* a, uint64_t an, const void* b, uint64_t bn) {
  const uint8_t* x = static_cast<const uint8_t*>(a);
  const uint8_t* y = static_cast<const uint8_t*>(b);
  return an && bn && x < y + bn && y < x + an;
}

enum class TdKind { ToFz, FromFz, To6hd, From6hd };

template <class T>
inline void TransDataRun(TdKind kind, const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                         const AscendC::LocalTensor<uint8_t>* tmp, const std::vector<int64_t>& nc,
                         const std::vector<int64_t>& other) {
  const char* api = "TransData";
  const int64_t n = nc[0], c = nc[1], d = nc[2], h = nc[3], w = nc[4];
  if (n <= 0 || c <= 0 || d <= 0 || h <= 0 || w <= 0)
    Fail(api, ": the NCDHW shape (", n, ", ", c, ", ", d, ", ", h, ", ", w, ") must be positive");
  const int64_t hw = h * w, padHw = (hw + 15) / 16 * 16, c1 = (c + 15) / 16, n1 = (n + 15) / 16, N = n1 * 16;
  const bool fz = kind == TdKind::ToFz || kind == TdKind::FromFz;
  // The other side's dims against n, c, d, h, w (transdata_check_common.h) and the impl's c0 = n0 = 16.
  if (fz) {
    if (other[0] != d || other[2] != h || other[3] != w)
      Fail(api, ": the layouts' d, h, w differ: (", d, ", ", h, ", ", w, ") / (", other[0], ", ", other[2], ", ",
           other[3], ")");
    if (other[6] != 16 || other[5] != 16)
      Fail(api, ": FRACTAL_Z_3D c0 / n0 are ", other[6], " / ", other[5], "; the implementation uses 16 / 16");
    if (other[1] != c1) Fail(api, ": FRACTAL_Z_3D c1 is ", other[1], "; c1 = (c + c0 - 1) / c0 = ", c1, " for c = ", c);
    if (other[4] != n1) Fail(api, ": FRACTAL_Z_3D n1 is ", other[4], "; n1 = (n + n0 - 1) / n0 = ", n1, " for n = ", n);
  } else {
    if (other[0] != n || other[1] != d || other[3] != h || other[4] != w)
      Fail(api, ": the layouts' n, d, h, w differ: (", n, ", ", d, ", ", h, ", ", w, ") / (", other[0], ", ", other[1],
           ", ", other[3], ", ", other[4], ")");
    if (other[5] != 16) Fail(api, ": NDC1HWC0 c0 is ", other[5], "; the implementation uses 16");
    if (other[2] != c1) Fail(api, ": NDC1HWC0 c1 is ", other[2], "; c1 = (c + c0 - 1) / c0 = ", c1, " for c = ", c);
  }
  const uint64_t ncdhwSize = uint64_t(n * c * d * padHw);
  const uint64_t packedSize = fz ? uint64_t(d * c1 * hw * N * 16) : uint64_t(n * d * c1 * hw * 16);
  const bool srcIsNcdhw = kind == TdKind::ToFz || kind == TdKind::To6hd;
  const uint64_t srcNeed = srcIsNcdhw ? ncdhwSize : packedSize, dstNeed = srcIsNcdhw ? packedSize : ncdhwSize;
  const char* srcFmt = srcIsNcdhw ? "NCDHW" : (fz ? "FRACTAL_Z_3D" : "NDC1HWC0");
  const char* dstFmt = !srcIsNcdhw ? "NCDHW" : (fz ? "FRACTAL_Z_3D" : "NDC1HWC0");
  if (src.GetSize() < srcNeed)
    Fail(api, ": srcTensor (", srcFmt, ") holds ", src.GetSize(), " elements; ", srcNeed, " are needed");
  if (dst.GetSize() < dstNeed)
    Fail(api, ": dstTensor (", dstFmt, ") holds ", dst.GetSize(), " elements; ", dstNeed, " are needed");
  CheckUbAlign(api, "srcTensor", src.addr_);
  CheckUbAlign(api, "dstTensor", dst.addr_);
  CheckUbRange(api, "srcTensor", src.buf_, src.addr_, src.addr_ + srcNeed);
  CheckUbRange(api, "dstTensor", dst.buf_, dst.addr_, dst.addr_ + dstNeed);
  // TransDataTo5HD repeat counts of the impl's steps.
  std::vector<int64_t> reps;
  if (kind == TdKind::ToFz) reps = {c * d * padHw / 16, d * hw * N / 16};
  if (kind == TdKind::FromFz) reps = {d * padHw * n1, c * d * padHw / 16};
  if (kind == TdKind::To6hd || kind == TdKind::From6hd) reps = {d * padHw / 16};
  for (int64_t r : reps)
    if (r > 255)
      Fail(api, ": this shape needs a TransDataTo5HD of ", r, " repeats; the instruction takes at most 255 (split ",
           "the call over smaller shapes)");
  // Tmp bytes: GetTransDataMaxMinTmpSize's.
  uint64_t tmpNeed = 0;
  if (kind == TdKind::To6hd) tmpNeed = uint64_t(d * padHw * 2 + d * c1 * 16 * padHw * 2);
  if (kind == TdKind::From6hd) tmpNeed = uint64_t(d * c1 * 16 * padHw * 2 + 512);
  if (kind == TdKind::ToFz)
    tmpNeed = uint64_t(std::max(c * d * padHw * 2, d * hw * N * 2) + N * d * c1 * 16 * padHw * 2);
  if (kind == TdKind::FromFz) tmpNeed = uint64_t(N * c1 * 16 * d * padHw * 2 * ((n == N && c == c1 * 16) ? 1 : 2));
  uint8_t* tmpBase = nullptr;
  if (tmp != nullptr) {
    CheckUbAlign(api, "sharedTmpBuffer", tmp->addr_);
    if (tmp->GetSize() < tmpNeed)
      Fail(api, ": sharedTmpBuffer holds ", tmp->GetSize(), " B; ", tmpNeed, " B are needed (GetTransDataMaxMinTmpSize)");
    CheckUbRange(api, "sharedTmpBuffer", tmp->buf_, tmp->addr_, tmp->addr_ + tmpNeed);
    tmpBase = tmp->addr_;
  } else {
    Runtime& rt = RT();
    if (rt.current_pipe == nullptr)
      Fail(api, ": the form without sharedTmpBuffer takes the TPipe's stack buffer, but no TPipe exists in this block");
    const uint64_t used = (uint64_t{rt.current_pipe->UsedBytes()} + 31) / 32 * 32;
    const uint64_t have = rt.ub_bytes > used + 64 ? rt.ub_bytes - 64 - used : 0;
    if (have < tmpNeed)
      Fail(api, ": the stack buffer (the UB the TPipe left) holds ", have, " B; ", tmpNeed,
           " B are needed (GetTransDataMaxMinTmpSize)");
    tmpBase = rt.ub + used;
  }
  if (TdOverlap(dst.addr_, dstNeed * 2, src.addr_, srcNeed * 2))
    Fail(api, ": dstTensor overlaps srcTensor in UB; TransData needs separate buffers");
  if (TdOverlap(tmpBase, tmpNeed, src.addr_, srcNeed * 2) || TdOverlap(tmpBase, tmpNeed, dst.addr_, dstNeed * 2))
    Fail(api, ": the tmp buffer overlaps srcTensor or dstTensor in UB");

  const T* s = src.addr_;
  T* o = dst.addr_;
  const T zero = T(0);
  if (kind == TdKind::ToFz) {
    for (int64_t di = 0; di < d; ++di)
      for (int64_t ci = 0; ci < c1 * 16; ++ci)
        for (int64_t p = 0; p < hw; ++p)
          for (int64_t ni = 0; ni < N; ++ni)
            o[(((di * c1 + ci / 16) * hw + p) * N + ni) * 16 + ci % 16] =
                (ni < n && ci < c) ? s[((ni * c + ci) * d + di) * padHw + p] : zero;
  } else if (kind == TdKind::FromFz) {
    for (int64_t ni = 0; ni < n; ++ni)
      for (int64_t ci = 0; ci < c; ++ci)
        for (int64_t di = 0; di < d; ++di)
          for (int64_t p = 0; p < padHw; ++p)
            o[((ni * c + ci) * d + di) * padHw + p] =
                p < hw ? s[(((di * c1 + ci / 16) * hw + p) * N + ni) * 16 + ci % 16] : zero;
  } else if (kind == TdKind::To6hd) {
    for (int64_t ni = 0; ni < n; ++ni)
      for (int64_t di = 0; di < d; ++di)
        for (int64_t ci = 0; ci < c1 * 16; ++ci)
          for (int64_t p = 0; p < hw; ++p)
            o[(((ni * d + di) * c1 + ci / 16) * hw + p) * 16 + ci % 16] =
                ci < c ? s[((ni * c + ci) * d + di) * padHw + p] : zero;
  } else {
    // The impl per n: stage DC1HWC0 as C1[d][padHw]C0 at tmp + 512 B (the padHw tail slots are not written), then
    // per c1 group TransDataTo5HD repeats of 16 x 16 blocks: rows of real channels to dst, the group's redundant
    // channel rows (c % 16 != 0) to tmp + i * 32 B + r * 32 B.
    T* stage = reinterpret_cast<T*>(tmpBase + 512);
    const int64_t R = d * padHw / 16;
    T blk[16][16];
    for (int64_t k = 0; k < n; ++k) {
      for (int64_t ci1 = 0; ci1 < c1; ++ci1)
        for (int64_t di = 0; di < d; ++di)
          std::memcpy(stage + ((ci1 * d + di) * padHw) * 16, s + (((k * d + di) * c1 + ci1) * hw) * 16,
                      size_t(hw * 16) * sizeof(T));
      for (int64_t j = 0; j < c1; ++j) {
        const int64_t remain = j == c1 - 1 ? c - j * 16 : 16;
        const T* g = stage + j * d * padHw * 16;
        for (int64_t r = 0; r < R; ++r) {
          for (int i = 0; i < 16; ++i)
            for (int q = 0; q < 16; ++q) blk[i][q] = g[(r * 16 + q) * 16 + i];
          for (int i = 0; i < 16; ++i) {
            T* row = i < remain ? o + ((k * c + j * 16 + i) * d * padHw + r * 16)
                                : reinterpret_cast<T*>(tmpBase + i * 32 + r * 32);
            std::memcpy(row, blk[i], sizeof(blk[i]));
          }
        }
      }
    }
  }
  uint64_t repeats = 0;
  for (int64_t r : reps) repeats += uint64_t(r);
  EndAdvancedApi(api, tmp != nullptr ? tmpBase : nullptr, tmp != nullptr ? tmpNeed : 0, repeats * (c1 + n1));
}

template <const AscendC::TransDataConfig& config, class T, class U, class S>
inline void TransDataImpl(const AscendC::LocalTensor<T>& dst, const AscendC::LocalTensor<T>& src,
                          const AscendC::LocalTensor<uint8_t>* tmp, const AscendC::TransDataParams<U, S>& params) {
  static_assert(kOneOf<T, half, bfloat16_t, uint16_t, int16_t>,
                "TransData: Current only supports half/bfloat16_t/uint16_t/int16_t types.");
  static_assert(AscendC::is_layout_v<U>, "TransData: srcLayout must be a layout");
  static_assert(AscendC::is_layout_v<S>, "TransData: dstLayout must be a layout");
  using AscendC::DataFormat;
  constexpr DataFormat sf = config.srcFormat, df = config.dstFormat;
  constexpr size_t sd = std::tuple_size<std::decay_t<decltype(params.srcLayout.GetShape())>>::value;
  constexpr size_t dd = std::tuple_size<std::decay_t<decltype(params.dstLayout.GetShape())>>::value;
  const std::vector<int64_t> sdims = TdDims(params.srcLayout.GetShape());
  const std::vector<int64_t> ddims = TdDims(params.dstLayout.GetShape());
  if constexpr (sf == DataFormat::NCDHW && df == DataFormat::FRACTAL_Z_3D) {
    static_assert(sd == 5, "TransData: srcLayout's shape dims must be equal to 5!");
    static_assert(dd == 7, "TransData: dstLayout's shape dims must be equal to 7!");
    TransDataRun(TdKind::ToFz, dst, src, tmp, sdims, ddims);
  } else if constexpr (sf == DataFormat::FRACTAL_Z_3D && df == DataFormat::NCDHW) {
    static_assert(sd == 7, "TransData: srcLayout's shape dims must be equal to 7!");
    static_assert(dd == 5, "TransData: dstLayout's shape dims must be equal to 5!");
    TransDataRun(TdKind::FromFz, dst, src, tmp, ddims, sdims);
  } else if constexpr (sf == DataFormat::NCDHW && df == DataFormat::NDC1HWC0) {
    static_assert(sd == 5, "TransData: srcLayout's shape dims must be equal to 5!");
    static_assert(dd == 6, "TransData: dstLayout's shape dims must be equal to 6!");
    TransDataRun(TdKind::To6hd, dst, src, tmp, sdims, ddims);
  } else if constexpr (sf == DataFormat::NDC1HWC0 && df == DataFormat::NCDHW) {
    static_assert(sd == 6, "TransData: srcLayout's shape dims must be equal to 6!");
    static_assert(dd == 5, "TransData: dstLayout's shape dims must be equal to 5!");
    TransDataRun(TdKind::From6hd, dst, src, tmp, ddims, sdims);
  } else {
    Fail("TransData: the config srcFormat/dstFormat is (", TdFormatName(sf), ", ", TdFormatName(df),
         "), expect (NCDHW, FRACTAL_Z_3D)/(FRACTAL_Z_3D, NCDHW)/(NCDHW, NDC1HWC0)/(NDC1HWC0, NCDHW)");
  }
}
}  // namespace trex_emu

namespace AscendC {
template <const TransDataConfig& config, typename T, typename U, typename S>
inline void TransData(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const LocalTensor<uint8_t>& sharedTmpBuffer, const TransDataParams<U, S>& params) {
  trex_emu::TransDataImpl<config>(dstTensor, srcTensor, &sharedTmpBuffer, params);
}
template <const TransDataConfig& config, typename T, typename U, typename S>
inline void TransData(const LocalTensor<T>& dstTensor, const LocalTensor<T>& srcTensor,
                      const TransDataParams<U, S>& params) {
  trex_emu::TransDataImpl<config>(dstTensor, srcTensor, static_cast<const LocalTensor<uint8_t>*>(nullptr), params);
}
}  // namespace AscendC
