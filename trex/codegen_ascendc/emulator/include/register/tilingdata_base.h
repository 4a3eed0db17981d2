// register/tilingdata_base.h — CANN's tiling-data definition macros, for both halves of an op project.
//
// op_host/<op>_tiling.h declares the tiling struct once:
//   BEGIN_TILING_DATA_DEF(AddCustomTilingData)
//     TILING_DATA_FIELD_DEF(uint32_t, totalLength);
//     TILING_DATA_FIELD_DEF_ARR(uint32_t, 8, shape);
//   END_TILING_DATA_DEF;
//   REGISTER_TILING_DATA_CLASS(AddCustom, AddCustomTilingData)
// The host tiling function fills it (set_totalLength, SaveToBuffer); CANN's kernel build generates a
// plain struct with the same fields for GET_TILING_DATA. Here both halves compile this one struct, so
// the bytes the host saves are exactly the layout the kernel reads (fields in order, natural alignment).
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace trex_tiling {
// SaveToBuffer into a raw tiling buffer of `capacity` bytes; a struct larger than the buffer is a host bug.
inline void Save(const void* self, size_t size, void* dst, size_t capacity) {
  if (size > capacity) {
    struct TilingTooLarge {};
    throw TilingTooLarge{};
  }
  std::memcpy(dst, self, size);
}
}  // namespace trex_tiling

#define BEGIN_TILING_DATA_DEF(class_name)                                                      \
  struct class_name {                                                                          \
    void SaveToBuffer(void* dst, size_t capacity) const {                                      \
      ::trex_tiling::Save(this, sizeof(*this), dst, capacity);                                 \
    }                                                                                          \
    size_t GetDataSize() const { return sizeof(*this); }                                       \
    void SetDataPtr(void*) {}
#define TILING_DATA_FIELD_DEF(field_type, field_name)                                          \
  field_type field_name{};                                                                     \
  void set_##field_name(field_type value) { field_name = value; }                             \
  field_type get_##field_name() const { return field_name; }
#define TILING_DATA_FIELD_DEF_ARR(field_type, count, field_name)                               \
  field_type field_name[count]{};                                                              \
  void set_##field_name(const field_type* values) {                                            \
    for (size_t trex_i = 0; trex_i < static_cast<size_t>(count); ++trex_i) field_name[trex_i] = values[trex_i]; \
  }                                                                                            \
  field_type* get_##field_name() { return field_name; }  /* CANN's getter: a writable pointer */          \
  const field_type* get_##field_name() const { return field_name; }
#define TILING_DATA_FIELD_DEF_STRUCT(struct_type, field_name) struct_type field_name{};
#define END_TILING_DATA_DEF }
// The op <-> struct association: the runner reads it from the header (GET_TILING_DATA's type).
#define REGISTER_TILING_DATA_CLASS(op_type, class_name)
