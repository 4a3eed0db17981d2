"""The test run means one thing: the default hypothesis profile is derandomized (the same examples
on every run and machine), random exploration lives in the nightly profile, and the README's
nightly command (`-m nightly`) selects tests."""
import os
import subprocess
import sys
from pathlib import Path

from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]


def test_default_profile_is_derandomized_and_nightly_explores():
    ci, nightly = settings.get_profile("ci"), settings.get_profile("nightly")
    assert ci.derandomize
    assert not nightly.derandomize and nightly.max_examples > ci.max_examples
    if os.environ.get("TREX_FUZZ_PROFILE", "ci") == "ci":
        assert settings.default.derandomize and settings.default.max_examples == ci.max_examples


def test_nightly_marker_selects_tests():
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "nightly",
                          "-p", "no:cacheprovider", "tests/fuzz"], cwd=ROOT, capture_output=True, text=True,
                         timeout=300)
    collected = [line for line in out.stdout.splitlines() if "::" in line]
    assert collected and all("nightly" in line for line in collected), out.stdout[-2000:] + out.stderr[-2000:]
