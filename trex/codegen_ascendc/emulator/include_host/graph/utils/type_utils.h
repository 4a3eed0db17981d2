// graph/utils/type_utils.h — ge::TypeUtils as op_host tiling functions use it (lengths, and the serial
// names CANN's logging prints: DataTypeToSerialString(DT_FLOAT) == "DT_FLOAT", FormatToSerialString(FORMAT_ND)
// == "ND"). Names are tables over the enums ge_types.h defines; a value outside them prints as CANN's do
// for an unknown one ("UNDEFINED" / "RESERVED").
#pragma once
#include "trex_host/dtype_macros_hide.h"  // ge::DataType names, not kernel_operator.h's DT_* macros
#include <utility>

#include "trex_host/ge_types.h"
namespace ge {
class TypeUtils {
 public:
  static bool GetDataTypeLength(DataType dt, uint32_t& length) {
    const int n = GetSizeByDataType(dt);
    if (n < 0) return false;
    length = static_cast<uint32_t>(n);
    return true;
  }
  static std::string DataTypeToSerialString(DataType dt) {
    static const std::pair<DataType, const char*> kNames[] = {
        {DT_FLOAT, "DT_FLOAT"}, {DT_FLOAT16, "DT_FLOAT16"}, {DT_INT8, "DT_INT8"}, {DT_INT32, "DT_INT32"},
        {DT_UINT8, "DT_UINT8"}, {DT_INT16, "DT_INT16"}, {DT_UINT16, "DT_UINT16"}, {DT_UINT32, "DT_UINT32"},
        {DT_INT64, "DT_INT64"}, {DT_UINT64, "DT_UINT64"}, {DT_DOUBLE, "DT_DOUBLE"}, {DT_BOOL, "DT_BOOL"},
        {DT_STRING, "DT_STRING"}, {DT_COMPLEX64, "DT_COMPLEX64"}, {DT_COMPLEX128, "DT_COMPLEX128"},
        {DT_BF16, "DT_BF16"}, {DT_UNDEFINED, "DT_UNDEFINED"}};
    for (const auto& kv : kNames)
      if (kv.first == dt) return kv.second;
    return "UNDEFINED";
  }
  static std::string FormatToSerialString(Format f) {
    static const std::pair<Format, const char*> kNames[] = {
        {FORMAT_NCHW, "NCHW"}, {FORMAT_NHWC, "NHWC"}, {FORMAT_ND, "ND"}, {FORMAT_NC1HWC0, "NC1HWC0"},
        {FORMAT_FRACTAL_Z, "FRACTAL_Z"}, {FORMAT_FRACTAL_NZ, "FRACTAL_NZ"}, {FORMAT_NCDHW, "NCDHW"},
        {FORMAT_DHWCN, "DHWCN"}, {FORMAT_NDHWC, "NDHWC"}};
    for (const auto& kv : kNames)
      if (kv.first == f) return kv.second;
    return "RESERVED";
  }
};
}  // namespace ge
#include "trex_host/dtype_macros_restore.h"
