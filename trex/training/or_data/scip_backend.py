"""What HiGHS cannot solve, solved by SCIP (pyscipopt): quadratic constraints (convex or not), a
nonconvex quadratic objective, and integer variables with a quadratic objective (MIQP/MIQCP).

Shared by the reference solver (trex.training.or_data.solver) and the gurobipy shim
(trex.training.or_data.gurobi_shim), like highs_backend.  Only numpy is imported at import time and
pyscipopt when a model is solved: this module is loaded inside the sandbox too.  pyscipopt is an
optional dependency (``pip install 'trex[scip]'``); without it ``solve_quadratic`` raises
:class:`ScipMissing` naming the package and the install command.

SCIP's objective must be linear, so a quadratic objective becomes an epigraph: minimize
``c'x + t`` with ``x'Qx <= t`` (``>=`` when maximizing).  Gaps are 0 (``limits/gap``,
``limits/absgap``), so a reported optimum is proven to SCIP's tolerances,
the same standard as the HiGHS path's ``mip_rel_gap=0``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# SCIP's (and Gurobi's) default. Tighter (1e-8) made SoPlex report unresolved numerical troubles
# on plot_layout draws and print GMP warnings to stdout; the price is that a flat optimum's solution
# may drift by ~sqrt(1e-6) in x (the objective stays within 1e-6).
FEASIBILITY_TOLERANCE = 1e-6
INSTALL_HINT = "pip install pyscipopt (or: pip install 'trex[scip]')"

# SCIP status -> the normalized status used everywhere in or_data (highs_backend's vocabulary).
_SCIP_STATUS = {
    "optimal": "optimal", "infeasible": "infeasible", "unbounded": "unbounded", "inforunbd": "inf_or_unbd",
    "timelimit": "time_limit", "nodelimit": "node_limit", "totalnodelimit": "node_limit",
    "stallnodelimit": "node_limit", "sollimit": "solution_limit", "bestsollimit": "solution_limit",
    "gaplimit": "suboptimal", "memlimit": "memory", "userinterrupt": "interrupted", "terminate": "interrupted",
}


class ScipMissing(ImportError):
    """pyscipopt is not installed; the message says how to install it."""


@dataclass
class QuadRow:
    """``lin'x + sum quad[i, j] x_i x_j  (sense)  rhs`` with sense one of "<=", ">=", "=="."""

    lin: dict[int, float]
    quad: dict[tuple[int, int], float]
    sense: str
    rhs: float


@dataclass
class ScipResult:
    status: str
    objective: float | None
    x: list[float] = field(default_factory=list)
    has_solution: bool = False
    error: str | None = None


def quadratic_matrix(quad: dict[tuple[int, int], float]) -> tuple[list[int], np.ndarray]:
    """The variables ``quad`` touches and the symmetric matrix Q with ``x'Qx = sum a x_i x_j``."""
    index = sorted({i for key in quad for i in key})
    pos = {v: k for k, v in enumerate(index)}
    q = np.zeros((len(index), len(index)))
    for (i, j), a in quad.items():
        if i == j:
            q[pos[i], pos[i]] += a
        else:
            q[pos[i], pos[j]] += a / 2.0
            q[pos[j], pos[i]] += a / 2.0
    return index, q


def is_convex(quad: dict[tuple[int, int], float], upper: bool) -> bool:
    """Whether ``x'Qx`` is convex (``upper``: it is bounded above, as in ``<=`` or a minimized
    objective: Q must be PSD) or concave (bounded below: Q must be NSD), to a relative 1e-9 of Q's
    largest entry, as a solver's PSD check tolerates rounding."""
    if not quad:
        return True
    _, q = quadratic_matrix(quad)
    eig = np.linalg.eigvalsh(q if upper else -q)
    return bool(eig[0] >= -1e-9 * max(1.0, float(np.abs(q).max())))


def convexity_problem(objective_quad: dict, minimize: bool, rows: list[QuadRow]) -> str | None:
    """Why the model is nonconvex (Gurobi's wording), or None: a quadratic equality, a quadratic
    row with the wrong curvature for its sense, or an objective Q that is not PSD (NSD when
    maximizing)."""
    for k, row in enumerate(rows):
        if not row.quad:
            continue
        if row.sense == "==":
            return f"quadratic constraint {k} is an equality (quadratic equality constraints are non-convex)"
        if not is_convex(row.quad, upper=row.sense == "<="):
            return f"quadratic constraint {k}: Q matrix is not positive semi-definite (PSD)"
    if not is_convex(objective_quad, upper=minimize):
        return "objective Q matrix is not positive semi-definite (PSD)" if minimize else \
               "objective Q matrix is not negative semi-definite (NSD)"
    return None


def _pyscipopt():
    try:
        import pyscipopt
    except ImportError as exc:
        raise ScipMissing(f"quadratic constraints, nonconvex or mixed-integer quadratic models need SCIP: "
                          f"{INSTALL_HINT} ({exc})") from None
    return pyscipopt


def available() -> bool:
    try:
        _pyscipopt()
        return True
    except ScipMissing:
        return False


def _bound(v: float) -> float | None:
    return None if not np.isfinite(v) or abs(v) >= 1e30 else float(v)


def solve_quadratic(c, lb, ub, integer, rows: list[QuadRow], maximize: bool = False, offset: float = 0.0,
                    objective_quad: dict[tuple[int, int], float] | None = None, time_limit: float | None = None,
                    mip_gap: float = 0.0) -> ScipResult:
    """Solve  min/max c'x + sum objective_quad[i, j] x_i x_j + offset  s.t. rows, lb <= x <= ub,
    x_j integer where ``integer[j]``; rows may be linear (empty ``quad``) or quadratic."""
    scip = _pyscipopt()
    m = scip.Model()
    m.hideOutput()
    m.setParam("limits/gap", float(mip_gap))
    m.setParam("limits/absgap", 0.0)
    m.setParam("numerics/feastol", FEASIBILITY_TOLERANCE)
    # primal heuristics and rapid learning only speed the search up (the tree search at gap 0
    # proves the optimum); on the small models here they cost more than they save (measured: the
    # "fast" heuristics 36 -> 9 ms on a tiny model; rapid learning off 36 -> 27 ms on plot_layout)
    m.setHeuristics(scip.SCIP_PARAMSETTING.FAST)
    m.setParam("separating/rapidlearning/freq", -1)
    m.setParam("parallel/maxnthreads", 1)
    m.setParam("randomization/randomseedshift", 0)
    if time_limit is not None:
        m.setParam("limits/time", float(time_limit))
    xs = [m.addVar(name=f"x{j}", lb=_bound(lo), ub=_bound(hi), vtype="I" if flag else "C")
          for j, (lo, hi, flag) in enumerate(zip(lb, ub, integer))]

    def expr(lin: dict, quad: dict):
        return scip.quicksum(a * xs[j] for j, a in lin.items()) + \
            scip.quicksum(a * xs[i] * xs[j] for (i, j), a in quad.items())

    for row in rows:
        e = expr(row.lin, row.quad)
        m.addCons(e <= row.rhs if row.sense == "<=" else (e >= row.rhs if row.sense == ">=" else e == row.rhs))
    objective = scip.quicksum(float(a) * x for a, x in zip(c, xs) if a != 0.0)
    if objective_quad:
        t = m.addVar(name="objective_quadratic_part", lb=None, ub=None)
        part = expr({}, objective_quad)
        m.addCons(part <= t if not maximize else part >= t)
        objective = objective + t
    m.setObjective(objective + float(offset), "maximize" if maximize else "minimize")
    try:
        m.optimize()
    except Exception as exc:  # SCIP aborts on LP troubles it cannot resolve ("SCIP: error in LP solver!")
        return ScipResult(status="numeric", objective=None, error=str(exc))
    status = _SCIP_STATUS.get(m.getStatus(), m.getStatus())
    has_solution = m.getNSols() > 0 and status not in ("infeasible", "unbounded", "inf_or_unbd")
    x = [float(m.getVal(v)) for v in xs] if has_solution else []
    obj = float(m.getObjVal()) if status == "optimal" else None
    result = ScipResult(status=status, objective=obj, x=x, has_solution=has_solution)
    if status == "optimal" and objective_quad and any(integer) and not any(row.quad for row in rows):
        return _polished(result, c, lb, ub, integer, rows, maximize, offset, objective_quad, time_limit)
    return result


def _polished(result: ScipResult, c, lb, ub, integer, rows: list[QuadRow], maximize: bool, offset: float,
              objective_quad: dict, time_limit: float | None) -> ScipResult:
    """A MIQP's continuous part re-solved by HiGHS with the integers fixed at SCIP's values: the
    epigraph row leaves a flat optimum's continuous values ~sqrt(feasibility tolerance) off
    (measured: 4e-4 on a one-dimensional least squares), the QP solver's are exact. Kept only when
    the continuous part is convex, HiGHS says optimal and its objective is not worse (beyond 1e-6)."""
    from trex.training.or_data.highs_backend import hessian_lower, solve_canonical

    n = len(c)
    fixed = {j: float(round(result.x[j])) for j in range(n) if integer[j]}
    linear = np.array(c, dtype=float)
    products: dict[tuple[int, int], float] = {}
    for (i, j), a in objective_quad.items():   # products with a fixed integer become linear terms
        if i in fixed and j in fixed:
            offset += a * fixed[i] * fixed[j]
        elif i in fixed or j in fixed:
            free, value = (j, fixed[i]) if i in fixed else (i, fixed[j])
            linear[free] += a * value
        else:
            products[(i, j)] = products.get((i, j), 0.0) + a
    if not is_convex(products, upper=not maximize):
        return result
    lo = np.array([fixed.get(j, lb[j]) for j in range(n)], dtype=float)
    hi = np.array([fixed.get(j, ub[j]) for j in range(n)], dtype=float)
    indptr, indices, data = [0], [], []
    for row in rows:
        indices.extend(row.lin)
        data.extend(row.lin.values())
        indptr.append(len(indices))
    qp = solve_canonical(linear, lo, hi, np.zeros(n, dtype=bool), np.array(indptr), np.array(indices, dtype=np.int64),
                         np.array(data, dtype=float),
                         np.array([r.rhs if r.sense in (">=", "==") else -np.inf for r in rows], dtype=float),
                         np.array([r.rhs if r.sense in ("<=", "==") else np.inf for r in rows], dtype=float),
                         maximize=maximize, offset=offset,
                         q_lower=hessian_lower(products, n) if products else None, time_limit=time_limit)
    slack = 1e-6 * (1.0 + abs(result.objective))   # SCIP's epigraph may undershoot by its tolerance
    worse = qp.objective < result.objective - slack if maximize else qp.objective > result.objective + slack
    if qp.status != "optimal" or worse:
        return result
    return ScipResult(status="optimal", objective=qp.objective, x=list(qp.x), has_solution=True)
