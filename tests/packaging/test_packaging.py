"""What `pip install .` puts on a user's machine: one import root (`trex`), its package data, and
nothing a user's own top-level folders (`passes/`, `training/`, `tuning/`) can shadow."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# package data the documented commands read from an installed trex
SHIPPED_DATA = (
    "trex/configs/tiny_cpt.toml", "trex/configs/tiny_sft.toml", "trex/configs/small_h200.toml",
    "trex/configs/data/tiny_sft.jsonl",
    "trex/codegen_ascendc/emulator/include/kernel_operator.h",
    "trex/codegen_ascendc/golden/rms_norm.cpp",
    "trex/codegen_triton/calibration_h200.json",
)


def _source_copy(dst: Path) -> Path:
    """The checkout's tracked files (all of it without git), copied: building in place rewrites the
    checkout's build/ and trex.egg-info/, whose entry points another pytest worker and every `trex`
    subprocess started from the checkout read while setuptools writes them."""
    import shutil
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, timeout=60)
    if listed.returncode != 0:
        shutil.copytree(ROOT, dst, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info", "__pycache__"))
        return dst
    for name in filter(None, listed.stdout.decode().split("\0")):
        src = ROOT / name
        if src.is_file():
            (dst / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / name)
    return dst


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    source = _source_copy(tmp_path_factory.mktemp("source"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(source)], check=True, capture_output=True, timeout=600)
    (path,) = out.glob("trex-*.whl")
    return zipfile.ZipFile(path)


def test_the_wheel_has_one_import_root(wheel):
    roots = {name.split("/")[0] for name in wheel.namelist() if not name.split("/")[0].endswith(".dist-info")}
    assert roots == {"trex"}
    top_level = next(n for n in wheel.namelist() if n.endswith(".dist-info/top_level.txt"))
    assert wheel.read(top_level).decode().split() == ["trex"]


def test_the_wheel_carries_its_data(wheel):
    names = set(wheel.namelist())
    missing = [f for f in SHIPPED_DATA if f not in names]
    assert not missing, f"package data missing from the wheel: {missing} (pyproject.toml [tool.setuptools.package-data])"


def test_entry_points_name_the_root(wheel):
    entry_points = next(n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt"))
    targets = [line.split("=", 1)[1].strip() for line in wheel.read(entry_points).decode().splitlines()
               if "=" in line]
    assert targets and all(t.startswith("trex.") for t in targets), targets


_COUNT_MATCHES = """
import json, torch
import trex.compiler.backend
from trex.compiler import logs

def chain(x):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)

torch.compile(chain, backend="trex")(torch.randn(4, 32))
print(json.dumps(dict(logs.counters["matches"])))
"""


def _matches_in(cwd: Path) -> dict:
    proc = subprocess.run([sys.executable, "-c", _COUNT_MATCHES], cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_passes_folder_in_the_working_directory_changes_nothing(tmp_path):
    """`python -c` puts the working directory first on sys.path: a user's own passes/ (or training/,
    tuning/) there once made trex fuse nothing."""
    clean = tmp_path / "clean"
    clean.mkdir()
    user = tmp_path / "user_project"
    for folder in ("passes", "training", "tuning", "cost_models"):
        (user / folder).mkdir(parents=True)
        (user / folder / "__init__.py").write_text(f"raise ImportError('the user project {folder}/ was imported')\n")
    baseline = _matches_in(clean)
    assert baseline.get("rms_norm", 0) >= 1, baseline
    assert _matches_in(user) == baseline


@pytest.mark.slow
def test_a_wheel_install_runs_the_documented_commands(tmp_path):
    """Fresh venv, `pip install .` (not editable), the documented commands from outside the checkout
    (scripts/check_wheel.sh)."""
    from trex.resources import BENCHMARKS_ENV, benchmark_root_or_none
    benchmarks, source = benchmark_root_or_none()
    if benchmarks is None or not benchmarks.is_dir():
        pytest.skip(f"`trex or-data generate` needs the OR benchmark files: {source}; set ${BENCHMARKS_ENV}")
    env = {**os.environ, BENCHMARKS_ENV: str(benchmarks)}
    proc = subprocess.run(["bash", str(ROOT / "scripts" / "check_wheel.sh"), str(tmp_path / "w")],
                          capture_output=True, text=True, timeout=3600, env=env)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "OK:" in proc.stdout


@pytest.mark.parametrize("given", ["missing folder", "nothing"])
def test_or_data_without_its_benchmarks_says_where_to_point_it(given, tmp_path, monkeypatch, capsys):
    """The OR benchmark files are not shipped: their absence is one line naming --data-root and
    $TREX_OR_BENCHMARKS, exit 2, before any work."""
    from trex import resources
    from trex.training.or_data.cli import main

    monkeypatch.delenv(resources.BENCHMARKS_ENV, raising=False)
    monkeypatch.setattr(resources, "checkout_root", lambda: None)     # as installed from a wheel
    argv = ["generate", "--n", "1", "--out", str(tmp_path / "out"), "--no-progress"]
    if given == "missing folder":
        argv += ["--data-root", str(tmp_path / "no_such_folder")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--data-root" in err[0] and "$TREX_OR_BENCHMARKS" in err[0], err
    assert not (tmp_path / "out").exists()


def test_an_installed_config_is_found_by_name(tmp_path, monkeypatch):
    from trex.training.config import ConfigError, load_config

    monkeypatch.chdir(tmp_path)
    assert load_config("tiny_sft.toml").data.kind == "sft"
    assert load_config("configs/tiny_cpt.toml").data.kind == "cpt"      # the documented spelling
    with pytest.raises(ConfigError, match="tiny_cpt.toml"):             # the message lists the installed ones
        load_config("nope.toml")
