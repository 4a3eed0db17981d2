// trex emulator tests (written for trex): the SyncAll kernel of sync_all.cpp in the framework-launch
// style (GET_TILING_DATA from keyed_kernel_tiling.h, DTYPE_X, TILING_KEY_IS).
#include "sync_all.cpp"

// tiling key 1 = SyncAll(), key 2 = the software SyncAll(gm, ub) form;
// DTYPE_X picks the template instance. The workspace argument is the kernel's GM scratch.
extern "C" __global__ __aicore__ void block_total_keyed(GM_ADDR x, GM_ADDR out, GM_ADDR workspace, GM_ADDR tiling) {
  GET_TILING_DATA(t, tiling);
  KernelBlockTotal<DTYPE_X> op;
  op.Init(x, workspace, out, t.perBlock);
  if (TILING_KEY_IS(1)) op.Process(0, false);
  else if (TILING_KEY_IS(2)) op.Process(0, true);
}
