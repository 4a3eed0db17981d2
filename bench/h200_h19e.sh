#!/usr/bin/env bash
# Issue 19's CPT ablation on ONE H200 in one call: the three arms trained side by side
# (trex.training.or_eval.concurrent_arms, preset h200_arms3; docs/or_eval.md "Three arms in one call").
#   bash bench/h200_h19e.sh probe   # <= 120 s: compile + concurrent steps + decode speed per arm, the steps the full run would train
#   bash bench/h200_h19e.sh full    # <= 570 s: data once, three arms concurrently, decoding, sandboxed scoring, combined JSON + PNG
# Needs .whl/ carried (highspy wheel for the sandbox, or_benchmarks/ for NL4OPT and Mamo easy:
# bench/fetch_device_wheels.sh fills it). At most 8 files come back: the JSONs and the plot
# directly, logs and per-item answers packed into h19e_<part>.tgz.
set -uo pipefail
part=${1:?usage: bench/h200_h19e.sh probe|full}
case "$part" in probe|full) ;; *) echo "bench/h200_h19e.sh: unknown part '$part' (probe|full)"; exit 2 ;; esac
OUT=${OUT:?set OUT to the folder whose files come back}
t0=$(date +%s)
. bench/_device_setup.sh && device_setup or
WORK=/tmp/h19e_$part
mkdir -p "$WORK"
nvidia-smi --query-gpu=name,clocks.sm,power.draw,memory.used --format=csv,noheader
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used,power.draw --format=csv,noheader -lms 1000 > "$WORK/smi.csv" 2>&1 &
smi=$!
echo "install + start: $(( $(date +%s) - t0 ))s"
if [ "$part" = probe ]; then
  # full test set and decoding batch, small CPT/SFT corpora (the compile and the step do not depend on them)
  timeout -k 5 106 python3 -m trex.training.or_eval.concurrent_arms --preset h200_arms3 --name h19e_probe \
    --out-dir "$WORK" --work-dir /tmp/h19e_probe_work --probe-s 10 --plan probe_decode_tokens=32 \
    --set cpt_docs_per_family=60 --set sft_pairs_per_family=80 --set public_limit=8 \
    > "$WORK/probe_log.txt" 2>&1
  echo "probe rc=$?"; grep -v "^\s*$" "$WORK/probe_log.txt" | tail -n 14 | cut -c1-600
  cp "$WORK"/h19e_probe_probe.json "$OUT"/ 2>/dev/null
  # what each worker wrote so far (compile and calibration), also when the probe ran out of time
  for f in /tmp/h19e_probe_work/arms3/*/*.json; do [ -f "$f" ] && cp "$f" "$WORK/$(basename "$(dirname "$f")")_$(basename "$f")"; done
else
  timeout -k 5 550 python3 -m trex.training.or_eval.concurrent_arms --preset h200_arms3 \
    --name or_cpt_ablation_h200_arms3 --out-dir "$WORK" --work-dir /tmp/h19e_full_work \
    > "$WORK/full_log.txt" 2>&1
  echo "full rc=$?"
  for f in /tmp/h19e_full_work/arms3/*/*.json /tmp/h19e_full_work/go.json; do
    [ -f "$f" ] && cp "$f" "$WORK/$(basename "$(dirname "$f")")_$(basename "$f")"
  done; grep -v "^\s*$" "$WORK/full_log.txt" | tail -n 16 | cut -c1-600
  for f in or_cpt_ablation_h200_arms3.json or_cpt_ablation_h200_arms3.png or_cpt_ablation_h200_arms3_run.json; do
    cp "$WORK/$f" "$OUT"/ 2>/dev/null
  done
fi
kill "$smi" 2>/dev/null
echo "gpu samples (util %, MiB): $(awk -F', ' '{print $2"/"$3}' "$WORK/smi.csv" | tr '\n' ' ' | tail -c 900)"
tar czf "$OUT/h19e_$part.tgz" -C "$WORK" --exclude='*.png' . 2>/dev/null
ls -la "$OUT"; echo "total: $(( $(date +%s) - t0 ))s"
