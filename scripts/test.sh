#!/usr/bin/env bash
# The README's test command: set up with test extras (scripts/setup.sh: torch only when missing
# or < 2.11, the sandbox's bubblewrap/libseccomp through apt when root), then run the default (CI)
# test profile.  pytest's exit 5 ("no tests collected") is a failure here, never a silent pass.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test || exit 1
python -m pytest -q -m "not slow and not nightly" "$@"
rc=$?
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
exit "$rc"
