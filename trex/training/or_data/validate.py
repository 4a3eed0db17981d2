"""Validation of a formulation against an instance: every accepted sample was executed and
reproduces the solver's optimum, on the original data and on perturbed data.

Checks, in order (the first failure rejects; ``ValidationReport.checks`` lists those run):

1. ``contract``: sections, one python block, safety, one optimize(), a ``data`` literal.
2. ``data_fidelity``: every number of the instance appears in the code's ``data`` literal, and
   the literal holds no number that is not in the instance.
3. ``execution``: the sandbox ran the code and ``optimize()`` produced a status.
4. ``status``: same status as the reference.
5. ``objective``: |pred - ref| / (|ref| + 1) <= tol (1e-6).
6. ``structure``: integer variables present iff the reference has them; with ``strict_structure``
   (default, for training data) also the same numbers of variables and integer variables.
7. ``perturbation``: K re-solves on perturbed data (same value map on instance and code) match
   status and objective.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace

import numpy as np

from trex.training.or_data.contract import check_contract, extract_code
from trex.training.or_data.families import get_family
from trex.training.or_data.instances import flatten_numbers, reference_solve
from trex.training.or_data.perturb import apply_map, code_data_numbers, substitute_code_data, value_map
from trex.training.or_data.sandbox import Sandbox, SandboxLimits, execute_solver_code
from trex.training.or_data.solver import objectives_agree


@dataclass(frozen=True)
class ValidationConfig:
    tol: float = 1e-6
    perturbations: int = 2
    max_perturbation_tries: int = 6
    strict_structure: bool = True
    data_fidelity: bool = True
    limits: SandboxLimits = field(default_factory=lambda: SandboxLimits(wall_s=20.0, cpu_s=15))


@dataclass
class ValidationReport:
    accepted: bool
    checks: dict = field(default_factory=dict)
    reason: str | None = None
    status: str | None = None
    objective: float | None = None
    backend: str | None = None
    fallback_reason: str | None = None
    perturbed: list = field(default_factory=list)
    sandbox_wall_s: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def _data_fidelity(instance, code: str) -> str | None:
    numbers = code_data_numbers(code)
    if numbers is None:
        return "no data literal"
    code_values = sorted({float(v) for v in numbers})
    fam = get_family(instance.family)
    quantities = {float(v) for v in flatten_numbers(instance.data, skip_keys=fam.structure_keys)}
    all_values = {float(v) for v in flatten_numbers(instance.data)}
    missing = [v for v in sorted(quantities) if not any(_same(v, c) for c in code_values)]
    unknown = [c for c in code_values if not any(_same(c, v) for v in all_values)]
    if missing:
        return f"numbers of the instance missing from `data`: {missing[:5]}"
    if unknown:
        return f"numbers in `data` that are not in the instance: {unknown[:5]}"
    return None


class _Reject(Exception):
    pass


def validate(instance, formulation: str, sandbox: Sandbox | None = None,
             config: ValidationConfig | None = None) -> ValidationReport:
    config = config or ValidationConfig()
    report = ValidationReport(accepted=False)

    def check(name: str, passed: bool, reason: str) -> None:
        report.checks[name] = bool(passed)
        if not passed:
            report.reason = f"{name}: {reason}"
            raise _Reject

    try:
        problems = check_contract(formulation)
        check("contract", not problems, "; ".join(problems[:3]))
        code = extract_code(formulation)
        # The contract check already ran the sandbox's static safety check on this code (and the
        # perturbed copies differ only in the numbers of the data literal).
        limits = replace(config.limits, static_check=False)
        if config.data_fidelity:
            issue = _data_fidelity(instance, code)
            check("data_fidelity", issue is None, issue or "")
        run = execute_solver_code(code, limits, sandbox=sandbox)
        report.status, report.objective = run.status, run.objective
        report.backend, report.fallback_reason = run.backend, run.fallback_reason
        report.sandbox_wall_s += run.wall_s
        check("execution", run.ok, run.error or "no status")
        check("status", run.status == instance.status, f"got {run.status}, reference {instance.status}")
        check("objective", instance.status != "optimal" or objectives_agree(run.objective, instance.objective, config.tol),
              f"got {run.objective}, reference {instance.objective}")
        ref_model = get_family(instance.family).build(instance.data, instance.options)
        same_class = ((run.num_int_vars or 0) > 0) == (ref_model.num_int_vars > 0)
        exact = run.num_vars == ref_model.num_vars and run.num_int_vars == ref_model.num_int_vars
        check("structure", same_class and (exact or not config.strict_structure),
              f"{run.num_vars} vars / {run.num_int_vars} integer, reference {ref_model.num_vars} / {ref_model.num_int_vars}")
        rng = np.random.default_rng([instance.seed, 0x5EED])
        for k in range(config.perturbations):
            ref = vmap = None
            for _ in range(config.max_perturbation_tries):
                vmap = value_map(instance, rng)
                ref = reference_solve(instance, apply_map(instance.data, vmap))
                if ref.status == instance.status:
                    break
            pert = execute_solver_code(substitute_code_data(code, vmap), limits, sandbox=sandbox)
            report.sandbox_wall_s += pert.wall_s
            report.perturbed.append({"status": ref.status, "objective": ref.objective,
                                     "pred_status": pert.status, "pred_objective": pert.objective})
            agree = pert.status == ref.status and (ref.status != "optimal" or objectives_agree(pert.objective, ref.objective, config.tol))
            check("perturbation", agree and (pert.ok or pert.status == ref.status),
                  f"#{k}: got {pert.status} {pert.objective}, reference {ref.status} {ref.objective}")
        report.accepted = True
    except _Reject:
        report.accepted = False
    return report
