#!/usr/bin/env bash
# Session 15's H200 calls (issue 22), output in $OUT; carry .whl (transformers >= 5.18):
#   T (<= 590 s): bench/trace_step.py (2 layers, mode trex: the ops and stacks behind the step's copies, the
#                 largest Inductor kernels' sources), then transformers' V4 at 8 layers: eager and trex_ro
#                 under REGIONAL=1 (each decoder-layer variant compiled once), grouped_mm experts
#   I (<= 590 s): the same 8 layers, inductor_ro (the best Inductor mode at 2 layers), whole model
#   OUT=... TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_s15.sh T
set -uo pipefail
part=${1:?usage: bench/h200_s15.sh T|I}
OUT=${OUT:?set OUT to the folder whose files come back}
. bench/_device_setup.sh && device_setup
export EXPERTS=grouped_mm
case "$part" in
  T)
    LAYERS=2 timeout -k 5 200 python3 bench/trace_step.py --out "$OUT" --mode trex > "$OUT/trace_log.txt" 2>&1
    echo "trace rc=$?"; grep -v "^{" "$OUT/trace_log.txt" | tail -60 | cut -c1-220
    LAYERS=8 REGIONAL=1 timeout -k 5 330 python3 bench/e2e_hf.py --out "$OUT" eager trex_ro > "$OUT/e2e_L8_log.txt" 2>&1
    echo "e2e L8 regional rc=$?"; grep -v "^{" "$OUT/e2e_L8_log.txt" | tail -8 ;;
  I)
    LAYERS=8 timeout -k 5 580 python3 bench/e2e_hf.py --out "$OUT" inductor_ro > "$OUT/e2e_L8_ind_log.txt" 2>&1
    echo "e2e L8 inductor_ro rc=$?"; grep -v "^{" "$OUT/e2e_L8_ind_log.txt" | tail -8 ;;
esac
