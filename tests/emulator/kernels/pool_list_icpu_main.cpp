// trex test (written for trex): TBufPool (bufpool_api.cpp), ListTensorDesc (list_api.cpp) and SyncAll over a
// subset (sync_subset.cpp) run CANN
// CPU-debug style (ICPU_RUN_KF) over 3 blocks on an odd length; `no_reset` / `list_index` must stop with the
// emulator's error.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include "bufpool_api.cpp"
#include "list_api.cpp"
#include "sync_subset.cpp"

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "";
  const uint32_t n = 999, per = 336;
  float* x = static_cast<float*>(GmAlloc(n * sizeof(float)));
  float* y = static_cast<float*>(GmAlloc(n * sizeof(float)));
  float* z = static_cast<float*>(GmAlloc(n * sizeof(float)));
  float* w = static_cast<float*>(GmAlloc(n * sizeof(float)));
  for (uint32_t i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i % 13) - 6.0f;
    y[i] = static_cast<float>(i % 7) * 0.5f;
    z[i] = w[i] = NAN;
  }
  const uint32_t mode = what == "no_reset" ? kNoResetBetween : kSubdivide;
  ICPU_RUN_KF(bufpool_kernel, 3, (GM_ADDR)x, (GM_ADDR)y, (GM_ADDR)z, (GM_ADDR)w, n, per, mode);
  int bad = 0;
  for (uint32_t i = 0; i < n; ++i) bad += z[i] != x[i] + y[i] || w[i] != x[i] * y[i];
  // a list of two 1-D tensors (x, y) in CANN's ListTensor layout: offset, [dim | i << 32, n] per tensor, pointers
  auto* block = static_cast<uint64_t*>(GmAlloc(7 * sizeof(uint64_t)));
  const uint64_t words[7] = {40, 1, n, 1 | (uint64_t{1} << 32), n, reinterpret_cast<uint64_t>(x), reinterpret_cast<uint64_t>(y)};
  std::memcpy(block, words, sizeof(words));
  const uint32_t list_mode = what == "list_index" ? kIndexPastEnd : kDescObj;
  ICPU_RUN_KF(list_sum, 3, (GM_ADDR)block, (GM_ADDR)w, per, 2u, list_mode);
  for (uint32_t i = 0; i < n; ++i) bad += w[i] != x[i] + y[i];
  // SyncAll over blocks 0..1 of 3 (x: 3 x 64 floats, sync zeroed; z/w reused as part/out)
  auto* sync = static_cast<int32_t*>(GmAlloc(3 * 32));
  std::memset(sync, 0, 3 * 32);
  ICPU_RUN_KF(subset_total, 3, (GM_ADDR)x, (GM_ADDR)sync, (GM_ADDR)z, (GM_ADDR)w, 64u, 2u, kSubset);
  float total = 0;
  for (uint32_t i = 0; i < 128; ++i) total += x[i];
  bad += std::fabs(w[0] - total) > 1e-3f || std::fabs(w[8] - total) > 1e-3f || w[16] != -1.0f;
  std::printf("mismatches=%d blocks=%llu\n", bad, static_cast<unsigned long long>(trex_emu::RT().counters.blocks_run));
  return bad != 0;
}
