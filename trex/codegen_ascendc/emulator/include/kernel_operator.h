// kernel_operator.h — entry header of the trex AscendC emulator.
//
// A kernel written for CANN (`#include "kernel_operator.h"`, `using namespace AscendC;`,
// `extern "C" __global__ __aicore__ void k(GM_ADDR x, ...)`) compiles unchanged with
//   g++ -std=c++17 -I<this directory> ...
// and runs on the host CPU. See docs/emulator.md for the covered API and its semantics.
#pragma once
// Classic guard as well: with the runner's precompiled header, only macros survive into a second
// #include of this file.
#ifndef TREX_EMU_KERNEL_OPERATOR_H
#define TREX_EMU_KERNEL_OPERATOR_H

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "trex_emu/float16.h"
#include "trex_emu/runtime.h"
#include "trex_emu/tensor.h"
#include "trex_emu/pipe.h"
#include "trex_emu/bufpool.h"
#include "trex_emu/copy.h"
#include "trex_emu/copy_slice.h"
#include "trex_emu/vec.h"
#include "trex_emu/vec_misc.h"
#include "trex_emu/vec_extra.h"
#include "trex_emu/vec_gather.h"
#include "trex_emu/sort.h"
#include "trex_emu/core_type.h"
#include "trex_emu/symbol_override.h"
#include "trex_emu/adv_softmax.h"
#include "trex_emu/adv_erf.h"
#include "trex_emu/adv_mean.h"
#include "trex_emu/adv_broadcast.h"
#include "trex_emu/adv_select.h"
#include "trex_emu/adv_exp.h"
#include "trex_emu/adv_common.h"
#include "trex_emu/adv_math.h"
#include "trex_emu/adv_activation.h"
#include "trex_emu/adv_softmax_ext.h"
#include "trex_emu/adv_sum.h"
#include "trex_emu/adv_quant.h"
#include "trex_emu/adv_cumsum.h"
#include "trex_emu/adv_dropout.h"
#include "trex_emu/adv_reduce_max.h"
#include "trex_emu/std_type_traits.h"
#include "trex_emu/tiling_norm.h"
#include "trex_emu/tiling_deepnorm.h"
#include "trex_emu/tiling_rmsnorm.h"
#include "trex_emu/tiling_welford.h"
#include "trex_emu/tiling_topk.h"
#include "trex_emu/tiling_pad.h"
#include "trex_emu/adv_norm.h"
#include "trex_emu/adv_deepnorm.h"
#include "trex_emu/adv_rmsnorm.h"
#include "trex_emu/adv_welford.h"
#include "trex_emu/adv_topk.h"
#include "trex_emu/adv_pad.h"
#include "trex_emu/adv_transdata.h"
#include "trex_emu/gm_fill.h"
#include "trex_emu/list_tensor.h"
#include "trex_emu/basic_more.h"
#include "trex_emu/block_sync.h"
#include "trex_emu/vec_transpose.h"
#include "trex_emu/launch.h"
#include "trex_emu/op_project.h"

#define TREX_ASCENDC_EMULATOR 1
#ifndef ASCENDC_CPU_DEBUG
#define ASCENDC_CPU_DEBUG 1
#endif

namespace AscendC {
using ::bfloat16_t;
using ::half;
template <class... Args>
inline void PRINTF(const char* fmt, Args... args) {
  std::printf(fmt, args...);
}
}  // namespace AscendC

// CANN's kernel headers put the pipe and event names and the block queries at global scope too.
using AscendC::pipe_t;
using AscendC::event_t;
using AscendC::PIPE_S; using AscendC::PIPE_V; using AscendC::PIPE_M; using AscendC::PIPE_MTE1;
using AscendC::PIPE_MTE2; using AscendC::PIPE_MTE3; using AscendC::PIPE_ALL; using AscendC::PIPE_FIX;
using AscendC::EVENT_ID0; using AscendC::EVENT_ID1; using AscendC::EVENT_ID2; using AscendC::EVENT_ID3;
using AscendC::EVENT_ID4; using AscendC::EVENT_ID5; using AscendC::EVENT_ID6; using AscendC::EVENT_ID7;
using AscendC::GetBlockNum;
using AscendC::GetBlockIdx;
using AscendC::GetTPipePtr;  // asc-devkit include/basic_api/kernel_common.h declares it at global scope

#endif  // TREX_EMU_KERNEL_OPERATOR_H
