#!/usr/bin/env bash
# The README's test command: set up with test extras (scripts/setup.sh: torch only when missing
# or < 2.11, the sandbox's bubblewrap/libseccomp through apt when root), then run the default (CI)
# test profile.  pytest's exit 5 ("no tests collected") is a failure here, never a silent pass.
# Two pytest-xdist workers (TREX_TEST_WORKERS=N for another count, 0 for one process), each test file
# on one worker (--dist loadfile: module fixtures built once, as in a serial run): CI's 2 cores ran
# the serial suite in 983 s (stop 29), over its 15-minute budget; tests/conftest.py gives each
# worker its share of the cores for torch's threads.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh test || exit 1
workers=${TREX_TEST_WORKERS:-2}
case "$workers" in ''|*[!0-9]*) echo "TREX_TEST_WORKERS=$workers: give a number of workers (0: one process)" >&2; exit 2 ;; esac
parallel=(); [ "$workers" != 0 ] && parallel=(-n "$workers" --dist loadfile)
python -m pytest -q ${parallel[@]+"${parallel[@]}"} -m "not slow and not nightly" "$@"
rc=$?
if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: failing" >&2; exit 1; fi
exit "$rc"
