// trex AscendC emulator: the glue CANN's kernel build provides to op-project (framework-launch)
// kernels and the conventions of its CPU-debug mode, so such kernels compile unchanged.
//
//  * GET_TILING_DATA(var, tiling): the op's tiling struct (BEGIN_TILING_DATA_DEF in op_host/*_tiling.h)
//    copied from the tiling pointer. The runner (emulator/op_project.py) includes that header before the
//    kernel and names the struct `trex_emu_default_tiling_t`; REGISTER_TILING_DEFAULT(T) in the kernel
//    overrides it for the function. GET_TILING_DATA_WITH_STRUCT(T, var, tiling) names the type itself.
//  * TILING_KEY_IS(k): true when the host tiling function's SetTilingKey was k.
//  * DTYPE_<INPUT>, ORIG_DTYPE_<INPUT>: -D flags from the runner, one per input/output of the OpDef.
//  * __CCE_KT_TEST__ is defined (this is CPU-debug mode), ASSERT raises a KernelError, printf /
//    PRINTF / DumpTensor print to stdout, GetSystemCycle counts calls.
#pragma once
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "trex_emu/block_sync.h"
#include "trex_emu/runtime.h"
#include "trex_emu/tensor.h"

#ifndef __CCE_KT_TEST__
#define __CCE_KT_TEST__ 1
#endif

// ge::DataType numbering as macros, as CANN's kernel_type.h (which kernel_operator.h includes) defines them for
// kernels the ccec build compiles (op projects):
// kernels compare ORIG_DTYPE_* against DT_* in `#if` (cann-ops non_finite_check, lin_space), where an enum
// would read as 0 and every such test as true. The asc compiler's passes (__ASCC_HOST__/__ASCC_DEVICE__, and
// __NPU_HOST__/__NPU_DEVICE__) get them as enumerators of AscendC::DataType instead (kernel_type.h's #else), so
// an .asc program may name its own DT_* (06_compatibility_guide/scatter's data_utils.h: DT_UNDEFINED = -1).
#if !defined(__NPU_HOST__) && !defined(__NPU_DEVICE__) && !defined(__ASCC_HOST__) && !defined(__ASCC_DEVICE__)
#ifndef DT_FLOAT
#define DT_FLOAT 0
#endif
#ifndef DT_FLOAT16
#define DT_FLOAT16 1
#endif
#ifndef DT_INT8
#define DT_INT8 2
#endif
#ifndef DT_INT32
#define DT_INT32 3
#endif
#ifndef DT_UINT8
#define DT_UINT8 4
#endif
#ifndef DT_INT16
#define DT_INT16 6
#endif
#ifndef DT_UINT16
#define DT_UINT16 7
#endif
#ifndef DT_UINT32
#define DT_UINT32 8
#endif
#ifndef DT_INT64
#define DT_INT64 9
#endif
#ifndef DT_UINT64
#define DT_UINT64 10
#endif
#ifndef DT_DOUBLE
#define DT_DOUBLE 11
#endif
#ifndef DT_BOOL
#define DT_BOOL 12
#endif
#ifndef DT_STRING
#define DT_STRING 13
#endif
#ifndef DT_COMPLEX64
#define DT_COMPLEX64 16
#endif
#ifndef DT_COMPLEX128
#define DT_COMPLEX128 17
#endif
#ifndef DT_BF16
#define DT_BF16 27
#endif
#ifndef DT_UNDEFINED
#define DT_UNDEFINED 28
#endif
#else
namespace AscendC {
enum DataType {
  DT_FLOAT = 0,
  DT_FLOAT16 = 1,
  DT_INT8 = 2,
  DT_INT32 = 3,
  DT_UINT8 = 4,
  DT_INT16 = 6,
  DT_UINT16 = 7,
  DT_UINT32 = 8,
  DT_INT64 = 9,
  DT_UINT64 = 10,
  DT_DOUBLE = 11,
  DT_BOOL = 12,
  DT_STRING = 13,
  DT_COMPLEX64 = 16,
  DT_COMPLEX128 = 17,
  DT_BF16 = 27,
  DT_UNDEFINED = 28,
};
}  // namespace AscendC
#endif

namespace trex_emu {
// The tiling struct GET_TILING_DATA reads when the kernel registers none; the runner's prelude
// declares `using trex_emu_default_tiling_t = optiling::<Op>TilingData;` at global scope.
template <class T>
inline T LoadTiling(const void* tiling) {
  static_assert(std::is_trivially_copyable<T>::value, "the tiling struct must be trivially copyable");
  if (tiling == nullptr) Fail("GET_TILING_DATA: the tiling argument is a null pointer; pass the tiling bytes");
  T t;
  std::memcpy(static_cast<void*>(&t), tiling, sizeof(T));
  return t;
}
struct NoTilingStruct;  // incomplete: GET_TILING_DATA without an op_host tiling header fails to compile
}  // namespace trex_emu

#define GET_TILING_DATA(var, tiling) \
  auto var = ::trex_emu::LoadTiling<trex_emu_default_tiling_t>(reinterpret_cast<const void*>(tiling))
#define GET_TILING_DATA_WITH_STRUCT(struct_type, var, tiling) \
  struct_type var = ::trex_emu::LoadTiling<struct_type>(reinterpret_cast<const void*>(tiling))
#define GET_TILING_DATA_PTR_WITH_STRUCT(struct_type, var, tiling) \
  const struct_type* var = reinterpret_cast<const struct_type*>(tiling)
#define GET_TILING_DATA_MEMBER(struct_type, member, var, tiling)                                        \
  decltype(struct_type::member) var;                                                                    \
  std::memcpy(&var, reinterpret_cast<const uint8_t*>(tiling) + offsetof(struct_type, member), sizeof(var))
#define REGISTER_TILING_DEFAULT(struct_type) using trex_emu_default_tiling_t = struct_type
#define REGISTER_TILING_FOR_TILINGKEY(key_expr, struct_type)
#define TILING_KEY_IS(key) (::trex_emu::RT().tiling_key == static_cast<uint64_t>(key))
#define TILING_KEY_VAR (::trex_emu::RT().tiling_key)

// ASSERT(cond[, fmt, args...]): CANN's kernel assert; here a KernelError naming the condition. CANN's
// device build defines ASSERT(x) as nothing (asc-devkit impl/basic_api/kernel_macros.h), so kernels write
// it after an expression without a semicolon (`this->tileNum = tileNum ASSERT(tileNum != 0 && "...");`)
// or as a line of its own with none after it (`ASSERT(n != 0 && "...")` then a declaration, cann-ops
// mul_sigmoid.cpp:27); it expands to `; check(...);` so that both, and a plain `ASSERT(c);`, compile.
// (So `if (x) ASSERT(c);` checks always, and `if (x) ASSERT(c); else` does not compile.)
namespace trex_emu {
inline void AssertCheck(bool ok, const char* cond, const char* file, int line) {
  if (!ok) Fail("ASSERT(", cond, ") failed at ", file, ":", line);
}
}  // namespace trex_emu
#define ASSERT(cond, ...) ; ::trex_emu::AssertCheck(static_cast<bool>(cond), #cond, __FILE__, __LINE__);
// ascendc_assert(cond[, fmt, args...]) (CANN 8.x): the same check; the message names the condition.
#define ascendc_assert(cond, ...) ::trex_emu::AssertCheck(static_cast<bool>(cond), #cond, __FILE__, __LINE__)

namespace AscendC {
inline void InitSocState() {}
// SetSysWorkspace(workspace) records the system workspace and GetSysWorkSpacePtr() returns it (asc-devkit
// workspace pages; null until set, per block, as on the NPU where each core sets its own). The host's
// GetLibApiWorkSpaceSize() is 0 here, so the system and the user workspace both start at the pointer.
inline void SetSysWorkspace(uint8_t* workspace) { trex_emu::RT().sys_workspace = workspace; }
inline uint8_t* GetSysWorkSpacePtr() { return trex_emu::RT().sys_workspace; }
inline uint8_t* GetUserWorkspace(uint8_t* workspace) { return workspace; }
inline int64_t GetSystemCycle() { return static_cast<int64_t>(++trex_emu::RT().cycles); }
template <class... Args>
inline void printf(const char* fmt, Args... args) {
  std::printf(fmt, args...);
}
// DumpTensor(tensor, desc, count): prints the first `count` elements (as float), like CANN's dump.
template <class Tensor>
inline void DumpTensor(const Tensor& t, uint32_t desc, uint32_t count) {
  std::printf("DumpTensor: desc=%u, count=%u:", desc, count);
  for (uint32_t i = 0; i < count; ++i) std::printf(" %g", static_cast<double>(static_cast<float>(t.GetValue(i))));
  std::printf("\n");
}
// Data cache maintenance: the emulator has no data cache between scalar accesses and GM, so the data
// effect is nil (a LocalTensor form is a no-op). On GM, DataCacheCleanAndInvalid is how cores exchange
// scalars (a block writes a flag and cleans its cache line; another invalidates the line and reads it), so
// the GlobalTensor form also (1) orders the race check's clocks as that release/acquire pair does: what a
// block did before cleaning a line precedes what a block does after invalidating it, and (2) hands the
// baton on in a poll loop: a block that invalidates lines whose 64 bytes stay unchanged many times in a row
// waits (other blocks run; the NPU's cores run in parallel) until one of them changes, so a flag written by
// a later block is seen; nobody changing them is the NPU's hang, reported.
enum class CacheLine : uint8_t { SINGLE_CACHE_LINE = 0, ENTIRE_DATA_CACHE };
enum class DcciDst : uint8_t { CACHELINE_ALL = 0, CACHELINE_UB, CACHELINE_OUT, CACHELINE_ATOMIC };
}  // namespace AscendC
namespace trex_emu {
constexpr uint64_t kSyncKeyDcci = uint64_t{0x23} << 56;
constexpr uint32_t kDcciPollLimit = 64;  // unchanged invalidations of the watched lines before handing on
struct DcciLine {
  uintptr_t begin = 0, end = 0;  // the 64-byte line, clipped to its GM region
  uint8_t snap[64] = {};
  uint32_t unchanged = 0;
};
inline std::vector<DcciLine>& DcciLines() {  // per block thread, so per block of one launch
  static thread_local std::vector<DcciLine> lines;
  return lines;
}
inline bool DcciLineChanged(const DcciLine& l) {
  return std::memcmp(reinterpret_cast<const void*>(l.begin), l.snap, l.end - l.begin) != 0;
}
inline bool DcciAnyLineChanged(void*) {
  for (const DcciLine& l : DcciLines())
    if (DcciLineChanged(l)) return true;
  return false;
}
inline void DcciGm(const void* addr) {
  Runtime& rt = RT();
  const uintptr_t a = reinterpret_cast<uintptr_t>(addr), line = a & ~uintptr_t{63};
  uintptr_t begin = line, end = line + 64;
  bool in_gm = false;
  for (const GmRegion& r : rt.gm_regions)
    if (a >= r.begin && a < r.end) {
      begin = std::max(line, r.begin);
      end = std::min<uintptr_t>(line + 64, r.end);
      in_gm = true;
      break;
    }
  if (!in_gm) {  // the bounds check names the API and the address
    CheckSyncGm("DataCacheCleanAndInvalid", addr, 1);
    return;
  }
  const uint64_t key = kSyncKeyDcci | (line & ((uint64_t{1} << 56) - 1));
  SyncMerge(key, key + 1);  // invalidate: see what the blocks that cleaned the line did before
  SyncPublish(key);         // clean: what this block did so far precedes who invalidates it next
  std::vector<DcciLine>& lines = DcciLines();
  // This block's reads of the lines it invalidates (since it last did so) were polls of flags it reads
  // again (a poll loop's reads race by design): they leave the race check; writes stay.
  static thread_local size_t scanned = 0;
  for (size_t i = std::min(scanned, rt.gm_accesses.size()); i < rt.gm_accesses.size(); ++i) {
    GmAccess& g = rt.gm_accesses[i];
    if (g.block != rt.block_idx || g.kind != GmKind::kRead) continue;
    bool polled = g.begin < end && g.end > begin;
    for (const DcciLine& x : lines) polled |= g.begin < x.end && g.end > x.begin;
    if (polled) g.begin = g.end = 0;  // an empty access at 0 overlaps nothing
  }
  scanned = rt.gm_accesses.size();
  DcciLine* l = nullptr;
  for (DcciLine& x : lines)
    if (x.begin == begin) l = &x;
  if (l == nullptr) {
    lines.push_back(DcciLine{});
    l = &lines.back();
    l->begin = begin;
    l->end = end;
    std::memcpy(l->snap, reinterpret_cast<const void*>(begin), end - begin);
    return;
  }
  if (DcciLineChanged(*l)) {
    for (DcciLine& x : lines) x.unchanged = 0;
    std::memcpy(l->snap, reinterpret_cast<const void*>(begin), end - begin);
    return;
  }
  if (++l->unchanged < kDcciPollLimit || rt.wait_until == nullptr) return;
  for (DcciLine& x : lines) {  // a poll loop: wait until a watched line changes
    x.unchanged = 0;
    std::memcpy(x.snap, reinterpret_cast<const void*>(x.begin), x.end - x.begin);
  }
  rt.wait_until("DataCacheCleanAndInvalid (a GM poll loop)", &DcciAnyLineChanged, nullptr);
  SyncMerge(key, key + 1);
}
}  // namespace trex_emu
namespace AscendC {
template <class T, CacheLine entire = CacheLine::SINGLE_CACHE_LINE, DcciDst dst = DcciDst::CACHELINE_ALL, class U>
inline void DataCacheCleanAndInvalid(const GlobalTensor<U>& gm) {
  trex_emu::DcciGm(gm.GetPhyAddr());
}
template <class T, CacheLine entire = CacheLine::SINGLE_CACHE_LINE, DcciDst dst = DcciDst::CACHELINE_ALL, class Tensor>
inline void DataCacheCleanAndInvalid(const Tensor&) {}
// Scalar min/max, which the CCE compiler provides as builtins to kernel code.
template <class T>
inline constexpr T min(T a, T b) { return b < a ? b : a; }
template <class T>
inline constexpr T max(T a, T b) { return a < b ? b : a; }
template <class T>
inline constexpr T DivCeil(T a, T b) { return (a + b - 1) / b; }
template <class T>
inline constexpr T AlignUp(T a, T b) { return (a + b - 1) / b * b; }
}  // namespace AscendC
