#!/usr/bin/env bash
# Issue 17 (mHC pre-projection at the hardware limit), one H200 call, <= 540 s, output in $OUT:
#   1. bench/h200_h17_mhc.py: the fused per-stream mHC programs against the split ones (reduce + apply as two
#      kernels), forward and backward, per candidate tiling (CUDA-graph device time) and end to end vs fp64;
#   2. bench/gpu_patterns.py's mHC case: eager / inductor / trex alone / through backend="trex", fwd and fwd+bwd,
#      device and wall time;
#   3. (run 12 only) bench/h200_h17_splitd.py: a prototype outside the IR, the forward with one DRAM read of x
#      (D split across programs that exchange their partial projections);
#   4. DeepSeek's tile-kernels 2.1.0 with the seconds left (>= 45), when its install tree travels in .tk_h17/
#      (bench/h200_h17.carry names it; built by ../shared/anchors/build_tk_site.sh .tk_h17).
#   OUT=... bash bench/h200_h17.sh        (OUT=... bash bench/h200_h17.sh tk: only gpu_patterns' mHC rows + tile-kernels)
set -uo pipefail
OUT=${OUT:?set OUT to the folder whose files come back}
. bench/_device_setup.sh && device_setup
git rev-parse HEAD 2>/dev/null || echo "commit: ${TREX_COMMIT:-unknown}"
if [ "${1:-}" = tk ]; then     # part tk (<= 420 s): issue 17's acceptance rows only: gpu_patterns' mHC case, then
  # tile-kernels in the same call (no sweeps)
  timeout -k 5 170 python3 bench/gpu_patterns.py --out "$OUT" --cases mhc_pre --sweep 0 --rounds 3 \
    --variants eager,inductor,trex,trex_compile > "$OUT/gpu_patterns_log.txt" 2>&1
  echo "gpu_patterns rc=$?"; tail -8 "$OUT/gpu_patterns_log.txt" | cut -c1-600
  if [ -f .tk_h17/tk_site.tar.xz ]; then
    tar -xJf .tk_h17/tk_site.tar.xz -C /tmp && cp .tk_h17/tilekernels_mhc_bench.py /tmp/
    ( cd /tmp && PYTHONPATH=/tmp/site:/tmp timeout -k 3 230 python3 /tmp/tilekernels_mhc_bench.py --shapes 16384 \
        --no-eager --no-inductor --no-autotune --budget-s 200 > "$OUT/tilekernels_mhc.log" 2>&1 )
    echo "tilekernels rc=$?"; tail -14 "$OUT/tilekernels_mhc.log" | cut -c1-300
  else
    echo "tilekernels: .tk_h17/tk_site.tar.xz not carried (bench/h200_h17.carry)"
  fi
  exit 0
fi
if [ "${1:-}" = d1024 ]; then   # part d1024 (<= 80 s): only the e2e model's shape, every candidate swept
  timeout -k 5 75 python3 bench/h200_h17_mhc.py --tokens 8192 --d 1024 --budget-s 50 > "$OUT/h17_mhc_kernels_1024_log.txt" 2>&1
  echo "h17_mhc_kernels d=1024 rc=$?"; grep -E '"e2e"|Error|error' "$OUT/h17_mhc_kernels_1024_log.txt" | cut -c1-400 | tail -12
  exit 0
fi
timeout -k 5 170 python3 bench/h200_h17_mhc.py --budget-s 40 > "$OUT/h17_mhc_kernels_log.txt" 2>&1
echo "h17_mhc_kernels rc=$?"; grep -E '"e2e"|^best|Error|error' "$OUT/h17_mhc_kernels_log.txt" | cut -c1-400 | tail -20
# the e2e model's shape (hidden 1024, 8192 rows per step: run 11's profile put its whole gap in mHC)
timeout -k 5 120 python3 bench/h200_h17_mhc.py --tokens 8192 --d 1024 --budget-s 30 > "$OUT/h17_mhc_kernels_1024_log.txt" 2>&1
echo "h17_mhc_kernels d=1024 rc=$?"; grep -E '"e2e"|^best|Error|error' "$OUT/h17_mhc_kernels_1024_log.txt" | cut -c1-400 | tail -12
timeout -k 5 150 python3 bench/gpu_patterns.py --out "$OUT" --cases mhc_pre --sweep 0 \
  --variants eager,inductor,trex,trex_compile > "$OUT/gpu_patterns_log.txt" 2>&1
echo "gpu_patterns rc=$?"; tail -8 "$OUT/gpu_patterns_log.txt" | cut -c1-600
# bench/h200_h17_splitd.py (the one-read prototype) ran in run 12 (2.07-3.2 ms: latency-bound); not re-run
left=$((480 - SECONDS))
if [ "$left" -lt 45 ]; then
  echo "tilekernels: skipped, ${left} s left in the call"
elif [ -f .tk_h17/tk_site.tar.xz ]; then
  tar -xJf .tk_h17/tk_site.tar.xz -C /tmp && cp .tk_h17/tilekernels_mhc_bench.py /tmp/
  ( cd /tmp && PYTHONPATH=/tmp/site:/tmp timeout -k 3 "$left" python3 /tmp/tilekernels_mhc_bench.py --shapes 16384 \
      --no-eager --no-inductor --no-autotune > "$OUT/tilekernels_mhc.log" 2>&1 )
  echo "tilekernels rc=$?"; tail -14 "$OUT/tilekernels_mhc.log" | cut -c1-300
else
  echo "tilekernels: .tk_h17/tk_site.tar.xz not carried (bench/h200_h17.carry)"
fi
