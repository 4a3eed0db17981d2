// CANN CPU-debug header name; the emulator provides everything through kernel_operator.h.
#pragma once
#include "kernel_operator.h"
