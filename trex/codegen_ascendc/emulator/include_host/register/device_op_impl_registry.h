// register/device_op_impl_registry.h — see op_def_registry.h (IMPL_OP_OPTILING).
#pragma once
#include "register/op_def_registry.h"
// DEVICE_IMPL_OP_OPTILING(Name).Tiling(fn): a tiling function registered to also run on the device
// ("tiling sink", for value-dependent inputs); in the emulator every tiling function runs on the host
// with the inputs' data, so it registers like IMPL_OP_OPTILING.
#define DEVICE_IMPL_OP_OPTILING(op_type) IMPL_OP_OPTILING(op_type)
