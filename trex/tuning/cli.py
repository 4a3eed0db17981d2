"""`trex tune`: search a better kernel configuration than the cost model's and remember it.

    trex tune --pattern rms_norm --shape ROWS=64,D=256 --dtype bf16 --target ascend910b
    trex tune --pattern swiglu_limited --shape ROWS=8192,F=3072 --target cuda --max-candidates 40
    trex tune --show                      # what the store holds (configs and skills)

Ascend targets are profiled on the AscendC emulator's counts through the cost model ("modeled"); every
program the pattern's layout launches is tuned, one search and one store entry each (mhc_pre_bwd: its
coefficient and apply AIV programs);
--target cuda measures on the GPU and needs Triton + CUDA (otherwise it exits 3 with the reason).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from . import search, space
from .store import Store, StoreError


def _parser() -> argparse.ArgumentParser:
    from trex.compiler import registry
    ap = argparse.ArgumentParser(prog="trex tune", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pattern", choices=sorted(registry.kernel_specs()),
                    help="fused op with a kernel spec (trex.compiler.registry.kernel_specs)")
    ap.add_argument("--shape", default="", help="sizes NAME=VALUE,... (e.g. ROWS=64,D=256); others keep the "
                                                "pattern's example values")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--target", default="ascend910b", choices=["cuda", "ascend910b", "ascend910c"])
    ap.add_argument("--store", help="store file (default: $TREX_TUNING_STORE or ~/.cache/trex/tuning/store.json)")
    ap.add_argument("--max-candidates", type=int, default=24, help="compiled candidates at most (default 24)")
    ap.add_argument("--time-budget", type=float, default=300.0, help="seconds of search at most (default 300)")
    ap.add_argument("--patience", type=int, default=12,
                    help="stop after this many candidates without an improvement (default 12)")
    ap.add_argument("--checks", type=int, default=3, help="verifier runs per candidate, fresh inputs each (default 3)")
    ap.add_argument("--retune", action="store_true", help="search even when the store has this key")
    ap.add_argument("--calibration", help="Ascend: JSON {launch_s, scales{mte2,vec,mte3,scalar,gm}} fitted on an NPU")
    ap.add_argument("--json", dest="json_out", help="write the result (every tree node) to this JSON file")
    ap.add_argument("--resume", help="a --json result of an earlier search of the same key (one program's; of a "
                                     "pattern with several programs, one entry of its \"programs\"): continue its tree")
    ap.add_argument("--from-node", type=int, help="with --resume: the node to branch from (default: the root)")
    ap.add_argument("--show", action="store_true", help="print the store's configs and skills and exit")
    ap.add_argument("-q", "--quiet", action="store_true", help="no per-candidate log")
    return ap


# budgets and counts that must be positive: (option, attribute)
POSITIVE = (("--max-candidates", "max_candidates"), ("--time-budget", "time_budget"), ("--patience", "patience"),
            ("--checks", "checks"))


def _fail(msg: str) -> int:
    print(f"trex tune: {msg}", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    ap = _parser()
    a = ap.parse_args(argv)
    for opt, attr in POSITIVE:
        value = getattr(a, attr)
        if not value > 0:
            return _fail(f"{opt} must be positive (got {value:g}); give the most {opt[2:].replace('-', ' ')} "
                         f"the search may use, e.g. {opt} {ap.get_default(attr):g}")
    if a.resume and not Path(a.resume).is_file():
        return _fail(f"--resume {a.resume}: no such file; give a --json result of an earlier search")
    if a.calibration and not Path(a.calibration).is_file():
        return _fail(f"--calibration {a.calibration}: no such file; give a JSON file of fitted constants")
    try:
        store = Store(a.store)
    except StoreError as e:
        return _fail(str(e))
    if a.show:
        print(json.dumps(store.data, indent=2, sort_keys=True))
        return 0
    if not a.pattern:
        ap.error("--pattern is required (or --show)")
    from . import harness
    try:
        sizes = harness.parse_shape(a.shape, a.pattern)
    except ValueError as e:
        ap.error(str(e))
    backend_kw = {}
    if space.family(a.target) == "ascend":
        from .ascend import AscendCalibration
        backend_kw["calibration"] = AscendCalibration.load(a.calibration)
    else:
        from .cuda import available
        ok, why = available()
        if not ok:
            print(f"trex tune: --target cuda skipped: {why}", file=sys.stderr)
            return 3
    log = None if a.quiet else (lambda s: print(s, flush=True))
    try:
        earlier = search.TuneResult.from_dict(json.loads(Path(a.resume).read_text())) if a.resume else None
    except (json.JSONDecodeError, TypeError, KeyError, AttributeError) as e:
        return _fail(f"--resume {a.resume}: not a --json result of trex tune ({type(e).__name__}: {e})")
    budgets = dict(store=store, use_store=not a.retune, max_candidates=a.max_candidates, time_budget_s=a.time_budget,
                   patience=a.patience, checks=a.checks, log=log)
    try:
        if earlier is not None:
            # a resumed tree is one program's: the launch of the layout whose store key it carries
            index = _program_index_of(a.target, a.pattern, a.dtype, sizes, earlier.key)
            kw = dict(backend_kw, **({"program_index": index} if index else {}))
            results = [search.tune(a.target, a.pattern, a.dtype, sizes, backend_kw=kw, branch_from=earlier,
                                   node_id=a.from_node, **budgets)]
        else:
            # every program the pattern's layout launches (mHC's Ascend backward: two AIV programs)
            results = search.tune_all(a.target, a.pattern, a.dtype, sizes, backend_kw=backend_kw, **budgets)
    except ValueError as e:
        return _fail(str(e))
    for res in results:
        src = "store" if res.from_store else f"search ({res.compiled} candidates compiled; {res.stop_reason})"
        print(f"{res.key}: {res.config}  {res.time_s * 1e6:.3f} us [{res.profile_label}] from {src}")
        print(f"  cost model's choice {res.baseline_config}: {res.baseline_time_s * 1e6:.3f} us; gain {res.gain:.1%}")
        if not res.from_store:
            counts: dict = {}
            for n in res.nodes:
                counts[n.status] = counts.get(n.status, 0) + 1
            print("  nodes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f"; store {store.path}")
    if a.json_out:
        p = Path(a.json_out)
        p.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=p.parent, prefix=p.name + ".")
        # one program: its result (what --resume reads); several: {"programs": [result, ...]} in launch order
        body = results[0].as_dict() if len(results) == 1 else {"programs": [r.as_dict() for r in results]}
        with os.fdopen(fd, "w") as f:
            json.dump(body, f, indent=2, default=str)
        os.replace(tmp, p)
    return 0


def _program_index_of(target: str, pattern: str, dtype: str, sizes: dict, key: str) -> int:
    """The launch of `pattern`'s layout whose store key is `key` (a --resume result's), else a ValueError."""
    from . import harness
    from .store import store_key
    programs = harness.layout_programs(pattern, dtype) if space.family(target) == "ascend" else ()
    for i, p in enumerate(programs):
        if store_key(pattern, harness.program_sizes(p, sizes), dtype, target, p.name if i else None) == key:
            return i
    return 0     # tune's own check names the mismatch


if __name__ == "__main__":
    raise SystemExit(main())
