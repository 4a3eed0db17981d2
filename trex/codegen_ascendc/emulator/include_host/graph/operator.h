// graph/operator.h — the graph-mode operator API (ge::Operator, ge::Tensor, ge::TensorDesc,
// ge::AscendString) that op_host code uses in its graph infer functions and helpers (cann-ops lin_space.cpp:
// `GetLinSpaceConstValue(const Operator& op, const Tensor& t, ...)`). CANN's register/op_def_registry.h
// makes them visible; the emulator runs tiling functions only, never graph inference, so these are plain
// value types: an Operator has a name and a type, a Tensor its description and bytes.
#pragma once
#include "trex_host/dtype_macros_hide.h"  // ge::DataType names, not kernel_operator.h's DT_* macros
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "trex_host/ge_types.h"

namespace ge {
class AscendString {
 public:
  AscendString() = default;
  AscendString(const char* s) : s_(s ? s : "") {}  // NOLINT: CANN's converting constructor
  const char* GetString() const { return s_.c_str(); }
  size_t GetLength() const { return s_.size(); }
  bool operator<(const AscendString& o) const { return s_ < o.s_; }
  bool operator==(const AscendString& o) const { return s_ == o.s_; }
  bool operator!=(const AscendString& o) const { return s_ != o.s_; }
 private:
  std::string s_;
};

class TensorDesc {
 public:
  TensorDesc() = default;
  TensorDesc(Shape shape, Format format = FORMAT_ND, DataType dt = DT_FLOAT)
      : shape_(std::move(shape)), format_(format), origin_format_(format), dtype_(dt) {}
  Shape GetShape() const { return shape_; }
  void SetShape(const Shape& s) { shape_ = s; }
  Shape GetOriginShape() const { return shape_; }
  void SetOriginShape(const Shape& s) { shape_ = s; }
  Format GetFormat() const { return format_; }
  void SetFormat(Format f) { format_ = f; }
  Format GetOriginFormat() const { return origin_format_; }
  void SetOriginFormat(Format f) { origin_format_ = f; }
  DataType GetDataType() const { return dtype_; }
  void SetDataType(DataType dt) { dtype_ = dt; }
 private:
  Shape shape_;
  Format format_ = FORMAT_ND, origin_format_ = FORMAT_ND;
  DataType dtype_ = DT_FLOAT;
};

class Tensor {
 public:
  Tensor() = default;
  Tensor(const TensorDesc& desc, const uint8_t* data, size_t size) : desc_(desc), data_(data, data + size) {}
  TensorDesc GetTensorDesc() const { return desc_; }
  graphStatus SetTensorDesc(const TensorDesc& d) { desc_ = d; return GRAPH_SUCCESS; }
  const uint8_t* GetData() const { return data_.data(); }
  uint8_t* GetData() { return data_.data(); }
  size_t GetSize() const { return data_.size(); }
  graphStatus SetData(const uint8_t* data, size_t size) { data_.assign(data, data + size); return GRAPH_SUCCESS; }
 private:
  TensorDesc desc_;
  std::vector<uint8_t> data_;
};

class Operator {
 public:
  Operator() = default;
  Operator(const char* name, const char* type) : name_(name), type_(type) {}
  explicit Operator(const char* type) : name_(type), type_(type) {}
  graphStatus GetName(AscendString& name) const { name = AscendString(name_.GetString()); return GRAPH_SUCCESS; }
  graphStatus GetOpType(AscendString& type) const { type = AscendString(type_.GetString()); return GRAPH_SUCCESS; }
 private:
  AscendString name_, type_;
};
}  // namespace ge
#include "trex_host/dtype_macros_restore.h"
