"""The experiment's data source over trex/training/or_data (families, seeded instances, gold formulations).

Each instance comes from ``trex.training.or_data.instances.generate_instance(family, seed)``: sampled
until HiGHS/Gurobi proves it optimal, every number survives rendering and every constraint group
matters; its gold answer is ``trex.training.or_data.contract.gold_formulation`` (the four-section
contract with gurobipy code). Seeds identify instances, so disjoint seed ranges (experiment.SEED_BASE)
keep test instances out of training. Instances are generated in worker processes (the solves are
CPU-bound and independent).

- CPT document: the problem statement followed by its formulation, as plain text (the model sees
  the problem -> formulation mapping of cpt_only families without ever being prompted for it);
- SFT pair: question = the statement, response = the formulation; the prompt the model sees is
  ``render_prompt(question)`` (or_data's instruction template) in training and in evaluation;
- test problem: an ORProblem with the solver-verified optimum as reference.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor

from trex.training.or_eval.benchmarks import ORProblem, parse_ref_status


def _generate(job: tuple[str, int]) -> dict | None:
    family, seed = job
    from trex.training.or_data.contract import gold_formulation
    from trex.training.or_data.instances import generate_instance
    inst = generate_instance(family, seed)
    if inst is None:
        return None
    return {"family": inst.family, "seed": inst.seed, "difficulty": inst.difficulty, "skin": inst.skin,
            "uid": inst.uid, "text": inst.text, "status": inst.status, "objective": inst.objective,
            "solver": inst.solver, "formulation": gold_formulation(inst)}


class ORDataPipelineSource:
    def __init__(self, workers: int | None = None, max_seed_tries: int = 3):
        self.workers = workers or max(1, min(16, (os.cpu_count() or 2)))
        self.max_seed_tries = max_seed_tries   # seeds scanned per wanted instance before giving up
        self.skipped: dict[str, int] = {}

    def families(self) -> list[str]:
        from trex.training.or_data.families import FAMILIES
        return sorted(FAMILIES)

    def render_prompt(self, question: str) -> str:
        from trex.training.or_data.contract import build_prompt
        return build_prompt(question)

    def instances(self, families: Sequence[str], per_family: int, seed_base: int) -> list[dict]:
        """``per_family`` instances per family from seeds seed_base, seed_base+1, ... (skipping
        seeds for which the generator finds no valid instance, counted in ``skipped``).

        One process pool serves every family (a pool per family cost a start-up per family and
        left cores idle at each family's tail); rounds re-ask only for the families still short."""
        got: dict[str, list[dict]] = {f: [] for f in families}
        next_seed = {f: seed_base for f in families}
        limit = seed_base + per_family * self.max_seed_tries
        pool = ProcessPoolExecutor(max_workers=self.workers) if self.workers > 1 else None
        try:
            while True:
                batch: list[tuple[str, int]] = []
                for family in families:
                    need = per_family - len(got[family])
                    if need <= 0 or next_seed[family] >= limit:
                        continue
                    seeds = range(next_seed[family], min(limit, next_seed[family] + need))
                    batch += [(family, s) for s in seeds]
                    next_seed[family] = seeds[-1] + 1
                if not batch:
                    break
                if pool is not None and len(batch) > 1:
                    chunk = max(1, min(8, len(batch) // (4 * self.workers)))
                    results = list(pool.map(_generate, batch, chunksize=chunk))
                else:
                    results = [_generate(j) for j in batch]
                for (family, _), r in zip(batch, results):
                    if r is None:
                        self.skipped[family] = self.skipped.get(family, 0) + 1
                    else:
                        got[family].append(r)
        finally:
            if pool is not None:
                pool.shutdown()
        for family in families:
            self.skipped.setdefault(family, 0)
        return [r for family in families for r in got[family][:per_family]]

    def cpt_documents(self, families: Sequence[str], per_family: int, seed_base: int) -> Iterator[dict]:
        for inst in self.instances(families, per_family, seed_base):
            yield {"text": f"### Problem\n{inst['text']}\n\n### Formulation\n{inst['formulation']}",
                   "family": inst["family"], "seed": inst["seed"], "difficulty": inst["difficulty"],
                   "skin": inst["skin"]}

    def sft_pairs(self, families: Sequence[str], per_family: int, seed_base: int) -> Iterator[dict]:
        for inst in self.instances(families, per_family, seed_base):
            yield {"question": self.render_prompt(inst["text"]), "response": inst["formulation"],
                   "family": inst["family"], "seed": inst["seed"], "difficulty": inst["difficulty"]}

    def test_problems(self, families: Sequence[str], per_family: int, seed_base: int) -> list[ORProblem]:
        return [ORProblem(id=inst["uid"], benchmark="generated", question=self.render_prompt(inst["text"]),
                          reference_objective=inst["objective"], reference_status=parse_ref_status(inst["status"]),
                          family=inst["family"],
                          meta={"seed": inst["seed"], "difficulty": inst["difficulty"], "skin": inst["skin"],
                                "solver": inst["solver"]})
                for inst in self.instances(families, per_family, seed_base)]
