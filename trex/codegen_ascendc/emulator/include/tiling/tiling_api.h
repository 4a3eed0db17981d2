// tiling/tiling_api.h, kernel side: op_host tiling headers (included before the kernel, see
// op_project.py) include it for the adv APIs' host tiling structs, which the emulator does not model;
// the tiling-data macros are all a kernel needs from it.
#pragma once
#include "register/tilingdata_base.h"
