# The set-up every bench/h200_*.sh script shares on the lent H200 image (Python 3.12, no network),
# sourced, not run:   . bench/_device_setup.sh && device_setup [or]
# What travels in .whl/ (git-ignored; bench/fetch_device_wheels.sh fills it; name `.whl` in the
# device call's carry): transformers >= 5.18 (DeepSeek-V4), highspy and pyscipopt (the OR solver
# shim), bubblewrap's .deb (the OR sandbox's kernel layers), a copy of the OR benchmark files.
#
# device_setup        the environment, trex editable, the wheels under /tmp/site on PYTHONPATH
# device_setup or     first the solver wheels into site-packages (the OR sandbox runs `python -I`,
#                     which ignores PYTHONPATH: pip must put them there BEFORE PYTHONPATH names
#                     /tmp/site, else it finds them there, says "already satisfied" and installs
#                     nothing: run 4's zygote died on "No module named 'highspy'"), bubblewrap
#                     unpacked onto PATH, TREX_OR_BENCHMARKS
# Each step logs to $OUT/install.txt and says WARN on stdout when it fails; none of them exits.

device_setup() {
  local want_or=${1:-}
  : "${OUT:?set OUT to the folder whose files come back}"
  export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
  local log="$OUT/install.txt"
  if [ "$want_or" = or ]; then
    local w
    for w in .whl/highspy-*.whl .whl/pyscipopt-*.whl; do
      [ -f "$w" ] || { echo "WARN: $w missing (bench/fetch_device_wheels.sh)"; continue; }
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --ignore-installed "$w" \
        >> "$log" 2>&1 || echo "WARN: $(basename "$w") not installed: $(tail -c 300 "$log")"
    done
    if ! command -v bwrap > /dev/null 2>&1 && ls .whl/bubblewrap_*.deb > /dev/null 2>&1; then
      dpkg -x .whl/bubblewrap_*.deb /tmp/bwrap_pkg >> "$log" 2>&1 \
        && export PATH=/tmp/bwrap_pkg/usr/bin:$PATH \
        || echo "WARN: bubblewrap not unpacked: $(tail -c 300 "$log")"
    fi
    [ -d .whl/or_benchmarks ] && export TREX_OR_BENCHMARKS=$PWD/.whl/or_benchmarks
  fi
  # installed (editable) so its entry points load, as `pip install -e .` does for a user: backend="trex"
  # finds the cuda target through them; where the image cannot build it, a .pth still imports the checkout
  python3 -m pip install -q --no-deps --no-index --no-build-isolation -e . >> "$log" 2>&1 \
    || { echo "WARN: editable install failed: $(tail -c 300 "$log")"; \
         python3 -c "import site,os; open(os.path.join(site.getsitepackages()[0],'trex_checkout.pth'),'w').write(os.getcwd()+'\n')"; }
  export PYTHONPATH=$PWD
  if ls .whl/*.whl > /dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      >> "$log" 2>&1 && export PYTHONPATH=/tmp/site:$PWD || echo "WARN: .whl/ wheels not installed: $(tail -c 300 "$log")"
  fi
  nvidia-smi --query-gpu=name,clocks.sm,power.draw,temperature.gpu,memory.used --format=csv,noheader 2>/dev/null \
    || echo "WARN: no nvidia-smi"
}
