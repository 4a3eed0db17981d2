#!/usr/bin/env bash
# The README's test command: install with test extras, then run the default (CI) test profile.
# pytest's exit 5 ("no tests collected") is a failure here, never a silent pass.
set -uo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q torch==2.13.0 -e ".[test]" || exit 1
python -m pytest -q -m "not slow and not nightly" "$@"
rc=$?
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
exit "$rc"
