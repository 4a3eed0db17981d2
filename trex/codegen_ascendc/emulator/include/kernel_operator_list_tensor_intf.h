// CANN header name of ListTensorDesc; the emulator provides it through kernel_operator.h.
#pragma once
#include "kernel_operator.h"
