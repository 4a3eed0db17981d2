"""Perturbed re-solves: the same value map is applied to the instance data (-> new reference optimum)
and to the ``data = {...}`` literal of a formulation's code (-> the candidate's new optimum).

A formulation that matched the original optimum by coincidence (a missing constraint that happened
not to bind, a wrong coefficient on a variable that happened to be zero) rarely matches again once
the numbers move.  The map is by *value* (every occurrence of 37 becomes, say, 41), so it needs no
knowledge of how the candidate code names or arranges its data.  Values that also occur in index
structure (arcs, cover lists), in frozen keys (a covariance matrix that must stay PSD), or are 0/1,
are left alone, so the map can never corrupt structure.
"""
from __future__ import annotations

import ast

import numpy as np

from trex.training.or_data.families import get_family
from trex.training.or_data.instances import flatten_numbers


def _decimals(v: float) -> int:
    s = repr(float(v))
    return len(s.split(".")[1]) if "." in s and "e" not in s else 6


def value_map(instance, rng: np.random.Generator, low: float = 0.75, high: float = 1.3) -> dict[float, float]:
    fam = get_family(instance.family)
    protected = {0.0, 1.0}
    protected |= {float(v) for v in flatten_numbers({k: instance.data[k] for k in fam.structure_keys if k in instance.data})}
    protected |= {float(v) for v in flatten_numbers({k: instance.data[k] for k in fam.frozen_keys if k in instance.data})}
    values = sorted({float(v) for v in flatten_numbers(instance.data)} - protected)
    vmap: dict[float, float] = {}
    for v in values:
        factor = float(rng.uniform(low, high))
        if float(v).is_integer():
            new = float(max(2, int(round(v * factor))))
        else:
            new = round(v * factor, max(_decimals(v), 2))
            if new <= 0:
                new = v
        vmap[v] = new
    return vmap


def apply_map(obj, vmap: dict[float, float]):
    if isinstance(obj, dict):
        return {k: apply_map(v, vmap) for k, v in obj.items()}
    if isinstance(obj, list):
        return [apply_map(v, vmap) for v in obj]
    if isinstance(obj, tuple):
        return tuple(apply_map(v, vmap) for v in obj)
    if isinstance(obj, bool):
        return obj
    if isinstance(obj, (int, float, np.integer, np.floating)):
        new = vmap.get(float(obj))
        if new is None:
            return obj
        return int(new) if isinstance(obj, (int, np.integer)) and float(new).is_integer() else new
    return obj


def substitute_code_data(code: str, vmap: dict[float, float]) -> str:
    """Rewrite the top-level ``data = {...}`` literal of ``code`` through ``vmap``."""
    from trex.training.or_data.contract import find_data_assignment

    tree = ast.parse(code)
    node = find_data_assignment(tree)
    if node is None:
        raise ValueError("code has no top-level `data = {...}` literal to perturb")
    new_data = apply_map(ast.literal_eval(node.value), vmap)
    lines = code.splitlines(keepends=True)
    start, end = node.lineno - 1, node.end_lineno - 1
    prefix = lines[start][: node.col_offset]
    suffix = lines[end][node.end_col_offset:]
    replacement = f"{prefix}data = {new_data!r}{suffix}"
    return "".join(lines[:start]) + replacement + "".join(lines[end + 1:])


def code_data_numbers(code: str) -> list[float] | None:
    from trex.training.or_data.contract import find_data_assignment

    try:
        node = find_data_assignment(ast.parse(code))
        if node is None:
            return None
        return flatten_numbers({"data": ast.literal_eval(node.value)})
    except (SyntaxError, ValueError):
        return None
