#!/usr/bin/env bash
# The H200 runs of issue 22 (trex composed with Inductor), on the lent 1 x H200 machine; each step
# under its own limit so a part ends inside the call's 10 minutes. transformers >= 5.18 (DeepSeek-V4)
# travels in .whl/ (cp it there; name `.whl` in the device call's carry).
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh A   # composition tests, gpu_patterns, e2e eager+trex (~8 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh C   # SwiGLU's Inductor code and forward per launch path (~1 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh D   # e2e_hf: eager, inductor(_ro), trex(_ro), trex+warm (~9 min; REGIONAL=1 per layer)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh P   # per-kernel table of one step, trex_ro vs inductor_ro (~6 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh R   # composition tests, gpu_patterns in 3 interleaved rounds (~7 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh L   # e2e_hf with transformers' loop experts: eager, trex_ro, inductor_ro (~9 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh H   # host tax per step (bench/host_tax.py) + the reduce-overhead chain test (~7 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh S   # session 18: static launcher + one-kernel RoPE tests, host tax with/without the static launcher (~8 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh V   # session 18: part S's tests, then gpu_patterns in 3 rounds with the launcher variant (~8 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh T   # session 19: sink attention's CUDA layout test, train_step small 2 layers, the CUDA suite (~9.5 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh M   # session 20: declared kernel writes vs torch's analysis, e2e trex_ro + inductor_ro loop experts (~7 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh U   # session 20: train_step small 2 layers, the whole CUDA suite in 8 workers (~9.5 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh F   # session 21: e2e inductor_ro, trex_ro loop experts, each mode in its own process (~5.5 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh G   # session 21: train_step small 2 layers, 40 steps; the interpreter tests in their own process (~8.5 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh Q   # session 22: trex_ro's first step under cProfile, 480 s limit (~6 min)
#   TREX_COMMIT=$(git rev-parse HEAD) bash bench/h200_compose.sh B   # composition tests, gpu_patterns, SwiGLU's Inductor code, train_step small (~9.5 min)
set -uo pipefail
part=${1:?usage: bench/h200_compose.sh A|B}
OUT=${OUT:?set OUT to the folder whose files come back}
. bench/_device_setup.sh && device_setup
export LAYERS=2 EXPERTS=grouped_mm
case "$part" in
  A)
    timeout -k 5 150 python3 -m pytest tests/gpu/test_inductor_cuda.py -v -m cuda -p no:cacheprovider --timeout 90 \
      --tb=short -rfs > "$OUT/compose_tests.txt" 2>&1; echo "compose tests rc=$?" | tee -a "$OUT/compose_tests.txt"
    grep -E "PASSED|FAILED|ERROR|passed|failed" "$OUT/compose_tests.txt" | tail -25
    timeout -k 5 170 python3 bench/gpu_patterns.py --out "$OUT" --sweep 0 \
      --variants eager,inductor,inductor_ro,trex_aten,trex_compile,trex_ro > "$OUT/gpu_patterns_log.txt" 2>&1
    echo "gpu_patterns rc=$?"; tail -22 "$OUT/gpu_patterns_log.txt"
    timeout -k 5 200 python3 bench/e2e_hf.py --out "$OUT" eager trex > "$OUT/e2e_log.txt" 2>&1
    echo "e2e rc=$?"; grep -v "^{" "$OUT/e2e_log.txt" | tail -15 ;;
  B)
    timeout -k 5 120 python3 -m pytest tests/gpu/test_inductor_cuda.py -v -m cuda -p no:cacheprovider --timeout 40 \
      --tb=short -rfs > "$OUT/compose_tests.txt" 2>&1; echo "compose tests rc=$?" | tee -a "$OUT/compose_tests.txt"
    grep -E "PASSED|FAILED|ERROR|passed|failed" "$OUT/compose_tests.txt" | tail -22
    timeout -k 5 170 python3 bench/gpu_patterns.py --out "$OUT" --sweep 0 \
      --variants eager,inductor,inductor_ro,trex_aten,trex_compile,trex_ro > "$OUT/gpu_patterns_log.txt" 2>&1
    echo "gpu_patterns rc=$?"; tail -16 "$OUT/gpu_patterns_log.txt" | cut -c1-400
    # Inductor's code for SwiGLU forward+backward through trex (run 7: its device time was 4x trex_aten's)
    timeout -k 5 40 python3 - > "$OUT/swiglu_output_code.txt" 2>&1 <<'PY'
import sys, torch
sys.path.insert(0, "bench")
from torch._inductor.utils import run_and_get_code
import gpu_patterns as G, trex.compiler.backend  # noqa: F401
case = [c for c in G.build_cases(16384, "cuda") if c.name == "swiglu_limited"][0]
gen = torch.Generator(device="cuda").manual_seed(0)
args = [a.detach().requires_grad_(g) for a, g in zip(case.make_inputs(gen), case.needs_grad)]
f = torch.compile(case.chain, backend="trex")
_, codes = run_and_get_code(lambda: torch.autograd.backward(G.as_tuple(f(*args)), [torch.ones_like(o) for o in G.as_tuple(f(*args))]))
print("\n#####\n".join(codes))
PY
    echo "swiglu code rc=$? $(grep -c . "$OUT/swiglu_output_code.txt") lines"
    timeout -k 5 185 python3 bench/train_step.py --modes inductor,trex --budget-s 170 \
      --out "$OUT/train_step.json" > "$OUT/train_step_log.txt" 2>&1
    echo "train_step rc=$?"; tail -12 "$OUT/train_step_log.txt" ;;
  C)  # SwiGLU through Inductor: its output code, and the forward timed per launch path (run 8: 4x slower)
    timeout -k 5 150 python3 - > "$OUT/swiglu_diag.txt" 2>&1 <<'PY'
import json, sys, torch, triton.testing
sys.path.insert(0, "bench")
from torch._inductor.utils import run_and_get_code
import gpu_patterns as G, trex.compiler.backend  # noqa: F401
torch._dynamo.config.recompile_limit = 64
case = [c for c in G.build_cases(16384, "cuda") if c.name == "swiglu_limited"][0]
args = case.make_inputs(torch.Generator(device="cuda").manual_seed(0))
print("input strides", [(tuple(a.shape), a.stride(), a.storage_offset()) for a in args if torch.is_tensor(a)])
variants = {"trex_aten": {"rest": "aten"}, "trex": {}, "trex_aligned": {"inductor": {"triton.assume_aligned_inputs": True}}}
for name, opts in variants.items():
    f = torch.compile(case.chain, backend="trex", options=opts)
    with torch.no_grad():
        _, codes = run_and_get_code(f, *args)
        ms = triton.testing.do_bench(lambda: f(*args), warmup=25, rep=200, return_mode="median")
    print(json.dumps({"variant": name, "fwd_wall_ms": ms}), flush=True)
    if name != "trex_aten":
        print("\n".join(codes))
PY
    echo "diag rc=$?"; grep '"variant"' "$OUT/swiglu_diag.txt"; grep -n "num_warps\|triton_meta\|divisib\|def swiglu\|trex_\|\.run(" "$OUT/swiglu_diag.txt" | head -30 | cut -c1-300 ;;
  D)  # the e2e acceptance set (not run yet: ~9 min): Inductor's modes and trex's, cold and warm, 2 layers
    timeout -k 5 560 python3 bench/e2e_hf.py --out "$OUT" eager inductor inductor_ro trex trex_ro trex+warm \
      > "$OUT/e2e_log.txt" 2>&1; echo "e2e rc=$?"; grep -v "^{" "$OUT/e2e_log.txt" | tail -10 ;;
  P)  # the per-kernel table of one step under CUDA graphs, trex against Inductor (~6 min)
    timeout -k 5 420 python3 bench/e2e_hf.py --out "$OUT" trex_ro inductor_ro > "$OUT/e2e_log.txt" 2>&1
    echo "e2e rc=$?"; grep -v "^{" "$OUT/e2e_log.txt" | tail -6
    python3 - <<'PY'
import glob, json, os
rows = json.load(open(glob.glob(os.environ["OUT"] + "/e2e_hf_*.json")[0]))["rows"]
for row in rows:
    if "error" in row:
        print(row["mode"], row["error"][:300]); continue
    print("==", row["mode"], round(row["step_ms"], 2), "ms/step; kernel ms", round(row["kernel_ms"], 2))
    for fam, v in row["per_family"].items():
        print(f"   {fam:16s} {v['launches']:5d} {v['ms']:8.3f}")
    for t in row["top_kernels"][:25]:
        print(f"   {t['ms']:7.3f} {t['launches']:4d} {t['name'][:110]}")
PY
    ;;
  R)  # issue 22's per-pattern wall-time bar, each variant timed in 3 rounds (the order rotated each round)
    timeout -k 5 120 python3 -m pytest tests/gpu/test_inductor_cuda.py -v -m cuda -p no:cacheprovider --timeout 40 \
      --tb=short -rfs > "$OUT/compose_tests.txt" 2>&1; echo "compose tests rc=$?" | tee -a "$OUT/compose_tests.txt"
    grep -E "FAILED|ERROR|passed|failed" "$OUT/compose_tests.txt" | tail -8
    timeout -k 5 330 python3 bench/gpu_patterns.py --out "$OUT" --sweep 0 --rounds 3 \
      --variants eager,inductor,trex_compile,trex_ro,inductor_ro > "$OUT/gpu_patterns_log.txt" 2>&1
    echo "gpu_patterns rc=$?"; tail -16 "$OUT/gpu_patterns_log.txt" | cut -c1-400 ;;
  L)  # the e2e rows with transformers' default (loop) experts
    unset EXPERTS
    timeout -k 5 570 python3 bench/e2e_hf.py --out "$OUT" eager trex_ro inductor_ro > "$OUT/e2e_log.txt" 2>&1
    echo "e2e rc=$?"; grep -v "^{" "$OUT/e2e_log.txt" | tail -8 ;;
  H)  # the host tax per step at a tiny size (host-bound), trex against Inductor, with cProfile's top functions;
      # then the composition test part R's 120 s cut off (the reduce-overhead chain, cold compile)
    timeout -k 5 300 python3 bench/host_tax.py --out "$OUT" --variants inductor,trex_compile > "$OUT/host_tax_log.txt" 2>&1
    echo "host_tax rc=$?"; grep -E "us \(dev" "$OUT/host_tax_log.txt"
    timeout -k 5 200 python3 -m pytest tests/gpu/test_inductor_cuda.py -v -m cuda -p no:cacheprovider --timeout 190 \
      -k "chain_forward_backward" --tb=short -rfs > "$OUT/compose_tests_chain.txt" 2>&1
    echo "chain tests rc=$?"; grep -E "PASSED|FAILED|ERROR|passed|failed" "$OUT/compose_tests_chain.txt" | tail -4 ;;
  S)  # the static launcher for trex's inlined kernels and RoPE as one kernel (session 18): their tests, then
      # the host tax with trex's kernels on Inductor's static launcher and on Triton's own, in one run
    timeout -k 5 200 python3 -m pytest tests/gpu/test_inductor_cuda.py tests/gpu/test_interpret.py tests/gpu/test_gpu_cuda.py \
      -k "static or rope or inlined" -p no:cacheprovider --timeout 150 --tb=short -rfs \
      > "$OUT/compose_tests_s18.txt" 2>&1; echo "tests rc=$?"
    grep -E "FAILED|ERROR|passed|failed" "$OUT/compose_tests_s18.txt" | tail -12
    timeout -k 5 340 python3 bench/host_tax.py --out "$OUT" --variants inductor,trex_compile,trex_compile_triton_launcher \
      > "$OUT/host_tax_log.txt" 2>&1
    echo "host_tax rc=$?"; grep -E "us \(dev" "$OUT/host_tax_log.txt" ;;
  V)  # part S's tests (verbose), then issue 22's per-pattern wall bar in 3 rounds, with the launcher variant
    timeout -k 5 200 python3 -m pytest tests/gpu/test_inductor_cuda.py tests/gpu/test_interpret.py tests/gpu/test_gpu_cuda.py \
      tests/gpu/test_interpret_rows.py -k "static or rope or inlined" -p no:cacheprovider --timeout 150 --tb=short -rfs -v \
      > "$OUT/compose_tests_s18.txt" 2>&1; echo "tests rc=$?"
    grep -E "static|FAILED|ERROR|passed|failed" "$OUT/compose_tests_s18.txt" | tail -12
    timeout -k 5 330 python3 bench/gpu_patterns.py --out "$OUT" --sweep 0 --rounds 3 \
      --variants eager,inductor,trex_compile,trex_compile_triton_launcher > "$OUT/gpu_patterns_log.txt" 2>&1
    echo "gpu_patterns rc=$?"; tail -16 "$OUT/gpu_patterns_log.txt" | cut -c1-400 ;;
  T)  # dc9a142's sink-attention layout fix on a GPU, then the small train_step it unblocked, then the rest of
      # the CUDA tests and fuzz (whatever fits; -rA names each test that ran)
    timeout -k 5 100 python3 -m pytest tests/gpu/test_sink_attention_cuda.py -v -p no:cacheprovider --timeout 90 \
      --tb=short -rfs > "$OUT/sink_tests.txt" 2>&1; echo "sink tests rc=$?"
    grep -E "PASSED|FAILED|ERROR|passed|failed" "$OUT/sink_tests.txt" | tail -8
    timeout -k 5 300 python3 bench/train_step.py --modes inductor,trex --n-layers 2 --budget-s 290 \
      --out "$OUT/train_step.json" > "$OUT/train_step_log.txt" 2>&1
    echo "train_step rc=$?"; tail -12 "$OUT/train_step_log.txt"
    timeout -k 5 170 python3 -m pytest tests/gpu -p no:cacheprovider --timeout 60 --tb=line -q -rfEs \
      --ignore tests/gpu/test_sink_attention_cuda.py > "$OUT/cuda_suite.txt" 2>&1
    echo "cuda suite rc=$?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/cuda_suite.txt" | tail -14 ;;
  M)  # session 20: declared kernel writes checked against torch's TTIR analysis on every op, then part L
    python3 -c "import inspect, torch._higher_order_ops.triton_kernel_wrap as t; print('torch', __import__('torch').__version__, \
      {n: str(inspect.signature(getattr(t, n))) for n in ('get_mutated_tensors', 'identify_mutated_tensors') if hasattr(t, n)})"
    timeout -k 5 150 python3 -m pytest tests/gpu/test_inductor_cuda.py -k declared_kernel_writes -p no:cacheprovider \
      --timeout 140 --tb=short -rfs -q > "$OUT/writes_tests.txt" 2>&1; echo "writes tests rc=$?"
    grep -E "FAILED|ERROR|passed|failed" "$OUT/writes_tests.txt" | tail -8
    unset EXPERTS
    timeout -k 5 400 python3 bench/e2e_hf.py --out "$OUT" trex_ro inductor_ro > "$OUT/e2e_log.txt" 2>&1
    echo "e2e rc=$?"; grep -v "^{" "$OUT/e2e_log.txt" | tail -4 ;;
  U)  # session 20: the small train_step at 2 layers into a JSON (call T's was lost), then the whole CUDA suite
      # (tests and fuzz) in 8 xdist workers sharing the GPU (pytest-xdist travels in .whl/)
    timeout -k 5 270 python3 bench/train_step.py --modes inductor,trex --n-layers 2 --budget-s 260 \
      --out "$OUT/train_step.json" > "$OUT/train_step_log.txt" 2>&1
    echo "train_step rc=$?"; tail -8 "$OUT/train_step_log.txt"
    timeout -k 5 285 python3 -m pytest tests/gpu -n 8 -p no:cacheprovider --timeout 240 --tb=short -q -rfEs \
      > "$OUT/cuda_suite.txt" 2>&1
    echo "cuda suite rc=$?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/cuda_suite.txt" | tail -14 ;;
  F)  # session 21: the first step measured fairly: each mode in a fresh process with empty caches (e2e_hf's
      # default since session 21; call M2 ran trex_ro first in a shared process, charging it the process's
      # one-time costs), transformers' loop experts, 2 layers
    unset EXPERTS
    timeout -k 5 330 python3 bench/e2e_hf.py --out "$OUT" inductor_ro trex_ro > "$OUT/e2e_log.txt" 2>&1
    echo "e2e rc=$?"; grep -v "^{" "$OUT/e2e_log.txt" | tail -4
    # trex_ro's first step again under cProfile (slower: read its shares, not its seconds)
    FIRST_STEP_PROFILE=1 timeout -k 5 170 python3 bench/e2e_hf.py --out "$OUT/profiled" trex_ro \
      > "$OUT/e2e_profiled_log.txt" 2>&1
    echo "profiled e2e rc=$?"; head -3 "$OUT/profiled/first_step_trex_ro.txt" ;;
  G)  # session 21: train_step small 2 layers over 40 steps (30 timed, the profiled step left out of the medians;
      # call U timed 5), then the Triton-interpreter tests in a process of their own (TRITON_INTERPRET=1 from
      # the start: in the suite's workers they skip, triton.language being imported for the GPU first)
    timeout -k 5 330 python3 bench/train_step.py --modes inductor,trex --n-layers 2 --steps 40 --warmup 10 \
      --budget-s 320 --out "$OUT/train_step.json" > "$OUT/train_step_log.txt" 2>&1
    echo "train_step rc=$?"; tail -8 "$OUT/train_step_log.txt"
    TRITON_INTERPRET=1 timeout -k 5 200 python3 -m pytest tests/gpu/test_interpret.py tests/gpu/test_interpret_rows.py \
      -n 8 -p no:cacheprovider --timeout 180 --tb=short -q -rfEs > "$OUT/interpret_tests.txt" 2>&1
    echo "interpreter tests rc=$?"; grep -E "FAILED|ERROR|passed|failed" "$OUT/interpret_tests.txt" | tail -8 ;;
  Q)  # session 22: trex_ro's first step (loop experts, 2 layers, empty caches) under cProfile with room to
      # finish (call F's 170 s limit cut it off): where trex's extra collect_metadata / trace_joint time goes
    unset EXPERTS
    FIRST_STEP_PROFILE=1 timeout -k 5 480 python3 bench/e2e_hf.py --out "$OUT/profiled" trex_ro \
      > "$OUT/e2e_profiled_log.txt" 2>&1
    echo "profiled e2e rc=$?"; tail -3 "$OUT/e2e_profiled_log.txt"; head -3 "$OUT/profiled/first_step_trex_ro.txt" ;;
  *) echo "bench/h200_compose.sh: unknown part '$part' (A|B|C|D|P|R|L|H|S|V|T|M|U|F|G|Q)"; exit 2 ;;
esac
