"""Every config shipped in trex/configs loads, and its data paths match files of the installed package.

The import-root move (everything under trex/) left small_h200.toml globbing `../**/*.md`, which no
longer matched anything: its H200 run died before the first step. This catches that class.
"""
from __future__ import annotations

import pytest

from trex.resources import CONFIGS_DIR
from trex.training.config import load_config
from trex.training.data import expand_paths

SHIPPED = sorted(CONFIGS_DIR.glob("*.toml"))


def test_configs_are_shipped():
    assert len(SHIPPED) >= 3, f"expected the shipped configs in {CONFIGS_DIR}"


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_shipped_config_data_paths_match_files(path):
    cfg = load_config(path)
    files = expand_paths(cfg.data.paths)
    assert files, f"{path.name}: data.paths {cfg.data.paths} match no file"
