#!/usr/bin/env bash
# Session 9, h22r: first-step (compile) time of transformers' V4 (bench/e2e_hf.py's config, grouped_mm
# experts) under regional compilation (REGIONAL=1: trex.compiler.regional.compile for trex AND Inductor,
# so both get the same regions), cold (empty on-disk caches) then warm (a second process on the same
# caches), one process per (mode, cache state), each under its own limit. Seconds, at most, per part:
#   A  (<= 590 s) LAYERS=2: trex cold (190), trex warm (100), inductor cold (200), inductor warm (100)
#   B  (<= 390 s) LAYERS=8: trex cold (260), trex warm (130)
#   C  (<= 490 s) LAYERS=8: inductor cold (340), inductor warm (150)
#   A+B+C: <= 25 min of device time (predicted ~17). Whole-model references: run 10 (L2 trex 84.4 s,
#   inductor 114.6 s), run 15 (L2 trex_ro 134.6, inductor_ro 128.4), the issue (L8 inductor 374 s).
# Prediction and outcome: bench/NOTES_gpu.md "Session 9, h22r"; CPU measurements: bench/NOTES_compile.md.
#   OUT=/some/dir TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_h22r.sh A
#   OUT=$OUT bash bench/h200_session.sh h22r:A=595 && OUT=$OUT bash bench/h200_session.sh h22r:B=395 h22r:C=...
#   DRY_RUN=1 OUT=/tmp/x bash bench/h200_h22r.sh A                # on a CPU: tiny sizes, checks the plumbing
set -uo pipefail
part=${1:?usage: bench/h200_h22r.sh A|B|C}
OUT=${OUT:?set OUT to the folder whose files come back}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
if [ "${DRY_RUN:-0}" = 1 ]; then
  # the CPU check of this script: tiny batch, one step per mode, trex's rest=aten path (no Inductor C++)
  export B=1 T=32 PYTHONPATH=$PWD
  DRY=(--dry-run); SCALE=6     # the loaded CPU is ~6x slower than the H200 host
else
  python3 -m pip install -q --no-deps --no-index --no-build-isolation -e . > "$OUT/install.txt" 2>&1 \
    || echo "WARN: editable install failed: $(tail -c 300 "$OUT/install.txt")"
  export PYTHONPATH=$PWD
  if ls .whl/*.whl > /dev/null 2>&1; then   # transformers >= 5.18 (DeepSeek-V4) travels in .whl/
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      && export PYTHONPATH=/tmp/site:$PWD
  fi
  nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv,noheader
  DRY=(); SCALE=1
fi
export REGIONAL=1 EXPERTS=grouped_mm
CACHES=$(mktemp -d /tmp/h22r_caches.XXXXXX)   # one cache folder per mode: the first run cold, the next warm

run_mode() {   # run_mode LAYERS MODE LIMIT_S: one process; its row says cold or warm
  local layers=$1 mode=$2 limit=$(( $3 * SCALE )) t0
  if [ ${#DRY[@]} -gt 0 ] && [ "$mode" = inductor ]; then echo "L$layers $mode: skipped in the dry run (C++ codegen)"; return; fi
  t0=$(date +%s)
  LAYERS=$layers timeout -k 5 "$limit" python3 bench/e2e_hf.py "${DRY[@]}" --out "$OUT" \
    --cache-dir "$CACHES/L${layers}_$mode" "$mode" > "$OUT/log_L${layers}_${mode}_$(date +%s%N).txt" 2>&1
  echo "L$layers $mode rc=$? in $(( $(date +%s) - t0 )) s"
}

case "$part" in
  A) run_mode 2 trex 185; run_mode 2 trex 95; run_mode 2 inductor 195; run_mode 2 inductor 95 ;;
  B) run_mode 8 trex 255; run_mode 8 trex 125 ;;
  C) run_mode 8 inductor 335; run_mode 8 inductor 145 ;;
  *) echo "unknown part $part (A, B or C)"; exit 2 ;;
esac
python3 - "$OUT" <<'PY'
import glob, json, sys
print(f"{'file':44s} {'first s':>8s} {'ms/step':>9s} {'graphs':>6s} {'caches':>6s}  cache hits / fused")
for path in sorted(glob.glob(f"{sys.argv[1]}/e2e_hf_*.json")):
    for r in json.load(open(path))["rows"]:
        if "error" in r:
            print(f"{path.rsplit('/', 1)[-1]:44s} error: {r['error'][:200]}")
            continue
        hits = {k: v for k, v in r.get("cache_counters", {}).items() if "hit" in k}
        print(f"{path.rsplit('/', 1)[-1]:44s} {r['first_step_s']:8.1f} {r['step_ms']:9.2f} {r['dynamo_graphs']:6d} "
              f"{r['caches']:>6s}  {hits} {r['fused_per_family']}")
PY
rm -rf "$CACHES"
