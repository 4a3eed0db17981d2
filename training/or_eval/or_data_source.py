"""The experiment's data source over training/or_data (families, seeded instances, gold formulations).

Each instance comes from ``training.or_data.instances.generate_instance(family, seed)``: sampled
until HiGHS/Gurobi proves it optimal, every number survives rendering and every constraint group
matters; its gold answer is ``training.or_data.contract.gold_formulation`` (the four-section
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

from training.or_eval.benchmarks import ORProblem, parse_ref_status


def _generate(job: tuple[str, int]) -> dict | None:
    family, seed = job
    from training.or_data.contract import gold_formulation
    from training.or_data.instances import generate_instance
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
        from training.or_data.families import FAMILIES
        return sorted(FAMILIES)

    def render_prompt(self, question: str) -> str:
        from training.or_data.contract import build_prompt
        return build_prompt(question)

    def instances(self, families: Sequence[str], per_family: int, seed_base: int) -> list[dict]:
        """``per_family`` instances per family from seeds seed_base, seed_base+1, ... (skipping
        seeds for which the generator finds no valid instance, counted in ``skipped``)."""
        out: list[dict] = []
        for family in families:
            got, next_seed, limit = [], seed_base, seed_base + per_family * self.max_seed_tries
            while len(got) < per_family and next_seed < limit:
                batch = [(family, s) for s in range(next_seed, min(limit, next_seed + per_family - len(got)))]
                next_seed = batch[-1][1] + 1
                if self.workers > 1 and len(batch) > 1:
                    with ProcessPoolExecutor(max_workers=self.workers) as pool:
                        results = list(pool.map(_generate, batch, chunksize=4))
                else:
                    results = [_generate(j) for j in batch]
                got += [r for r in results if r is not None]
                self.skipped[family] = self.skipped.get(family, 0) + sum(r is None for r in results)
            out += got[:per_family]
        return out

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
