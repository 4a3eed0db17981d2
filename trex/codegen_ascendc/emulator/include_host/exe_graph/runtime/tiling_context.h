// exe_graph/runtime/tiling_context.h — CANN's header of gert::TilingContext; the emulator's host model
// defines it in trex_host/ge_types.h.
#pragma once
#include "trex_host/ge_types.h"
