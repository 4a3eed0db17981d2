// kernel_utils.h — in CANN (asc-devkit impl/basic_api/kernel_utils.h) one of the internal headers
// kernel_operator.h is built from: the basic API's constants, modes, parameter structs
// (DataCopyParams, ...), the block-local mask/config registers and DataCopyWithAtomic. A kernel may
// include it by name (cann-ops' op_kernel/platform.h does); everything it declares that kernels use
// the emulator provides through kernel_operator.h, so this name forwards there.
#pragma once
#include "kernel_operator.h"
