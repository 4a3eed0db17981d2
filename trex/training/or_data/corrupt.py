"""Deliberate corruptions of a formulation's code, to measure that validation rejects wrong models.

Each corruption is a small AST edit of the kind a model makes:

- ``wrong_coefficient``: one number of the ``data`` literal changed to a value that is not in
  the instance (a misread number);
- ``flipped_sense``: one constraint's comparison flipped (<= <-> >=, == -> <=);
- ``dropped_constraint``: one addConstr/addConstrs statement removed;
- ``wrong_integrality``: one addVar/addVars changes type (integer/binary -> continuous,
  continuous -> integer).

Each returns the corrupted formulation text, or None when the code has nothing to corrupt that way.
"""
from __future__ import annotations

import ast

import numpy as np

from trex.training.or_data.contract import CODE_BLOCK_RE, find_data_assignment
from trex.training.or_data.instances import flatten_numbers

CONSTRAINT_CALLS = ("addConstr", "addConstrs", "addLConstr")
VAR_CALLS = ("addVar", "addVars")
_FLIP = {ast.LtE: ast.GtE, ast.GtE: ast.LtE, ast.Eq: ast.LtE}


def _replace_code(text: str, new_code: str) -> str:
    m = CODE_BLOCK_RE.search(text)
    return text[: m.start(1)] + new_code + text[m.end(1):]


def _calls(tree, names):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
            and n.func.attr in names]


def wrong_coefficient(text: str, rng: np.random.Generator, instance=None) -> str | None:
    code = CODE_BLOCK_RE.search(text).group(1)
    tree = ast.parse(code)
    node = find_data_assignment(tree)
    if node is None:
        return None
    leaves = [c for c in ast.walk(node.value) if isinstance(c, ast.Constant) and isinstance(c.value, (int, float))
              and not isinstance(c.value, bool)]
    known = {float(v) for v in flatten_numbers(instance.data)} if instance is not None else set()
    candidates = [c for c in leaves if c.value not in (0, 1)] or leaves
    if not candidates:
        return None
    leaf = candidates[int(rng.integers(len(candidates)))]
    old = leaf.value
    for step in range(1, 1000):
        if isinstance(old, int):
            new = old + int(rng.choice([-1, 1])) * max(1, int(rng.integers(1, max(2, abs(old) // 3 + 2)))) * step
            if new <= 0:
                new = old + step
        else:
            new = round(old * float(rng.choice([0.8, 1.25])) ** step, 6)
        if float(new) not in known and new != old:
            break
    leaf.value = new
    return _replace_code(text, ast.unparse(tree) + "\n")


def flipped_sense(text: str, rng: np.random.Generator, instance=None) -> str | None:
    tree = ast.parse(CODE_BLOCK_RE.search(text).group(1))
    compares = []
    for call in _calls(tree, CONSTRAINT_CALLS):
        if not call.args:
            continue
        expr = call.args[0]
        if isinstance(expr, (ast.GeneratorExp, ast.ListComp)):
            expr = expr.elt  # the constraint itself, not the generator's `if` filters
        if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and type(expr.ops[0]) in _FLIP:
            compares.append(expr)
    if not compares:
        return None
    target = compares[int(rng.integers(len(compares)))]
    target.ops = [_FLIP[type(target.ops[0])]()]
    return _replace_code(text, ast.unparse(tree) + "\n")


def dropped_constraint(text: str, rng: np.random.Generator, instance=None) -> str | None:
    tree = ast.parse(CODE_BLOCK_RE.search(text).group(1))
    stmts = [s for s in tree.body if isinstance(s, (ast.Expr, ast.Assign)) and isinstance(s.value, ast.Call)
             and isinstance(s.value.func, ast.Attribute) and s.value.func.attr in CONSTRAINT_CALLS]
    if not stmts:
        return None
    victim = stmts[int(rng.integers(len(stmts)))]
    tree.body = [s for s in tree.body if s is not victim]
    return _replace_code(text, ast.unparse(tree) + "\n")


def wrong_integrality(text: str, rng: np.random.Generator, instance=None) -> str | None:
    tree = ast.parse(CODE_BLOCK_RE.search(text).group(1))
    calls = _calls(tree, VAR_CALLS)
    if not calls:
        return None
    call = calls[int(rng.integers(len(calls)))]
    kw = next((k for k in call.keywords if k.arg == "vtype"), None)
    current = kw.value.attr if kw is not None and isinstance(kw.value, ast.Attribute) else "CONTINUOUS"
    new = "CONTINUOUS" if current in ("INTEGER", "BINARY") else "INTEGER"
    value = ast.Attribute(value=ast.Name(id="GRB", ctx=ast.Load()), attr=new, ctx=ast.Load())
    if kw is None:
        call.keywords.append(ast.keyword(arg="vtype", value=value))
    else:
        kw.value = value
    if new == "CONTINUOUS":  # a binary relaxed to continuous keeps its [0, 1] range
        if not any(k.arg == "ub" for k in call.keywords) and current == "BINARY":
            call.keywords.append(ast.keyword(arg="ub", value=ast.Constant(1)))
    return _replace_code(text, ast.unparse(tree) + "\n")


CORRUPTIONS = {"wrong_coefficient": wrong_coefficient, "flipped_sense": flipped_sense,
               "dropped_constraint": dropped_constraint, "wrong_integrality": wrong_integrality}
