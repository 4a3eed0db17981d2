#!/usr/bin/env bash
# Issue 19 item 4's throughput on the device host's CPUs, pinned to 2 cores (the H200 itself is not
# used): `trex or-data generate`'s pipeline end to end, all families, with the benchmark-matched sizes
# and the round trip. About 60-90 s. Needs .whl/ carried (highspy wheel for the sandbox,
# or_benchmarks/ for decontamination: bench/fetch_device_wheels.sh fills it).
#   OUT=... bash bench/h200_h19d.sh
set -uo pipefail
OUT=${OUT:?set OUT to the folder whose files come back}
. bench/_device_setup.sh && device_setup or
timeout -k 5 240 python3 bench/or_pipeline.py --n 600 --workers 2 --cores 2 --skip-rates \
  --out "$OUT/or_pipeline_h200_2cores_h19d.json" 2>&1 | tail -20
