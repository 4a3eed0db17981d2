"""Measured constants of the GPU the tiling model plans for (copy bandwidth, launch overhead, ...).

`bench/gpu_patterns.py` measures them on the device (first thing in every run) and writes a JSON file
with the keys below; the one committed here, `calibration_h200.json`, is the last measurement on the
H200 (date, torch and Triton versions inside). `current()` returns, in order: what `use()` set in
this process, the file named by TREX_TRITON_CALIBRATION, the committed H200 file, or the datasheet
description (`DATASHEET_H200`) with cost_models' H200 copy bandwidth (`cost_model_description()`).
"""
from __future__ import annotations

import json
import os

CALIBRATION_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calibration_h200.json")

REQUIRED_KEYS = ("copy_bandwidth_bytes_per_s", "launch_overhead_wall_us", "sm_count")

# Leads from the vendor's datasheet and the device notes (KINDS.md measured 4.3 TB/s copy bandwidth and
# 132 SMs, 60 MB L2 on this workplace's H200); used only until a measurement exists.
DATASHEET_H200 = {
    "device": "NVIDIA H200",
    "source": "datasheet",
    "sm_count": 132,
    "l2_bytes": 60 * 2 ** 20,
    "copy_bandwidth_bytes_per_s": 4.3e12,
    "launch_overhead_wall_us": 6.0,
    "launch_overhead_graph_us": 2.0,
    "tf32_gemm_flops_per_s": 400e12,
    "registers_per_sm": 65536,
    "max_threads_per_sm": 2048,
    "dram_latency_ns": 700.0,
}

_override: dict | None = None


def validate(calib: dict, where: str = "calibration") -> dict:
    missing = [k for k in REQUIRED_KEYS if k not in calib]
    if missing:
        raise ValueError(f"{where}: calibration lacks {missing}; re-run bench/gpu_patterns.py on the GPU "
                         f"to measure them")
    out = dict(DATASHEET_H200)
    out.update(calib)
    return out


def use(calib: dict | None) -> None:
    """Make `calib` (a dict as written by bench/gpu_patterns.py) the one the tiling model reads."""
    global _override
    _override = validate(calib, "trex.codegen_triton.calibration.use") if calib is not None else None


def load(path: str) -> dict:
    with open(path) as f:
        return validate(json.load(f), path)


def current() -> dict:
    if _override is not None:
        return _override
    env = os.environ.get("TREX_TRITON_CALIBRATION")
    if env:
        return load(env)
    if os.path.exists(CALIBRATION_FILE):
        return load(CALIBRATION_FILE)
    return cost_model_description()


def cost_model_description() -> dict:
    """The datasheet leads, with cost_models' H200 description (copy bandwidth measured by the anchor
    run) where that layer provides one."""
    out = dict(DATASHEET_H200)
    try:
        from trex.cost_models.hardware import H200
        out["copy_bandwidth_bytes_per_s"] = float(H200.copy_bw)
        out["source"] = f"datasheet; copy bandwidth from trex.cost_models.hardware.H200 ({H200.copy_bw.source})"
    except (ImportError, AttributeError):
        pass
    return out


def save(calib: dict, path: str = CALIBRATION_FILE) -> None:
    """Atomic write (temp file + os.replace)."""
    validate(calib, path)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(calib, f, indent=1, sort_keys=True)
    os.replace(tmp, path)
