// trex AscendC emulator, host side: the ge:: / gert:: types an op project's op_host code uses
// (data types, shapes, the tiling context). A model of CANN's graph-engine interfaces as the op_host
// tiling functions call them; the runner (emulator/op_project.py) builds a TilingContext from torch
// tensors, calls the op's registered tiling function and reads back blockDim, tiling key, tiling
// bytes and workspace size.
#pragma once
#include "trex_host/dtype_macros_hide.h"  // ge::DataType names, not kernel_operator.h's DT_* macros
// CANN's headers pull these in transitively; op_host code relies on it.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace ge {
using graphStatus = uint32_t;
using float32_t = float;  // CANN graph/types.h (asc-devkit context_builder_impl.h uses ge::float32_t)
constexpr graphStatus GRAPH_SUCCESS = 0;
constexpr graphStatus GRAPH_FAILED = 0xFFFFFFFF;
constexpr graphStatus GRAPH_PARAM_INVALID = 50331649;
// Shape dims of an unknown size and of an unknown rank (graph/types.h).
constexpr int64_t UNKNOWN_DIM = -1;
constexpr int64_t UNKNOWN_DIM_NUM = -2;

// Numbering of CANN's ge::DataType (graph/types.h).
enum DataType : int32_t {
  DT_FLOAT = 0, DT_FLOAT16 = 1, DT_INT8 = 2, DT_INT32 = 3, DT_UINT8 = 4, DT_INT16 = 6, DT_UINT16 = 7,
  DT_UINT32 = 8, DT_INT64 = 9, DT_UINT64 = 10, DT_DOUBLE = 11, DT_BOOL = 12, DT_STRING = 13,
  DT_COMPLEX64 = 16, DT_COMPLEX128 = 17, DT_BF16 = 27, DT_UNDEFINED = 28, DT_MAX = 40
};
enum Format : int32_t { FORMAT_NCHW = 0, FORMAT_NHWC = 1, FORMAT_ND = 2, FORMAT_NC1HWC0 = 3, FORMAT_FRACTAL_Z = 4,
                        FORMAT_FRACTAL_NZ = 29, FORMAT_NCDHW = 30, FORMAT_DHWCN = 31, FORMAT_NDHWC = 27 };

// A format value packs a primary format (low 8 bits), a sub-format (the next 16) and C0 (graph/types.h).
inline int32_t GetPrimaryFormat(int32_t format) { return static_cast<int32_t>(static_cast<uint32_t>(format) & 0xffU); }
inline int32_t GetSubFormat(int32_t format) { return static_cast<int32_t>((static_cast<uint32_t>(format) >> 8) & 0xffffU); }
inline bool HasSubFormat(int32_t format) { return GetSubFormat(format) > 0; }

inline int GetSizeByDataType(DataType dt) {
  switch (dt) {
    case DT_FLOAT: case DT_INT32: case DT_UINT32: return 4;
    case DT_FLOAT16: case DT_BF16: case DT_INT16: case DT_UINT16: return 2;
    case DT_INT8: case DT_UINT8: case DT_BOOL: return 1;
    case DT_INT64: case DT_UINT64: case DT_DOUBLE: case DT_COMPLEX64: return 8;
    case DT_COMPLEX128: return 16;
    default: return -1;
  }
}

class Shape {
 public:
  Shape() = default;
  explicit Shape(const std::vector<int64_t>& dims) : dims_(dims) {}
  size_t GetDimNum() const { return dims_.size(); }
  int64_t GetDim(size_t i) const { return i < dims_.size() ? dims_[i] : 0; }
  std::vector<int64_t> GetDims() const { return dims_; }
  int64_t GetShapeSize() const {
    int64_t n = 1;
    for (int64_t d : dims_) n *= d;
    return n;
  }
 private:
  std::vector<int64_t> dims_;
};
}  // namespace ge

namespace fe {
struct PlatFormInfos {
  uint32_t aiv_num = 8;
  uint32_t aic_num = 4;
  uint64_t ub_size = 192 * 1024;
  // The op's SoC is Ascend910B or Ascend910_93 (platform_ascendc's SocVersion::ASCEND910B family): the runner takes
  // the first of the OpDef's AddConfig SoCs it knows, as op_project.UB_BYTES does (910B when none is known).
  bool soc_910b = true;
};
}  // namespace fe

namespace gert {
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : n_(0) { for (int64_t d : dims) AppendDim(d); }
  size_t GetDimNum() const { return n_; }
  int64_t GetDim(size_t i) const { return i < n_ ? dims_[i] : 0; }
  const int64_t& operator[](size_t i) const { return dims_[i]; }
  int64_t& operator[](size_t i) { return dims_[i]; }
  void SetDimNum(size_t n) { n_ = n > kMaxDims ? kMaxDims : n; }
  Shape& SetDim(size_t i, int64_t d) { if (i < kMaxDims) dims_[i] = d; return *this; }
  Shape& AppendDim(int64_t d) { if (n_ < kMaxDims) dims_[n_++] = d; return *this; }
  int64_t GetShapeSize() const {
    int64_t s = 1;
    for (size_t i = 0; i < n_; ++i) s *= dims_[i];
    return s;
  }
  bool IsScalar() const { return n_ == 0; }
  bool operator==(const Shape& o) const {
    if (n_ != o.n_) return false;
    for (size_t i = 0; i < n_; ++i) if (dims_[i] != o.dims_[i]) return false;
    return true;
  }
  bool operator!=(const Shape& o) const { return !(*this == o); }
  static constexpr size_t kMaxDims = 25;
 private:
  size_t n_ = 0;
  int64_t dims_[kMaxDims] = {};
};

class StorageShape {
 public:
  StorageShape() = default;
  explicit StorageShape(const Shape& s) : origin_(s), storage_(s) {}
  const Shape& GetStorageShape() const { return storage_; }
  const Shape& GetOriginShape() const { return origin_; }
  Shape& MutableStorageShape() { return storage_; }
  Shape& MutableOriginShape() { return origin_; }
 private:
  Shape origin_, storage_;
};

class StorageFormat {
 public:
  ge::Format GetStorageFormat() const { return ge::FORMAT_ND; }
  ge::Format GetOriginFormat() const { return ge::FORMAT_ND; }
};

class CompileTimeTensorDesc {
 public:
  ge::DataType GetDataType() const { return dtype; }
  ge::Format GetStorageFormat() const { return ge::FORMAT_ND; }
  ge::Format GetOriginFormat() const { return ge::FORMAT_ND; }
  StorageFormat GetFormat() const { return {}; }
  ge::DataType dtype = ge::DT_FLOAT;
};

class Tensor {
 public:
  int64_t GetShapeSize() const { return shape.GetStorageShape().GetShapeSize(); }
  const Shape& GetStorageShape() const { return shape.GetStorageShape(); }
  const Shape& GetOriginShape() const { return shape.GetOriginShape(); }
  const StorageShape& GetShape() const { return shape; }
  ge::DataType GetDataType() const { return dtype; }
  ge::Format GetStorageFormat() const { return ge::FORMAT_ND; }
  ge::Format GetOriginFormat() const { return ge::FORMAT_ND; }
  size_t GetSize() const { return static_cast<size_t>(GetShapeSize()) * ge::GetSizeByDataType(dtype); }
  template <class T>
  const T* GetData() const { return static_cast<const T*>(data); }
  const void* GetAddr() const { return data; }
  StorageShape shape;
  ge::DataType dtype = ge::DT_FLOAT;
  const void* data = nullptr;  // host copy of the tensor's values (value-dependent tiling)
};

template <class T>
class TypedContinuousVector {
 public:
  size_t GetSize() const { return values.size(); }
  size_t GetCapacity() const { return values.size(); }
  const T* GetData() const { return values.data(); }
  std::vector<T> values;
};
using ContinuousVector = TypedContinuousVector<int64_t>;

// One attribute value, as the runner passes it; RuntimeAttrs hands out typed pointers.
struct AttrValue {
  int64_t i = 0;
  float f = 0.f;
  bool b = false;
  std::string s;
  TypedContinuousVector<int64_t> ints;
  TypedContinuousVector<float> floats;
};

class RuntimeAttrs {
 public:
  size_t GetAttrNum() const { return values.size(); }
  const int64_t* GetInt(size_t i) const { return i < values.size() ? &values[i].i : nullptr; }
  const float* GetFloat(size_t i) const { return i < values.size() ? &values[i].f : nullptr; }
  const bool* GetBool(size_t i) const { return i < values.size() ? &values[i].b : nullptr; }
  const char* GetStr(size_t i) const { return i < values.size() ? values[i].s.c_str() : nullptr; }
  const char* GetString(size_t i) const { return GetStr(i); }
  const TypedContinuousVector<int64_t>* GetListInt(size_t i) const { return i < values.size() ? &values[i].ints : nullptr; }
  const TypedContinuousVector<float>* GetListFloat(size_t i) const { return i < values.size() ? &values[i].floats : nullptr; }
  template <class T>
  const T* GetAttrPointer(size_t i) const;
  std::vector<AttrValue> values;
};
template <> inline const int64_t* RuntimeAttrs::GetAttrPointer<int64_t>(size_t i) const { return GetInt(i); }
template <> inline const float* RuntimeAttrs::GetAttrPointer<float>(size_t i) const { return GetFloat(i); }
template <> inline const bool* RuntimeAttrs::GetAttrPointer<bool>(size_t i) const { return GetBool(i); }
template <> inline const char* RuntimeAttrs::GetAttrPointer<char>(size_t i) const { return GetStr(i); }
template <> inline const int32_t* RuntimeAttrs::GetAttrPointer<int32_t>(size_t i) const {
  return i < values.size() ? reinterpret_cast<const int32_t*>(&values[i].i) : nullptr;  // little-endian low half
}
// Other integer views of an int attribute's storage (CANN hands out a pointer to the attribute's bytes).
template <> inline const uint32_t* RuntimeAttrs::GetAttrPointer<uint32_t>(size_t i) const {
  return i < values.size() ? reinterpret_cast<const uint32_t*>(&values[i].i) : nullptr;
}
template <> inline const uint64_t* RuntimeAttrs::GetAttrPointer<uint64_t>(size_t i) const {
  return i < values.size() ? reinterpret_cast<const uint64_t*>(&values[i].i) : nullptr;
}

class TilingData {
 public:
  void* GetData() { return buf.data(); }
  const void* GetData() const { return buf.data(); }
  size_t GetCapacity() const { return buf.size(); }
  void SetDataSize(size_t n) { size = n; }
  size_t GetDataSize() const { return size; }
  template <class T>
  TilingData& Append(const T& v) {
    std::memcpy(buf.data() + size, &v, sizeof(T));
    size += sizeof(T);
    return *this;
  }
  std::vector<uint8_t> buf = std::vector<uint8_t>(64 * 1024, 0);
  size_t size = 0;
};

// The op's inputs/outputs/attrs as the runner gives them; shared by the tiling and infer contexts.
struct OpCall {
  std::vector<Tensor> inputs, outputs;
  std::vector<CompileTimeTensorDesc> input_descs, output_descs;
  RuntimeAttrs attrs;
  fe::PlatFormInfos platform;
  std::string node_name;
  // First instance index of each IR input (a DYNAMIC input has one instance per tensor of its list); empty:
  // one instance per IR input.
  std::vector<size_t> ir_input_start;
  size_t Instance(size_t ir, size_t relative) const {
    return (ir < ir_input_start.size() ? ir_input_start[ir] : ir) + relative;
  }
};

// One IR input's instances: where they start among the inputs and how many (a DYNAMIC input: its list).
class AnchorInstanceInfo {
 public:
  AnchorInstanceInfo(size_t start, size_t num) : start_(start), num_(num) {}
  size_t GetInstanceStart() const { return start_; }
  size_t GetInstantiationNum() const { return num_; }
 private:
  size_t start_, num_;
};

// exe_graph/runtime/compute_node_info.h: the node's name, type and its input/output counts (instances;
// the Ir forms count the OpDef's inputs/outputs) and the attributes, as the runner's OpCall gives them.
class ComputeNodeInfo {
 public:
  explicit ComputeNodeInfo(const OpCall* call) : call_(call) {}
  const char* GetNodeName() const { return call_->node_name.c_str(); }
  const char* GetNodeType() const { return call_->node_name.c_str(); }
  size_t GetInputsNum() const { return call_->inputs.size(); }
  size_t GetOutputsNum() const { return call_->outputs.size(); }
  size_t GetIrInputsNum() const { return call_->ir_input_start.empty() ? call_->inputs.size() : call_->ir_input_start.size(); }
  size_t GetIrOutputsNum() const { return call_->outputs.size(); }
  const CompileTimeTensorDesc* GetInputTdInfo(size_t i) const { return i < call_->input_descs.size() ? &call_->input_descs[i] : nullptr; }
  const CompileTimeTensorDesc* GetOutputTdInfo(size_t i) const { return i < call_->output_descs.size() ? &call_->output_descs[i] : nullptr; }
  const AnchorInstanceInfo* GetInputInstanceInfo(size_t ir) const {
    if (ir >= GetIrInputsNum()) return nullptr;
    const size_t start = call_->Instance(ir, 0);
    const size_t end = ir + 1 < GetIrInputsNum() ? call_->Instance(ir + 1, 0) : call_->inputs.size();
    instances_.assign(1, AnchorInstanceInfo(start, end - start));
    return &instances_[0];
  }
  const RuntimeAttrs* GetAttrs() const { return &call_->attrs; }
 private:
  const OpCall* call_;
  mutable std::vector<AnchorInstanceInfo> instances_;  // the last GetInputInstanceInfo answer
};

class TilingContext {
 public:
  explicit TilingContext(OpCall* call) : call_(call), node_info_(call) {}
  const ComputeNodeInfo* GetComputeNodeInfo() const { return &node_info_; }
  const StorageShape* GetInputShape(size_t i) const { return i < call_->inputs.size() ? &call_->inputs[i].shape : nullptr; }
  // GetInputShape/GetInputTensor/GetInputDesc take the instance index; the Optional/Dynamic forms the IR
  // index (and the position in a dynamic input's list).
  const StorageShape* GetOptionalInputShape(size_t i) const { return GetInputShape(call_->Instance(i, 0)); }
  const StorageShape* GetDynamicInputShape(size_t i, size_t j) const { return GetInputShape(call_->Instance(i, j)); }
  const StorageShape* GetOutputShape(size_t i) const { return i < call_->outputs.size() ? &call_->outputs[i].shape : nullptr; }
  const Tensor* GetInputTensor(size_t i) const { return i < call_->inputs.size() ? &call_->inputs[i] : nullptr; }
  const Tensor* GetOptionalInputTensor(size_t i) const { return GetInputTensor(call_->Instance(i, 0)); }
  const Tensor* GetDynamicInputTensor(size_t i, size_t j) const { return GetInputTensor(call_->Instance(i, j)); }
  const CompileTimeTensorDesc* GetInputDesc(size_t i) const { return i < call_->input_descs.size() ? &call_->input_descs[i] : nullptr; }
  const CompileTimeTensorDesc* GetOptionalInputDesc(size_t i) const { return GetInputDesc(call_->Instance(i, 0)); }
  const CompileTimeTensorDesc* GetDynamicInputDesc(size_t i, size_t j) const { return GetInputDesc(call_->Instance(i, j)); }
  const CompileTimeTensorDesc* GetOutputDesc(size_t i) const { return i < call_->output_descs.size() ? &call_->output_descs[i] : nullptr; }
  size_t GetComputeNodeInputNum() const { return call_->inputs.size(); }
  size_t GetComputeNodeOutputNum() const { return call_->outputs.size(); }
  const RuntimeAttrs* GetAttrs() const { return &call_->attrs; }
  TilingData* GetRawTilingData() { return &tiling_; }
  template <class T>
  T* GetTilingData() { tiling_.size = sizeof(T); return reinterpret_cast<T*>(tiling_.buf.data()); }
  ge::graphStatus SetBlockDim(uint32_t n) { block_dim = n; return ge::GRAPH_SUCCESS; }
  uint32_t GetBlockDim() const { return block_dim; }
  ge::graphStatus SetSimdNumBlocks(uint32_t n) { return SetBlockDim(n); }
  ge::graphStatus SetTilingKey(uint64_t k) { tiling_key = k; return ge::GRAPH_SUCCESS; }
  uint64_t GetTilingKey() const { return tiling_key; }
  size_t* GetWorkspaceSizes(size_t n) {
    if (workspace.size() < n) workspace.resize(n, 0);
    return workspace.data();
  }
  size_t GetWorkspaceNum() const { return workspace.size(); }
  ge::graphStatus SetScheduleMode(uint32_t) { return ge::GRAPH_SUCCESS; }
  // With an output's OpDef InitValue, the output is initialised before the launch only when this is
  // true (asc-devkit OpParamDef/InitValue.md: InitValue works together with SetNeedAtomic(true)).
  ge::graphStatus SetNeedAtomic(bool v) { need_atomic = v; return ge::GRAPH_SUCCESS; }
  const fe::PlatFormInfos* GetPlatformInfo() const { return &call_->platform; }
  const char* GetNodeName() const { return call_->node_name.c_str(); }
  const char* GetNodeType() const { return call_->node_name.c_str(); }
  int32_t GetDeterministic() const { return 0; }

  uint32_t block_dim = 0;
  uint64_t tiling_key = 0;
  bool need_atomic = false;
  std::vector<size_t> workspace;
 private:
  OpCall* call_;
  ComputeNodeInfo node_info_;
  TilingData tiling_;
};

class InferShapeContext {
 public:
  explicit InferShapeContext(OpCall* call) : call_(call) {
    for (auto& t : call_->outputs) out_.push_back(t.shape.GetStorageShape());
  }
  const Shape* GetInputShape(size_t i) const { return i < call_->inputs.size() ? &call_->inputs[i].shape.GetStorageShape() : nullptr; }
  const Shape* GetOptionalInputShape(size_t i) const { return GetInputShape(i); }
  const Tensor* GetInputTensor(size_t i) const { return i < call_->inputs.size() ? &call_->inputs[i] : nullptr; }
  Shape* GetOutputShape(size_t i) { return i < out_.size() ? &out_[i] : nullptr; }
  const RuntimeAttrs* GetAttrs() const { return &call_->attrs; }
  const char* GetNodeName() const { return call_->node_name.c_str(); }
  const char* GetNodeType() const { return call_->node_name.c_str(); }
  // The compile-time descriptions (dtype; format ND, origin format ND) as TilingContext gives them.
  const CompileTimeTensorDesc* GetInputDesc(size_t i) const { return i < call_->input_descs.size() ? &call_->input_descs[i] : nullptr; }
  const CompileTimeTensorDesc* GetOptionalInputDesc(size_t i) const { return GetInputDesc(call_->Instance(i, 0)); }
 private:
  OpCall* call_;
  std::vector<Shape> out_;
};

class InferDataTypeContext {
 public:
  explicit InferDataTypeContext(OpCall* call) : call_(call) {}
  ge::DataType GetInputDataType(size_t i) const { return i < call_->input_descs.size() ? call_->input_descs[i].dtype : ge::DT_UNDEFINED; }
  ge::DataType GetOptionalInputDataType(size_t i) const { return GetInputDataType(i); }
  ge::graphStatus SetOutputDataType(size_t, ge::DataType) { return ge::GRAPH_SUCCESS; }
  const RuntimeAttrs* GetAttrs() const { return &call_->attrs; }
  const char* GetNodeName() const { return call_->node_name.c_str(); }
  const char* GetNodeType() const { return call_->node_name.c_str(); }
 private:
  OpCall* call_;
};
class InferShapeRangeContext {};
class TilingParseContext {
 public:
  const fe::PlatFormInfos* GetPlatformInfo() const { return nullptr; }
  template <class T> T* GetCompiledInfo() { static T t; return &t; }
};
}  // namespace gert
#include "trex_host/dtype_macros_restore.h"
