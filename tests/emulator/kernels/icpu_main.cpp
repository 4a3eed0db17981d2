// CANN CPU-debug style host program: GmAlloc + ICPU_RUN_KF around the unchanged add_custom kernel.
#include "add_custom.cpp"

#include <cstdio>

// Asks for more UB than exists: ICPU_RUN_KF must print the emulator's message and abort.
extern "C" __global__ __aicore__ void overflow_kernel(GM_ADDR unused) {
  (void)unused;
  TPipe pipe;
  TBuf<TPosition::VECCALC> tooBig;
  pipe.InitBuffer(tooBig, 300 * 1024);
}

int main(int argc, char** argv) {
  (void)argv;
  if (argc > 1) {
    ICPU_RUN_KF(overflow_kernel, 1, nullptr);
    return 0;  // not reached: the launch aborts
  }
  const uint32_t blockDim = 8, tileNum = 8, total = blockDim * 2048;
  AscendC::SetKernelMode(AscendC::KernelMode::AIV_MODE);
  half* x = static_cast<half*>(AscendC::GmAlloc(total * sizeof(half)));
  half* y = static_cast<half*>(AscendC::GmAlloc(total * sizeof(half)));
  half* z = static_cast<half*>(AscendC::GmAlloc(total * sizeof(half)));
  for (uint32_t i = 0; i < total; ++i) {
    x[i] = half(0.25f * static_cast<float>(i % 1000));
    y[i] = half(-1.0f + 0.5f * static_cast<float>(i % 7));
  }
  ICPU_RUN_KF(add_custom, blockDim, (GM_ADDR)x, (GM_ADDR)y, (GM_ADDR)z, total, tileNum);
  uint32_t mismatches = 0;
  for (uint32_t i = 0; i < total; ++i)
    if (static_cast<float>(z[i]) != static_cast<float>(half(static_cast<float>(x[i]) + static_cast<float>(y[i]))))
      ++mismatches;
  std::printf("mismatches=%u mte2_bytes=%llu\n", mismatches,
              static_cast<unsigned long long>(trex_emu::RT().counters.mte2_bytes));
  AscendC::GmFree(x);
  AscendC::GmFree(y);
  AscendC::GmFree(z);
  return mismatches == 0 ? 0 : 1;
}
