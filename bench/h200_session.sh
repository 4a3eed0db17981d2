#!/usr/bin/env bash
# One batched H200 call for several prepared runs: each `name[:part]=seconds` runs
# bench/h200_<name>.sh [part] under its own limit with OUT=$OUT/<name>, one after the other, so one
# broken run cannot take the others' minutes. Example (the call's limit is 600 s):
#   OUT=$OUT bash bench/h200_session.sh h19e:probe=120 h17=240 h22=150
set -uo pipefail
OUT=${OUT:?set OUT to the folder whose files come back}
. bench/_device_setup.sh && device_setup
for spec in "$@"; do
  name_part=${spec%%=*}; limit=${spec##*=}; name=${name_part%%:*}; part=""
  [[ "$name_part" == *:* ]] && part=${name_part#*:}
  script="bench/h200_${name}.sh"
  if [ ! -f "$script" ]; then echo "== $name: $script is missing, skipped"; continue; fi
  mkdir -p "$OUT/$name"
  t0=$(date +%s)
  OUT="$OUT/$name" timeout -k 5 "$limit" bash "$script" $part > "$OUT/$name/log.txt" 2>&1
  rc=$?
  echo "== $name $part: rc=$rc in $(( $(date +%s) - t0 )) s (limit $limit s)"
  tail -n 25 "$OUT/$name/log.txt" | cut -c1-300
  # few files come back from a call: each run's folder travels as one archive
  tar -czf "$OUT/$name.tgz" -C "$OUT" "$name" && rm -rf "${OUT:?}/$name"
done
