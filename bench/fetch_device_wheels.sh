#!/usr/bin/env bash
# Fill .whl/ (git-ignored: add `/.whl/` to .git/info/exclude) with what bench/_device_setup.sh installs on the
# lent H200 image (Python 3.12, no network there): the wheels it lacks and a copy of the OR benchmark
# files (../shared does not travel with the working tree). Run here, in the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 -d .whl highspy==1.16.0 pyscipopt==6.3.0 liger-kernel==0.8.5 transformers==5.18.0 \
  pytest-xdist==3.8.0 execnet==2.1.2
# the OR sandbox's kernel layers: bubblewrap's .deb, unpacked there by bench/_device_setup.sh (dpkg -x)
ls .whl/bubblewrap_*.deb > /dev/null 2>&1 || (cd .whl && apt-get download bubblewrap) \
  || echo "fetch_device_wheels: bubblewrap's .deb not downloaded; the device's OR sandbox will need TREX_ALLOW_WEAK_SANDBOX=1" >&2
src=${TREX_OR_BENCHMARKS_SRC:-../shared/data/or_benchmarks}
mkdir -p .whl/or_benchmarks
cp -r "$src"/. .whl/or_benchmarks/
du -sh .whl
