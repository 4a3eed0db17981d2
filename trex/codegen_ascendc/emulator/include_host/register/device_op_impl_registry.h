// register/device_op_impl_registry.h — see op_def_registry.h (IMPL_OP_OPTILING).
#pragma once
#include "register/op_def_registry.h"
