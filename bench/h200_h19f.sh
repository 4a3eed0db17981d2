#!/usr/bin/env bash
# Issue 19's CPT ablation, ONE arm per 10-minute H200 call (preset h200_arm; docs/or_eval.md
# "The h200_arm preset"). The data, tokenizer and test items are the same seeded draws in every
# call, so the three runs pair item by item afterwards, on any machine:
#   OUT=... bash bench/h200_h19f.sh sft_only          # then cpt_pure_sft, then cpt_balanced_sft
#   python -m trex.training.or_eval.experiment --combine bench/results/or_cpt_ablation_{sft_only,cpt_pure_sft,cpt_balanced_sft}.json \
#     --name or_cpt_ablation_h200_arm --out-dir bench/results
# Needs .whl/ carried (highspy wheel for the sandbox, bubblewrap's .deb, or_benchmarks/ for NL4OPT and
# Mamo easy: bench/fetch_device_wheels.sh). The experiment's own guard (--time-budget-s, below the
# call's 600 s) cuts decoding, never training, and records the cut. Back: the run JSON, its per-item
# JSON, the plot, and the log + GPU samples in h19f_<arm>.tgz. Measured (session 11): 514-538 s a call.
set -uo pipefail
arm=${1:?usage: bench/h200_h19f.sh sft_only|cpt_pure_sft|cpt_balanced_sft}
case "$arm" in sft_only|cpt_pure_sft|cpt_balanced_sft) ;; *) echo "bench/h200_h19f.sh: unknown arm '$arm' (sft_only|cpt_pure_sft|cpt_balanced_sft)"; exit 2 ;; esac
OUT=${OUT:?set OUT to the folder whose files come back}
t0=$(date +%s)
. bench/_device_setup.sh && device_setup or
# The lent image runs bubblewrap but gives no writable memory/pids cgroup (session 11, call 1: the preflight
# refused); the weak-sandbox opt-in lets scoring run and the run's JSON records which layers held.
export TREX_ALLOW_WEAK_SANDBOX=1
WORK=/tmp/h19f_$arm
rm -rf "$WORK" "/tmp/h19f_work_$arm"   # a warm machine keeps /tmp: never send back an earlier call's files
mkdir -p "$WORK"
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,power.draw --format=csv,noheader -lms 1000 > "$WORK/smi.csv" 2>&1 &
smi=$!
budget=$(( 560 - ($(date +%s) - t0) ))
echo "install + start: $(( $(date +%s) - t0 ))s; experiment budget ${budget}s"
name=or_cpt_ablation_$arm
timeout -k 5 $(( budget + 15 )) python3 -m trex.training.or_eval.experiment --preset h200_arm --arms "$arm" \
  --name "$name" --out-dir "$WORK" --work-dir "/tmp/h19f_work_$arm" --time-budget-s "$budget" \
  > "$WORK/log.txt" 2>&1
echo "experiment rc=$?"; grep -v "^\s*$" "$WORK/log.txt" | tail -n 14 | cut -c1-600
kill "$smi" 2>/dev/null
for f in "$name.json" "${name}_items.json" "$name.png"; do cp "$WORK/$f" "$OUT"/ 2>/dev/null; done
echo "gpu samples (util %, MiB): $(awk -F', ' '{print $2"/"$3}' "$WORK/smi.csv" | tr '\n' ' ' | tail -c 600)"
tar czf "$OUT/h19f_$arm.tgz" -C "$WORK" log.txt smi.csv 2>/dev/null
ls -la "$OUT"; echo "total: $(( $(date +%s) - t0 ))s"
