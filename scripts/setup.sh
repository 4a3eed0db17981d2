#!/usr/bin/env bash
# The project's setup (the README's first command and scripts/test.sh): torch only when it is
# missing or older than 2.11 (a torch build already there is kept), trex editable with the extras
# given as $1, and the sandbox's kernel tools (bubblewrap, libseccomp) through apt when this is a
# root shell with apt-get; elsewhere it says what is missing (`trex doctor` lists the layers).
set -uo pipefail
cd "$(dirname "$0")/.."
extras="${1:-}"
if ! python -c 'import sys, torch; sys.exit(tuple(map(int, torch.__version__.split("+")[0].split(".")[:2])) < (2, 11))' 2>/dev/null; then
  python -m pip install -q torch==2.13.0 || exit 1
fi
python -m pip install -q -e ".${extras:+[$extras]}" || exit 1
has_seccomp() { python -c 'import ctypes.util, sys; sys.exit(ctypes.util.find_library("seccomp") is None)'; }
if ! command -v bwrap >/dev/null 2>&1 || ! has_seccomp; then
  pkgs="bubblewrap libseccomp2"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q $pkgs >/dev/null 2>&1 \
      || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q $pkgs >/dev/null 2>&1; } \
      || echo "setup: apt-get could not install $pkgs; the sandbox runs without its kernel layers (trex doctor)" >&2
  else
    echo "setup: $pkgs not installed and no root apt-get here; install them for the kernel sandbox" \
         "(trex doctor lists the layers; trex or-eval refuses model-written programs without them" \
         "unless given --allow-weak-sandbox)" >&2
  fi
fi
exit 0
