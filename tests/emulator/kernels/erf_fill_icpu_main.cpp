// trex test (written for trex): Erf and Fill kernels of erf_fill_api.cpp run CANN CPU-debug style
// (ICPU_RUN_KF) over several blocks on odd lengths. `erf_overlap` / `fill_after_initbuffer` must stop
// with the emulator's error.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include "erf_fill_api.cpp"

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  const uint32_t n = 999, per = 336;  // 3 blocks, 3996 B: not a multiple of 32 B
  float* x = static_cast<float*>(GmAlloc(n * sizeof(float)));
  float* y = static_cast<float*>(GmAlloc(n * sizeof(float)));
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i) / 100.0f - 5.0f;
    y[i] = NAN;
  }
  const uint32_t erf_mode = what == "erf_overlap" ? kErfInPlace : kErfTmp;
  ICPU_RUN_KF(erf_float, 3, (GM_ADDR)x, (GM_ADDR)y, n, per, erf_mode);
  int bad = 0;
  for (uint32_t i = 0; i < n; ++i) bad += !(std::fabs(y[i] - std::erf(x[i])) <= 4e-7f);
  const uint32_t fill_mode = what == "fill_after_initbuffer" ? kFillAfterInitBuffer : kFill;
  ICPU_RUN_KF(fill_float, 3, (GM_ADDR)y, n, per, 2.5f, fill_mode);
  for (uint32_t i = 0; i < n; ++i) bad += y[i] != 2.5f + static_cast<float>(i / per);
  std::printf("mismatches=%d blocks=%llu\n", bad, static_cast<unsigned long long>(trex_emu::RT().counters.blocks_run));
  GmFree(x);
  GmFree(y);
  return bad != 0;
}
