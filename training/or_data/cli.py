"""`trex or-data ...`: generate verified OR training data, or show one instance.

    trex or-data generate --n 1000 --out data/or [--seed 0] [--workers 2] [--families a,b]
    trex or-data show --family transportation --seed 3 [--difficulty 2]
    trex or-data backends
"""
from __future__ import annotations

import argparse
import json
import sys

from training.or_data.families import DIFFICULTIES, FAMILIES


def _csv(value: str) -> tuple:
    return tuple(v.strip() for v in value.split(",") if v.strip())


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="trex or-data", description="OR-CPT data pipeline")
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="generate N accepted samples into DIR (resumable)")
    g.add_argument("--n", type=int, required=True, help="number of accepted samples wanted")
    g.add_argument("--out", required=True, help="output directory (re-run the same command to resume)")
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--workers", type=int, default=2, help="worker processes (each with its own sandbox)")
    g.add_argument("--chunk", type=int, default=48, help="samples per shard")
    g.add_argument("--families", type=_csv, default=tuple(FAMILIES), help=f"comma list from {sorted(FAMILIES)}")
    g.add_argument("--difficulties", type=lambda s: tuple(int(v) for v in _csv(s)), default=DIFFICULTIES)
    g.add_argument("--perturbations", type=int, default=2, help="perturbed re-solves per sample")
    g.add_argument("--no-decontam", action="store_true", help="skip benchmark decontamination")
    g.add_argument("--no-progress", action="store_true")
    s = sub.add_parser("show", help="print one instance, its gold formulation and the validation report")
    s.add_argument("--family", required=True, choices=sorted(FAMILIES))
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--difficulty", type=int, choices=DIFFICULTIES)
    sub.add_parser("backends", help="which solver backends and sandbox layers work here")
    return p


def _generate(args) -> int:
    from training.or_data.pipeline import PipelineConfig, run_pipeline

    cfg = PipelineConfig(n=args.n, seed=args.seed, families=args.families, difficulties=args.difficulties,
                         workers=args.workers, chunk=args.chunk, perturbations=args.perturbations,
                         decontaminate=not args.no_decontam)
    bar = None
    if not args.no_progress:
        from tqdm import tqdm

        bar = tqdm(total=cfg.n, unit="sample", desc="accepted")

    def progress(done: int, total: int) -> None:
        if bar is not None:
            bar.update(done - bar.n)

    try:
        state = run_pipeline(cfg, args.out, progress=progress)
    except KeyboardInterrupt:
        print(f"\ninterrupted; finished shards are kept in {args.out}: re-run the same command to resume",
              file=sys.stderr)
        return 130
    finally:
        if bar is not None:
            bar.close()
    print(json.dumps({"accepted": state.accepted, "counts": state.counts, "wall_s": round(state.wall_s, 2),
                      "out": args.out}))
    return 0


def _show(args) -> int:
    from training.or_data.contract import gold_formulation
    from training.or_data.instances import generate_instance
    from training.or_data.validate import validate

    inst = generate_instance(args.family, args.seed, args.difficulty)
    if inst is None:
        print(f"no valid instance for {args.family} seed {args.seed}", file=sys.stderr)
        return 1
    formulation = gold_formulation(inst)
    report = validate(inst, formulation)
    print(f"# {inst.uid}  skin={inst.skin}  reference: {inst.status} {inst.objective} ({inst.solver})\n")
    print(inst.text + "\n")
    print(formulation)
    print(json.dumps(report.to_dict(), indent=2))
    return 0 if report.accepted else 1


def _backends(args) -> int:
    from training.or_data.sandbox import probe_backends, unshare_available
    from training.or_data.solver import gurobi_available

    print(json.dumps({"sandbox": probe_backends(), "unshare_net": unshare_available(),
                      "reference_gurobipy": gurobi_available()}, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return {"generate": _generate, "show": _show, "backends": _backends}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
