#!/usr/bin/env bash
# Issue 19 item 4's throughput on the device host's CPUs, pinned to 2 cores (the H200 itself is not
# used): `trex or-data generate`'s pipeline end to end, all families, with the benchmark-matched sizes
# and the round trip. About 60-90 s. Needs .whl/ carried (highspy wheel for the sandbox,
# or_benchmarks/ for decontamination: bench/fetch_device_wheels.sh fills it).
#   OUT=... bash bench/h200_h19d.sh
set -uo pipefail
OUT=${OUT:?set OUT to the folder whose files come back}
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# the sandbox runs `python -I` (no PYTHONPATH): highspy and this checkout must be in site-packages
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --ignore-installed .whl/highspy-*.whl \
  > "$OUT/install.txt" 2>&1 || echo "WARN: highspy not installed: $(tail -c 300 "$OUT/install.txt")"
python3 -m pip install -q --no-deps --no-index --no-build-isolation -e . >> "$OUT/install.txt" 2>&1 \
  || { echo "WARN: editable install failed: $(tail -c 300 "$OUT/install.txt")"; \
       python3 -c "import site,os; open(os.path.join(site.getsitepackages()[0],'trex_checkout.pth'),'w').write(os.getcwd()+'\n')"; }
export TREX_OR_BENCHMARKS=$PWD/.whl/or_benchmarks
timeout -k 5 240 python3 bench/or_pipeline.py --n 600 --workers 2 --cores 2 --skip-rates \
  --out "$OUT/or_pipeline_h200_2cores_h19d.json" 2>&1 | tail -20
