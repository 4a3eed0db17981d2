// trex test (written for trex): half / bfloat16_t constants as constant expressions at namespace scope
// (CANN's half is a literal type: `constexpr half HALF_ONE = 1.0;`), and float16_t. The kernel writes each
// constant next to the same value converted at run time.
#include "kernel_operator.h"
using namespace AscendC;

constexpr double kValues[] = {1.0, -2.5, 0.1, 65504.0, 65519.0, 65520.0, -1e6, 6.0e-8, 2.9802322387695312e-08,
                              1e-30, 3.14159265358979, -0.0, 0.333333333333333};
constexpr half kHalf[] = {kValues[0], kValues[1], kValues[2], kValues[3], kValues[4], kValues[5], kValues[6],
                          kValues[7], kValues[8], kValues[9], kValues[10], kValues[11], kValues[12]};
constexpr bfloat16_t kBf16[] = {kValues[0], kValues[1], kValues[2], kValues[3], kValues[4], kValues[5], kValues[6],
                                kValues[7], kValues[8], kValues[9], kValues[10], kValues[11], kValues[12]};
constexpr uint32_t kCount = sizeof(kValues) / sizeof(kValues[0]);
static_assert(std::is_same<float16_t, half>::value, "float16_t is half");
static_assert(std::is_same<float32_t, float>::value, "float32_t is float");

extern "C" __global__ __aicore__ void half_constants(GM_ADDR out) {
  GlobalTensor<uint16_t> o;
  o.SetGlobalBuffer((__gm__ uint16_t*)out, 4 * kCount);
  for (uint32_t i = 0; i < kCount; ++i) {
    volatile double v = kValues[i];  // run-time conversion
    o.SetValue(4 * i + 0, kHalf[i].Bits());
    o.SetValue(4 * i + 1, half(static_cast<double>(v)).Bits());
    o.SetValue(4 * i + 2, kBf16[i].Bits());
    o.SetValue(4 * i + 3, bfloat16_t(static_cast<double>(v)).Bits());
  }
}
