"""`trex codegen --pattern NAME --target ascend910b|ascend910c --out DIR`: write the kernel, its tiling
and the CANN launch project for a user to build on a real machine."""
from __future__ import annotations

import argparse
import sys


from trex.codegen_ascendc.counting import ascend_cost_model
from trex.codegen_ascendc.lint import lint_source
from trex.codegen_ascendc.npu import npu_status
from trex.codegen_ascendc.project import write_project
from trex.cost_models.ascend_model import Tiling
from trex.cost_models.hardware import ASCEND_TARGETS, ascend_target
from trex.compiler import registry, targets
from trex.compiler.kernel_ir import IRError, size


class _BadArgument(ValueError):
    """One line naming the argument and the fix; main prints it and exits 2."""


def _parse_sizes(text: str | None, known: dict) -> dict:
    """NAME=VALUE pairs for the pattern's named sizes (`known`); each value a positive integer."""
    out = {}
    if not text:
        return out
    for part in text.split(","):
        k, eq, v = (x.strip() for x in part.partition("="))
        if not eq or not k or not v:
            raise _BadArgument(f"--sizes: expected NAME=VALUE pairs separated by commas, got {part!r}")
        if k not in known:
            raise _BadArgument(f"--sizes: unknown size {k!r}; this pattern's sizes are {', '.join(known)}")
        try:
            value = int(v)
        except ValueError:
            raise _BadArgument(f"--sizes: {k}={v} is not an integer; give a positive integer") from None
        if value < 1:
            raise _BadArgument(f"--sizes: {k}={value} must be a positive integer")
        out[k] = value
    return out


def _parse_tiling(text: str) -> Tiling:
    try:
        t, c, d, p = (x.strip() for x in text.split(","))
        return Tiling(int(t), None if c in ("", "none", "None") else int(c), int(d), int(p))
    except ValueError:
        raise SystemExit(f"--tiling: expected ROWS_PER_TILE,COL_CHUNK|none,DEPTH,CORES, got {text!r}") from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="trex codegen", description=__doc__)
    specs = registry.kernel_specs()
    ap.add_argument("--pattern", choices=sorted(specs), help="fused op to generate (one with a kernel spec)")
    ap.add_argument("--target", default="ascend910b", choices=sorted(ASCEND_TARGETS))
    ap.add_argument("--out", help="dump directory (the project goes to OUT/<kernel>/)")
    ap.add_argument("--dtype", default="bf16", choices=["bf16", "fp16", "fp32"])
    ap.add_argument("--sizes", help="override example sizes, e.g. ROWS=4096,D=4096")
    ap.add_argument("--tiling", help="fixed tiling ROWS_PER_TILE,COL_CHUNK|none,DEPTH,CORES (default: solve)")
    ap.add_argument("--list", action="store_true", help="list the patterns and exit")
    ap.add_argument("--clear-cache", action="store_true",
                    help="delete the AscendC emulator's compile cache (compiled kernels, precompiled headers) and exit; "
                         "its size is bounded by TREX_EMU_CACHE_MB (default 256)")
    a = ap.parse_args(argv)
    if a.clear_cache:
        from trex.codegen_ascendc.emulator.runner import cache_dir, clear_cache
        freed = clear_cache()
        print(f"cleared {cache_dir()}: {freed / (1 << 20):.1f} MB freed")
        return 0
    if a.list:
        for name, spec in specs.items():
            print(f"{name:20s} {spec.doc}")
        return 0
    if not a.pattern or not a.out:
        ap.error("--pattern and --out are required (or --list)")
    spec = specs[a.pattern]
    hw = ascend_target(a.target)
    program = spec.program(a.dtype)
    sizes_named = dict(spec.sizes["example"])
    try:
        sizes_named.update(_parse_sizes(a.sizes, spec.sizes["example"]))
    except _BadArgument as e:
        print(f"trex codegen: {e}", file=sys.stderr)
        return 2
    sizes = {size(k): v for k, v in sizes_named.items()}
    model = ascend_cost_model(program, hw)
    try:
        if a.tiling:
            til = _parse_tiling(a.tiling)
            why = model.violations(sizes, til)
            if why:
                print(f"trex codegen: tiling {til} is infeasible:\n  " + "\n  ".join(why), file=sys.stderr)
                return 2
            pred = model.evaluate(sizes, til)
        else:
            tuned = targets.tuned_config(a.target, program, sizes)   # `trex tune`'s store, when installed
            til = Tiling(tuned["rows_per_tile"], tuned.get("col_chunk"), tuned["buffer_depth"],
                         tuned["cores"]) if tuned else None
            if til is None or model.violations(sizes, til):
                til = model.solve(sizes).tiling
            pred = model.evaluate(sizes, til)
    except IRError as e:
        print(f"trex codegen: {e}", file=sys.stderr)
        return 2
    root = write_project(a.out, program, til, hw, pred, sizes)
    src = (root / "kernel" / f"{program.name}.cpp").read_text()
    findings = lint_source(src, pred.ub_bytes, hw.ub_capacity)
    print(f"wrote {root}")
    print(f"  tiling: rows_per_tile={til.rows_per_tile} col_chunk={til.col_chunk} depth={til.buffer_depth} "
          f"cores={til.cores}; UB {pred.ub_bytes} / {hw.ub_capacity} B")
    print(f"  predicted {pred.time_s * 1e6:.1f} us on {hw.name} ({pred.roofline_fraction:.0%} of memory roofline); "
          + ", ".join(f"{k} {v * 1e6:.1f} us" for k, v in pred.pipes_s.items()))
    print(f"  lint: {'clean' if not findings else '; '.join(map(str, findings))}")
    ok, why = npu_status()
    print(f"  npu build+launch here: {'available' if ok else 'skipped: ' + why}")
    return 0 if not findings else 1


if __name__ == "__main__":
    raise SystemExit(main())
