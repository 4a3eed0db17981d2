"""The emulator's compile cache is bounded (LRU eviction to $TREX_EMU_CACHE_MB) and can be cleared;
the CLIs reject bad input with one line and exit 2."""
import os
import subprocess
import sys
import time

import pytest

from trex.codegen_ascendc.emulator import runner


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TREX_CACHE_DIR", str(tmp_path))
    return runner.cache_dir()


def _entry(root, key, nbytes, age_s):
    files = [root / f"k_{key}.so", root / f"k_{key}.cpp"]
    for f in files:
        f.write_bytes(b"x" * (nbytes // 2))
        t = time.time() - age_s
        os.utime(f, (t, t))
    return files


def test_eviction_removes_least_recently_used_entries_first(private_cache):
    old = _entry(private_cache, "old", 4000, 300)
    mid = _entry(private_cache, "mid", 4000, 200)
    new = _entry(private_cache, "new", 4000, 100)
    pch = private_cache / "pch_abc"
    pch.mkdir()
    (pch / "kernel_operator.h.gch").write_bytes(b"x" * 4000)
    os.utime(pch / "kernel_operator.h.gch", (time.time() - 250,) * 2)
    freed = runner.evict_cache(limit_bytes=8000, keep=[new[0]])
    assert freed == 8000                       # the two oldest entries: "old" (300 s), then the PCH (250 s)
    assert not any(f.exists() for f in old) and not pch.exists()
    assert all(f.exists() for f in mid + new)


def test_kept_entry_survives_a_zero_limit(private_cache):
    kept = _entry(private_cache, "kept", 1000, 500)
    _entry(private_cache, "other", 1000, 300)
    runner.evict_cache(limit_bytes=0, keep=[kept[0]])
    assert [p.name for p in sorted(private_cache.iterdir())] == ["k_kept.cpp", "k_kept.so"]


def test_eviction_leaves_what_another_process_is_building_or_loading(private_cache):
    """Processes share the cache: a temporary younger than TEMP_GRACE_S is another compile's output in
    progress, an entry used within EVICT_GRACE_S may be loaded next; a zero limit still leaves them.
    Stale temporaries of a killed compile go; clear_cache removes everything."""
    building = private_cache / "k_building.so.1a2b.tmp"
    building.write_bytes(b"x" * 1000)
    fresh = _entry(private_cache, "fresh", 1000, 5)
    pch = private_cache / "pch_new"
    pch.mkdir()
    (pch / "kernel_operator.h.gch.tmp").write_bytes(b"x" * 1000)
    stale = private_cache / "k_dead.so.9z9z.tmp"
    stale.write_bytes(b"x" * 1000)
    os.utime(stale, (time.time() - 2 * runner.TEMP_GRACE_S,) * 2)
    old = _entry(private_cache, "old", 1000, 2 * runner.EVICT_GRACE_S)
    runner.evict_cache(limit_bytes=0)
    assert building.exists() and all(f.exists() for f in fresh) and (pch / "kernel_operator.h.gch.tmp").exists()
    assert not stale.exists() and not any(f.exists() for f in old)
    runner.clear_cache()
    assert list(private_cache.iterdir()) == []


def test_clear_cache_empties_the_directory(private_cache):
    _entry(private_cache, "a", 1000, 0)
    assert runner.clear_cache() == 1000
    assert list(private_cache.iterdir()) == []


def test_cache_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv("TREX_EMU_CACHE_MB", "1.5")
    assert runner.cache_limit_bytes() == 1572864
    monkeypatch.setenv("TREX_EMU_CACHE_MB", "lots")
    with pytest.raises(runner.EmulatorError, match=r"TREX_EMU_CACHE_MB='lots' is not a number"):
        runner.cache_limit_bytes()


def _run(*args, env=None):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})


def test_codegen_clear_cache_flag(tmp_path):
    (tmp_path / "emulator").mkdir()
    (tmp_path / "emulator" / "k_x.so").write_bytes(b"x" * 10)
    proc = _run("-m", "trex.codegen_ascendc.cli", "--clear-cache", env={"TREX_CACHE_DIR": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    assert "cleared" in proc.stdout and list((tmp_path / "emulator").iterdir()) == []


def test_missing_source_file_is_one_line_exit_2(tmp_path):
    proc = _run("-m", "trex.codegen_ascendc.emulator", str(tmp_path / "nope.cpp"))
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "does not exist" in proc.stderr
    with pytest.raises(FileNotFoundError, match="does not exist"):
        runner.compile_kernel("nope.cpp")


@pytest.mark.parametrize("sizes, message", [
    ("D=abc", r"--sizes: D=abc is not an integer"),
    ("D=0", r"--sizes: D=0 must be a positive integer"),
    ("rows=64", r"--sizes: unknown size 'rows'; this pattern's sizes are ROWS, D"),
])
def test_codegen_bad_sizes_one_line_exit_2(tmp_path, sizes, message):
    from trex.codegen_ascendc.cli import main
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = main(["--pattern", "rms_norm", "--out", str(tmp_path), "--sizes", sizes])
    assert rc == 2
    assert err.getvalue().count("\n") == 1
    import re
    assert re.search(message, err.getvalue())


def test_a_precompiled_header_of_another_checkout_is_not_reused(tmp_path, monkeypatch):
    """The forwarder beside a PCH names its checkout's header directory by absolute path: a fresh
    clone once reused the PCH of a deleted one and every kernel failed to compile."""
    from trex.codegen_ascendc.emulator import runner
    cxx = "fake-c++"
    monkeypatch.setitem(runner._COMPILER_ID, cxx, "fake-c++ 1.0")
    here = runner._pch_key(cxx, ["-O1"], runner.INCLUDE_DIR)
    assert runner._pch_key(cxx, ["-O1"], tmp_path / "other_checkout" / "include") != here
    assert runner._pch_key(cxx, ["-O1"], runner.INCLUDE_DIR) == here
