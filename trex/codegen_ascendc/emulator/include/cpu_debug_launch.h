// CANN's CPU-debug header for `.asc` programs (included under ASCENDC_CPU_DEBUG); the emulator's
// launch support is in acl/acl.h and trex_emu/asc_program.h.
#pragma once
#include "trex_emu/asc_program.h"
