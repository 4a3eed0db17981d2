"""A small gurobipy-compatible API over HiGHS (and SCIP), for when gurobipy is missing or a model
is too large for gurobipy's bundled size-limited license (2000 variables / 2000 linear constraints /
200 quadratic variables).  LP, MILP and convex continuous QP go to HiGHS; a model with quadratic
constraints, a nonconvex quadratic objective or integers with a quadratic objective goes to SCIP
(pyscipopt, optional: without it such a model raises a GurobiError that says what to install).

The sandbox installs this module as ``sys.modules["gurobipy"]``, so model-written code such as
``import gurobipy as gp; from gurobipy import GRB; m = gp.Model(); ...; m.optimize()`` runs
unchanged.  Coverage (everything else raises AttributeError, on purpose, rather than guessing):

- ``Model(name="", env=None)`` (also a context manager); ``addVar(lb, ub, obj, vtype, name)``;
  ``addVars(*indices, lb, ub, obj, vtype, name)`` -> ``tupledict`` (lb/ub/obj/vtype scalar, list
  or dict); ``addConstr(tempconstr | lhs, sense, rhs, name)`` (alias ``addLConstr``);
  ``addConstrs(generator, name)`` -> ``tupledict`` keyed 0..k-1 (gurobipy keys by the
  generator's loop variables, which needs frame introspection; not reproduced); a quadratic
  ``addConstr`` (``x*y <= 2``, ``quicksum(a*x[i]*x[i]) <= r``, both sides quadratic) or
  ``addQConstr(lhs, sense, rhs, name)`` -> ``QConstr`` (``QCName``, ``QCSense``, ``QCRHS``);
  ``setObjective(expr, sense)``; ``optimize()``; ``update()``; ``reset()``; ``dispose()``;
  ``setParam(name, value)`` and ``model.Params.<Name>`` / ``model.params.<Name>`` (TimeLimit,
  MIPGap, NonConvex honoured as Gurobi 11+ does: -1 (default) and 2 solve a nonconvex model, 0 and
  1 raise GurobiError 10020 (10021 for a quadratic equality); OutputFlag, Threads and others
  accepted and ignored); ``getVars()``, ``getConstrs()``, ``getQConstrs()``,
  ``getVarByName()``, ``getObjective()``, ``getAttr(name, objs)``.
- Model attributes: ``Status``/``status``, ``ObjVal``/``objVal``, ``ModelSense``, ``NumVars``,
  ``NumConstrs``, ``NumQConstrs``, ``NumQCNZs``, ``NumIntVars``, ``NumBinVars``, ``NumQNZs``,
  ``IsMIP``, ``IsQP``, ``IsQCP``, ``Runtime``, ``SolCount``.
- ``Var``: ``X``/``x``, ``VarName``/``varName``, ``LB``, ``UB``, ``Obj``, ``VType``; arithmetic
  with numbers, Vars, LinExpr, QuadExpr (``x*y``, ``x**2``); comparisons build ``TempConstr``.
- ``LinExpr``/``QuadExpr`` (``getValue()``, ``addTerms``, ``add``, ``size``, ``getConstant``),
  ``quicksum``, ``tupledict`` (``sum``, ``prod``, ``select`` with ``'*'`` wildcards),
  ``tuplelist``, ``multidict``, ``Env`` (no-op), ``GurobiError``, ``setParam`` (global).
- ``GRB``: CONTINUOUS, INTEGER, BINARY, SEMICONT/SEMIINT (rejected at optimize), MINIMIZE,
  MAXIMIZE, INFINITY, LESS_EQUAL, GREATER_EQUAL, EQUAL, the status codes (also as
  ``GRB.Status.*``), ``GRB.Attr``/``GRB.Param`` name namespaces for the attributes above.

Not covered: general constraints (max/abs/indicator), SOS, callbacks, multiple objectives,
``Model.write``/``read``, dual values (Pi, RC, QCPi).

The solve is lazy: ``optimize()`` makes every check and raises every error it raised when it solved
(semi-continuous variables, NonConvex 10020/10021, SCIP missing, a bad TimeLimit), writes the
sandbox's export, and keeps the model as it is then; the solve runs at the first read of a result
(``Status``, ``ObjVal``, ``SolCount``, ``Runtime``, ``Var.X`` and what goes through them:
``getAttr``, ``getValue``), once.  Inside the sandbox the parent solves the export for the verdict
and most programs read nothing, so the child's solve is usually skipped.  What a program can tell
apart from the eager shim: ``Runtime`` is measured at that first read (optimize()'s own time plus
the solve's), and an exception of the solver library itself (not one of the checks) surfaces at the
first read rather than at optimize().  Edits after optimize() reach neither the export nor the
results, as before (results are those of the model optimize() saw until optimize() is called again).
"""
from __future__ import annotations

import itertools
import time
from typing import Any, Iterable

import numpy as np

from trex.training.or_data import scip_backend
from trex.training.or_data.highs_backend import hessian_lower, solve_canonical

__version__ = "shim-over-highspy"
SHIM = True  # lets code (and the sandbox) tell the shim from the real gurobipy

# Inside the sandbox: where optimize() writes the model it was asked to solve (set by the sandbox
# child).  The trusted parent solves that file itself; what this process reports is never read.
EXPORT_PATH: str | None = None


class GurobiError(Exception):
    def __init__(self, errno: int, message: str):
        super().__init__(message)
        self.errno = errno
        self.message = message


class _Namespace:
    def __init__(self, **kw: Any):
        self.__dict__.update(kw)


class GRB:
    CONTINUOUS = "C"
    INTEGER = "I"
    BINARY = "B"
    SEMICONT = "S"
    SEMIINT = "N"
    MINIMIZE = 1
    MAXIMIZE = -1
    INFINITY = 1e100
    LESS_EQUAL = "<"
    GREATER_EQUAL = ">"
    EQUAL = "="
    LOADED, OPTIMAL, INFEASIBLE, INF_OR_UNBD, UNBOUNDED = 1, 2, 3, 4, 5
    CUTOFF, ITERATION_LIMIT, NODE_LIMIT, TIME_LIMIT, SOLUTION_LIMIT = 6, 7, 8, 9, 10
    INTERRUPTED, NUMERIC, SUBOPTIMAL, INPROGRESS, USER_OBJ_LIMIT = 11, 12, 13, 14, 15
    MEM_LIMIT = 17
    Status = _Namespace(LOADED=1, OPTIMAL=2, INFEASIBLE=3, INF_OR_UNBD=4, UNBOUNDED=5, CUTOFF=6,
                        ITERATION_LIMIT=7, NODE_LIMIT=8, TIME_LIMIT=9, SOLUTION_LIMIT=10,
                        INTERRUPTED=11, NUMERIC=12, SUBOPTIMAL=13, INPROGRESS=14,
                        USER_OBJ_LIMIT=15, MEM_LIMIT=17)
    Attr = _Namespace(Status="Status", ObjVal="ObjVal", X="X", VarName="VarName", LB="LB", UB="UB",
                      Obj="Obj", VType="VType", ModelSense="ModelSense", NumVars="NumVars",
                      NumConstrs="NumConstrs", NumQConstrs="NumQConstrs", NumIntVars="NumIntVars",
                      Runtime="Runtime", QCName="QCName", QCSense="QCSense", QCRHS="QCRHS")
    Param = _Namespace(TimeLimit="TimeLimit", MIPGap="MIPGap", OutputFlag="OutputFlag",
                       Threads="Threads", LogToConsole="LogToConsole", NonConvex="NonConvex")


# HiGHS normalized status -> Gurobi status code.
_STATUS_CODE = {
    "optimal": GRB.OPTIMAL, "infeasible": GRB.INFEASIBLE, "inf_or_unbd": GRB.INF_OR_UNBD,
    "unbounded": GRB.UNBOUNDED, "time_limit": GRB.TIME_LIMIT, "iteration_limit": GRB.ITERATION_LIMIT,
    "solution_limit": GRB.SOLUTION_LIMIT, "interrupted": GRB.INTERRUPTED, "memory": GRB.MEM_LIMIT,
    "node_limit": GRB.NODE_LIMIT, "suboptimal": GRB.SUBOPTIMAL,
}
_SENSE_WORD = {GRB.LESS_EQUAL: "<=", GRB.GREATER_EQUAL: ">=", GRB.EQUAL: "=="}
_SENSE_SPELLING = {"<=": GRB.LESS_EQUAL, ">=": GRB.GREATER_EQUAL, "==": GRB.EQUAL}
# Gurobi's errors for a nonconvex model under NonConvex 0 or 1 (errno, message).
_NONCONVEX_ERRORS = {True: (10021, "Quadratic equality constraints are non-convex. Set NonConvex parameter to 2 "
                                   "to solve model."),
                     False: (10020, "Q matrix is not positive semi-definite (PSD). Set NonConvex parameter to 2 "
                                    "to solve model.")}

_GLOBAL_PARAMS: dict[str, Any] = {}


def setParam(name: str, value: Any) -> None:  # noqa: N802 (gurobipy spelling)
    _GLOBAL_PARAMS[name] = value


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating))


# ----------------------------------------------------------------------------------------------
# Expressions
# ----------------------------------------------------------------------------------------------
class _Expr:
    """Common arithmetic: everything is normalized to a QuadExpr-shaped triple internally."""

    def _parts(self) -> tuple[dict, dict, float]:
        raise NotImplementedError

    @staticmethod
    def _as_parts(other: Any) -> tuple[dict, dict, float]:
        if isinstance(other, _Expr):
            return other._parts()
        if _is_number(other):
            return {}, {}, float(other)
        raise GurobiError(10003, f"unsupported operand in expression: {type(other).__name__}")

    @staticmethod
    def _build(lin: dict, quad: dict, const: float) -> "LinExpr | QuadExpr":
        quad = {k: v for k, v in quad.items() if v != 0.0}
        if quad:
            return QuadExpr(lin, quad, const)
        return LinExpr(lin, const)

    def __add__(self, other: Any):
        l1, q1, c1 = self._parts()
        l2, q2, c2 = self._as_parts(other)
        lin = dict(l1)
        for k, v in l2.items():
            lin[k] = lin.get(k, 0.0) + v
        quad = dict(q1)
        for k, v in q2.items():
            quad[k] = quad.get(k, 0.0) + v
        return self._build(lin, quad, c1 + c2)

    __radd__ = __add__

    def __neg__(self):
        lin, quad, const = self._parts()
        return self._build({k: -v for k, v in lin.items()}, {k: -v for k, v in quad.items()}, -const)

    def __sub__(self, other: Any):
        return self + (-_wrap(other))

    def __rsub__(self, other: Any):
        return (-self) + other

    def __mul__(self, other: Any):
        if _is_number(other):
            s = float(other)
            lin, quad, const = self._parts()
            return self._build({k: v * s for k, v in lin.items()}, {k: v * s for k, v in quad.items()},
                               const * s)
        l1, q1, c1 = self._parts()
        l2, q2, c2 = self._as_parts(other)
        if (q1 and (l2 or q2)) or (q2 and (l1 or q1)):
            raise GurobiError(10003, "product of degree > 2 is not supported")
        quad: dict = {}
        for (i, a), (j, b) in itertools.product(l1.items(), l2.items()):
            key = (min(i, j), max(i, j))
            quad[key] = quad.get(key, 0.0) + a * b
        for k, v in q1.items():
            quad[k] = quad.get(k, 0.0) + v * c2
        for k, v in q2.items():
            quad[k] = quad.get(k, 0.0) + v * c1
        lin: dict = {}
        for k, v in l1.items():
            lin[k] = lin.get(k, 0.0) + v * c2
        for k, v in l2.items():
            lin[k] = lin.get(k, 0.0) + v * c1
        return self._build(lin, quad, c1 * c2)

    __rmul__ = __mul__

    def __truediv__(self, other: Any):
        if not _is_number(other):
            raise GurobiError(10003, "division by an expression is not supported")
        return self * (1.0 / float(other))

    def __pow__(self, power: Any):
        if power == 2:
            return self * self
        if power == 1:
            return self * 1.0
        raise GurobiError(10003, "only x**2 is supported")

    def __le__(self, other: Any):
        return TempConstr(self - other, GRB.LESS_EQUAL)

    def __ge__(self, other: Any):
        return TempConstr(self - other, GRB.GREATER_EQUAL)

    def __eq__(self, other: Any):  # type: ignore[override]
        return TempConstr(self - other, GRB.EQUAL)

    __hash__ = object.__hash__


def _wrap(v: Any) -> Any:
    return v if isinstance(v, _Expr) else LinExpr({}, float(v))


class LinExpr(_Expr):
    def __init__(self, arg1: Any = None, arg2: Any = None, *, _const: float = 0.0):
        # Internal form LinExpr(dict, const); gurobipy forms LinExpr(), LinExpr(c), LinExpr(coeffs, vars).
        self.model: Model | None = None
        if isinstance(arg1, dict):
            self.terms = dict(arg1)
            self.const = float(arg2 or 0.0)
        elif arg1 is None:
            self.terms, self.const = {}, 0.0
        elif _is_number(arg1) and arg2 is None:
            self.terms, self.const = {}, float(arg1)
        elif isinstance(arg1, Var) and arg2 is None:
            self.terms, self.const = {arg1._key: 1.0}, 0.0
        else:
            self.terms, self.const = {}, 0.0
            self.addTerms(arg1, arg2)

    def _parts(self):
        return self.terms, {}, self.const

    def addTerms(self, coeffs: Any, vars: Any) -> None:  # noqa: N802,A002
        if isinstance(vars, Var):
            coeffs, vars = [coeffs], [vars]
        for a, v in zip(coeffs, vars):
            self.terms[v._key] = self.terms.get(v._key, 0.0) + float(a)

    def addConstant(self, c: float) -> None:  # noqa: N802
        self.const += float(c)

    def add(self, expr: Any, mult: float = 1.0) -> None:
        new = self + _wrap(expr) * mult
        self.terms, self.const = new._parts()[0], new._parts()[2]

    def size(self) -> int:
        return len(self.terms)

    def getConstant(self) -> float:  # noqa: N802
        return self.const

    def getValue(self) -> float:  # noqa: N802
        return self.const + sum(a * _var_of(k).X for k, a in self.terms.items())

    def __repr__(self) -> str:
        return f"<shim LinExpr: {len(self.terms)} terms + {self.const}>"


class QuadExpr(_Expr):
    def __init__(self, lin: Any = None, quad: dict | None = None, const: float = 0.0):
        # Internal form QuadExpr(lin dict, quad dict, const); gurobipy forms QuadExpr(), QuadExpr(expr).
        if lin is not None and not isinstance(lin, dict):
            lin, quad, const = _Expr._as_parts(lin)
        self.lin = dict(lin or {})
        self.quad = dict(quad or {})
        self.const = float(const)

    def _parts(self):
        return self.lin, self.quad, self.const

    def addTerms(self, coeffs: Any, vars: Any, vars2: Any = None) -> None:  # noqa: N802,A002
        """gurobipy's form: quadratic terms coeffs[k] * vars[k] * vars2[k], or linear ones without vars2."""
        if isinstance(vars, Var):
            coeffs, vars, vars2 = [coeffs], [vars], (None if vars2 is None else [vars2])
        for k, (a, v) in enumerate(zip(coeffs, vars)):
            new = self + (float(a) * v if vars2 is None else float(a) * v * vars2[k])
            self.lin, self.quad, self.const = new._parts()

    def add(self, expr: Any, mult: float = 1.0) -> None:
        self.lin, self.quad, self.const = (self + _wrap(expr) * mult)._parts()

    def addConstant(self, c: float) -> None:  # noqa: N802
        self.const += float(c)

    def getConstant(self) -> float:  # noqa: N802
        return self.const

    def getValue(self) -> float:  # noqa: N802
        val = self.const + sum(a * _var_of(k).X for k, a in self.lin.items())
        return val + sum(a * _var_of(i).X * _var_of(j).X for (i, j), a in self.quad.items())

    def size(self) -> int:
        return len(self.quad)

    def __repr__(self) -> str:
        return f"<shim QuadExpr: {len(self.lin)} linear, {len(self.quad)} quadratic terms>"


# Variable keys are (model id, index); a registry maps them back for getValue().
_VAR_REGISTRY: dict[tuple[int, int], "Var"] = {}


def _var_of(key: tuple[int, int]) -> "Var":
    return _VAR_REGISTRY[key]


class Var(_Expr):
    def __init__(self, model: "Model", index: int, lb: float, ub: float, obj: float, vtype: str, name: str):
        self._model = model
        self.index = index
        self._key = (id(model), index)
        self.LB, self.UB, self.Obj, self.VType, self.VarName = lb, ub, obj, vtype, name
        _VAR_REGISTRY[self._key] = self

    def _parts(self):
        return {self._key: 1.0}, {}, 0.0

    @property
    def X(self) -> float:  # noqa: N802
        self._model._ensure_solved()
        sol = self._model._solution
        if sol is None:
            raise GurobiError(10005, "Unable to retrieve attribute 'X'")
        return sol[self.index]

    x = X

    @property
    def varName(self) -> str:  # noqa: N802
        return self.VarName

    def getAttr(self, name: str) -> Any:  # noqa: N802
        return getattr(self, name)

    def __repr__(self) -> str:
        return f"<shim Var {self.VarName}>"

    __hash__ = object.__hash__


class TempConstr:
    def __init__(self, expr: _Expr, sense: str):
        self.expr, self.sense = expr, sense

    def __bool__(self) -> bool:
        # `x == y` between Vars is used as a dict-key equality test by Python internals; a
        # TempConstr is truthy only when both sides are literally the same expression.
        lin, quad, const = self.expr._parts()
        return not any(lin.values()) and not any(quad.values()) and const == 0.0


class Constr:
    def __init__(self, index: int, name: str, sense: str):
        self.index, self.ConstrName, self.Sense = index, name, sense

    def __repr__(self) -> str:
        return f"<shim Constr {self.ConstrName}>"


class QConstr:
    def __init__(self, index: int, name: str, sense: str, rhs: float):
        self.index, self.QCName, self.QCSense, self.QCRHS = index, name, sense, rhs

    def getAttr(self, name: str) -> Any:  # noqa: N802
        return getattr(self, name)

    def __repr__(self) -> str:
        return f"<shim QConstr {self.QCName}>"


class tupledict(dict):  # noqa: N801 (gurobipy spelling)
    def _match(self, pattern: tuple) -> list:
        if not pattern:
            return list(self.keys())
        out = []
        for key in self.keys():
            k = key if isinstance(key, tuple) else (key,)
            if len(k) == len(pattern) and all(p == "*" or p == v for p, v in zip(pattern, k)):
                out.append(key)
        return out

    def select(self, *pattern: Any) -> list:
        return [self[k] for k in self._match(pattern)]

    def sum(self, *pattern: Any) -> LinExpr:
        return quicksum(self[k] for k in self._match(pattern))

    def prod(self, coeff: dict, *pattern: Any) -> LinExpr:
        return quicksum(coeff[k] * self[k] for k in self._match(pattern) if k in coeff)


class tuplelist(list):  # noqa: N801
    def select(self, *pattern: Any) -> "tuplelist":
        return tuplelist(t for t in self if all(p == "*" or p == v for p, v in zip(pattern, t)))


def multidict(data: dict) -> list:
    keys = list(data.keys())
    first = next(iter(data.values()), None)
    width = len(first) if isinstance(first, (list, tuple)) else 1
    out: list = [tuplelist(keys)]
    for i in range(width):
        out.append({k: (v[i] if isinstance(v, (list, tuple)) else v) for k, v in data.items()})
    return out


def quicksum(items: Iterable[Any]) -> LinExpr | QuadExpr:
    lin: dict = {}
    quad: dict = {}
    const = 0.0
    for item in items:
        l2, q2, c2 = _Expr._as_parts(item)
        for k, v in l2.items():
            lin[k] = lin.get(k, 0.0) + v
        for k, v in q2.items():
            quad[k] = quad.get(k, 0.0) + v
        const += c2
    return _Expr._build(lin, quad, const)


class Env:
    def __init__(self, *args: Any, **kwargs: Any):
        self.params: dict[str, Any] = {}

    def setParam(self, name: str, value: Any) -> None:  # noqa: N802
        self.params[name] = value

    def start(self) -> "Env":
        return self

    def dispose(self) -> None:
        pass

    def __enter__(self) -> "Env":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


class _Params:
    def __init__(self, model: "Model"):
        object.__setattr__(self, "_model", model)

    def __getattr__(self, name: str) -> Any:
        return self._model._params.get(name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._model._params[name] = value


def _per_key(value: Any, key: Any, position: int) -> Any:
    if isinstance(value, dict):
        return value[key]
    if isinstance(value, (list, tuple, np.ndarray)):
        return value[position]
    return value


def _index_keys(indices: tuple) -> list:
    lists = [list(range(i)) if isinstance(i, (int, np.integer)) else list(i) for i in indices]
    if len(lists) == 1:
        return lists[0]
    keys = []
    for combo in itertools.product(*lists):
        flat: list = []
        for part in combo:
            flat.extend(part if isinstance(part, tuple) else (part,))
        keys.append(tuple(flat))
    return keys


class Model:
    def __init__(self, name: str = "", env: Any = None):
        self.ModelName = name
        self._vars: list[Var] = []
        self._rows: list[tuple[dict, str, float]] = []
        self._constrs: list[Constr] = []
        # quadratic constraints, apart from the linear ones as in gurobipy: (linear part {index: a},
        # products {(i, j): a}, sense, rhs)
        self._qrows: list[tuple[dict, dict, str, float]] = []
        self._qconstrs: list[QConstr] = []
        self._objective: Any = None
        self.ModelSense = GRB.MINIMIZE
        self._params: dict[str, Any] = dict(_GLOBAL_PARAMS)
        if env is not None and hasattr(env, "params"):
            self._params.update(env.params)
        self._status = GRB.LOADED
        self._objval: float | None = None
        self._solution: list[float] | None = None
        self._runtime = 0.0
        # The solve optimize() deferred: (a function of no arguments over the model as it was at
        # optimize(), seconds optimize() itself took), run by _ensure_solved at the first read.
        self._pending_solve: tuple[Any, float] | None = None
        self.Params = self.params = _Params(self)

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: Any) -> None:
        pass

    # -- building ------------------------------------------------------------------------------
    def addVar(self, lb: float = 0.0, ub: float = GRB.INFINITY, obj: float = 0.0,  # noqa: N802
               vtype: str = GRB.CONTINUOUS, name: str = "", column: Any = None) -> Var:
        vtype = str(vtype)
        if vtype == GRB.BINARY:
            lb, ub = max(float(lb), 0.0), min(float(ub), 1.0)
        v = Var(self, len(self._vars), float(lb), float(ub), float(obj), vtype, name or f"C{len(self._vars)}")
        self._vars.append(v)
        return v

    def addVars(self, *indices: Any, lb: Any = 0.0, ub: Any = GRB.INFINITY, obj: Any = 0.0,  # noqa: N802
                vtype: Any = GRB.CONTINUOUS, name: Any = "") -> tupledict:
        keys = _index_keys(indices)
        out = tupledict()
        for pos, key in enumerate(keys):
            if isinstance(name, str):
                suffix = ",".join(str(k) for k in (key if isinstance(key, tuple) else (key,)))
                vname = f"{name}[{suffix}]" if name else ""
            else:
                vname = _per_key(name, key, pos)
            out[key] = self.addVar(_per_key(lb, key, pos), _per_key(ub, key, pos), _per_key(obj, key, pos),
                                   _per_key(vtype, key, pos), vname)
        return out

    def addConstr(self, lhs: Any, sense: str | None = None, rhs: Any = None, name: str = "") -> Constr:  # noqa: N802
        if isinstance(lhs, TempConstr):
            tc = lhs
        elif sense is not None:
            tc = TempConstr(_wrap(lhs) - rhs, {"<=": "<", ">=": ">", "==": "="}.get(sense, sense))
        elif isinstance(lhs, bool):
            raise GurobiError(10003, "constraint has no bool value (are you comparing two numbers?)")
        else:
            raise GurobiError(10003, f"addConstr needs a constraint, got {type(lhs).__name__}")
        lin, quad, const = tc.expr._parts()
        if quad:
            return self._add_quadratic(tc, name)
        model_id = id(self)
        row = {k[1]: v for k, v in lin.items() if k[0] == model_id and v != 0.0}
        self._rows.append((row, tc.sense, -const))
        c = Constr(len(self._constrs), name or f"R{len(self._constrs)}", tc.sense)
        self._constrs.append(c)
        return c

    addLConstr = addConstr

    def addQConstr(self, lhs: Any, sense: str | None = None, rhs: Any = None, name: str = "") -> QConstr:  # noqa: N802
        if isinstance(lhs, TempConstr):
            return self._add_quadratic(lhs, name)
        if sense is None:
            raise GurobiError(10003, f"addQConstr needs a constraint or (lhs, sense, rhs), got {type(lhs).__name__}")
        return self._add_quadratic(TempConstr(_wrap(lhs) - rhs, {"<=": "<", ">=": ">", "==": "="}.get(sense, sense)),
                                   name)

    def _add_quadratic(self, tc: TempConstr, name: str) -> QConstr:
        if not scip_backend.available():
            raise GurobiError(10003, f"quadratic constraints need the SCIP solver in this gurobipy shim: "
                                     f"{scip_backend.INSTALL_HINT}")
        lin, quad, const = tc.expr._parts()
        model_id = id(self)
        row = {k[1]: v for k, v in lin.items() if k[0] == model_id and v != 0.0}
        products = {(ki[1], kj[1]): a for (ki, kj), a in quad.items() if ki[0] == model_id and kj[0] == model_id}
        self._qrows.append((row, products, tc.sense, -const))
        qc = QConstr(len(self._qconstrs), name or f"QC{len(self._qconstrs)}", tc.sense, -const)
        self._qconstrs.append(qc)
        return qc

    def addConstrs(self, generator: Iterable[TempConstr], name: str = "") -> tupledict:  # noqa: N802
        out = tupledict()
        for pos, tc in enumerate(generator):
            out[pos] = self.addConstr(tc, name=f"{name}[{pos}]" if name else "")
        return out

    def setObjective(self, expr: Any, sense: int | None = None) -> None:  # noqa: N802
        self._objective = _wrap(expr)
        if sense is not None:
            self.ModelSense = int(sense)

    def setParam(self, name: str, value: Any) -> None:  # noqa: N802
        self._params[name] = value

    def setAttr(self, name: str, value: Any) -> None:  # noqa: N802
        if name == "ModelSense":
            self.ModelSense = int(value)
        else:
            raise GurobiError(10003, f"setAttr({name!r}) is not supported by the HiGHS shim")

    def update(self) -> None:
        pass

    def reset(self, clearall: int = 0) -> None:
        if self._pending_solve is not None:  # nothing can read that solve any more: drop it
            self._runtime = self._pending_solve[1]
        self._pending_solve = None
        self._status, self._objval, self._solution = GRB.LOADED, None, None

    def dispose(self) -> None:
        pass

    # -- queries -------------------------------------------------------------------------------
    def getVars(self) -> list[Var]:  # noqa: N802
        return list(self._vars)

    def getConstrs(self) -> list[Constr]:  # noqa: N802
        return list(self._constrs)

    def getQConstrs(self) -> list[QConstr]:  # noqa: N802
        return list(self._qconstrs)

    def getVarByName(self, name: str) -> Var | None:  # noqa: N802
        return next((v for v in self._vars if v.VarName == name), None)

    def getObjective(self) -> Any:  # noqa: N802
        return self._objective if self._objective is not None else LinExpr({}, 0.0)

    def getAttr(self, name: str, objs: Any = None) -> Any:  # noqa: N802
        if objs is None:
            return getattr(self, name)
        if isinstance(objs, dict):
            return {k: getattr(v, name) for k, v in objs.items()}
        return [getattr(o, name) for o in objs]

    # Results: each reads through _ensure_solved (Var.X too), so the solve optimize() deferred runs
    # at the first of them.
    @property
    def Status(self) -> int:  # noqa: N802
        self._ensure_solved()
        return self._status

    status = Status

    @property
    def ObjVal(self) -> float:  # noqa: N802
        self._ensure_solved()
        if self._objval is None:
            raise GurobiError(10005, "Unable to retrieve attribute 'ObjVal'")
        return self._objval

    objVal = ObjVal

    @property
    def SolCount(self) -> int:  # noqa: N802
        self._ensure_solved()
        return 0 if self._solution is None else 1

    @property
    def Runtime(self) -> float:  # noqa: N802
        """optimize()'s checks and export plus the (deferred) solve, in seconds."""
        self._ensure_solved()
        return self._runtime

    @Runtime.setter
    def Runtime(self, value: float) -> None:  # noqa: N802 (the eager shim let a program overwrite it)
        self._ensure_solved()
        self._runtime = value

    @property
    def NumVars(self) -> int:  # noqa: N802
        return len(self._vars)

    @property
    def NumConstrs(self) -> int:  # noqa: N802
        return len(self._rows)

    @property
    def NumQConstrs(self) -> int:  # noqa: N802
        return len(self._qrows)

    @property
    def NumQCNZs(self) -> int:  # noqa: N802
        return sum(len(quad) for _, quad, _, _ in self._qrows)

    @property
    def IsQCP(self) -> int:  # noqa: N802
        return int(bool(self._qrows))

    @property
    def NumIntVars(self) -> int:  # noqa: N802
        return sum(v.VType in (GRB.INTEGER, GRB.BINARY) for v in self._vars)

    @property
    def NumBinVars(self) -> int:  # noqa: N802
        return sum(v.VType == GRB.BINARY for v in self._vars)

    @property
    def NumQNZs(self) -> int:  # noqa: N802
        obj = self._objective
        return len(obj.quad) if isinstance(obj, QuadExpr) else 0

    @property
    def IsMIP(self) -> int:  # noqa: N802
        return int(self.NumIntVars > 0)

    @property
    def IsQP(self) -> int:  # noqa: N802
        return int(self.NumQNZs > 0)

    # -- solving -------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        """The model as plain data (the sandbox's ``model.json``, read by
        trex.training.or_data.model_file): variables [name, lb, ub, vtype, obj], rows
        [[indices], [coefficients], sense, rhs, name] (a quadratic constraint adds its products
        [[i, j, a], ...] as a sixth entry), the objective's linear part, constant and quadratic
        terms [i, j, a] (a * x_i * x_j), and the sense."""
        model_id = id(self)
        obj = [v.Obj for v in self._vars]
        const, quad = 0.0, []
        if self._objective is not None:
            lin, q, const = self._objective._parts()
            obj = [0.0] * len(self._vars)
            for k, a in lin.items():
                if k[0] == model_id:
                    obj[k[1]] += a
            quad = [[ki[1], kj[1], a] for (ki, kj), a in q.items() if ki[0] == model_id and kj[0] == model_id]
        return {"format": "trex-model-1", "maximize": self.ModelSense == GRB.MAXIMIZE,
                "vars": [[v.VarName, v.LB, v.UB, v.VType, o] for v, o in zip(self._vars, obj)],
                "obj_const": const, "quad": quad,
                "rows": [[list(row), list(row.values()), sense, rhs, c.ConstrName]
                         for (row, sense, rhs), c in zip(self._rows, self._constrs)]
                + [[list(row), list(row.values()), sense, rhs, qc.QCName, [[i, j, a] for (i, j), a in quad.items()]]
                   for (row, quad, sense, rhs), qc in zip(self._qrows, self._qconstrs)]}

    def _export(self, path: str) -> None:
        import json
        import os

        with open(path + ".tmp", "w") as fh:
            json.dump(self.to_dict(), fh)
        os.replace(path + ".tmp", path)

    def _objective_parts(self) -> tuple[np.ndarray, dict[tuple[int, int], float], float]:
        """The objective as (linear costs per variable, products {(i, j): a}, constant)."""
        model_id = id(self)
        if self._objective is None:
            return np.array([v.Obj for v in self._vars], dtype=float), {}, 0.0
        lin, quad, offset = self._objective._parts()
        c = np.zeros(len(self._vars))
        for k, a in lin.items():
            if k[0] == model_id:
                c[k[1]] += a
        products = {(ki[1], kj[1]): a for (ki, kj), a in quad.items() if ki[0] == model_id and kj[0] == model_id}
        return c, products, float(offset)

    def _needs_scip(self, products: dict) -> str | None:
        """Why HiGHS cannot solve this model (then SCIP does), or None."""
        if self._qrows:
            return "quadratic constraints"
        if products and self.NumIntVars:
            return "integer variables with a quadratic objective"
        if products and not scip_backend.is_convex(products, upper=self.ModelSense != GRB.MAXIMIZE):
            return "a nonconvex quadratic objective"
        return None

    def _check_nonconvex_allowed(self, products: dict) -> None:
        """NonConvex 0 or 1 refuses a nonconvex model at optimize(), as Gurobi does."""
        if self._params.get("NonConvex", -1) not in (0, 1):
            return
        rows = [scip_backend.QuadRow(row, quad, _SENSE_WORD[sense], rhs) for row, quad, sense, rhs in self._qrows]
        problem = scip_backend.convexity_problem(products, self.ModelSense != GRB.MAXIMIZE, rows)
        if problem is not None:
            errno, message = _NONCONVEX_ERRORS[any(sense == GRB.EQUAL and quad for _, quad, sense, _ in self._qrows)]
            raise GurobiError(errno, message)

    def optimize(self) -> None:
        """Every check and error of a solve, and the export the sandbox's verdict reads, happen here;
        the solve itself waits for the first read of a result (_ensure_solved), over the model as it
        is now, so a program that reads nothing (the pipeline's gold programs) pays for no solve
        and a model edited after optimize() reads the results of the model optimize() saw, as when
        the solve ran here."""
        start = time.perf_counter()
        if any(v.VType in (GRB.SEMICONT, GRB.SEMIINT) for v in self._vars):
            raise GurobiError(10003, "semi-continuous variables are not supported by the HiGHS shim")
        if EXPORT_PATH is not None:
            self._export(EXPORT_PATH)
        c, products, offset = self._objective_parts()
        self._check_nonconvex_allowed(products)
        reason = self._needs_scip(products)
        if reason is not None and not scip_backend.available():
            raise GurobiError(10003, f"a model with {reason} needs the SCIP solver in this gurobipy shim: "
                                     f"{scip_backend.INSTALL_HINT}")
        lb = np.array([_bound(v.LB) for v in self._vars])
        ub = np.array([_bound(v.UB) for v in self._vars])
        integer = np.array([v.VType in (GRB.INTEGER, GRB.BINARY) for v in self._vars], dtype=bool)
        time_limit = self._params.get("TimeLimit")
        time_limit = None if time_limit is None else float(time_limit)  # a bad value raises here, as in the solvers
        mip_gap = float(self._params.get("MIPGap", 0.0) or 0.0)
        maximize = self.ModelSense == GRB.MAXIMIZE
        if reason is None:
            rows, num_vars = list(self._rows), len(self._vars)

            def solve():
                return _solve_highs(rows, num_vars, c, products, offset, lb, ub, integer, maximize, time_limit, mip_gap)
        else:
            quad_rows = [scip_backend.QuadRow(row, {}, _SENSE_WORD[sense], rhs) for row, sense, rhs in self._rows]
            quad_rows += [scip_backend.QuadRow(row, quad, _SENSE_WORD[sense], rhs)
                          for row, quad, sense, rhs in self._qrows]

            def solve():
                return scip_backend.solve_quadratic(c, lb, ub, integer, quad_rows, maximize=maximize, offset=offset,
                                                    objective_quad=products, time_limit=time_limit, mip_gap=mip_gap)
        self._pending_solve = (solve, time.perf_counter() - start)

    def _ensure_solved(self) -> None:
        """Run the solve optimize() deferred, once.  If the solver library itself raises, the
        exception surfaces here (the first read) and the results stay those before optimize(), as
        after an eager optimize() that raised."""
        if self._pending_solve is None:
            return
        (solve, checks_s), self._pending_solve = self._pending_solve, None
        start = time.perf_counter()
        result = solve()
        self._status = _STATUS_CODE.get(result.status, GRB.NUMERIC)
        self._objval = result.objective
        self._solution = result.x if result.has_solution else None
        self._runtime = checks_s + time.perf_counter() - start


def _solve_highs(rows, num_vars, c, products, offset, lb, ub, integer, maximize, time_limit, mip_gap):
    """A linear model (or convex QP) in the shim's row form, solved by HiGHS."""
    q_lower = hessian_lower(products, num_vars) if products else None
    indptr, indices, data, row_lb, row_ub = [0], [], [], [], []
    for row, sense, rhs in rows:
        for j, a in row.items():
            indices.append(j)
            data.append(a)
        indptr.append(len(indices))
        row_lb.append(rhs if sense in (GRB.GREATER_EQUAL, GRB.EQUAL) else -np.inf)
        row_ub.append(rhs if sense in (GRB.LESS_EQUAL, GRB.EQUAL) else np.inf)
    return solve_canonical(
        c=c, lb=lb, ub=ub, integer=integer, a_indptr=np.array(indptr),
        a_indices=np.array(indices, dtype=np.int64), a_data=np.array(data, dtype=float),
        row_lb=np.array(row_lb, dtype=float), row_ub=np.array(row_ub, dtype=float), maximize=maximize,
        offset=offset, q_lower=q_lower, time_limit=time_limit, mip_gap=mip_gap)


def _bound(v: float) -> float:
    return np.inf if v >= 1e30 else (-np.inf if v <= -1e30 else v)


__all__ = ["GRB", "Model", "Var", "LinExpr", "QuadExpr", "TempConstr", "Constr", "QConstr", "tupledict",
           "tuplelist", "multidict", "quicksum", "Env", "GurobiError", "setParam"]
