"""Where trex's files are: the data shipped in the package, and the data it does not ship.

Shipped (package data, present in a wheel as in a checkout): ``configs/`` (train configs and their
small data files; trex.training.config.load_config finds one by name), the emulator headers and the
golden AscendC kernels (found beside their modules).

Not shipped: the public OR benchmark files (``shared/data/or_benchmarks`` next to a checkout). They
are found through an explicit argument (``--data-root DIR`` of or-data and or-eval), else
``$TREX_OR_BENCHMARKS``, else the checkout's ``shared/`` folder; `benchmark_root_or_none` says where.
"""
from __future__ import annotations

import os
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
CONFIGS_DIR = PACKAGE_DIR / "configs"
BENCHMARKS_ENV = "TREX_OR_BENCHMARKS"
BENCHMARKS_FIX = (f"pass the or_benchmarks folder (holding <benchmark>/<benchmark>.jsonl) with --data-root DIR, "
                  f"or set ${BENCHMARKS_ENV}")


def checkout_root() -> Path | None:
    """The source checkout holding the package (None when installed from a wheel)."""
    root = PACKAGE_DIR.parent
    return root if (root / "pyproject.toml").is_file() else None


def benchmark_root_or_none(explicit: str | os.PathLike | None = None) -> tuple[Path | None, str]:
    """(the or_benchmarks folder, where it came from); the folder is None when nothing names one that
    exists. An explicit folder or $TREX_OR_BENCHMARKS is returned as given (its absence is reported
    by the caller, naming where it came from)."""
    if explicit is not None:
        return Path(explicit), "the argument"
    env = os.environ.get(BENCHMARKS_ENV)
    if env:
        return Path(env), f"${BENCHMARKS_ENV}"
    root = checkout_root()
    if root is not None:
        for candidate in (root / "shared" / "data" / "or_benchmarks",
                          root.parent / "shared" / "data" / "or_benchmarks"):
            if candidate.is_dir():
                return candidate, "the checkout's shared/ folder"
    return None, f"nothing (no argument, ${BENCHMARKS_ENV} unset, no shared/ folder beside a checkout)"
