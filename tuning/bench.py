"""Tune every pattern on one target and record cost-model choice vs tuned result (the acceptance
record "tuned kernels are never slower than the cost model's choice").

    python -m tuning.bench --target ascend910b --out results/tuning_ascend910b.json      # modeled, CPU
    python -m tuning.bench --target cuda --shapes example --out bench/results/tuning_h200.json   # on the GPU

--shapes small: sizes the emulator runs in seconds (default for Ascend targets); example: the
patterns' DeepSeek-V4 example sizes (codegen_ascendc/patterns.py; default for cuda). Each row says
whether its times are measured or modeled. A private store file is used unless --store is given, so
the record is a fresh search, not a store answer.
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from . import harness, search, space
from .store import Store

SMALL = {
    "rms_norm": {"ROWS": 512, "D": 2048},
    "rms_norm_bwd": {"ROWS": 256, "D": 1024},
    "swiglu_limited": {"ROWS": 256, "F": 1024},
    "swiglu_limited_bwd": {"ROWS": 256, "F": 512},
    "rope": {"ROWS": 512, "HD": 128, "RD": 64, "CDIV": 8, "CROWS": 64},
    "mhc_pre": {"ROWS": 64, "N": 4, "HD": 512, "ITERS": 20},
    "mhc_pre_bwd": {"ROWS": 32, "N": 4, "HD": 256, "ITERS": 20},
}


def run(target: str, patterns: list[str], shapes: str, store: Store, **search_kw) -> list[dict]:
    rows = []
    for name in patterns:
        sizes = harness.parse_shape(SMALL[name] if shapes == "small" else None, name)
        t0 = time.perf_counter()
        res = search.tune(target, name, "bf16", sizes, store=store, use_store=False, **search_kw)
        statuses: dict = {}
        for n in res.nodes:
            statuses[n.status] = statuses.get(n.status, 0) + 1
        rows.append({"pattern": name, "target": target, "sizes": sizes, "profile": res.profile_label,
                     "model_config": res.baseline_config, "model_us": res.baseline_time_s * 1e6,
                     "tuned_config": res.config, "tuned_us": res.time_s * 1e6, "gain": res.gain,
                     "never_slower": res.time_s <= res.baseline_time_s, "compiled": res.compiled,
                     "nodes": statuses, "stop_reason": res.stop_reason, "search_s": time.perf_counter() - t0})
        r = rows[-1]
        print(f"{name:20s} model {r['model_us']:9.3f} us  tuned {r['tuned_us']:9.3f} us  gain {r['gain']:6.1%}  "
              f"{r['compiled']:3d} compiled  {r['tuned_config']}", flush=True)
    return rows


def table(rows: list[dict]) -> str:
    out = ["| pattern | sizes | cost model's choice | us | tuned | us | gain | profile |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        sz = ",".join(f"{k}={v}" for k, v in r["sizes"].items())
        out.append(f"| {r['pattern']} | {sz} | {r['model_config']} | {r['model_us']:.3f} | {r['tuned_config']} | "
                   f"{r['tuned_us']:.3f} | {r['gain']:.1%} | {r['profile']} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    from codegen_ascendc.patterns import PATTERNS
    ap = argparse.ArgumentParser(prog="python -m tuning.bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", required=True, choices=["cuda", "ascend910b", "ascend910c"])
    ap.add_argument("--patterns", default=",".join(PATTERNS), help="comma-separated (default: all)")
    ap.add_argument("--shapes", choices=["small", "example"], help="default: small on Ascend, example on cuda")
    ap.add_argument("--max-candidates", type=int, default=16)
    ap.add_argument("--store", help="store file to record into (default: a private temporary one)")
    ap.add_argument("--out", help="write the rows as JSON here (and a .md table next to it)")
    a = ap.parse_args(argv)
    shapes = a.shapes or ("small" if space.family(a.target) == "ascend" else "example")
    if space.family(a.target) == "cuda":
        from .cuda import available
        ok, why = available()
        if not ok:
            print(f"tuning.bench: --target cuda skipped: {why}", file=sys.stderr)
            return 3
    with tempfile.TemporaryDirectory() as tmp:
        store = Store(a.store or Path(tmp) / "store.json")
        rows = run(a.target, [p for p in a.patterns.split(",") if p], shapes, store,
                   max_candidates=a.max_candidates, checks=2)
    print(table(rows))
    if a.out:
        out = Path(a.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        doc = {"date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), "target": a.target,
               "shapes": shapes, "rows": rows}
        for path, text in ((out, json.dumps(doc, indent=2)), (out.with_suffix(".md"), table(rows) + "\n")):
            fd, tmpf = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".")
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmpf, path)
    return 0 if all(r["never_slower"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
