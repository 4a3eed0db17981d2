#!/usr/bin/env bash
# Session 8, h22: the row kernels (RMSNorm, limited SwiGLU, RoPE) at bench/e2e_hf.py's shapes on the
# H200 (hidden 1024 over 4 x 2048 = 8192 rows; SwiGLU 512 wide over 16384 expert rows; RoPE on the
# last 64 of 8 heads x 128, bf16 tables), <= 200 s in all:
#   1. the tiling sweep (<= 85 s): device time (CUDA graph) of every kernel at the cost model's shortlist,
#      at the tilings the model chose before this session (run 11's) and at Inductor's choice (one row,
#      one warp), each checked against the first; `sweep ...` lines, $OUT/sweep/gpu_patterns_sweep.json;
#   2. bench/gpu_patterns.py at the model's choice (<= 105 s): eager, inductor, inductor_ro, trex_compile,
#      trex_ro, forward and forward+backward, device and wall time, fp64-checked; $OUT/gpu_patterns.json.
# Prediction and outcome: bench/NOTES_gpu.md, "Session 8, row kernels".
#   OUT=/some/dir TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_h22.sh
set -uo pipefail
OUT=${OUT:?set OUT to the folder whose files come back}
. bench/_device_setup.sh && device_setup
CASES=rmsnorm_weighted,rope_interleaved,swiglu_limited
timeout -k 5 85 python3 bench/gpu_patterns.py --shapes e2e --sweep 2 --sweep-only --cases "$CASES" \
  --out "$OUT/sweep" > "$OUT/sweep_log.txt" 2>&1
echo "sweep rc=$?"; grep "^sweep " "$OUT/sweep_log.txt" | cut -c1-160
timeout -k 5 105 python3 bench/gpu_patterns.py --shapes e2e --sweep 0 --cases "$CASES" \
  --variants eager,inductor,inductor_ro,trex_compile,trex_ro --out "$OUT" > "$OUT/gpu_patterns_log.txt" 2>&1
echo "gpu_patterns rc=$?"; grep -v '^{' "$OUT/gpu_patterns_log.txt" | tail -14 | cut -c1-300
python3 - <<'PY'
import json, os
path = os.path.join(os.environ["OUT"], "gpu_patterns.json")
if os.path.exists(path):
    kernels = json.load(open(path)).get("trex_kernels") or {}
    for name, k in sorted(kernels.items()) if isinstance(kernels, dict) else ():
        t = k.get("tiling", {})
        print(f"kernel {k.get('program', name):34s} R={t.get('rows_per_tile')} w={t.get('num_warps')} "
              f"P={t.get('programs')} sizes={k.get('sizes')} compiled={k.get('compiled')}")
PY
