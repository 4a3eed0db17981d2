#!/usr/bin/env bash
# Session 14, call 1 (<= 540 s), output in $OUT:
#   1. bench/attn_sink_probe.py: transformers' V4 sink attention (eager chain) against Inductor and against one
#      SDPA call over augmented keys (default / efficient / cuDNN backends, and compiled), fp64 error and time;
#   2. bench/h200_h17_mhc.py's dx + dfn sweep with the counted (pipelined) row loop, at 16384 x 4 x 7168 and
#      at the e2e model's 8192 x 4 x 1024 (the tiling sweeps cut to their first points).
#   OUT=... bash bench/h200_s14.sh
set -uo pipefail
OUT=${OUT:?set OUT to the folder whose files come back}
. bench/_device_setup.sh && device_setup
timeout -k 5 200 python3 bench/attn_sink_probe.py --out "$OUT/attn_sink_probe.json" > "$OUT/attn_sink_probe_log.txt" 2>&1
echo "attn_sink_probe rc=$?"; grep -v "^ *$" "$OUT/attn_sink_probe_log.txt" | grep -E '^\{|Error' | cut -c1-600 | tail -16
timeout -k 5 150 python3 bench/h200_h17_mhc.py --budget-s 5 > "$OUT/h17_mhc_kernels_log.txt" 2>&1
echo "h17_mhc_kernels rc=$?"; grep -E 'mhc_dx_dfn|"e2e"|Error' "$OUT/h17_mhc_kernels_log.txt" | cut -c1-400 | tail -14
timeout -k 5 100 python3 bench/h200_h17_mhc.py --tokens 8192 --d 1024 --budget-s 5 > "$OUT/h17_mhc_kernels_1024_log.txt" 2>&1
echo "h17_mhc_kernels d=1024 rc=$?"; grep -E 'mhc_dx_dfn|"e2e"|Error' "$OUT/h17_mhc_kernels_1024_log.txt" | cut -c1-400 | tail -14
