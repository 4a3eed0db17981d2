"""Predicted fused-kernel time vs predicted eager-chain time, per pattern, on Ascend 910B and on one
910C die (cost_models; nothing here runs on an NPU).

Fused: the generated kernel at the tiling the exact solver picks. Eager: one kernel per IR op, each
reading its operands from GM and writing its result back, plus a launch (AscendCostModel.eager_chain).
Both use the same hardware description (trex/cost_models/hardware.py, every number sourced). The paper
reports 11.9x (RMSNorm forward) and 3.4x (backward) on 910C; this prints what the model predicts,
it is not tuned to those numbers.

    python bench/ascend_model.py [--patterns rms_norm,rms_norm_bwd] [--out bench/results]
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from trex.codegen_ascendc.counting import ascend_cost_model  # noqa: E402
from trex.cost_models.hardware import ASCEND_910B, ASCEND_910C_DIE  # noqa: E402
from trex.compiler import registry  # noqa: E402
from trex.compiler.kernel_ir import size  # noqa: E402

PAPER_910C = {"rms_norm": 11.9, "rms_norm_bwd": 3.4}


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=10).stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
    with os.fdopen(fd, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def run(patterns: list[str]) -> list[dict]:
    rows = []
    for hw in (ASCEND_910B, ASCEND_910C_DIE):
        for name in patterns:
            spec = registry.kernel_spec(name)
            p = spec.program("bf16")
            example = dict(spec.sizes["example"])
            sizes = {size(k): v for k, v in example.items()}
            m = ascend_cost_model(p, hw)
            t0 = time.perf_counter()
            best = m.solve(sizes)
            solve_s = time.perf_counter() - t0
            eager = m.eager_chain(sizes)
            rows.append({
                "target": hw.name, "pattern": name, "kernel": p.name, "sizes": example,
                "fused_us": best.time_s * 1e6, "eager_us": eager["time_s"] * 1e6,
                "speedup": eager["time_s"] / best.time_s, "eager_launches": eager["launches"],
                "eager_gm_bytes": eager["gm_bytes"], "fused_gm_bytes": best.mte2_bytes + best.mte3_bytes,
                "roofline_us": best.roofline_s * 1e6, "roofline_fraction": best.roofline_fraction,
                "tiling": best.tiling.__dict__, "pipes_us": {k: v * 1e6 for k, v in best.pipes_s.items()},
                "ratios": best.ratios, "ub_bytes": best.ub_bytes, "solve_s": solve_s,
                "paper_speedup_910c": PAPER_910C.get(name) if hw is ASCEND_910C_DIE else None,
            })
            print(f"{hw.name:14s} {name:20s} fused {best.time_s * 1e6:9.1f} us  eager {eager['time_s'] * 1e6:9.1f} us  "
                  f"x{eager['time_s'] / best.time_s:5.2f}  roofline {best.roofline_fraction:4.0%}  {best.tiling}",
                  flush=True)
    return rows


def table(rows: list[dict]) -> str:
    out = ["| target | pattern | fused us | eager us (launches) | speedup | paper (910C) | roofline | bound by | tiling (rows/tile, chunk, depth, cores) |",
           "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        pipes = {k: v for k, v in r["pipes_us"].items() if k != "launch"}
        bound = max(pipes, key=pipes.get)
        t = r["tiling"]
        paper = f"{r['paper_speedup_910c']}x" if r["paper_speedup_910c"] else ""
        out.append(f"| {r['target']} | {r['pattern']} | {r['fused_us']:.1f} | {r['eager_us']:.1f} ({r['eager_launches']}) | "
                   f"{r['speedup']:.2f}x | {paper} | {r['roofline_fraction']:.0%} | {bound} | "
                   f"{t['rows_per_tile']}, {t['col_chunk']}, {t['buffer_depth']}, {t['cores']} |")
    return "\n".join(out) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    specs = registry.kernel_specs()
    ap.add_argument("--patterns", default=",".join(specs), help="comma-separated pattern names")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    a = ap.parse_args(argv)
    names = [n for n in a.patterns.split(",") if n]
    unknown = [n for n in names if n not in specs]
    if unknown:
        ap.error(f"unknown patterns {unknown}; choose from {sorted(specs)}")
    rows = run(names)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = {"generated": stamp, "commit": _commit(), "model": "trex.cost_models.ascend_model (predicted, not measured)",
            "hardware": {"Ascend910B": ASCEND_910B.describe(), "Ascend910CDie": ASCEND_910C_DIE.describe()},
            "rows": rows}
    out = Path(a.out)
    _atomic_write(out / "ascend_model.json", json.dumps(meta, indent=2, default=str) + "\n")
    md = (f"# Predicted fused vs eager (AscendC cost model)\n\nGenerated {stamp} at commit {meta['commit']} by "
          f"`python bench/ascend_model.py`. Predictions of trex/cost_models/ (no NPU was used); bf16; sizes per pattern "
          f"in ascend_model.json (DeepSeek-V4-Pro shapes, 8192 tokens).\n\n" + table(rows))
    _atomic_write(out / "ascend_model.md", md)
    print(f"wrote {out / 'ascend_model.json'} and {out / 'ascend_model.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
