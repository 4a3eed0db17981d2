// trex AscendC emulator: Fill / InitGlobalMemory — GM set to a value (asc-devkit docs/zh/api/SIMD-API/
// 高阶API/张量变换/Fill-97.md; InitGlobalMemory is the CANN 8.0 name of the same call, e.g.
// https://www.hiascend.com/document/detail/zh/CANNCommunityEdition/83RC1alpha001/API/ascendcopapi/atlasascendc_api_07_0891.html).
//
// Fill(gm, size, value): elements [0, size) of gm become value (A2/A3 types uint16_t, int16_t, half,
// uint32_t, int32_t, float; others are a compile error). The NPU stages the value through UB, so the
// pages allow the call only before the program's InitBuffer: a call after a TPipe handed out UB raises.
// The write is a UB -> GM transfer (counted in mte3_bytes) and a GM write for the cross-block race check:
// blocks filling overlapping ranges race, and a block reading what another fills needs SyncAll in
// between, as the page says.
#pragma once
#include <algorithm>

#include "trex_emu/pipe.h"
#include "trex_emu/vec.h"

namespace trex_emu {
template <class T>
inline void FillGm(const char* api, AscendC::GlobalTensor<T>& gm, uint64_t size, T value) {
  static_assert(kOneOf<T, uint16_t, int16_t, half, uint32_t, int32_t, float>,
                "Fill/InitGlobalMemory: element type must be uint16_t, int16_t, half, uint32_t, int32_t or float on Atlas A2/A3");
  Runtime& rt = RT();
  if (rt.current_pipe != nullptr && rt.current_pipe->UsedBytes() > 0)
    Fail(api, ": called after TPipe::InitBuffer handed out ", rt.current_pipe->UsedBytes(),
         " B of UB; the API stages the value through UB and is supported only before InitBuffer (call it first)");
  if (size == 0) return;
  CheckGm(api, gm.addr_, size * sizeof(T), true);
  std::fill(gm.addr_, gm.addr_ + size, value);
  rt.counters.mte3_bytes += size * sizeof(T);
  rt.counters.mte3_transfers += 1;
}
}  // namespace trex_emu

namespace AscendC {
template <typename T>
inline void Fill(GlobalTensor<T>& gmWorkspaceAddr, const uint64_t size, const T value) {
  trex_emu::FillGm("Fill", gmWorkspaceAddr, size, value);
}
template <typename T>
inline void InitGlobalMemory(GlobalTensor<T>& gmWorkspaceAddr, const uint64_t size, const T value) {
  trex_emu::FillGm("InitGlobalMemory", gmWorkspaceAddr, size, value);
}
}  // namespace AscendC
