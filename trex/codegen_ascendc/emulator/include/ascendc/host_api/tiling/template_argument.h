// ascendc/host_api/tiling/template_argument.h — CANN's Tiling template programming (ASCENDC_TPL_*),
// for both halves of an op project: op_host code includes it (through the op's tiling-key header) for
// ASCENDC_TPL_SEL_PARAM / GET_TPL_TILING_KEY, the kernel for the template-parameter combinations its
// template kernel is instantiated with.
//
// Semantics from asc-devkit docs/zh/api/Utils-API/Tiling模板编程/ (模板参数定义.md, GET_TPL_TILING_KEY.md,
// ASCENDC_TPL_SEL_PARAM.md), the guide's 多分支策略.md and the encoder asc-devkit ships
// (impl/utils/tiling/template_argument.cpp, EncodeTilingKey):
//  * ASCENDC_TPL_ARGS_DECL(op, params...) declares the template parameters in kernel order; DTYPE and
//    FORMAT take 8 bits of the tiling key (the ge:: enum value), BOOL 1 bit, UINT the declared width
//    (the value's index in the declared list, RANGE/LIST/MIX expanded).
//  * ASCENDC_TPL_SEL(ASCENDC_TPL_ARGS_SEL(...), ...) lists the combinations that are compiled: the cartesian
//    product of each ARGS_SEL's value lists. ASCENDC_TPL_SEL_PARAM(context, v...) encodes the values (kernel
//    order) into the tiling key and sets it; values outside every combination are an error (the encoder's
//    CheckParamValid; here the tiling function throws with the reason instead of returning an invalid key).
//  * The kernel, `template <typename D_T_X, ..., int TILE_NUM, int IS_SPLIT> __global__ void k(...)`, gets
//    each DTYPE as its C++ type (C_DT_FLOAT16 -> half) and every other parameter as its value. CANN's
//    kernel build instantiates every combination and runs the one whose key the host set; the runner's
//    generated entry point does the same (trex_tpl::Dispatch) and reports a key no combination has.
// The tables are constexpr data, so the kernel side enumerates the combinations at compile time.
#pragma once
#ifndef TREX_TPL_TEMPLATE_ARGUMENT_H
#define TREX_TPL_TEMPLATE_ARGUMENT_H
#define TREX_TPL_HEADER 1

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#define ASCENDC_TPL_AIV_ONLY 0
#define ASCENDC_TPL_AIC_ONLY 1
#define ASCENDC_TPL_MIX_AIV_1_0 4
#define ASCENDC_TPL_MIX_AIC_1_0 5
#define ASCENDC_TPL_MIX_AIC_1_1 6
#define ASCENDC_TPL_MIX_AIC_1_2 7
#define ASCENDC_TPL_AICORE 8
#define ASCENDC_TPL_VECTORCORE 9
#define ASCENDC_TPL_MIX_AICORE 10
#define ASCENDC_TPL_MIX_VECTOR_CORE 11
#define ASCENDC_TPL_1_BW 1
#define ASCENDC_TPL_2_BW 2
#define ASCENDC_TPL_4_BW 4
#define ASCENDC_TPL_8_BW 8
#define ASCENDC_TPL_DTYPE 0
#define ASCENDC_TPL_FORMAT 1
#define ASCENDC_TPL_UINT 2
#define ASCENDC_TPL_BOOL 3
#define ASCENDC_TPL_INPUT_BIAS 100000000
#define ASCENDC_TPL_OUTPUT_BIAS 900000000
#define ASCENDC_TPL_INPUT(x) (ASCENDC_TPL_INPUT_BIAS + (x))
#define ASCENDC_TPL_OUTPUT(x) (ASCENDC_TPL_OUTPUT_BIAS + (x))
#define ASCENDC_TPL_UI_RANGE 0
#define ASCENDC_TPL_UI_LIST 1
#define ASCENDC_TPL_UI_MIX 2
constexpr uint32_t ASCENDC_TPL_KERNEL_TYPE = 4;
constexpr uint32_t ASCENDC_TPL_DETERMINISTIC = 5;
constexpr uint32_t ASCENDC_TPL_SHARED_KERNEL_TYPE = 6;
constexpr uint64_t INVALID_TILING_KEY = 0XFFFFFFFFFFFFFFFF;

// The native data types and formats the DECL/SEL macros name: ge::DataType / ge::Format numbering
// (CANN graph/types.h), which is what the host passes (static_cast<uint32_t>(desc->GetDataType())).
enum : uint32_t {
  C_DT_FLOAT = 0, C_DT_FLOAT16 = 1, C_DT_INT8 = 2, C_DT_INT32 = 3, C_DT_UINT8 = 4, C_DT_INT16 = 6,
  C_DT_UINT16 = 7, C_DT_UINT32 = 8, C_DT_INT64 = 9, C_DT_UINT64 = 10, C_DT_DOUBLE = 11, C_DT_BOOL = 12,
  C_DT_COMPLEX64 = 16, C_DT_BF16 = 27,
};
enum : uint32_t {
  C_FORMAT_NCHW = 0, C_FORMAT_NHWC = 1, C_FORMAT_ND = 2, C_FORMAT_NC1HWC0 = 3, C_FORMAT_FRACTAL_Z = 4,
  C_FORMAT_HWCN = 16, C_FORMAT_NDHWC = 27, C_FORMAT_FRACTAL_NZ = 29, C_FORMAT_NCDHW = 30, C_FORMAT_DHWCN = 31,
  C_FORMAT_NDC1HWC0 = 32, C_FORMAT_CN = 34, C_FORMAT_NC = 35,
};

namespace trex_tpl {
constexpr uint32_t kMaxVals = 256;   // values of one parameter after RANGE expansion (8-bit UINT: 256)
constexpr uint32_t kMaxParams = 16;  // parameters of one ASCENDC_TPL_ARGS_SEL
constexpr uint32_t kNotAParam = 99;  // ASCENDC_TPL_TILING_STRUCT_SEL: not a kernel template parameter

struct Param {
  const char* name = "";
  uint32_t type = 0;
  uint8_t bw = 0;
  uint32_t n = 0;
  uint64_t vals[kMaxVals] = {};
};

// UINT value lists start with the mode: LIST v...; RANGE k (lo hi)*k; MIX k (lo hi)*k v... (模板参数定义.md).
constexpr Param MakeParam(const char* name, uint32_t type, uint8_t bw, std::initializer_list<uint64_t> raw) {
  Param p;
  p.name = name;
  p.type = type;
  p.bw = bw;
  const uint64_t* r = raw.begin();
  const size_t n = raw.size();
  auto add = [&p](uint64_t v) {
    if (p.n >= kMaxVals) throw "ASCENDC_TPL_*: more than 256 values for one parameter";
    p.vals[p.n++] = v;
  };
  if (type != ASCENDC_TPL_UINT) {
    for (size_t i = 0; i < n; ++i) add(r[i]);
    return p;
  }
  if (n < 2) throw "ASCENDC_TPL_UINT_*: needs a mode (ASCENDC_TPL_UI_LIST/RANGE/MIX) and values";
  if (r[0] == ASCENDC_TPL_UI_LIST) {
    for (size_t i = 1; i < n; ++i) add(r[i]);
    return p;
  }
  const size_t ranges = r[1];
  if (2 + 2 * ranges > n) throw "ASCENDC_TPL_UINT_*: fewer range bounds than the declared range count";
  for (size_t k = 0; k < ranges; ++k)
    for (uint64_t v = r[2 + 2 * k]; v <= r[3 + 2 * k]; ++v) add(v);
  if (r[0] == ASCENDC_TPL_UI_MIX)
    for (size_t i = 2 + 2 * ranges; i < n; ++i) add(r[i]);
  return p;
}

struct Combo {
  uint32_t n = 0;
  Param params[kMaxParams] = {};
};
constexpr Combo MakeCombo(std::initializer_list<Param> ps) {
  Combo c;
  for (const Param& p : ps) {
    if (c.n >= kMaxParams) throw "ASCENDC_TPL_ARGS_SEL: more than 16 parameters";
    c.params[c.n++] = p;
  }
  return c;
}

constexpr bool StrEq(const char* a, const char* b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}
// The ARGS_SEL entry for a declared parameter (matched by name, as the encoder does), or null.
constexpr const Param* SelFor(const Combo& c, const Param& decl) {
  for (uint32_t i = 0; i < c.n; ++i)
    if (c.params[i].type < ASCENDC_TPL_KERNEL_TYPE || c.params[i].type == ASCENDC_TPL_SHARED_KERNEL_TYPE)
      if (StrEq(c.params[i].name, decl.name)) return &c.params[i];
  return nullptr;
}
template <size_t ND>
constexpr uint64_t CombosIn(const Param (&decl)[ND], const Combo& c) {
  uint64_t count = 1;
  for (size_t i = 0; i < ND; ++i) {
    const Param* s = SelFor(c, decl[i]);
    count *= s ? s->n : 0;
  }
  return count;
}
template <size_t ND, size_t NS>
constexpr uint64_t NumCombos(const Param (&decl)[ND], const Combo (&sel)[NS]) {
  uint64_t total = 0;
  for (size_t c = 0; c < NS; ++c) total += CombosIn(decl, sel[c]);
  return total;
}
// Value of declared parameter `i` in combination `k` (combinations numbered through the ARGS_SELs in
// order, each a mixed-radix count over its parameters, the first declared fastest).
template <size_t ND, size_t NS>
constexpr uint64_t Value(const Param (&decl)[ND], const Combo (&sel)[NS], uint64_t k, size_t i) {
  for (size_t c = 0; c < NS; ++c) {
    const uint64_t count = CombosIn(decl, sel[c]);
    if (k >= count) {
      k -= count;
      continue;
    }
    for (size_t j = 0; j < i; ++j) k /= SelFor(sel[c], decl[j])->n;
    const Param* s = SelFor(sel[c], decl[i]);
    return s->vals[k % s->n];
  }
  throw "trex_tpl::Value: combination index out of range";
}

// The encoder's bit layout (EncodeTilingKey): parameters in declaration order from bit 0; DTYPE,
// FORMAT, BOOL and kernel type encode their value, UINT its index in the declared list. Returns an
// empty string and the key, or the reason the values cannot be encoded.
template <size_t ND>
inline std::string EncodeChecked(const Param (&decl)[ND], const uint64_t* v, size_t nv, uint64_t& key) {
  key = 0;
  if (nv != ND)
    return "GET_TPL_TILING_KEY got " + std::to_string(nv) + " values but ASCENDC_TPL_ARGS_DECL declares " +
           std::to_string(ND) + " parameters (pass one per parameter, in declaration order)";
  uint32_t bits = 0;
  for (size_t i = 0; i < ND; ++i) {
    const Param& d = decl[i];
    uint64_t code = v[i];
    bool bound_to_tensor = false;  // ASCENDC_TPL_INPUT(x)/OUTPUT(x): the dtype follows that tensor's
    bool declared = false;
    for (uint32_t j = 0; j < d.n; ++j) {
      bound_to_tensor |= d.vals[j] >= ASCENDC_TPL_INPUT_BIAS;
      if (d.vals[j] == v[i]) {
        declared = true;
        if (d.type == ASCENDC_TPL_UINT) code = j;
        break;
      }
    }
    if (!declared && !bound_to_tensor)
      return std::string("value ") + std::to_string(v[i]) + " of template parameter " + d.name +
             " is not among its ASCENDC_TPL_*_DECL values";
    if (d.bw < 64 && code >> d.bw)
      return std::string("template parameter ") + d.name + " encodes to " + std::to_string(code) +
             ", which does not fit its " + std::to_string(d.bw) + "-bit field";
    key |= code << bits;
    bits += d.bw;
  }
  if (bits > 64) return "the ASCENDC_TPL_ARGS_DECL fields take " + std::to_string(bits) + " bits, more than a 64-bit tiling key";
  return std::string();
}

template <size_t ND, size_t NS>
constexpr bool InSelection(const Param (&decl)[ND], const Combo (&sel)[NS], const uint64_t* v) {
  for (size_t c = 0; c < NS; ++c) {
    bool all = true;
    for (size_t i = 0; i < ND && all; ++i) {
      const Param* s = SelFor(sel[c], decl[i]);
      bool hit = false;
      for (uint32_t j = 0; s && j < s->n && !hit; ++j) hit = s->vals[j] == v[i];
      all = hit;
    }
    if (all) return true;
  }
  return false;
}

struct SelectError : std::exception {
  std::string msg;
  explicit SelectError(std::string m) : msg(std::move(m)) {}
  const char* what() const noexcept override { return msg.c_str(); }
};

// GET_TPL_TILING_KEY: the key for these values, after the checks of asc-devkit's EncodeTilingKey (each
// value declared, the combination covered by an ASCENDC_TPL_ARGS_SEL); a failed check throws, so the
// tiling function fails naming the reason instead of launching an invalid key.
template <size_t ND, size_t NS>
inline uint64_t EncodeTilingKey(const Param (&decl)[ND], const Combo (&sel)[NS], std::initializer_list<uint64_t> vals) {
  uint64_t key = 0;
  std::string err = EncodeChecked(decl, vals.begin(), vals.size(), key);
  if (err.empty() && !InSelection(decl, sel, vals.begin())) {
    err = "GET_TPL_TILING_KEY(";
    for (size_t i = 0; i < vals.size(); ++i) err += (i ? ", " : "") + std::to_string(vals.begin()[i]);
    err += "): no ASCENDC_TPL_ARGS_SEL of ASCENDC_TPL_SEL covers this combination, so no kernel is compiled for it";
  }
  if (!err.empty()) throw SelectError("ASCENDC_TPL_SEL_PARAM: " + err);
  return key;
}

template <size_t ND, size_t NS>
inline uint64_t ComboKey(const Param (&decl)[ND], const Combo (&sel)[NS], uint64_t k) {
  uint64_t v[ND > 0 ? ND : 1] = {};
  for (size_t i = 0; i < ND; ++i) v[i] = Value(decl, sel, k, i);
  uint64_t key = 0;
  const std::string err = EncodeChecked(decl, v, ND, key);
  return err.empty() ? key : INVALID_TILING_KEY;
}
}  // namespace trex_tpl

#define ASCENDC_TPL_DTYPE_DECL(x, ...) ::trex_tpl::MakeParam(#x, ASCENDC_TPL_DTYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__})
#define ASCENDC_TPL_DATATYPE_DECL(x, ...) ::trex_tpl::MakeParam(#x, ASCENDC_TPL_DTYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__})
#define ASCENDC_TPL_FORMAT_DECL(x, ...) ::trex_tpl::MakeParam(#x, ASCENDC_TPL_FORMAT, ASCENDC_TPL_8_BW, {__VA_ARGS__})
#define ASCENDC_TPL_UINT_DECL(x, bw, ...) ::trex_tpl::MakeParam(#x, ASCENDC_TPL_UINT, bw, {__VA_ARGS__})
#define ASCENDC_TPL_BOOL_DECL(x, ...) ::trex_tpl::MakeParam(#x, ASCENDC_TPL_BOOL, ASCENDC_TPL_1_BW, {__VA_ARGS__})
#define ASCENDC_TPL_KERNEL_TYPE_DECL(x, ...) \
  ::trex_tpl::MakeParam(#x, ASCENDC_TPL_SHARED_KERNEL_TYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__})
#define ASCENDC_TPL_DTYPE_SEL(x, ...) ::trex_tpl::MakeParam(#x, ASCENDC_TPL_DTYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__})
#define ASCENDC_TPL_DATATYPE_SEL(x, ...) ::trex_tpl::MakeParam(#x, ASCENDC_TPL_DTYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__})
#define ASCENDC_TPL_FORMAT_SEL(x, ...) ::trex_tpl::MakeParam(#x, ASCENDC_TPL_FORMAT, ASCENDC_TPL_8_BW, {__VA_ARGS__})
#define ASCENDC_TPL_UINT_SEL(x, ...) ::trex_tpl::MakeParam(#x, ASCENDC_TPL_UINT, 0, {__VA_ARGS__})
#define ASCENDC_TPL_BOOL_SEL(x, ...) ::trex_tpl::MakeParam(#x, ASCENDC_TPL_BOOL, ASCENDC_TPL_1_BW, {__VA_ARGS__})
#define ASCENDC_TPL_TILING_STRUCT_SEL(x, ...) ::trex_tpl::MakeParam(#x, ::trex_tpl::kNotAParam, 0, {})
#define ASCENDC_TPL_KERNEL_TYPE_SEL(...) \
  ::trex_tpl::MakeParam("kernel_type", ASCENDC_TPL_KERNEL_TYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__})
#define ASCENDC_TPL_DETERMINISTIC_SEL(...) \
  ::trex_tpl::MakeParam("deterministic", ASCENDC_TPL_DETERMINISTIC, ASCENDC_TPL_1_BW, {__VA_ARGS__})
#define ASCENDC_TPL_SHARED_KERNEL_TYPE_SEL(x, ...) \
  ::trex_tpl::MakeParam(#x, ASCENDC_TPL_SHARED_KERNEL_TYPE, ASCENDC_TPL_8_BW, {__VA_ARGS__})
// One declaration table and one selection per translation unit (CANN: g_tilingDeclareParams /
// g_tilingSelectParams); constexpr, so the kernel side can instantiate every combination.
#define ASCENDC_TPL_ARGS_DECL(x, ...) constexpr ::trex_tpl::Param trex_tpl_decl[] = {__VA_ARGS__}
#define ASCENDC_TPL_ARGS_SEL(...) ::trex_tpl::MakeCombo({__VA_ARGS__})
#define ASCENDC_TPL_SEL(...) constexpr ::trex_tpl::Combo trex_tpl_sel[] = {__VA_ARGS__}

#define GET_TPL_TILING_KEY(...) ::trex_tpl::EncodeTilingKey(trex_tpl_decl, trex_tpl_sel, {__VA_ARGS__})
#define ASCENDC_TPL_SEL_PARAM(context, ...)          \
  do {                                               \
    uint64_t trex_tpl_key = GET_TPL_TILING_KEY(__VA_ARGS__); \
    (context)->SetTilingKey(trex_tpl_key);           \
  } while (0)

// Kernel side: DTYPE template arguments as C++ types, and the dispatch the runner's entry point uses.
#ifdef TREX_EMU_KERNEL_OPERATOR_H
namespace trex_tpl {
template <uint64_t Id> struct TypeFromId { using type = void; };
template <> struct TypeFromId<C_DT_FLOAT> { using type = float; };
template <> struct TypeFromId<C_DT_FLOAT16> { using type = half; };
template <> struct TypeFromId<C_DT_BF16> { using type = bfloat16_t; };
template <> struct TypeFromId<C_DT_INT8> { using type = int8_t; };
template <> struct TypeFromId<C_DT_UINT8> { using type = uint8_t; };
template <> struct TypeFromId<C_DT_INT16> { using type = int16_t; };
template <> struct TypeFromId<C_DT_UINT16> { using type = uint16_t; };
template <> struct TypeFromId<C_DT_INT32> { using type = int32_t; };
template <> struct TypeFromId<C_DT_UINT32> { using type = uint32_t; };
template <> struct TypeFromId<C_DT_INT64> { using type = int64_t; };
template <> struct TypeFromId<C_DT_UINT64> { using type = uint64_t; };
template <> struct TypeFromId<C_DT_DOUBLE> { using type = double; };
template <> struct TypeFromId<C_DT_BOOL> { using type = bool; };
template <uint64_t Id>
using DType = typename TypeFromId<Id>::type;

// Runs the instantiation whose key is the launch's tiling key (RT().tiling_key); `run` is called with
// std::integral_constant<uint64_t, k> for combination k. A key no combination has raises: on the NPU no
// kernel binary exists for it.
template <uint64_t N, size_t ND, size_t NS, class F, uint64_t... Ks>
inline bool DispatchIn(const Param (&decl)[ND], const Combo (&sel)[NS], uint64_t key, F& run,
                       std::integer_sequence<uint64_t, Ks...>) {
  return ((ComboKey(decl, sel, Ks) == key ? (run(std::integral_constant<uint64_t, Ks>{}), true) : false) || ...);
}
template <uint64_t N, size_t ND, size_t NS, class F>
inline void Dispatch(const char* kernel, const Param (&decl)[ND], const Combo (&sel)[NS], F&& run) {
  const uint64_t key = ::trex_emu::RT().tiling_key;
  if (DispatchIn<N>(decl, sel, key, run, std::make_integer_sequence<uint64_t, N>{})) return;
  std::string keys;
  for (uint64_t k = 0; k < N && k < 32; ++k) keys += (k ? ", " : "") + std::to_string(ComboKey(decl, sel, k));
  ::trex_emu::Fail(kernel, ": tiling key ", key, " is none of the ", N, " template instances ASCENDC_TPL_SEL declares (keys ",
                   keys, N > 32 ? ", ..." : "", "); set it with ASCENDC_TPL_SEL_PARAM or GET_TPL_TILING_KEY");
}
}  // namespace trex_tpl
#endif

#endif  // TREX_TPL_TEMPLATE_ARGUMENT_H
