"""Reference solver layer: a canonical (MI)LP / (MI)QP / QCQP model and one ``solve`` that picks
gurobipy (bundled size-limited license) when usable and HiGHS otherwise (SCIP, through
pyscipopt, for what HiGHS cannot solve: quadratic constraints, a nonconvex objective, integers with
a quadratic objective), and says which ran.

The generators build ``LinearModel``s directly from instance data (independently of the gold
code), so agreement between the two is a real check of both.
"""
from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field, fields, replace
from functools import lru_cache

import numpy as np

from trex.training.or_data import scip_backend
from trex.training.or_data.highs_backend import hessian_lower, solve_canonical

INF = math.inf

# gurobipy's pip license (measured, see reference/or_posttraining.md §0.2): above these, error 10010.
GUROBI_SIZE_LIMITS = {"vars": 2000, "constrs": 2000, "quad_vars": 200}

SENSES = ("<=", ">=", "==")
FLIPPED_SENSE = {"<=": ">=", ">=": "<=", "==": "<="}  # the corruption "flipped sense" (== loses a side)


@dataclass
class Row:
    """``coeffs'x + sum quad[i, j] x_i x_j  (sense)  rhs``; ``quad`` is empty for a linear row."""

    coeffs: dict[int, float]
    sense: str
    rhs: float
    group: str
    quad: dict[tuple[int, int], float] = field(default_factory=dict)


@dataclass
class LinearModel:
    """min/max  c'x + sum_{(i,j)} q_ij x_i x_j + const   s.t. rows (linear or quadratic), bounds,
    integrality."""

    name: str = "model"
    var_names: list[str] = field(default_factory=list)
    lb: list[float] = field(default_factory=list)
    ub: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    obj: list[float] = field(default_factory=list)
    obj_const: float = 0.0
    quad: dict[tuple[int, int], float] = field(default_factory=dict)
    maximize: bool = False
    rows: list[Row] = field(default_factory=list)

    def add_var(self, name: str, lb: float = 0.0, ub: float = INF, integer: bool = False, obj: float = 0.0) -> int:
        self.var_names.append(name)
        self.lb.append(float(lb))
        self.ub.append(float(ub))
        self.integer.append(bool(integer))
        self.obj.append(float(obj))
        return len(self.var_names) - 1

    def add_row(self, coeffs: dict[int, float], sense: str, rhs: float, group: str,
                quad: dict[tuple[int, int], float] | None = None) -> None:
        """A row; ``quad`` ({(i, j): a} for a * x_i * x_j) makes it a quadratic constraint."""
        if sense not in SENSES:
            raise ValueError(f"add_row(sense={sense!r}): use one of {SENSES}")
        merged: dict[int, float] = {}
        for j, a in coeffs.items():
            merged[j] = merged.get(j, 0.0) + float(a)
        products: dict[tuple[int, int], float] = {}
        for (i, j), a in (quad or {}).items():
            key = (min(i, j), max(i, j))
            products[key] = products.get(key, 0.0) + float(a)
        self.rows.append(Row({j: a for j, a in merged.items() if a != 0.0}, sense, float(rhs), group,
                             {k: a for k, a in products.items() if a != 0.0}))

    @property
    def num_vars(self) -> int:
        return len(self.var_names)

    @property
    def num_int_vars(self) -> int:
        return sum(self.integer)

    @property
    def groups(self) -> list[str]:
        return list(dict.fromkeys(r.group for r in self.rows))

    def quad_vars(self) -> int:
        return len({i for key in self.quad for i in key} | {i for r in self.rows for key in r.quad for i in key})

    @property
    def num_quad_rows(self) -> int:
        return sum(bool(r.quad) for r in self.rows)

    def needs_scip(self) -> str | None:
        """Why HiGHS cannot solve this model (then SCIP does), or None."""
        if self.num_quad_rows:
            return f"{self.num_quad_rows} quadratic constraints"
        if self.quad and any(self.integer):
            return "integer variables with a quadratic objective"
        if self.quad and not scip_backend.is_convex(self.quad, upper=not self.maximize):
            return "a nonconvex quadratic objective"
        return None

    def without_group(self, group: str) -> "LinearModel":
        return self._replace_rows([r for r in self.rows if r.group != group])

    def with_flipped_group(self, group: str) -> "LinearModel":
        return self._replace_rows([Row(r.coeffs, FLIPPED_SENSE[r.sense], r.rhs, r.group, r.quad)
                                   if r.group == group else r for r in self.rows])

    def _replace_rows(self, rows: list[Row]) -> "LinearModel":
        clone = LinearModel(**{k: getattr(self, k) for k in self.__dataclass_fields__ if k != "rows"})
        clone.rows = rows
        return clone


@dataclass
class SolveResult:
    status: str
    objective: float | None
    x: list[float]
    backend: str
    wall_s: float
    fallback_reason: str | None = None


@lru_cache(maxsize=1)
def _gurobi_env():
    """A started gurobipy Env (OutputFlag 0, Threads 1, MIPGap 0), or None when unusable here."""
    try:
        import gurobipy as gp

        env = gp.Env(empty=True)
        env.setParam("OutputFlag", 0)
        env.setParam("Threads", 1)
        env.setParam("MIPGap", 0.0)
        env.setParam("MIPGapAbs", 0.0)
        env.start()
        return env
    except Exception:
        return None


def gurobi_available() -> bool:
    return _gurobi_env() is not None


def exceeds_gurobi_limits(model: LinearModel) -> str | None:
    if model.num_vars > GUROBI_SIZE_LIMITS["vars"]:
        return f"{model.num_vars} variables > {GUROBI_SIZE_LIMITS['vars']} (size-limited license)"
    if len(model.rows) > GUROBI_SIZE_LIMITS["constrs"]:
        return f"{len(model.rows)} constraints > {GUROBI_SIZE_LIMITS['constrs']} (size-limited license)"
    if model.quad_vars() > GUROBI_SIZE_LIMITS["quad_vars"]:
        return f"{model.quad_vars()} quadratic variables > {GUROBI_SIZE_LIMITS['quad_vars']} (size-limited license)"
    return None


def _solve_highs(model: LinearModel, time_limit: float | None) -> SolveResult:
    t0 = time.perf_counter()
    indptr, indices, data, row_lb, row_ub = [0], [], [], [], []
    for r in model.rows:
        indices.extend(r.coeffs.keys())
        data.extend(r.coeffs.values())
        indptr.append(len(indices))
        row_lb.append(r.rhs if r.sense in (">=", "==") else -INF)
        row_ub.append(r.rhs if r.sense in ("<=", "==") else INF)
    c = np.array(model.obj, dtype=float)
    q_lower = hessian_lower(model.quad, model.num_vars) if model.quad else None
    res = solve_canonical(c, np.array(model.lb), np.array(model.ub), np.array(model.integer, dtype=bool),
                          np.array(indptr), np.array(indices, dtype=np.int64), np.array(data, dtype=float),
                          np.array(row_lb, dtype=float), np.array(row_ub, dtype=float), maximize=model.maximize,
                          offset=model.obj_const, q_lower=q_lower, time_limit=time_limit)
    return SolveResult(res.status, res.objective, res.x, "highs", time.perf_counter() - t0)


_GUROBI_STATUS = {2: "optimal", 3: "infeasible", 4: "inf_or_unbd", 5: "unbounded", 9: "time_limit",
                  7: "iteration_limit", 8: "node_limit", 10: "solution_limit", 11: "interrupted",
                  12: "numeric", 13: "suboptimal"}


def _solve_gurobi(model: LinearModel, time_limit: float | None) -> SolveResult:
    import gurobipy as gp

    t0 = time.perf_counter()
    m = gp.Model(model.name, env=_gurobi_env())
    try:
        vtypes = [gp.GRB.INTEGER if flag else gp.GRB.CONTINUOUS for flag in model.integer]
        ub = [gp.GRB.INFINITY if math.isinf(u) else u for u in model.ub]
        lb = [-gp.GRB.INFINITY if math.isinf(v) else v for v in model.lb]
        xs = m.addVars(model.num_vars, lb=lb, ub=ub, vtype=vtypes)
        if time_limit is not None:
            m.Params.TimeLimit = float(time_limit)
        expr = gp.LinExpr(model.obj, [xs[j] for j in range(model.num_vars)]) + model.obj_const
        if model.quad:
            expr = expr + gp.quicksum(a * xs[i] * xs[j] for (i, j), a in model.quad.items())
        m.setObjective(expr, gp.GRB.MAXIMIZE if model.maximize else gp.GRB.MINIMIZE)
        sense_map = {"<=": gp.GRB.LESS_EQUAL, ">=": gp.GRB.GREATER_EQUAL, "==": gp.GRB.EQUAL}
        for r in model.rows:
            lin = gp.LinExpr(list(r.coeffs.values()), [xs[j] for j in r.coeffs])
            if r.quad:
                m.addQConstr(lin + gp.quicksum(a * xs[i] * xs[j] for (i, j), a in r.quad.items()),
                             sense_map[r.sense], r.rhs)
            else:
                m.addLConstr(lin, sense_map[r.sense], r.rhs)
        m.optimize()
        status = _GUROBI_STATUS.get(m.Status, f"code_{m.Status}")
        objective = float(m.ObjVal) if status == "optimal" else None
        x = [xs[j].X for j in range(model.num_vars)] if m.SolCount > 0 else []
        return SolveResult(status, objective, x, "gurobipy", time.perf_counter() - t0)
    finally:
        m.dispose()


def _solve_scip(model: LinearModel, time_limit: float | None) -> SolveResult:
    t0 = time.perf_counter()
    rows = [scip_backend.QuadRow(r.coeffs, r.quad, r.sense, r.rhs) for r in model.rows]
    res = scip_backend.solve_quadratic(model.obj, model.lb, model.ub, model.integer, rows, maximize=model.maximize,
                                       offset=model.obj_const, objective_quad=model.quad, time_limit=time_limit)
    return SolveResult(res.status, res.objective, res.x, "scip", time.perf_counter() - t0)


# The pipeline solves the same model several times per sample (its quick and reference solves, the
# sandbox's solve of the gold program's model, each perturbed reference and its program's model):
# the open-source path keeps the results of the last OPEN_MEMO_SIZE models, keyed by everything
# the solvers read (every field but the model's and variables' names and the rows' groups), and
# only results no time limit cut short (those do not depend on the limit).
OPEN_MEMO_SIZE = 256
OPEN_MEMO_MAX_TERMS = 2_000     # larger models are not kept (a few MB of keys at most)
_MEMO_STATUSES = frozenset({"optimal", "infeasible", "unbounded", "inf_or_unbd"})
_UNREAD_FIELDS = frozenset({"name", "var_names", "group"})
_open_memo: OrderedDict = OrderedDict()
_open_memo_lock = threading.Lock()


def _frozen(value):
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in value.items())
    if isinstance(value, list):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, Row):
        return tuple(_frozen(getattr(value, f.name)) for f in fields(value) if f.name not in _UNREAD_FIELDS)
    return value


def _model_key(model: LinearModel) -> tuple:
    return tuple(_frozen(getattr(model, f.name)) for f in fields(model) if f.name not in _UNREAD_FIELDS)


def _solve_open(model: LinearModel, time_limit: float | None) -> SolveResult:
    """HiGHS, or SCIP for what HiGHS cannot solve (the reason is the result's fallback_reason)."""
    t0 = time.perf_counter()
    key = None
    if model.num_vars + sum(len(r.coeffs) + len(r.quad) for r in model.rows) + len(model.quad) <= OPEN_MEMO_MAX_TERMS:
        key = _model_key(model)
        try:
            hash(key)
        except TypeError:       # a field the key cannot hold: no memo for this model
            key = None
    with _open_memo_lock:
        known = _open_memo.get(key) if key is not None else None
        if known is not None:
            _open_memo.move_to_end(key)
            return replace(known, x=list(known.x), wall_s=time.perf_counter() - t0)
    reason = model.needs_scip()
    if reason is None:
        result = _solve_highs(model, time_limit)
    else:
        result = _solve_scip(model, time_limit)
        result.fallback_reason = f"HiGHS cannot solve {reason}"
    if key is not None and result.status in _MEMO_STATUSES:
        with _open_memo_lock:
            _open_memo[key] = replace(result, x=list(result.x))
            while len(_open_memo) > OPEN_MEMO_SIZE:
                _open_memo.popitem(last=False)
    return result


def solve(model: LinearModel, backend: str = "auto", time_limit: float | None = 30.0) -> SolveResult:
    """Solve with ``backend`` = "auto" (gurobipy if usable and within its license limits, else the
    open-source path), "gurobipy", "highs" (the open-source path: HiGHS, and SCIP for quadratic
    constraints, a nonconvex objective or integers with a quadratic objective) or "scip".  The
    result names the backend that ran and any fallback reason.  Without pyscipopt a model that
    needs SCIP raises scip_backend.ScipMissing (its message says what to install)."""
    if backend not in ("auto", "gurobipy", "highs", "scip"):
        raise ValueError(f"solve(backend={backend!r}): use 'auto', 'gurobipy', 'highs' or 'scip'")
    if backend == "highs":
        return _solve_open(model, time_limit)
    if backend == "scip":
        return _solve_scip(model, time_limit)
    reason = None if gurobi_available() else "gurobipy not importable or no license"
    if reason is None:
        reason = exceeds_gurobi_limits(model)
    if reason is None:
        try:
            return _solve_gurobi(model, time_limit)
        except Exception as exc:  # GurobiError at optimize (e.g. 10010) -> HiGHS
            reason = f"gurobipy failed: {exc}"
    if backend == "gurobipy":
        raise RuntimeError(f"solve(backend='gurobipy') impossible: {reason}; use backend='auto'")
    result = _solve_open(model, time_limit)
    result.fallback_reason = reason if result.fallback_reason is None else f"{reason}; {result.fallback_reason}"
    return result


def objectives_agree(pred: float | None, ref: float | None, tol: float = 1e-6) -> bool:
    """The strict OR-CPT criterion |pred - ref| / (|ref| + 1) <= tol (SIRL / OptMATH paper)."""
    if pred is None or ref is None:
        return pred is None and ref is None
    return abs(pred - ref) / (abs(ref) + 1.0) <= tol
