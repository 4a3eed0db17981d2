"""Shared pieces of the training benchmarks (bench/swap_optimizer.py, train_step.py, train_small.py,
train_multi.py): hardware/commit stamp, atomic JSON results, a rich table, the CUDA requirement."""
from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
if str(REPO) not in sys.path:          # `python bench/x.py` from anywhere imports the repo's packages
    sys.path.insert(0, str(REPO))

# NVLink multicast stays off on the lent machines (NVLS / symmetric-memory multicast).
NCCL_ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1"}


def git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                               capture_output=True, text=True, timeout=10).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def hardware() -> dict:
    info = {"torch": torch.__version__, "python": platform.python_version(), "host": platform.node(),
            "cpu_count": os.cpu_count()}
    if torch.cuda.is_available():
        info.update(cuda=torch.version.cuda, gpu=torch.cuda.get_device_name(0), gpus=torch.cuda.device_count(),
                    gpu_memory_gib=round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1))
    return info


def write_results(name: str, payload: dict) -> Path:
    """bench/results/<name>.json, with time, commit and hardware; temp file + rename."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    record = {"benchmark": name, "time_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
              "commit": git_commit(), "hardware": hardware(), **payload}
    path = RESULTS / f"{name}.json"
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(record, indent=1, default=str))
    os.replace(tmp, path)
    return path


def print_table(title: str, columns: list[str], rows: list[list]) -> None:
    from rich.console import Console
    from rich.table import Table
    table = Table(title=title)
    for c in columns:
        table.add_column(c, justify="right" if c != columns[0] else "left")
    for row in rows:
        table.add_row(*[_fmt(v) for v in row])
    Console().print(table)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def require_cuda(script: str) -> None:
    if not torch.cuda.is_available():
        print(f"{script}: needs a CUDA GPU (this is an H200 benchmark); none found", file=sys.stderr)
        raise SystemExit(2)


def median(xs: list[float]) -> float | None:
    xs = sorted(xs)
    if not xs:
        return None
    mid = len(xs) // 2
    return xs[mid] if len(xs) % 2 else 0.5 * (xs[mid - 1] + xs[mid])
