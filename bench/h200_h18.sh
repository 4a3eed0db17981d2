#!/usr/bin/env bash
# Issue 18 probe on one H200 (<= 240 s): the flash_h200 config (V4-Flash widths, 4 trunk layers +
# MTP, 16 experts, grouped expert GEMMs) -- step time, tokens/s, MFU, peak memory and the Figure-6
# step anatomy for eager, Inductor and trex, each mode in its own process under its own limit, then
# merged into profile_anatomy.json/.png. Also the grouped GEMM's CUDA check against the per-expert loop.
# PART=curve (or argument 1) instead: bench/train_step.py, the real train loop on flash_h200 for eager and trex, 100
# steps each (or as many as fit), the loss curves against each other, one profiled step per mode.
#   OUT=<folder> TREX_COMMIT=$(git rev-parse HEAD) [PART=probe|curve] bash bench/h200_h18.sh
# Session 10's calls (bench/NOTES_gpu.md "Session 10"): the curve of eager and trex plus Inductor in one call does
# not fit (Inductor's first step is 207 s after a 29 s start), so: call A
#   CURVE_MODES=eager,trex TOTAL=300 RESERVE=200 OUT=$OUT bash bench/h200_session.sh h18:curve=315
# and call B  CURVE_MODES=inductor STEPS=30 TOTAL=300 RESERVE=0 ...h18:curve=315, then on this machine
#   python bench/train_step.py --merge A/train_step_flash_h200.json B/train_step_flash_h200.json --out bench/results/...
set -uo pipefail
t0=$SECONDS     # the whole script keeps to ~TOTAL + 13 s (TOTAL=222 by default), installs included
TOTAL=${TOTAL:-222}
PART=${1:-${PART:-probe}}
OUT=${OUT:?set OUT to the folder whose files come back}
. bench/_device_setup.sh && device_setup
python3 -c "import torch; print('torch', torch.__version__, 'grouped_mm', hasattr(torch, '_grouped_mm'))"
if [ "$PART" = curve ]; then
  # CURVE_MODES=eager,trex,inductor TOTAL=575 RESERVE=200: every mode's curve and step in one call (Inductor
  # last: it gets what eager and trex leave, its compile took > 220 s in session 10's first call)
  timeout -k 5 $((TOTAL + 10 - SECONDS + t0)) python3 bench/train_step.py --model flash_h200 --modes ${CURVE_MODES:-eager,trex} \
    --steps ${STEPS:-100} --warmup 5 ${N_LAYERS:+--n-layers $N_LAYERS} \
    --budget-s $((TOTAL - SECONDS + t0)) --reserve-s ${RESERVE:-100} --out "$OUT/train_step_flash_h200.json" > "$OUT/train_step_log.txt" 2>&1
  echo "train_step rc=$? ($((SECONDS - t0)) s)"; grep -v "^USDT\|^STAGE" "$OUT/train_step_log.txt" | tail -14 | cut -c1-400
  exit 0
fi
# grouped expert GEMMs on CUDA (bf16, padded groups, an empty expert) against the per-expert loop,
# in the background beside the eager probe (a few hundred MB of the GPU)
timeout -k 5 40 python3 - > "$OUT/grouped_check.txt" 2>&1 <<'PY' &
import torch
from trex.training.model import get_config
from trex.training.model.moe import MoE, grouped_dispatch, sparse_dispatch
args = get_config("tiny", dim=256, moe_inter_dim=128, n_routed_experts=8)
torch.manual_seed(0)
experts = MoE(args, 1).experts.cuda()
for p in experts.parameters():
    torch.nn.init.normal_(p, std=0.05)
for n_rows in (1, 37, 1000):
    picks = torch.rand(n_rows, 7, device="cuda").argsort(-1)[:, :2] + 1     # expert 0 gets no rows
    w = torch.rand(n_rows, 2, device="cuda")
    x = torch.randn(n_rows, 256, device="cuda")
    outs = []
    for d in (sparse_dispatch, grouped_dispatch):
        xx = x.clone().requires_grad_(True)
        for p in experts.parameters():
            p.grad = None
        with torch.autocast("cuda", dtype=torch.bfloat16):
            y = d(xx, picks, w, experts)
        y.float().pow(2).sum().backward()
        outs.append((y.float(), xx.grad, experts[3].w2.weight.grad, experts[0].w1.weight.grad))
    err = [(a - b).abs().max().item() / (a.abs().max().item() + 1e-9) for a, b in zip(outs[0][:3], outs[1][:3])]
    print(f"rows {n_rows}: rel max err y {err[0]:.2e} dx {err[1]:.2e} dW {err[2]:.2e}; empty expert grad zero:",
          bool(outs[1][3] is not None and not outs[1][3].any()))
PY
check_pid=$!
MB=${MB:-4}
# eager ~35 s; trex (its rest goes through Inductor on CUDA) and inductor each compile the whole
# 5-block graph, 2-layer models took 110-130 s in run 11: trex gets what eager leaves, inductor the
# rest (MODES reorders); each writes profile_<mode>.json even alone
for spec in ${MODES:-eager:40 trex:185 inductor:230}; do
  mode=${spec%%:*}; lim=${spec##*:}
  left=$((TOTAL - (SECONDS - t0)))
  [ "$lim" -gt "$left" ] && lim=$left
  [ "$lim" -lt 15 ] && { echo "skip $mode: $left s left"; continue; }
  timeout -k 5 "$lim" python3 bench/profile_step.py --model flash_h200 --modes "$mode" --steps ${STEPS:-3} \
    --micro-batch "$MB" --out "$OUT" > "$OUT/profile_${mode}_log.txt" 2>&1
  echo "$mode rc=$? ($((SECONDS - t0)) s, micro-batch $MB)"
  grep -v "^USDT\|^STAGE" "$OUT/profile_${mode}_log.txt" | tail -4 | cut -c1-600
  if [ "$mode" = eager ]; then
    wait "$check_pid"; echo "grouped check rc=$?"; tail -5 "$OUT/grouped_check.txt"
    if grep -q "OutOfMemoryError" "$OUT/profile_eager.json" 2> /dev/null; then   # 4 x 1024 does not fit: halve
      MB=2; mv "$OUT/profile_eager.json" "$OUT/oom_mb4_eager.json"
      timeout -k 5 40 python3 bench/profile_step.py --model flash_h200 --modes eager --steps ${STEPS:-3} \
        --micro-batch "$MB" --out "$OUT" > "$OUT/profile_eager_mb2_log.txt" 2>&1
      echo "eager at micro-batch 2 rc=$?"; tail -3 "$OUT/profile_eager_mb2_log.txt" | cut -c1-600
    fi
  fi
done
python3 bench/profile_step.py --merge "$OUT"/profile_*.json --out "$OUT" 2>&1 | tail -5 | cut -c1-700
echo "total $((SECONDS - t0)) s"
