// register/op_impl_registry.h — CANN's header for IMPL_OP / IMPL_OP_OPTILING / IMPL_OP_INFERSHAPE (an op_host file
// may include it instead of op_def_registry.h); the emulator defines them all in op_def_registry.h.
#pragma once
#include "register/op_def_registry.h"
