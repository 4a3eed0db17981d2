// trex test (written for trex): the ASCENDC_TPL_* template kernel of tpl_project, one instantiation run
// CANN CPU-debug style (ICPU_RUN_KF) over 3 blocks on an odd length; `overrun` passes a totalLength past
// the buffer, which must stop with the GM bounds error.
#include <cmath>
#include <cstdio>
#include <cstring>
#include "tpl_project/op_kernel/tpl_scale.cpp"

int main(int argc, char** argv) {
  const bool overrun = argc > 1 && std::strcmp(argv[1], "overrun") == 0;
  const uint32_t n = 1000;  // 2000 B: not a multiple of 32 B
  half* x = static_cast<half*>(AscendC::GmAlloc(n * sizeof(half)));
  half* y = static_cast<half*>(AscendC::GmAlloc(n * sizeof(half)));
  auto* t = static_cast<TplScaleTiling*>(AscendC::GmAlloc(sizeof(TplScaleTiling)));
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = half(static_cast<float>(i % 97) * 0.25f - 8.0f);
    y[i] = half(NAN);
  }
  *t = TplScaleTiling{overrun ? n + 64 : n, 336, 64};  // blocks of 336, 336, 328 elements
  auto kernel = tpl_scale<half, 3, true>;
  ICPU_RUN_KF(kernel, 3, (GM_ADDR)x, (GM_ADDR)y, (GM_ADDR) nullptr, (GM_ADDR)t);
  int bad = 0;
  for (uint32_t i = 0; i < n; ++i)
    bad += static_cast<float>(y[i]) != static_cast<float>(half(static_cast<float>(x[i]) * 3.0f));
  std::printf("mismatches=%d blocks=%llu\n", bad, static_cast<unsigned long long>(trex_emu::RT().counters.blocks_run));
  AscendC::GmFree(x);
  AscendC::GmFree(y);
  AscendC::GmFree(t);
  return bad != 0;
}
