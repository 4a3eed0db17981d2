// trex AscendC emulator: C ABI used by the Python runner (codegen_ascendc/emulator/runner.py).
// The runner appends `#include "trex_emu/runner_abi.h"` plus one generated entry point per kernel
// to the kernel's translation unit; kernels themselves never include this file.
#pragma once

#include <cstdint>
#include <cstring>
#include <cstdio>
#include <string>
#include <utility>

#include "kernel_operator.h"

namespace trex_emu {

inline std::string& LastError() {
  static std::string e;
  return e;
}

inline std::string JsonEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    o += c;
  }
  return o;
}

// Built with snprintf, not std::ostringstream: on the H200 image (g++ 13.3) every launch crashed
// inside std::ostream::_M_insert<unsigned long> called from here (a null locale facet: two libstdc++
// copies in one process, see docs/emulator.md); the counters path now touches no iostream state.
inline void AppendU64(std::string& out, const char* key, uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
  out += '"';
  out += key;  // any length (findings name file paths)
  out += "\":";
  out += buf;
}

template <class Map>
inline void AppendMap(std::string& out, const char* key, const Map& m) {
  out += '"';
  out += key;
  out += "\":{";
  bool first = true;
  for (const auto& kv : m) {
    if (!first) out += ',';
    AppendU64(out, JsonEscape(kv.first).c_str(), static_cast<uint64_t>(kv.second));
    first = false;
  }
  out += '}';
}

inline std::string CountersJson() {
  const Counters& c = RT().counters;
  std::string out = "{";
  const std::pair<const char*, uint64_t> scalars[] = {
      {"mte2_bytes", c.mte2_bytes}, {"mte2_transfers", c.mte2_transfers}, {"mte3_bytes", c.mte3_bytes},
      {"mte3_transfers", c.mte3_transfers}, {"ub_copy_bytes", c.ub_copy_bytes},
      {"ub_copy_transfers", c.ub_copy_transfers}, {"scalar_ops", c.scalar_ops}, {"ub_peak_bytes", c.ub_peak_bytes},
      {"datacopy_truncations", c.datacopy_truncations}, {"blocks_run", c.blocks_run}};
  for (const auto& kv : scalars) {
    AppendU64(out, kv.first, static_cast<uint64_t>(kv.second));
    out += ',';
  }
  AppendMap(out, "vector_repeats", c.vector_repeats);
  out += ',';
  AppendMap(out, "vector_calls", c.vector_calls);
  out += ',';
  AppendMap(out, "findings", c.findings);
  out += '}';
  return out;
}

// Element kinds for trex_emu_convert.
enum ConvKind : int { kKindFloat = 0, kKindHalf = 1, kKindBf16 = 2, kKindInt32 = 3 };

template <class TD, class TS>
inline void ConvertArray(const void* src, void* dst, uint64_t n, AscendC::RoundMode mode) {
  const TS* s = static_cast<const TS*>(src);
  TD* d = static_cast<TD*>(dst);
  for (uint64_t i = 0; i < n; ++i) d[i] = CastValue<TD>(s[i], mode);
}

}  // namespace trex_emu

#define TREX_EMU_EXPORT __attribute__((visibility("default")))

extern "C" {

TREX_EMU_EXPORT int trex_emu_abi_version() { return 5; }
TREX_EMU_EXPORT const char* trex_emu_last_error() { return trex_emu::LastError().c_str(); }
TREX_EMU_EXPORT const char* trex_emu_counters_json() {
  static std::string s;
  s = trex_emu::CountersJson();
  return s.c_str();
}
TREX_EMU_EXPORT void trex_emu_set_tiling_key(uint64_t key) { trex_emu::RT().tiling_key = key; }
TREX_EMU_EXPORT void trex_emu_reset_counters() { trex_emu::RT().counters = trex_emu::Counters(); }
TREX_EMU_EXPORT void trex_emu_clear_gm_regions() { trex_emu::RT().gm_regions.clear(); }
// guard: poisoned bytes the caller placed after the region (read without a fault under device bounds).
TREX_EMU_EXPORT void trex_emu_add_gm_region(const char* name, const void* p, uint64_t bytes, uint64_t guard) {
  const uintptr_t b = reinterpret_cast<uintptr_t>(p);
  trex_emu::RT().gm_regions.push_back(trex_emu::GmRegion{name, b, b + bytes, guard});
}
TREX_EMU_EXPORT void trex_emu_set_device_bounds(int on) { trex_emu::RT().device_bounds = on != 0; }
TREX_EMU_EXPORT void trex_emu_configure(uint32_t ub_bytes, int ub_fill, int check_races, int check_sync) {
  trex_emu::RT().ub_bytes = ub_bytes;
  trex_emu::RT().ub_fill = ub_fill;
  trex_emu::RT().check_races = check_races != 0;
  trex_emu::RT().check_sync = check_sync != 0;
}

// Converts n elements with the emulator's Cast rounding (no A2 support-table check: this is the
// raw conversion, for tests of every mode). Returns 0, or 1 for an unknown kind pair.
TREX_EMU_EXPORT int trex_emu_convert(int src_kind, int dst_kind, int mode, const void* src, void* dst, uint64_t n) {
  using namespace trex_emu;
  const auto m = static_cast<AscendC::RoundMode>(mode);
  const int key = src_kind * 16 + dst_kind;
  switch (key) {
    case kKindFloat * 16 + kKindHalf: ConvertArray<half, float>(src, dst, n, m); return 0;
    case kKindFloat * 16 + kKindBf16: ConvertArray<bfloat16_t, float>(src, dst, n, m); return 0;
    case kKindFloat * 16 + kKindFloat: ConvertArray<float, float>(src, dst, n, m); return 0;
    case kKindFloat * 16 + kKindInt32: ConvertArray<int32_t, float>(src, dst, n, m); return 0;
    case kKindHalf * 16 + kKindFloat: ConvertArray<float, half>(src, dst, n, m); return 0;
    case kKindBf16 * 16 + kKindFloat: ConvertArray<float, bfloat16_t>(src, dst, n, m); return 0;
    case kKindInt32 * 16 + kKindFloat: ConvertArray<float, int32_t>(src, dst, n, m); return 0;
    case kKindHalf * 16 + kKindInt32: ConvertArray<int32_t, half>(src, dst, n, m); return 0;
    default: return 1;
  }
}

}  // extern "C"

// Generated entry points call this: runs the blocks and turns an error into a return code + message.
template <class F>
inline int trex_emu_run(const char* kernel, uint32_t block_dim, F&& body) {
  trex_emu::LastError() = trex_emu::RunBlocks(kernel, block_dim, body);
  return trex_emu::LastError().empty() ? 0 : 1;
}
