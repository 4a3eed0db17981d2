// register/op_def_registry.h — CANN's op definition (ops::OpDef, OP_ADD) as op_host code uses it.
// OP_ADD(Name) registers the op at load time; the runner reads its inputs, outputs and attributes
// (names, dtype lists, attribute defaults) and calls the tiling function AICore().SetTiling(...) set.
#pragma once
#include <cstdio>
#include <initializer_list>

#include "graph/operator.h"  // CANN's op_def_registry.h brings ge::Operator in (graph infer helpers)
#include "register/tilingdata_base.h"
#include "trex_host/ge_types.h"

namespace AscendC {}  // op_host code writes `using namespace AscendC;`

namespace ops {
enum Option { REQUIRED = 0, OPTIONAL = 1, DYNAMIC = 2, IGNORE = 3 };
enum class ItemFindStatus { ITEM_FIND = 0, ITEM_NOEXIST = 1 };
// Which stage reads a value-dependent input: ALL (tiling and infer) or TILING only ("tiling sink").
// The emulator hands every tiling function its inputs' host data either way.
enum class DependScope : uint32_t { ALL = 0, TILING = 1, INVALID_SCOPE };

// InitValue's scalar (asc-devkit OpParamDef/InitValue.md: ScalarType, ScalarNum, ScalarVar).
enum class ScalarType : uint32_t {
  UINT64 = 0, INT64 = 1, UINT32 = 2, INT32 = 3, UINT16 = 4, INT16 = 5, UINT8 = 6, INT8 = 7, FLOAT32 = 8,
  FLOAT16 = 9, INVALID_DTYPE = static_cast<uint32_t>(-1),
};
union ScalarNum {
  uint64_t value_u64;
  int64_t value_i64;
  float value_f32;
  ScalarNum() : value_u64(0) {}
  explicit ScalarNum(uint64_t value) : value_u64(value) {}
  explicit ScalarNum(int64_t value) : value_i64(value) {}
  explicit ScalarNum(float value) : value_f32(value) {}
};
struct ScalarVar {
  ScalarType scalar_type = ScalarType::INVALID_DTYPE;
  ScalarNum scalar_num;
  // Each constructor stores the number in the union member of the type's kind (value_f32 for FLOAT32/FLOAT16,
  // value_u64 for the unsigned types, value_i64 for the signed), so {ScalarType::FLOAT16, 3} is 3.0.
  ScalarVar() = default;
  ScalarVar(ScalarType type, uint64_t num) : scalar_type(type), scalar_num(Store(type, num)) {}
  ScalarVar(ScalarType type, int64_t num) : scalar_type(type), scalar_num(Store(type, num)) {}
  ScalarVar(ScalarType type, int num) : scalar_type(type), scalar_num(Store(type, num)) {}
  ScalarVar(ScalarType type, unsigned int num) : scalar_type(type), scalar_num(Store(type, num)) {}
  ScalarVar(ScalarType type, float num) : scalar_type(type), scalar_num(Store(type, num)) {}
  ScalarVar(ScalarType type, double num) : scalar_type(type), scalar_num(Store(type, num)) {}
  bool operator==(const ScalarVar& other) const {
    return scalar_type == other.scalar_type && scalar_num.value_u64 == other.scalar_num.value_u64;
  }
  static bool IsFloat(ScalarType t) { return t == ScalarType::FLOAT32 || t == ScalarType::FLOAT16; }
  static bool IsUnsigned(ScalarType t) {
    return t == ScalarType::UINT64 || t == ScalarType::UINT32 || t == ScalarType::UINT16 || t == ScalarType::UINT8;
  }
  template <class N>
  static ScalarNum Store(ScalarType t, N num) {
    if (IsFloat(t)) return ScalarNum(static_cast<float>(num));
    if (IsUnsigned(t)) return ScalarNum(static_cast<uint64_t>(num));
    return ScalarNum(static_cast<int64_t>(num));
  }
  // The value as text for the runner: "u 5", "i -3" or "f 0.5" by the type's kind.
  std::string Text() const {
    switch (scalar_type) {
      case ScalarType::FLOAT32: case ScalarType::FLOAT16: {
        char text[48];
        std::snprintf(text, sizeof(text), "f %.9g", scalar_num.value_f32);  // round-trips a float
        return text;
      }
      case ScalarType::UINT64: case ScalarType::UINT32: case ScalarType::UINT16: case ScalarType::UINT8:
        return "u " + std::to_string(scalar_num.value_u64);
      case ScalarType::INVALID_DTYPE: return "invalid";
      default: return "i " + std::to_string(scalar_num.value_i64);
    }
  }
};

class OpParamDef {
 public:
  explicit OpParamDef(const char* name) : name(name) {}
  OpParamDef& ParamType(Option o) { param_type = o; return *this; }
  OpParamDef& DataType(std::vector<ge::DataType> d) { dtypes = std::move(d); return *this; }
  OpParamDef& DataTypeList(std::vector<ge::DataType> d) { dtypes = std::move(d); return *this; }
  OpParamDef& Format(std::vector<ge::Format>) { return *this; }
  OpParamDef& FormatList(std::vector<ge::Format>) { return *this; }
  OpParamDef& UnknownShapeFormat(std::vector<ge::Format>) { return *this; }
  OpParamDef& ValueDepend(Option) { return *this; }
  OpParamDef& ValueDepend(Option, int) { return *this; }
  OpParamDef& ValueDepend(Option, DependScope) { return *this; }
  OpParamDef& IgnoreContiguous() { return *this; }
  OpParamDef& AutoContiguous() { return *this; }
  OpParamDef& Scalar() { return *this; }
  OpParamDef& ScalarList() { return *this; }
  OpParamDef& To(ge::DataType) { return *this; }
  OpParamDef& To(const char*) { return *this; }
  // The output's GM initial value, set before the kernel runs when the tiling function calls
  // SetNeedAtomic(true) (asc-devkit OpParamDef/InitValue.md): uint64_t takes only 0 (zero the output);
  // a ScalarVar gives one value; a list, one value per DataType entry.
  OpParamDef& InitValue(uint64_t v) { init_values = {ScalarVar(ScalarType::UINT64, v)}; init_zero_form = true; return *this; }
  OpParamDef& InitValue(const ScalarVar& v) { init_values = {v}; init_zero_form = false; return *this; }
  OpParamDef& InitValue(const std::vector<ScalarVar>& v) { init_values = v; init_zero_form = false; return *this; }
  OpParamDef& OutputShapeDependOnCompute() { return *this; }
  OpParamDef& Follow(const char*) { return *this; }
  std::string name;
  Option param_type = REQUIRED;
  std::vector<ge::DataType> dtypes;
  std::vector<ScalarVar> init_values;  // empty: no InitValue
  bool init_zero_form = false;         // set by InitValue(uint64_t)
};

class OpAttrDef {
 public:
  explicit OpAttrDef(const char* name) : name(name) {}
  OpAttrDef& AttrType(Option o) { attr_type = o; return *this; }
  OpAttrDef& Bool(bool v = false) { kind = "bool"; value.b = v; return *this; }
  OpAttrDef& Float(float v = 0.f) { kind = "float"; value.f = v; return *this; }
  OpAttrDef& Int(int64_t v = 0) { kind = "int"; value.i = v; return *this; }
  OpAttrDef& String(const char* v = "") { kind = "str"; value.s = v; return *this; }
  OpAttrDef& ListBool(std::vector<bool> = {}) { kind = "list_bool"; return *this; }
  OpAttrDef& ListFloat(std::vector<float> v = {}) { kind = "list_float"; value.floats.values = v; return *this; }
  OpAttrDef& ListInt(std::vector<int64_t> v = {}) { kind = "list_int"; value.ints.values = v; return *this; }
  OpAttrDef& ListListInt(std::vector<std::vector<int64_t>> = {}) { kind = "list_list_int"; return *this; }
  OpAttrDef& Version(uint32_t) { return *this; }
  std::string name;
  std::string kind = "int";
  Option attr_type = OPTIONAL;
  gert::AttrValue value;
};

using TilingFunc = ge::graphStatus (*)(gert::TilingContext*);
using InferShapeFunc = ge::graphStatus (*)(gert::InferShapeContext*);
using InferDataTypeFunc = ge::graphStatus (*)(gert::InferDataTypeContext*);

class OpAICoreConfig {
 public:
  OpAICoreConfig() = default;
  explicit OpAICoreConfig(const char*) {}
  OpParamDef& Input(const char* name) { params_.emplace_back(name); return params_.back(); }
  OpParamDef& Output(const char* name) { params_.emplace_back(name); return params_.back(); }
  OpAICoreConfig& DynamicCompileStaticFlag(bool) { return *this; }
  OpAICoreConfig& DynamicFormatFlag(bool) { return *this; }
  OpAICoreConfig& DynamicRankSupportFlag(bool) { return *this; }
  OpAICoreConfig& DynamicShapeSupportFlag(bool) { return *this; }
  OpAICoreConfig& NeedCheckSupportFlag(bool) { return *this; }
  OpAICoreConfig& PrecisionReduceFlag(bool) { return *this; }
  OpAICoreConfig& ExtendCfgInfo(const char*, const char*) { return *this; }
 private:
  std::vector<OpParamDef> params_;
};

class OpAICoreDef {
 public:
  OpAICoreDef& SetTiling(TilingFunc f) { tiling = f; return *this; }
  template <class F> OpAICoreDef& SetTilingParse(F) { return *this; }
  template <class F> OpAICoreDef& SetCheckSupport(F) { return *this; }
  template <class F> OpAICoreDef& SetOpSelectFormat(F) { return *this; }
  OpAICoreDef& AddConfig(const char* soc) { socs.emplace_back(soc); return *this; }
  OpAICoreDef& AddConfig(const char* soc, OpAICoreConfig&) { socs.emplace_back(soc); return *this; }
  TilingFunc tiling = nullptr;
  std::vector<std::string> socs;  // the SoCs the op is built for (the runner sizes UB by the first)
};

class OpDef;
inline std::vector<OpDef*>& Registry() {
  static std::vector<OpDef*> ops;
  return ops;
}

class OpDef {
 public:
  explicit OpDef(const char* type) : type(type) { Registry().push_back(this); }
  virtual ~OpDef() = default;
  OpParamDef& Input(const char* name) { inputs.emplace_back(name); return inputs.back(); }
  OpParamDef& Output(const char* name) { outputs.emplace_back(name); return outputs.back(); }
  OpAttrDef& Attr(const char* name) { attrs.emplace_back(name); return attrs.back(); }
  OpDef& SetInferShape(InferShapeFunc f) { infer_shape = f; return *this; }
  OpDef& SetInferDataType(InferDataTypeFunc f) { infer_dtype = f; return *this; }
  template <class F> OpDef& SetInferShapeRange(F) { return *this; }
  OpAICoreDef& AICore() { return aicore; }
  OpDef& MC2() { return *this; }
  OpDef& EnableFallBack() { return *this; }
  std::string type;
  std::vector<OpParamDef> inputs, outputs;  // deque-like use: references returned above stay valid
  std::vector<OpAttrDef> attrs;             // only until the next Input/Attr call, as chained code needs
  InferShapeFunc infer_shape = nullptr;
  InferDataTypeFunc infer_dtype = nullptr;
  OpAICoreDef aicore;
};
}  // namespace ops

// OP_ADD(Name): one static instance per op, constructed (and registered) when the library loads.
#define OP_ADD(op_type, ...) static ::ops::op_type g_trex_op_##op_type(#op_type)

// IMPL_OP_OPTILING(Name).Tiling(fn) / IMPL_OP(Name).InferShape(fn): the newer registration style.
namespace trex_host {
struct OpImplRegistrar {
  explicit OpImplRegistrar(const char* type) : type(type) {}
  OpImplRegistrar& Tiling(ops::TilingFunc f);
  template <class F> OpImplRegistrar& TilingParse(F) { return *this; }
  template <class F> OpImplRegistrar& InferShape(F) { return *this; }
  template <class F> OpImplRegistrar& InferDataType(F) { return *this; }
  template <class... A> OpImplRegistrar& InputsDataDependency(A...) { return *this; }
  // CANN register/op_impl_registry.h: the inputs whose data the tiling function reads ({0, 1, 2}, optionally
  // with placements). Accepted: the emulator gives every tiling function every input's host data.
  OpImplRegistrar& InputsDataDependency(std::initializer_list<int32_t>) { return *this; }
  OpImplRegistrar& TilingInputsDataDependency(std::initializer_list<int32_t>) { return *this; }
  template <class P> OpImplRegistrar& TilingInputsDataDependency(std::initializer_list<int32_t>, P) { return *this; }
  std::string type;
};
inline std::map<std::string, ops::TilingFunc>& ImplTilings() {
  static std::map<std::string, ops::TilingFunc> m;
  return m;
}
inline OpImplRegistrar& OpImplRegistrar::Tiling(ops::TilingFunc f) { ImplTilings()[type] = f; return *this; }
}  // namespace trex_host
#define TREX_HOST_CAT2(a, b) a##b
#define TREX_HOST_CAT(a, b) TREX_HOST_CAT2(a, b)
#define IMPL_OP_OPTILING(op_type) static ::trex_host::OpImplRegistrar TREX_HOST_CAT(g_trex_impl_, __COUNTER__) = ::trex_host::OpImplRegistrar(#op_type)
#define IMPL_OP(op_type) IMPL_OP_OPTILING(op_type)
// IMPL_OP_INFERSHAPE(Name).InferShape(f).InferDataType(g) (CANN register/op_impl_registry.h): the shape and
// dtype inference chain; accepted like IMPL_OP's (the emulator takes output shapes and dtypes from the caller).
#define IMPL_OP_INFERSHAPE(op_type) IMPL_OP_OPTILING(op_type)
