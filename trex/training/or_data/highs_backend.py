"""One function that solves a canonical LP / MILP / convex QP with HiGHS (highspy).

Shared by the reference solver (trex.training.or_data.solver) and the gurobipy shim
(trex.training.or_data.gurobi_shim), so both report statuses and objectives the same way.
Only numpy and highspy are imported: this module is loaded inside the sandbox too.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

INF = float("inf")

# HiGHS model status name -> normalized status used everywhere in or_data.
_HIGHS_STATUS = {
    "kOptimal": "optimal",
    "kInfeasible": "infeasible",
    "kUnboundedOrInfeasible": "inf_or_unbd",
    "kUnbounded": "unbounded",
    "kTimeLimit": "time_limit",
    "kIterationLimit": "iteration_limit",
    "kSolutionLimit": "solution_limit",
    "kInterrupt": "interrupted",
    "kObjectiveBound": "objective_bound",
    "kObjectiveTarget": "objective_target",
    "kMemoryLimit": "memory",
}


_BANNER_SILENCED = False


def _silence_banner() -> None:
    """HiGHS prints a copyright banner to fd 1 when the first Highs object is made; make that
    first object with fd 1 pointed at /dev/null so CLI output (and program stdout) stays clean."""
    global _BANNER_SILENCED
    if _BANNER_SILENCED:
        return
    import os
    import sys

    import highspy

    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        highspy.Highs()
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    _BANNER_SILENCED = True


@dataclass
class HighsResult:
    status: str
    objective: float | None
    x: list[float] = field(default_factory=list)
    has_solution: bool = False


def hessian_lower(products: dict[tuple[int, int], float], n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``sum a x_i x_j`` as HiGHS's ``1/2 x'Qx``: Q's lower triangle (row >= column), column-wise
    (start, index, value); a square's coefficient doubles."""
    cols: dict[int, dict[int, float]] = {}
    for (i, j), a in products.items():
        col, row = min(i, j), max(i, j)
        cols.setdefault(col, {})
        cols[col][row] = cols[col].get(row, 0.0) + a * (2.0 if i == j else 1.0)
    start, index, value = [0], [], []
    for col in range(n):
        for row in sorted(cols.get(col, {})):
            index.append(row)
            value.append(cols[col][row])
        start.append(len(index))
    return np.array(start), np.array(index), np.array(value)


def solve_canonical(
    c: np.ndarray,
    lb: np.ndarray,
    ub: np.ndarray,
    integer: np.ndarray,
    a_indptr: np.ndarray,
    a_indices: np.ndarray,
    a_data: np.ndarray,
    row_lb: np.ndarray,
    row_ub: np.ndarray,
    maximize: bool = False,
    offset: float = 0.0,
    q_lower: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
    time_limit: float | None = None,
    mip_gap: float = 0.0,
) -> HighsResult:
    """Solve  min/max c'x + 1/2 x'Qx + offset  s.t.  row_lb <= A x <= row_ub, lb <= x <= ub.

    ``A`` is given row-wise (CSR: indptr/indices/data).  ``q_lower`` is the lower triangle of Q
    in column-wise (CSC) form (start, index, value) as HiGHS expects; Q must be PSD for a
    minimization (NSD for a maximization), and integer variables with Q are rejected by HiGHS.
    ``mip_gap`` defaults to 0 so that MILP objectives are exact optima, not 1e-4 approximations.
    """
    import highspy

    _silence_banner()
    n = len(c)
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("threads", 1)
    h.setOptionValue("mip_rel_gap", float(mip_gap))
    h.setOptionValue("mip_abs_gap", 0.0 if mip_gap == 0 else 1e-6)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    lp = highspy.HighsLp()
    lp.num_col_ = n
    lp.num_row_ = len(row_lb)
    sign = -1.0 if maximize else 1.0
    # HiGHS is given a minimization: maximize f  <=>  minimize -f.
    lp.col_cost_ = np.asarray(c, dtype=float) * sign
    lp.offset_ = float(offset) * sign
    lp.col_lower_ = np.asarray(lb, dtype=float)
    lp.col_upper_ = np.asarray(ub, dtype=float)
    lp.row_lower_ = np.asarray(row_lb, dtype=float)
    lp.row_upper_ = np.asarray(row_ub, dtype=float)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.start_ = np.asarray(a_indptr, dtype=np.int32)
    lp.a_matrix_.index_ = np.asarray(a_indices, dtype=np.int32)
    lp.a_matrix_.value_ = np.asarray(a_data, dtype=float)
    if np.any(integer):
        lp.integrality_ = [highspy.HighsVarType.kInteger if flag else highspy.HighsVarType.kContinuous
                           for flag in integer]
    h.passModel(lp)
    if q_lower is not None and len(q_lower[2]) > 0:
        start, index, value = q_lower
        h.passHessian(n, len(value), highspy.HessianFormat.kTriangular,
                      np.asarray(start, dtype=np.int32), np.asarray(index, dtype=np.int32),
                      np.asarray(value, dtype=float) * sign)
    h.run()
    status_name = h.modelStatusToString(h.getModelStatus())
    raw = str(h.getModelStatus()).split(".")[-1]
    status = _HIGHS_STATUS.get(raw, status_name.lower().replace(" ", "_") or "error")
    info = h.getInfo()
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    x = list(h.getSolution().col_value) if has_solution else []
    objective = float(info.objective_function_value) * sign if status == "optimal" else None
    return HighsResult(status=status, objective=objective, x=x, has_solution=has_solution)
