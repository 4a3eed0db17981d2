"""Predicted fused-kernel time vs predicted eager-chain time, per pattern, on Ascend 910B and on one
910C die (cost_models; nothing here runs on an NPU).

Fused: every launch the op's AscendC layout makes. An op whose runner launches one AIV program is that
program at the tiling the exact solver picks; an op with Cube steps (mHC: the projection GEMMs as
`rows_matmul` host steps) is recorded by running its runner on meta tensors at the example sizes
(`LaunchRecorder`): each AIV program at its solver tiling plus each GEMM on the Cube
(trex/cost_models/cube_model.py). Eager: one kernel per IR op of those programs, each reading its
operands from GM and writing its result back, plus a launch (AscendCostModel.eager_chain), and each GEMM
as torch's fp32 matmul on the Cube. Both use the same hardware description (trex/cost_models/hardware.py,
every number sourced). The paper reports 11.9x (RMSNorm forward) and 3.4x (backward) on 910C; this prints
what the model predicts, it is not tuned to those numbers.

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

import sympy  # noqa: E402
import torch  # noqa: E402

from trex.codegen_ascendc.counting import ascend_cost_model  # noqa: E402
from trex.cost_models.cube_model import cube_gemm, eager_gemm  # noqa: E402
from trex.cost_models.hardware import ASCEND_910B, ASCEND_910C_DIE  # noqa: E402
from trex.compiler import registry  # noqa: E402
from trex.compiler.kernel_ir import ROWS, TensorKind, bind_sizes, size  # noqa: E402
from trex.compiler.kernels import Executor  # noqa: E402

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


class LaunchRecorder(Executor):
    """An executor that runs nothing: it records each AIV program launch (program, bound sizes) and each
    `rows_matmul` host step (a Cube GEMM: m, n, k and the operands' element sizes) and answers with meta
    tensors of the right shapes, so a runner can be walked at full model sizes for free."""

    def __init__(self):
        super().__init__(self._launch_program)
        self.launches: list = []

    def _launch_program(self, program, inputs, scalars):
        sizes = bind_sizes(program, inputs, scalars)
        self.launches.append(("aiv", program, sizes))

        def shape(t):
            lead = {TensorKind.ROW: [sizes[ROWS]], TensorKind.PARTIAL: [1], TensorKind.SHARED: []}[t.kind]
            return lead + [int(sympy.sympify(c).subs(sizes)) for c in t.cols]
        out = {t.name: torch.empty(shape(t), dtype=t.dtype.torch, device="meta") for t in program.outputs}
        for h in program.finalize:
            if h.kind != "sum_cores":
                raise ValueError(f"{program.name}: LaunchRecorder knows the host step sum_cores, not {h.kind}")
            out[h.out] = torch.empty(out[h.args[0]].shape[1:], dtype=torch.float32, device="meta")
        return out

    def rows_matmul(self, a, b):
        k, m = a.shape
        n = b.shape[1]
        self.launches.append(("cube", m, n, k, a.element_size(), b.element_size()))
        return torch.empty(m, n, dtype=torch.float32, device="meta")


def _meta(*shape, dtype=torch.float32):
    return torch.empty(*shape, dtype=dtype, device="meta")


def _mhc_args(sz: dict, dtype) -> tuple:
    rows, n, d = sz["ROWS"], sz["N"], sz["HD"]
    m = (2 + n) * n
    return (_meta(rows, n, d, dtype=dtype), _meta(m, n * d), _meta(3), _meta(m), sz["ITERS"], 1e-6, 1e-6)


def _mhc_bwd_args(sz: dict, dtype) -> tuple:
    rows, n, d = sz["ROWS"], sz["N"], sz["HD"]
    return (_meta(rows, d, dtype=dtype), _meta(rows, n), _meta(rows, n, n), *_mhc_args(sz, dtype))


# op-level arguments (meta tensors at the example sizes) of the ops whose AscendC layout launches more
# than one kernel; the other ops are priced as their one program
RECORDED_ARGS = {"mhc_pre": _mhc_args, "mhc_pre_bwd": _mhc_bwd_args}


def launches(name: str, spec, program, example: dict) -> list:
    """The AIV programs (with sizes) and Cube GEMMs the op's AscendC layout runs at the example sizes."""
    make = RECORDED_ARGS.get(name)
    if make is None:
        return [("aiv", program, {size(k): v for k, v in example.items()})]
    rec = LaunchRecorder()
    spec.run(make(example, torch.bfloat16), rec)
    return rec.launches


def price(hw, steps: list) -> dict:
    """Fused and eager time of a launch sequence, with its parts."""
    fused = eager = 0.0
    parts, gm_fused, gm_eager, eager_launches, best = [], 0, 0, 0, None
    for st in steps:
        if st[0] == "aiv":
            _, p, sizes = st
            m = ascend_cost_model(p, hw)
            t0 = time.perf_counter()
            pred = m.solve(sizes)
            solve_s = time.perf_counter() - t0
            e = m.eager_chain(sizes)
            fused += pred.time_s
            eager += e["time_s"]
            gm_fused += pred.mte2_bytes + pred.mte3_bytes
            gm_eager += e["gm_bytes"]
            eager_launches += e["launches"]
            best = best or (pred, solve_s, p)
            parts.append({"launch": "aiv", "kernel": p.name, "fused_us": pred.time_s * 1e6, "eager_us": e["time_s"] * 1e6,
                          "tiling": pred.tiling.__dict__, "roofline_fraction": pred.roofline_fraction,
                          "pipes_us": {k: v * 1e6 for k, v in pred.pipes_s.items()}, "solve_s": solve_s})
        else:
            _, mm, nn, kk, ab, bb = st
            g, e = cube_gemm(hw, mm, nn, kk, ab, bb), eager_gemm(hw, mm, nn, kk)
            fused += g.time_s
            eager += e.time_s
            gm_fused += g.gm_bytes
            gm_eager += e.gm_bytes
            eager_launches += e.launches
            parts.append({"launch": "cube", "fused": g.as_dict(), "eager": e.as_dict()})
    return {"fused_s": fused, "eager_s": eager, "parts": parts, "gm_fused": gm_fused, "gm_eager": gm_eager,
            "eager_launches": eager_launches, "first": best}


def run(patterns: list[str]) -> list[dict]:
    rows = []
    for hw in (ASCEND_910B, ASCEND_910C_DIE):
        for name in patterns:
            spec = registry.kernel_spec(name)
            p = spec.program("bf16")
            example = dict(spec.sizes["example"])
            pr = price(hw, launches(name, spec, p, example))
            best, solve_s, first = pr["first"]
            m = ascend_cost_model(first, hw)
            roof = m.roofline_s({size(k): v for k, v in example.items()}, best.tiling.cores)
            if name in RECORDED_ARGS:   # the op's own bytes: its inputs and outputs, not the GEMMs' hand-offs
                roof = _op_unique_bytes(name, example) / hw.hbm_bw.value
            rows.append({
                "target": hw.name, "pattern": name, "kernel": p.name, "sizes": example,
                "fused_us": pr["fused_s"] * 1e6, "eager_us": pr["eager_s"] * 1e6,
                "speedup": pr["eager_s"] / pr["fused_s"], "eager_launches": pr["eager_launches"],
                "eager_gm_bytes": pr["gm_eager"], "fused_gm_bytes": pr["gm_fused"],
                "launches": len(pr["parts"]), "parts": pr["parts"],
                "roofline_us": roof * 1e6, "roofline_fraction": roof / pr["fused_s"],
                "tiling": best.tiling.__dict__, "pipes_us": {k: v * 1e6 for k, v in best.pipes_s.items()},
                "ratios": best.ratios, "ub_bytes": best.ub_bytes, "solve_s": solve_s,
                "paper_speedup_910c": PAPER_910C.get(name) if hw is ASCEND_910C_DIE else None,
            })
            print(f"{hw.name:14s} {name:20s} fused {pr['fused_s'] * 1e6:9.1f} us  eager {pr['eager_s'] * 1e6:9.1f} us  "
                  f"x{pr['eager_s'] / pr['fused_s']:5.2f}  roofline {roof / pr['fused_s']:4.0%}  launches {len(pr['parts'])}  "
                  f"{best.tiling}", flush=True)
    return rows


def _op_unique_bytes(name: str, sz: dict) -> int:
    """Bytes the op itself must move (each op input read once, each output written once) from the
    fake implementation's output shapes and the recorded arguments."""
    args = RECORDED_ARGS[name](sz, torch.bfloat16)
    outs = registry.fused_ops()[name].fake(*args)
    tensors = [a for a in args if isinstance(a, torch.Tensor)] + list(outs)
    return sum(t.numel() * t.element_size() for t in tensors)


def table(rows: list[dict]) -> str:
    out = ["| target | pattern | fused us (launches) | eager us (launches) | speedup | paper (910C) | roofline | "
           "bound by (first AIV program) | tiling (rows/tile, chunk, depth, cores) |",
           "|---|---|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        pipes = {k: v for k, v in r["pipes_us"].items() if k != "launch"}
        bound = max(pipes, key=pipes.get)
        t = r["tiling"]
        paper = f"{r['paper_speedup_910c']}x" if r["paper_speedup_910c"] else ""
        out.append(f"| {r['target']} | {r['pattern']} | {r['fused_us']:.1f} ({r['launches']}) | {r['eager_us']:.1f} ({r['eager_launches']}) | "
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
