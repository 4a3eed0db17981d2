#!/usr/bin/env bash
# Issue 16's acceptance as a user meets it: a fresh venv, `pip install .` (not editable), then the
# documented commands from a directory outside the checkout. Slow (installs torch into the venv):
# tests/packaging/test_packaging.py runs it under `-m slow`.
#   bash scripts/check_wheel.sh [WORKDIR]     # WORKDIR defaults to a new temp dir; kept for inspection
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:-$(mktemp -d /tmp/trex_wheel.XXXXXX)}"
mkdir -p "$work"
python3 -m venv "$work/venv"
py="$work/venv/bin/python"
"$py" -m pip install -q torch==2.13.0 "$repo"
trex="$work/venv/bin/trex"
bench="${TREX_OR_BENCHMARKS:-$repo/../shared/data/or_benchmarks}"
cd "$work"                       # outside the checkout: nothing resolves against it
mkdir -p passes training tuning  # generic top-level names in the working directory change nothing
echo 'raise ImportError("a user project named passes/ must not be imported by trex")' > passes/__init__.py
echo "== pip show -f trex: top-level import roots"
roots=$("$py" -m pip show -f trex | sed -n '/^Files:/,$p' | tail -n +2 | sed 's#^ *##' | cut -d/ -f1 \
        | grep -v '\.dist-info$\|^\.\.$' | sort -u)
echo "$roots"
[ "$roots" = "trex" ] || { echo "FAIL: expected one import root 'trex'"; exit 1; }
echo "== trex demo";  "$trex" demo --steps 2
echo "== trex codegen"; "$trex" codegen --pattern rms_norm --target ascend910b --out "$work/codegen" | tail -3
ls "$work/codegen"
echo "== trex or-data generate"; "$trex" or-data generate --n 20 --out "$work/or" --data-root "$bench" --no-progress
echo "== trex train"; "$trex" train --config tiny_sft.toml --train.steps 2 \
    --checkpoint.dir "$work/ckpt" --log.jsonl "$work/log.jsonl" 2>&1 | tail -2
echo "OK: $work"
