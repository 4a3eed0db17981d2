#!/usr/bin/env bash
# The H200 runs of issues 6-10, as made on a lent 2 x H200 machine (the device tool: $OUT comes back,
# at most 8 files, so everything lands in $WORK and is packed into $OUT/<part>.tgz at the end; the
# key JSONs are also copied to $OUT directly). Each step has its own wall-clock limit, so the whole
# part ends inside the call's limit even when a step hangs.
#
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_runs.sh multi    # both GPUs: bench/train_multi.py (~4.5 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_runs.sh train    # 1 GPU: train_small, full small config, 300 steps (~7.5 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_runs.sh timed    # 1 GPU: swap_optimizer, train_step (~7.5 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_runs.sh patterns # 1 GPU: gpu_patterns RoPE (swept) + every mHC variant (~7.5 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_runs.sh tune     # 1 GPU: trex tune, every pattern; gpu_patterns mHC+RMSNorm (~8 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_runs.sh accuracy # 1 GPU: OR ablation (h200_10min) + CUDA tests and fuzz (~9.5 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_runs.sh verify   # 1 GPU: CUDA tests and fuzz, then every mHC variant timed (~8.5 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_runs.sh recheck  # 1 GPU: the dfn GEMM's tests and mHC fuzz, mHC timed (~3 min)
# Wheels the image lacks (highspy, liger-kernel) and the OR benchmark files travel in .whl/ (git-ignored;
# fill it with bench/fetch_device_wheels.sh and name `.whl` in the device call's carry).
set -uo pipefail
part=${1:?usage: bench/h200_runs.sh multi|train|timed|patterns|tune|accuracy|verify|recheck}
case "$part" in multi|train|timed|patterns|tune|accuracy|verify|recheck) ;;
  *) echo "bench/h200_runs.sh: unknown part '$part' (multi|train|timed|patterns|tune|accuracy|verify|recheck)"; exit 2 ;; esac
OUT=${OUT:?set OUT to the folder whose files come back}
WORK=/tmp/trex_h200_$part
mkdir -p "$WORK"
. bench/_device_setup.sh && device_setup or
nvidia-smi --query-gpu=index,name,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv,noheader

pack() {
  cp bench/results/train_multi_* "$WORK"/ 2>/dev/null
  tar czf "$OUT/$part.tgz" -C "$WORK" . && ls -la "$OUT"
}

# The CUDA tests, then the CUDA fuzz, one after the other, each under its own limit, so the first
# one's failure report is kept even when the fuzz is cut (runs 3 and 4 lost theirs to the call's
# limit). -v: one PASSED/FAILED line per test as it ends. The mHC fuzz compiles a kernel per drawn shape.
#   cuda_tests TESTS_CAP_S FUZZ_CAP_S FUZZ_PER_TEST_S [TESTS_SELECTION [FUZZ_SELECTION]]   (pytest -k)
cuda_tests() {
  local tests_k=() fuzz_k=()
  [ -n "${4:-}" ] && tests_k=(-k "$4")
  [ -n "${5:-}" ] && fuzz_k=(-k "$5")
  TREX_CUDA_FUZZ_EXAMPLES=4 timeout -k 5 "$1" python3 -m pytest tests/gpu/test_gpu_cuda.py -v -m cuda "${tests_k[@]}" \
    -p no:cacheprovider --timeout 100 --tb=short -rfs > "$WORK/cuda_tests_log.txt" 2>&1
  echo "cuda tests rc=$?" >> "$WORK/cuda_tests_log.txt"
  TREX_CUDA_FUZZ_EXAMPLES=4 timeout -k 5 "$2" python3 -m pytest tests/gpu/test_fuzz_cuda.py -v -s -m cuda "${fuzz_k[@]}" \
    -p no:cacheprovider --timeout "$3" --tb=short -rfs > "$WORK/cuda_fuzz_log.txt" 2>&1
  echo "cuda fuzz rc=$?" >> "$WORK/cuda_fuzz_log.txt"
}

show_cuda_tests() {
  for f in cuda_tests_log cuda_fuzz_log; do
    echo "== $f"; grep -E "FAILED|ERROR|PASSED|SKIPPED|passed|failed|rc=|Error" "$WORK/$f.txt" | tail -n 20; done
}

if [ "$part" = multi ]; then
  timeout -k 10 290 python3 bench/train_multi.py --nproc 2 --n-layers 2 --steps 10 --warmup 3 --loss-steps 5 \
    --budget-s 250 --out "$WORK/train_multi.json" > "$WORK/train_multi_log.txt" 2>&1
  echo "train_multi rc=$?"; tail -n 25 "$WORK/train_multi_log.txt"
  cp "$WORK/train_multi.json" "$OUT"/ 2>/dev/null
  pack; exit 0
fi

if [ "$part" = train ]; then     # one GPU: the full small config for a few hundred steps (~7.5 min)
  # run 4: 1.02 s a step at 4 x 1024 tokens, compile 50 s: 300 steps need ~6 min
  timeout -k 10 430 python3 bench/train_small.py --steps 300 --micro-batch 4 --max-seconds 400 \
    --out "$WORK/train_small.json" > "$WORK/train_small_log.txt" 2>&1; echo "train_small rc=$?" >> "$WORK/train_small_log.txt"
  tail -n 20 "$WORK/train_small_log.txt"
  cp "$WORK"/train_small.json "$OUT"/ 2>/dev/null
  pack; exit 0
fi

if [ "$part" = timed ]; then     # one GPU, timed runs one after another (~7.5 min)
  timeout -k 10 75 python3 bench/swap_optimizer.py --params-m 1000 --steps 6 \
    --out "$WORK/swap_optimizer.json" > "$WORK/swap_optimizer_log.txt" 2>&1; echo "swap rc=$?" >> "$WORK/swap_optimizer_log.txt"
  # run 4: Inductor compiled in 104 s and trex_inductor did not finish in its 46 s share: 330 s in all
  timeout -k 10 345 python3 bench/train_step.py --n-layers 2 --steps 6 --warmup 2 \
    --modes eager,trex,inductor,trex_inductor --budget-s 330 --reserve-s 12 \
    --out "$WORK/train_step.json" > "$WORK/train_step_log.txt" 2>&1; echo "train_step rc=$?" >> "$WORK/train_step_log.txt"
  for f in swap_optimizer_log train_step_log; do echo "== $f"; tail -n 14 "$WORK/$f.txt"; done
  cp "$WORK"/swap_optimizer.json "$WORK"/train_step.json "$OUT"/ 2>/dev/null
  pack; exit 0
fi

if [ "$part" = patterns ]; then  # one GPU: RoPE's register pair swap (swept), then every mHC variant (~7.5 min)
  mkdir -p "$WORK/rope" "$WORK/mhc"
  timeout -k 5 120 python3 bench/gpu_patterns.py --cases rope_interleaved --sweep 2 --out "$WORK/rope" \
    > "$WORK/rope/gpu_patterns_log.txt" 2>&1; echo "gpu_patterns rope rc=$?" >> "$WORK/rope/gpu_patterns_log.txt"
  tail -n 8 "$WORK/rope/gpu_patterns_log.txt"
  # run 4 cut the mHC case at 200 s in its compiles
  timeout -k 5 330 python3 bench/gpu_patterns.py --cases mhc_pre --sweep 0 --out "$WORK/mhc" \
    > "$WORK/mhc/gpu_patterns_log.txt" 2>&1; echo "gpu_patterns mhc rc=$?" >> "$WORK/mhc/gpu_patterns_log.txt"
  tail -n 12 "$WORK/mhc/gpu_patterns_log.txt"
  cp "$WORK/rope/gpu_patterns.json" "$OUT/gpu_patterns_rope.json" 2>/dev/null
  cp "$WORK/mhc/gpu_patterns.json" "$OUT/gpu_patterns_mhc.json" 2>/dev/null
  pack; exit 0
fi

if [ "$part" = tune ]; then      # one GPU: trex tune over every pattern, then the mHC/RMSNorm re-measure (~8 min)
  timeout -k 5 290 python3 -m trex.tuning.bench --target cuda --budget-s 240 --out "$WORK/tuning_h200.json" -v \
    > "$WORK/tuning_log.txt" 2>&1; echo "tuning rc=$?" >> "$WORK/tuning_log.txt"
  tail -n 14 "$WORK/tuning_log.txt"
  cp "$WORK"/tuning_h200.json "$OUT"/ 2>/dev/null
  # the matcher fix (trex_compile/trex_inductor fuse mHC) and the tuned rms_norm_bwd tiling, measured
  timeout -k 5 200 python3 bench/gpu_patterns.py --cases mhc_pre,rmsnorm_weighted --sweep 0 --out "$WORK" \
    > "$WORK/gpu_patterns_log.txt" 2>&1; echo "gpu_patterns rc=$?" >> "$WORK/gpu_patterns_log.txt"
  tail -n 30 "$WORK/gpu_patterns_log.txt"
  cp "$WORK"/gpu_patterns*.json "$OUT"/ 2>/dev/null
  pack; exit 0
fi

if [ "$part" = verify ]; then    # one GPU: the CUDA tests and fuzz, then every mHC variant timed (~8.5 min)
  cuda_tests 200 120 100
  show_cuda_tests
  mkdir -p "$WORK/mhc"
  timeout -k 5 250 python3 bench/gpu_patterns.py --cases mhc_pre --sweep 0 --out "$WORK/mhc" \
    --variants eager,inductor,trex,trex_compile,trex_inductor \
    > "$WORK/mhc/gpu_patterns_log.txt" 2>&1; echo "gpu_patterns mhc rc=$?" >> "$WORK/mhc/gpu_patterns_log.txt"
  tail -n 14 "$WORK/mhc/gpu_patterns_log.txt"
  cp "$WORK/mhc/gpu_patterns.json" "$OUT/gpu_patterns_mhc.json" 2>/dev/null
  pack; exit 0
fi

if [ "$part" = recheck ]; then   # one GPU: mHC's dfn GEMM after a precision change (~3 min)
  cuda_tests 100 60 55 "rows_matmul or mhc_pre_bwd or backend_trex" mhc_pre_bwd
  show_cuda_tests
  mkdir -p "$WORK/mhc"
  timeout -k 5 70 python3 bench/gpu_patterns.py --cases mhc_pre --sweep 0 --variants trex --out "$WORK/mhc" \
    > "$WORK/mhc/gpu_patterns_log.txt" 2>&1; echo "gpu_patterns mhc rc=$?" >> "$WORK/mhc/gpu_patterns_log.txt"
  tail -n 5 "$WORK/mhc/gpu_patterns_log.txt"
  cp "$WORK/mhc/gpu_patterns.json" "$OUT/gpu_patterns_mhc_trex.json" 2>/dev/null
  pack; exit 0
fi

# accuracy runs (no timing): the OR ablation and the CUDA tests side by side on one GPU.
# First the sandbox's interpreter, with and without `unshare -n` (run 4's zygote died before its hello).
py=$(command -v python3)   # the image's venv interpreter, as the sandbox starts it (sys.executable)
for pre in "" "unshare -n"; do
  ( cd /tmp && env -i PATH=/usr/bin:/bin HOME=/tmp $pre "$py" -I -c "import numpy, highspy, trex.training.or_data.gurobi_shim; print('ok')" ) \
    > "$WORK/sandbox_probe.txt" 2>&1; echo "sandbox probe [$pre] rc=$?: $(tail -c 400 "$WORK/sandbox_probe.txt")"
done
# the 10-minute preset: KV-cached decoding and an equal decoding share per arm (docs/or_eval.md)
( timeout -k 5 570 python3 -m trex.training.or_eval.experiment --preset h200_10min --name or_cpt_ablation_h200_10min \
    --out-dir "$WORK" > "$WORK/or_log.txt" 2>&1; echo "or rc=$?" >> "$WORK/or_log.txt" ) &
cuda_tests 240 290 200 &     # next to the OR run (no timing here)
wait
echo "== or_log"; tail -n 16 "$WORK/or_log.txt"
show_cuda_tests
cp "$WORK"/or_cpt_ablation_h200_10min.json "$OUT"/ 2>/dev/null
pack
