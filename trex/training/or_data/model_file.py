"""The model a sandboxed program built, read back in the trusted parent.

The sandbox child writes ``model.json`` (the HiGHS shim's ``Model.to_dict``) or ``model.mps``
(gurobipy's ``Model.write``) into its work folder.  Everything in it is untrusted input: it is
opened without following links, size-limited, checked field by field, and turned into a
:class:`trex.training.or_data.solver.LinearModel` that the parent solves itself.

``hard_coded_objective`` names the models whose optimum is a number written into the program
rather than computed from decision variables (a constant objective, objective variables fixed by
their bounds, or a constant carrying all but a sliver of the optimum).
"""
from __future__ import annotations

import json
import math
import os
import stat

from trex.training.or_data.solver import INF, LinearModel

MAX_MODEL_BYTES = 32 << 20
_SENSES = {"<": "<=", ">": ">=", "=": "==", "<=": "<=", ">=": ">=", "==": "=="}
_INTEGER_TYPES = {"I", "B"}
_CONTINUOUS_TYPES = {"C"}


class ModelFileError(ValueError):
    """The model file is missing a field, has a wrong type or is not a regular file."""


def read_untrusted(path: str, limit: int = MAX_MODEL_BYTES) -> bytes | None:
    """The bytes of a regular file the sandboxed program wrote (None when there is none); a link,
    FIFO, device or oversized file is refused (a program may plant any of them there)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ModelFileError(f"{os.path.basename(path)}: cannot open ({exc.strerror}); not a regular file") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ModelFileError(f"{os.path.basename(path)} is not a regular file")
        if st.st_size > limit:
            raise ModelFileError(f"{os.path.basename(path)} has {st.st_size} bytes > {limit}")
        chunks, total = [], 0
        while total < st.st_size:
            data = os.read(fd, min(1 << 20, st.st_size - total))
            if not data:
                break
            chunks.append(data)
            total += len(data)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _number(value, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ModelFileError(f"{what} is {type(value).__name__}, not a number")
    value = float(value)
    if math.isnan(value):
        raise ModelFileError(f"{what} is NaN")
    return value


def _bound(value: float) -> float:
    return INF if value >= 1e30 else (-INF if value <= -1e30 else value)


def model_from_json(blob: bytes) -> LinearModel:
    try:
        doc = json.loads(blob)
    except ValueError as exc:
        raise ModelFileError(f"model.json is not JSON: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != "trex-model-1":
        raise ModelFileError("model.json: not a trex-model-1 document")
    model = LinearModel(name="program")
    model.maximize = bool(doc.get("maximize"))
    variables = doc.get("vars")
    if not isinstance(variables, list):
        raise ModelFileError("model.json: vars is not a list")
    for k, var in enumerate(variables):
        if not (isinstance(var, list) and len(var) == 5 and isinstance(var[0], str) and isinstance(var[3], str)):
            raise ModelFileError(f"model.json: vars[{k}] is not [name, lb, ub, vtype, obj]")
        if var[3] not in _INTEGER_TYPES | _CONTINUOUS_TYPES:
            raise ModelFileError(f"model.json: vars[{k}] has variable type {var[3]!r}")
        model.add_var(var[0], _bound(_number(var[1], f"vars[{k}].lb")), _bound(_number(var[2], f"vars[{k}].ub")),
                      var[3] in _INTEGER_TYPES, _number(var[4], f"vars[{k}].obj"))
    n = model.num_vars
    model.obj_const = _number(doc.get("obj_const", 0.0), "obj_const")
    model.quad = _products(doc.get("quad") or [], n, "quad")
    rows = doc.get("rows")
    if not isinstance(rows, list):
        raise ModelFileError("model.json: rows is not a list")
    for k, row in enumerate(rows):
        if not (isinstance(row, list) and len(row) in (5, 6) and isinstance(row[0], list) and isinstance(row[1], list)
                and len(row[0]) == len(row[1]) and row[2] in _SENSES):
            raise ModelFileError(f"model.json: rows[{k}] is not [[indices], [coefficients], sense, rhs, name(, products)]")
        if not all(isinstance(j, int) and 0 <= j < n for j in row[0]):
            raise ModelFileError(f"model.json: rows[{k}] names a variable that does not exist")
        coeffs = [_number(a, f"rows[{k}] coefficient") for a in row[1]]
        model.add_row(dict(zip(row[0], coeffs)), _SENSES[row[2]], _number(row[3], f"rows[{k}].rhs"), str(row[4]),
                      _products(row[5], n, f"rows[{k}].products") if len(row) == 6 else None)
    return model


def _products(terms, n: int, what: str) -> dict[tuple[int, int], float]:
    """[[i, j, a], ...] over the model's variables -> {(i, j): a}."""
    if not isinstance(terms, list):
        raise ModelFileError(f"model.json: {what} is not a list")
    out: dict[tuple[int, int], float] = {}
    for k, term in enumerate(terms):
        if not (isinstance(term, list) and len(term) == 3 and all(isinstance(t, int) and 0 <= t < n for t in term[:2])):
            raise ModelFileError(f"model.json: {what}[{k}] is not [i, j, coefficient] over the variables")
        key = (min(term[0], term[1]), max(term[0], term[1]))
        out[key] = out.get(key, 0.0) + _number(term[2], f"{what}[{k}]")
    return out


def split_qcmatrix(text: str) -> tuple[str, dict[str, dict[tuple[str, str], float]]]:
    """An MPS text without its QCMATRIX sections (HiGHS cannot read them; the quadratic rows stay
    as rows with their linear part, sense and rhs), and each section's entries by row name. Gurobi
    writes a QCMATRIX section per quadratic constraint with the full symmetric Q of x'Qx (both
    (x, y) and (y, x) for a product; no 1/2 factor, unlike the objective's QMATRIX)."""
    kept, sections, current = [], {}, None
    for number, line in enumerate(text.splitlines(), 1):
        if line[:1].strip():                     # a section header starts in column 1
            head = line.split()
            current = None
            if head[0].upper() == "QCMATRIX":
                if len(head) != 2 or head[1] in sections:
                    raise ModelFileError(f"model.mps line {number}: QCMATRIX needs one new row name")
                current = sections[head[1]] = {}
                continue
        if current is None:
            kept.append(line)
            continue
        parts = line.split()
        try:
            key, value = (parts[0], parts[1]), float(parts[2])
        except (IndexError, ValueError):
            raise ModelFileError(f"model.mps line {number}: a QCMATRIX entry is 'column column value'") from None
        if len(parts) != 3 or value != value:
            raise ModelFileError(f"model.mps line {number}: a QCMATRIX entry is 'column column value'")
        current[key] = current.get(key, 0.0) + value
    return "\n".join(kept) + "\n", sections


def model_from_mps(path: str) -> LinearModel:
    """gurobipy's model.mps, read with HiGHS (linear rows, bounds, integrality, a quadratic
    objective; quadratic constraints through ``split_qcmatrix``); the parent has already checked it
    is a regular file of bounded size."""
    import tempfile

    import highspy
    import numpy as np

    from trex.training.or_data.highs_backend import _silence_banner

    _silence_banner()
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    with open(path, encoding="utf-8", errors="replace") as fh:
        text = fh.read()
    qc_sections: dict = {}
    if "QCMATRIX" in text:
        text, qc_sections = split_qcmatrix(text)
    with tempfile.NamedTemporaryFile("w", suffix=".mps") as linear:   # never written next to the program's files
        linear.write(text)
        linear.flush()
        status = h.readModel(linear.name)
    if status not in (highspy.HighsStatus.kOk, highspy.HighsStatus.kWarning):
        raise ModelFileError(f"model.mps: HiGHS cannot read it ({status})")
    lp = h.getLp()
    columns = {name: j for j, name in enumerate(lp.col_names_)}
    row_index = {name: i for i, name in enumerate(lp.row_names_)}
    row_products: dict[int, dict[tuple[int, int], float]] = {}
    for row_name, entries in qc_sections.items():
        if row_name not in row_index or any(a not in columns or b not in columns for a, b in entries):
            raise ModelFileError(f"model.mps: QCMATRIX {row_name} names a row or column the model does not have")
        products = row_products.setdefault(row_index[row_name], {})
        for (a, b), value in entries.items():
            key = (min(columns[a], columns[b]), max(columns[a], columns[b]))
            products[key] = products.get(key, 0.0) + value
    model = LinearModel(name="program", maximize=lp.sense_ == highspy.ObjSense.kMaximize)
    integrality = list(lp.integrality_) if len(lp.integrality_) else [highspy.HighsVarType.kContinuous] * lp.num_col_
    for j in range(lp.num_col_):
        model.add_var(h.getColName(j)[1] if hasattr(h, "getColName") else f"C{j}", lp.col_lower_[j], lp.col_upper_[j],
                      integrality[j] == highspy.HighsVarType.kInteger, lp.col_cost_[j])
    model.obj_const = float(lp.offset_)
    a = lp.a_matrix_
    start, index, value = np.asarray(a.start_), np.asarray(a.index_), np.asarray(a.value_)
    rows: list[dict] = [dict() for _ in range(lp.num_row_)]
    for j in range(lp.num_col_):  # HiGHS keeps the matrix column-wise after reading
        for p in range(start[j], start[j + 1]):
            rows[index[p]][j] = float(value[p])
    for i, coeffs in enumerate(rows):
        lo, hi, quad = lp.row_lower_[i], lp.row_upper_[i], row_products.get(i)
        if lo == hi:
            model.add_row(coeffs, "==", lo, f"R{i}", quad)
            continue
        if lo > -INF:
            model.add_row(coeffs, ">=", lo, f"R{i}", quad)
        if hi < INF:
            model.add_row(coeffs, "<=", hi, f"R{i}", quad)
    hess = h.getModel().hessian_
    if hess.dim_:
        hs, hi_, hv = list(hess.start_), list(hess.index_), list(hess.value_)
        for col in range(hess.dim_):  # 1/2 x'Qx, lower triangle column-wise
            for p in range(hs[col], hs[col + 1]):
                row = hi_[p]
                if hv[p] != 0.0:
                    key = (min(row, col), max(row, col))
                    model.quad[key] = model.quad.get(key, 0.0) + hv[p] * (0.5 if row == col else 1.0)
    return model


def hard_coded_objective(model: LinearModel, objective: float | None) -> str | None:
    """Why the optimum of ``model`` is a number the program wrote in, or None."""
    live = [j for j in range(model.num_vars) if model.obj[j] != 0.0] + [j for key in model.quad for j in key]
    free = [j for j in set(live) if model.lb[j] != model.ub[j]]
    if not live:
        return "hard-coded objective: the objective has no decision variable"
    if not free:
        return "hard-coded objective: every objective variable is fixed by its bounds"
    if trivial_model(model):
        return "hard-coded objective: one objective variable held only by its own bounds or one-variable rows"
    if objective is not None and model.obj_const != 0.0:
        variable_part = abs(objective - model.obj_const)
        if variable_part < 1e-3 * abs(objective):
            return (f"hard-coded objective: the constant {model.obj_const:g} carries {objective:g} but "
                    f"the decision variables only {variable_part:g}")
    return None


def decision_values(model: LinearModel, x: list[float]) -> dict[str, float]:
    """Solution values of the model's decision variables by name: the free (not fixed) variables
    joined to the objective's variables through rows coupling two or more free variables.  A
    variable pinned by its bounds or by a one-variable row, or one in a cluster of rows that never
    touches the objective, is a number the program wrote in (number spraying), not a decision."""
    free = {j for j in range(model.num_vars) if model.lb[j] != model.ub[j]}
    seeds = {j for j in free if model.obj[j] != 0.0} | {j for key in model.quad for j in key if j in free}
    neighbours: dict[int, set[int]] = {}
    for r in model.rows:
        members = [j for j in _row_variables(r) if j in free]
        if len(members) >= 2:
            for j in members:
                neighbours.setdefault(j, set()).update(members)
    reached, frontier = set(seeds), list(seeds)
    while frontier:
        for k in neighbours.get(frontier.pop(), ()):
            if k not in reached:
                reached.add(k)
                frontier.append(k)
    return {model.var_names[j]: float(x[j]) for j in sorted(reached) if j < len(x)}


def trivial_model(model: LinearModel) -> bool:
    """One free objective variable and no row coupling two free variables: the optimum is a bound
    the program wrote in (x in [answer, answer + 1], minimize x), not a formulation."""
    free = {j for j in range(model.num_vars) if model.lb[j] != model.ub[j]}
    objective_vars = {j for j in free if model.obj[j] != 0.0} | {j for key in model.quad for j in key if j in free}
    coupled = any(sum(j in free for j in _row_variables(r)) >= 2 for r in model.rows)
    return len(objective_vars) == 1 and not coupled


def _row_variables(row) -> set[int]:
    """The variables a row (linear or quadratic) involves."""
    return set(row.coeffs) | {j for key in row.quad for j in key}


__all__ = ["ModelFileError", "read_untrusted", "model_from_json", "model_from_mps", "split_qcmatrix", "hard_coded_objective",
           "decision_values", "MAX_MODEL_BYTES"]
