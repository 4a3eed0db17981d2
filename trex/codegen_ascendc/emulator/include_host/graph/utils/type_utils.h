// graph/utils/type_utils.h — ge::TypeUtils as op_host tiling functions use it.
#pragma once
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
  static std::string DataTypeToSerialString(DataType dt) { return "DT_" + std::to_string(static_cast<int>(dt)); }
};
}  // namespace ge
