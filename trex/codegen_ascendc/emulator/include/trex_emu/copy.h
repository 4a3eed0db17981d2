// trex AscendC emulator: GM <-> UB and UB <-> UB transfers (DataCopy, DataCopyPad), atomic add.
//
// Counting (matches what the cost model predicts):
//   DataCopy GM->UB   : mte2_bytes += bytes actually moved (after the round-down to 32 B), mte2_transfers += 1
//   DataCopy UB->GM   : mte3_bytes / mte3_transfers likewise
//   DataCopyPad       : blockCount * blockLen GM-side bytes, one transfer per call
//   DataCopy UB->UB   : ub_copy_bytes / ub_copy_transfers
#pragma once

#include <cstdint>
#include <cstring>

#include "trex_emu/runtime.h"
#include "trex_emu/tensor.h"

namespace AscendC {

struct DataCopyParams {
  DataCopyParams() = default;
  DataCopyParams(const uint16_t count, const uint16_t len, const uint16_t srcStrideIn, const uint16_t dstStrideIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
  uint16_t blockCount = 1;
  uint16_t blockLen = 0;   // DataCopy: 32-byte blocks; DataCopyPad (old API): bytes
  uint16_t srcStride = 0;  // gap between blocks (end of one to start of the next)
  uint16_t dstStride = 0;
};

struct DataCopyExtParams {
  DataCopyExtParams() = default;
  DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn, const uint32_t dstStrideIn,
                    const uint32_t rsvIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}
  uint16_t blockCount = 1;
  uint32_t blockLen = 0;   // bytes
  uint32_t srcStride = 0;  // gap; GM side in bytes, UB side in 32-byte blocks
  uint32_t dstStride = 0;
  uint32_t rsv = 0;
};

template <class T>
struct DataCopyPadExtParams {
  DataCopyPadExtParams() = default;
  DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue, T padValue)
      : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
  bool isPad = false;
  uint8_t leftPadding = 0;   // elements
  uint8_t rightPadding = 0;  // elements
  T paddingValue = T(0);
};

struct DataCopyPadParams {
  DataCopyPadParams() = default;
  DataCopyPadParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue, const uint64_t padValue)
      : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}
  bool isPad = false;
  uint8_t leftPadding = 0;
  uint8_t rightPadding = 0;
  uint64_t paddingValue = 0;
};

}  // namespace AscendC

namespace trex_emu {

// RT().atomic_type: the atomic operation UB->GM copies do (SetAtomicAdd/Max/Min, SetAtomicNone).
constexpr int kAtomicNone = 0, kAtomicAdd = 1, kAtomicMax = 2, kAtomicMin = 3;

// UB -> GM write honouring SetAtomicAdd/Max/Min<T>() (sequential blocks make the atomics exact here).
template <class T>
inline void GmWrite(T* dst, const T* src, uint64_t n) {
  if (RT().atomic_type == 0) {
    std::memmove(dst, src, n * sizeof(T));
    return;
  }
  if constexpr (std::is_arithmetic<T>::value || IsF16<T>::value) {
    const int op = RT().atomic_type;
    for (uint64_t i = 0; i < n; ++i) {
      if (op == kAtomicAdd) {
        if constexpr (kIsFloatLike<T>) dst[i] = FromF<T>(ToF(dst[i]) + ToF(src[i]));
        else dst[i] = static_cast<T>(dst[i] + src[i]);
      } else {  // max / min: the GM value is replaced when the copied one compares larger / smaller
        bool replace;
        if constexpr (kIsFloatLike<T>) replace = op == kAtomicMax ? ToF(src[i]) > ToF(dst[i]) : ToF(src[i]) < ToF(dst[i]);
        else replace = op == kAtomicMax ? src[i] > dst[i] : src[i] < dst[i];
        if (replace) dst[i] = src[i];
      }
    }
  } else {
    std::memmove(dst, src, n * sizeof(T));
  }
}

inline uint32_t Align32(uint64_t bytes) { return static_cast<uint32_t>((bytes + 31u) / 32u * 32u); }

template <class T>
inline void CheckGmAlign(const char* api, const T* p) {
  if (reinterpret_cast<uintptr_t>(p) % sizeof(T) != 0)
    Fail(api, ": GM address is not aligned to sizeof(", TypeName<T>(), ") = ", sizeof(T));
}

// DataCopy moves count*sizeof(T) rounded DOWN to a multiple of 32 bytes (asc-devkit DataCopy page).
inline uint64_t TruncatedBytes(uint64_t bytes) {
  const uint64_t moved = bytes / 32u * 32u;
  if (moved != bytes) RT().counters.datacopy_truncations += 1;
  return moved;
}

}  // namespace trex_emu

namespace AscendC {

// ---- DataCopy, contiguous: count elements; count*sizeof(T) is silently rounded DOWN to 32 B ----
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const uint32_t count) {
  using namespace trex_emu;
  const char* api = "DataCopy(GM->UB)";
  CheckUbAlign(api, "dst", dst.addr_);
  CheckGmAlign(api, src.addr_);
  const uint64_t bytes = TruncatedBytes(uint64_t{count} * sizeof(T));
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, reinterpret_cast<const uint8_t*>(dst.addr_) + bytes);
  CheckGm(api, src.addr_, bytes);
  std::memcpy(dst.addr_, src.addr_, bytes);
  RT().counters.mte2_bytes += bytes;
  RT().counters.mte2_transfers += 1;
  EndInstr();
}

template <class T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count) {
  using namespace trex_emu;
  const char* api = "DataCopy(UB->GM)";
  CheckUbAlign(api, "src", src.addr_);
  CheckGmAlign(api, dst.addr_);
  const uint64_t bytes = TruncatedBytes(uint64_t{count} * sizeof(T));
  CheckUbRange(api, "src", src.buf_, src.addr_, reinterpret_cast<const uint8_t*>(src.addr_) + bytes);
  CheckGm(api, dst.addr_, bytes, true, src.addr_);
  GmWrite(dst.addr_, src.addr_, bytes / sizeof(T));
  RT().counters.mte3_bytes += bytes;
  RT().counters.mte3_transfers += 1;
  EndInstr();
}

template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const uint32_t count) {
  using namespace trex_emu;
  const char* api = "DataCopy(UB->UB)";
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src", src.addr_);
  const uint64_t bytes = TruncatedBytes(uint64_t{count} * sizeof(T));
  CheckUbRange(api, "dst", dst.buf_, dst.addr_, reinterpret_cast<const uint8_t*>(dst.addr_) + bytes);
  CheckUbRange(api, "src", src.buf_, src.addr_, reinterpret_cast<const uint8_t*>(src.addr_) + bytes);
  std::memmove(dst.addr_, src.addr_, bytes);
  RT().counters.ub_copy_bytes += bytes;
  RT().counters.ub_copy_transfers += 1;
  EndInstr();
}

// ---- DataCopy with DataCopyParams: blockCount blocks of blockLen 32-byte units; strides are gaps in 32 B ----
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p) {
  using namespace trex_emu;
  const char* api = "DataCopy(GM->UB, DataCopyParams)";
  CheckUbAlign(api, "dst", dst.addr_);
  CheckGmAlign(api, src.addr_);
  const uint64_t len = uint64_t{p.blockLen} * 32u;
  const uint8_t* s = reinterpret_cast<const uint8_t*>(src.addr_);
  uint8_t* d = reinterpret_cast<uint8_t*>(dst.addr_);
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    const uint8_t* sb = s + b * (len + uint64_t{p.srcStride} * 32u);
    uint8_t* db = d + b * (len + uint64_t{p.dstStride} * 32u);
    CheckGm(api, sb, len);
    CheckUbRange(api, "dst", dst.buf_, db, db + len);
    std::memcpy(db, sb, len);
  }
  RT().counters.mte2_bytes += len * p.blockCount;
  RT().counters.mte2_transfers += 1;
  EndInstr();
}

template <class T>
inline void DataCopy(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
  using namespace trex_emu;
  const char* api = "DataCopy(UB->GM, DataCopyParams)";
  CheckUbAlign(api, "src", src.addr_);
  CheckGmAlign(api, dst.addr_);
  const uint64_t len = uint64_t{p.blockLen} * 32u;
  const uint8_t* s = reinterpret_cast<const uint8_t*>(src.addr_);
  uint8_t* d = reinterpret_cast<uint8_t*>(dst.addr_);
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    const uint8_t* sb = s + b * (len + uint64_t{p.srcStride} * 32u);
    uint8_t* db = d + b * (len + uint64_t{p.dstStride} * 32u);
    CheckUbRange(api, "src", src.buf_, sb, sb + len);
    CheckGm(api, db, len, true, sb);
    GmWrite(reinterpret_cast<T*>(db), reinterpret_cast<const T*>(sb), len / sizeof(T));
  }
  RT().counters.mte3_bytes += len * p.blockCount;
  RT().counters.mte3_transfers += 1;
  EndInstr();
}

template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
  using namespace trex_emu;
  const char* api = "DataCopy(UB->UB, DataCopyParams)";
  CheckUbAlign(api, "dst", dst.addr_);
  CheckUbAlign(api, "src", src.addr_);
  const uint64_t len = uint64_t{p.blockLen} * 32u;
  const uint8_t* s = reinterpret_cast<const uint8_t*>(src.addr_);
  uint8_t* d = reinterpret_cast<uint8_t*>(dst.addr_);
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    const uint8_t* sb = s + b * (len + uint64_t{p.srcStride} * 32u);
    uint8_t* db = d + b * (len + uint64_t{p.dstStride} * 32u);
    CheckUbRange(api, "src", src.buf_, sb, sb + len);
    CheckUbRange(api, "dst", dst.buf_, db, db + len);
    std::memmove(db, sb, len);
  }
  RT().counters.ub_copy_bytes += len * p.blockCount;
  RT().counters.ub_copy_transfers += 1;
  EndInstr();
}

// ---- DataCopyPad GM -> UB ----
// UB layout of block b: [leftPadding elems][blockLen bytes][rightPadding elems][dummy up to 32 B],
// the next block starting dstStride 32-byte blocks after the 32-byte-aligned end of this one.
// Fill values follow the asc-devkit page "DataCopyPad（GMToUB非对齐数据搬运）":
//   left/right padding = paddingValue if isPad, else undefined;
//   dummy = first element of the block if leftPadding == rightPadding == 0,
//           else paddingValue if isPad, else undefined.
// "Undefined" bytes are written with the UB fill byte (0xFF: NaN for float types) so that a kernel
// that reads them produces visibly wrong results.
template <class T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyExtParams& p,
                        const DataCopyPadExtParams<T>& pad) {
  using namespace trex_emu;
  const char* api = "DataCopyPad(GM->UB)";
  if (p.blockCount == 0 || p.blockLen == 0) return;  // documented NOP on A2/A3
  CheckUbAlign(api, "dst", dst.addr_);
  // Any UB position is a destination: the API page lists GM -> VECIN/VECOUT (GM -> VECCALC "仅Ascend 950"), but
  // the implementation (impl/basic_api/kernel_operator_data_copy_intf_impl.h) only asserts that dst is in UB
  // ("UB(VECIN/VECOUT/LCM)", LCM = VECCALC) or L1, and asc-devkit's own A2/A3 examples (data_copy_pad_gm2ub_ub2gm,
  // select) DataCopyPad into LocalMemAllocator's VECCALC tensors. The docs call nothing here undefined.
  if (p.blockCount > 4095) Fail(api, ": blockCount=", p.blockCount, " exceeds 4095");
  if (p.blockLen > 2097151u) Fail(api, ": blockLen=", p.blockLen, " exceeds 2097151 bytes");
  if (p.blockLen % sizeof(T) != 0)
    Fail(api, ": blockLen=", p.blockLen, " bytes is not a multiple of sizeof(", TypeName<T>(), ")=", sizeof(T));
  const uint64_t left_b = uint64_t{pad.leftPadding} * sizeof(T), right_b = uint64_t{pad.rightPadding} * sizeof(T);
  if (left_b > 32 || right_b > 32)
    Fail(api, ": leftPadding/rightPadding of ", int(pad.leftPadding), "/", int(pad.rightPadding),
         " elements exceed 32 bytes each");
  const uint64_t data_b = p.blockLen;
  const uint64_t block_ub = Align32(left_b + data_b + right_b);
  const uint64_t n_data = data_b / sizeof(T);
  const bool no_padding = pad.leftPadding == 0 && pad.rightPadding == 0;
  const uint8_t* s = reinterpret_cast<const uint8_t*>(src.addr_);
  uint8_t* d = reinterpret_cast<uint8_t*>(dst.addr_);
  const uint8_t fill = static_cast<uint8_t>(RT().ub_fill);
  // isPad=false: the value set by SetPadValue if any, else undefined (written as the UB fill byte).
  const bool use_register = !pad.isPad && RT().pad_value_set;
  T register_value;
  std::memcpy(&register_value, &RT().pad_value_bits, sizeof(T));
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    const uint8_t* sb = s + b * (data_b + p.srcStride);
    uint8_t* db = d + b * (block_ub + uint64_t{p.dstStride} * 32u);
    CheckGm(api, sb, data_b);
    CheckUbRange(api, "dst", dst.buf_, db, db + block_ub);
    T* row = reinterpret_cast<T*>(db);
    const uint64_t lp = pad.leftPadding, rp = pad.rightPadding;
    const uint64_t total = block_ub / sizeof(T);
    for (uint64_t i = 0; i < lp; ++i) {
      if (pad.isPad) row[i] = pad.paddingValue;
      else if (use_register) row[i] = register_value;
      else std::memset(&row[i], fill, sizeof(T));
    }
    std::memcpy(row + lp, sb, data_b);
    for (uint64_t i = lp + n_data; i < lp + n_data + rp; ++i) {
      if (pad.isPad) row[i] = pad.paddingValue;
      else if (use_register) row[i] = register_value;
      else std::memset(&row[i], fill, sizeof(T));
    }
    for (uint64_t i = lp + n_data + rp; i < total; ++i) {
      if (no_padding) row[i] = row[0];
      else if (pad.isPad) row[i] = pad.paddingValue;
      else if (use_register) row[i] = register_value;
      else std::memset(&row[i], fill, sizeof(T));
    }
  }
  RT().counters.mte2_bytes += uint64_t{p.blockCount} * p.blockLen;
  RT().counters.mte2_transfers += 1;
  EndInstr();
}

// Old-style overload: DataCopyParams (blockLen in bytes for DataCopyPad) + DataCopyPadParams.
template <class T>
inline void DataCopyPad(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const DataCopyParams& p,
                        const DataCopyPadParams& pad) {
  T value;
  std::memset(&value, 0, sizeof value);
  std::memcpy(&value, &pad.paddingValue, sizeof(T) < 8 ? sizeof(T) : 8);
  DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0),
              DataCopyPadExtParams<T>(pad.isPad, pad.leftPadding, pad.rightPadding, value));
}

// ---- DataCopyPad UB -> GM: srcStride (UB) in 32-byte blocks, dstStride (GM) in bytes; only blockLen
// bytes per block reach GM ----
template <class T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyExtParams& p) {
  using namespace trex_emu;
  const char* api = "DataCopyPad(UB->GM)";
  if (p.blockCount == 0 || p.blockLen == 0) return;
  CheckUbAlign(api, "src", src.addr_);
  if (p.blockCount > 4095) Fail(api, ": blockCount=", p.blockCount, " exceeds 4095");
  if (p.blockLen % sizeof(T) != 0)
    Fail(api, ": blockLen=", p.blockLen, " bytes is not a multiple of sizeof(", TypeName<T>(), ")=", sizeof(T));
  const uint64_t data_b = p.blockLen, block_ub = Align32(data_b);
  const uint8_t* s = reinterpret_cast<const uint8_t*>(src.addr_);
  uint8_t* d = reinterpret_cast<uint8_t*>(dst.addr_);
  for (uint32_t b = 0; b < p.blockCount; ++b) {
    const uint8_t* sb = s + b * (block_ub + uint64_t{p.srcStride} * 32u);
    uint8_t* db = d + b * (data_b + p.dstStride);
    CheckUbRange(api, "src", src.buf_, sb, sb + data_b);
    CheckGm(api, db, data_b, true, sb);
    GmWrite(reinterpret_cast<T*>(db), reinterpret_cast<const T*>(sb), data_b / sizeof(T));
  }
  RT().counters.mte3_bytes += uint64_t{p.blockCount} * p.blockLen;
  RT().counters.mte3_transfers += 1;
  EndInstr();
}

template <class T>
inline void DataCopyPad(const GlobalTensor<T>& dst, const LocalTensor<T>& src, const DataCopyParams& p) {
  DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0));
}

// Pad value for DataCopyPad calls with isPad = false (a register on the NPU; per block here).
template <class T>
inline void SetPadValue(T paddingValue) {
  static_assert(sizeof(T) <= 8, "SetPadValue: element types up to 64 bits");
  uint64_t bits = 0;
  std::memcpy(&bits, &paddingValue, sizeof(T));
  trex_emu::RT().pad_value_bits = bits;
  trex_emu::RT().pad_value_set = true;
}

// ---- atomic accumulate into GM for UB->GM copies ----
template <class T>
inline void SetAtomicAdd() {
  static_assert(std::is_same<T, float>::value || std::is_same<T, half>::value || std::is_same<T, int32_t>::value ||
                    std::is_same<T, int16_t>::value || std::is_same<T, bfloat16_t>::value,
                "SetAtomicAdd supports float, half, bfloat16_t, int16_t and int32_t");
  trex_emu::RT().atomic_type = trex_emu::kAtomicAdd;
}
// SetAtomicMax / SetAtomicMin (asc-devkit 基础API/原子操作/SetAtomicMax(ISASI).md, SetAtomicMin(ISASI).md):
// later copies to GM compare each element with GM's and write the larger / smaller; int8_t, int16_t, half,
// bfloat16_t, int32_t, float. A NaN copied never replaces (its comparisons are false).
template <class T>
inline void SetAtomicMax() {
  static_assert(std::is_same<T, float>::value || std::is_same<T, half>::value || std::is_same<T, int32_t>::value ||
                    std::is_same<T, int16_t>::value || std::is_same<T, int8_t>::value ||
                    std::is_same<T, bfloat16_t>::value,
                "SetAtomicMax supports int8_t, int16_t, half, bfloat16_t, int32_t and float");
  trex_emu::RT().atomic_type = trex_emu::kAtomicMax;
}
template <class T>
inline void SetAtomicMin() {
  static_assert(std::is_same<T, float>::value || std::is_same<T, half>::value || std::is_same<T, int32_t>::value ||
                    std::is_same<T, int16_t>::value || std::is_same<T, int8_t>::value ||
                    std::is_same<T, bfloat16_t>::value,
                "SetAtomicMin supports int8_t, int16_t, half, bfloat16_t, int32_t and float");
  trex_emu::RT().atomic_type = trex_emu::kAtomicMin;
}
inline void SetAtomicNone() { trex_emu::RT().atomic_type = trex_emu::kAtomicNone; }
inline void DisableDmaAtomic() { SetAtomicNone(); }

// Nd2NzParams (include/basic_api/kernel_struct_data_copy.h, A2/A3 layout) and DataCopy(GM -> L1, ND -> NZ): the
// cube side, not emulated. They compile, so a program whose cube kernel sits beside its vector kernels builds
// (asc-devkit's 05_best_practices/04_memory_access/data_copy), and raise when a block runs the copy.
struct Nd2NzParams {
  Nd2NzParams() {}
  Nd2NzParams(const uint16_t ndNumIn, const uint16_t nValueIn, const uint16_t dValueIn, const uint16_t srcNdMatrixStrideIn,
              const uint16_t srcDValueIn, const uint16_t dstNzC0StrideIn, const uint16_t dstNzNStrideIn,
              const uint16_t dstNzMatrixStrideIn)
      : ndNum(ndNumIn), nValue(nValueIn), dValue(dValueIn), srcNdMatrixStride(srcNdMatrixStrideIn),
        srcDValue(srcDValueIn), dstNzC0Stride(dstNzC0StrideIn), dstNzNStride(dstNzNStrideIn),
        dstNzMatrixStride(dstNzMatrixStrideIn) {}
  uint16_t ndNum = 0;
  uint16_t nValue = 0;
  uint16_t dValue = 0;
  uint16_t srcNdMatrixStride = 0;
  uint16_t srcDValue = 0;
  uint16_t dstNzC0Stride = 0;
  uint16_t dstNzNStride = 0;
  uint16_t dstNzMatrixStride = 0;
};
template <class T>
inline void DataCopy(const LocalTensor<T>& dst, const GlobalTensor<T>& src, const Nd2NzParams& params) {
  (void)dst;
  (void)src;
  (void)params;
  trex_emu::Fail("DataCopy(GM -> L1, Nd2NzParams): the ND -> NZ copy into the cube's L1 is not emulated (vector "
                 "kernels only)");
}

}  // namespace AscendC
