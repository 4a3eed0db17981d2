"""Parameterized OR problem families.

Each family turns ``(rng, difficulty)`` into instance ``data`` (numbers + index structure, a plain
JSON dict) and ``options`` (structural knobs such as integrality), and, from those alone:

- ``build``: the reference ``LinearModel`` (written directly, independently of the gold code);
- ``render``: the natural-language statement in a given industry skin;
- ``sections``: the gold formulation (variables / objective / constraints text + code body).

Difficulty 1..3 scales sizes and switches on extra constraint types / integrality.  The data dict
is exactly what the gold code embeds as ``data = {...}``; keys listed in ``structure_keys`` hold
indices (not quantities), keys in ``frozen_keys`` are never perturbed (e.g. a covariance matrix
must stay PSD).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from trex.training.or_data.numbers_text import MULTIPLIERS
from trex.training.or_data.skins import Skin, phrase
from trex.training.or_data.solver import LinearModel

DIFFICULTIES = (1, 2, 3)


def fmt(v: float) -> str:
    """How a number is written in problem text (ints plainly, floats without trailing zeros)."""
    if isinstance(v, (int, np.integer)) or float(v).is_integer():
        return str(int(v))
    return ("%.6f" % float(v)).rstrip("0").rstrip(".")


def _ints(rng, lo, hi, size) -> list:
    return [int(v) for v in rng.integers(lo, hi + 1, size=size)]



def _node_balance_sentences(data, nodes, unit, skin, rng) -> list[str]:
    """A flow network's supply and demand per node, and the transshipment nodes' balance (the flow
    families' shared wording)."""
    out = []
    for v, (s, d) in enumerate(zip(data["supply"], data["demand"])):
        if s:
            out.append(f"{nodes[v]} can send out {phrase(rng, '<=')} {fmt(s)} {unit} in total.")
        if d:
            out.append(f"{nodes[v]} must receive {phrase(rng, '>=')} {fmt(d)} {unit}.")
    trans = [nodes[v] for v, (s, d) in enumerate(zip(data["supply"], data["demand"])) if not s and not d]
    out.append(f"The other {skin.noun('node', True)} ({_join(trans)}) have supply 0 and demand 0: whatever flows in must flow out.")
    return out

def _join(items: list[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _table(row_names: list[str], col_names: list[str], matrix, corner: str = "") -> str:
    head = "| " + corner + " | " + " | ".join(col_names) + " |"
    sep = "|" + "---|" * (len(col_names) + 1)
    body = ["| " + r + " | " + " | ".join(fmt(v) for v in row) + " |" for r, row in zip(row_names, matrix)]
    return "\n".join([head, sep, *body])


def _matrix_text(rng, row_names, col_names, matrix, sentence: Callable[[str, str], str], corner="") -> str:
    """Either a markdown table or one sentence per row (surface variety)."""
    if rng.random() < 0.5:
        return _table(row_names, col_names, matrix, corner)
    lines = []
    for r, row in zip(row_names, matrix):
        lines.append(sentence(r, _join([f"{fmt(v)} for {c}" for c, v in zip(col_names, row)])))
    return "\n".join(lines)


def _pick(rng, wordings: tuple[str, ...]) -> str:
    """One of several wordings of the same sentence (surface variety)."""
    return wordings[int(rng.integers(len(wordings)))]


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


class Family:
    name = ""
    kind = "LP"  # "LP" | "MILP" | "QP" | "QCQP"
    structure_keys: tuple = ()
    frozen_keys: tuple = ()
    verbatim_keys: tuple = ()    # quantities said through a word table ("twice"): the round trip keeps them

    def sample(self, rng: np.random.Generator, difficulty: int) -> tuple[dict, dict]:
        raise NotImplementedError

    def build(self, data: dict, options: dict) -> LinearModel:
        raise NotImplementedError

    def render(self, data: dict, options: dict, skin: Skin, rng: np.random.Generator) -> str:
        raise NotImplementedError

    def sections(self, data: dict, options: dict) -> dict:
        raise NotImplementedError

    def is_mip(self, options: dict) -> bool:
        return self.kind == "MILP" or bool(options.get("integer"))


def _vtype(options: dict, default_integer: bool = False) -> str:
    return "GRB.INTEGER" if options.get("integer", default_integer) else "GRB.CONTINUOUS"


# ================================================================================================
class ProductionMix(Family):
    name = "production_mix"
    kind = "LP"
    structure_keys = ("ratio_pair",)
    verbatim_keys = ("ratio_factor",)

    def sample(self, rng, difficulty):
        n = int(rng.integers(2, 3 + 2 * difficulty))
        r = int(rng.integers(2, 2 + difficulty + 1))
        data = {"profit": _ints(rng, 5, 60, n), "usage": [_ints(rng, 1, 12, n) for _ in range(r)],
                "capacity": _ints(rng, 40, 400, r)}
        if difficulty >= 2:
            data["min_units"] = _ints(rng, 1, 12, n)
        if difficulty >= 2 and rng.random() < 0.5:     # "at least twice as many units of P as of Q"
            i, j = (int(v) for v in rng.choice(n, size=2, replace=False))
            data["ratio_pair"], data["ratio_factor"] = [i, j], int(rng.choice(sorted(MULTIPLIERS)))
        return data, {"integer": difficulty >= 2 and rng.random() < 0.6}

    def build(self, data, options):
        m = LinearModel(self.name, maximize=True)
        x = [m.add_var(f"make[{i}]", integer=options.get("integer", False), obj=p) for i, p in enumerate(data["profit"])]
        for r, cap in enumerate(data["capacity"]):
            m.add_row({x[i]: a for i, a in enumerate(data["usage"][r])}, "<=", cap, "capacity")
        for i, lo in enumerate(data.get("min_units", [])):
            m.add_row({x[i]: 1.0}, ">=", lo, "min_units")
        if "ratio_pair" in data:
            i, j = data["ratio_pair"]
            m.add_row({x[i]: 1.0, x[j]: -float(data["ratio_factor"])}, ">=", 0.0, "ratio")
        return m

    def render(self, data, options, skin, rng):
        prods = skin.names("product", len(data["profit"]))
        res = skin.names("resource", len(data["capacity"]))
        out = [f"{_cap(skin.organization)} plans how much to produce of {len(prods)} {skin.noun('product', True)}: {_join(prods)}."]
        profit = _pick(rng, ("Each unit of {p} brings a profit of ${v}.", "{p} earns ${v} of profit per unit.",
                             "The profit on one unit of {p} is ${v}.", "Every unit of {p} sold adds ${v} to profit."))
        out.append(" ".join(profit.format(p=p, v=fmt(v)) for p, v in zip(prods, data["profit"])))
        draws = _pick(rng, ("Production draws on {n} {r}.", "Making them uses {n} {r}.", "There are {n} {r} to share.",
                            "Output is limited by {n} {r}."))
        out.append(draws.format(n=len(res), r=skin.noun("resource", True)) + " Units of each resource used per unit produced:")
        use = _pick(rng, ("{r} is used as follows: {items}.", "Per unit, the products take from {r}: {items}.",
                          "Use of {r} per unit: {items}.", "{r} needed per unit: {items}."))
        out.append(_matrix_text(rng, res, prods, data["usage"],
                                lambda r, items: use.format(r=r, items=items)))
        out.append(" ".join(f"{r} has {phrase(rng, '<=')} {fmt(c)} units available." for r, c in zip(res, data["capacity"])))
        if "min_units" in data:
            out.append(" ".join(f"Contracts require {phrase(rng, '>=')} {fmt(v)} units of {p}." for p, v in zip(prods, data["min_units"])))
        if "ratio_pair" in data:
            i, j = data["ratio_pair"]
            times = MULTIPLIERS[data["ratio_factor"]][int(rng.integers(len(MULTIPLIERS[data["ratio_factor"]])))]
            out.append(f"Marketing requires at least {times} as many units of {prods[i]} as of {prods[j]}.")
        if options.get("integer"):
            out.append("Only whole units can be produced.")
        out.append(phrase(rng, "goal_max"))
        return "\n".join(out)

    def sections(self, data, options):
        integer = "integer" if options.get("integer") else "continuous"
        cons = ["(C1) capacity[r]: sum_i usage[r][i] * make[i] <= capacity[r]  for every resource r"]
        code = ["profit, usage, capacity = data['profit'], data['usage'], data['capacity']",
                "P, R = range(len(profit)), range(len(capacity))",
                "model = gp.Model('production_mix')",
                f"make = model.addVars(P, lb=0, vtype={_vtype(options)}, name='make')",
                "model.setObjective(gp.quicksum(profit[i] * make[i] for i in P), GRB.MAXIMIZE)",
                "model.addConstrs((gp.quicksum(usage[r][i] * make[i] for i in P) <= capacity[r] for r in R), name='capacity')"]
        if "min_units" in data:
            cons.append("(C2) min_units[i]: make[i] >= min_units[i]  for every product i")
            code.append("model.addConstrs((make[i] >= data['min_units'][i] for i in P), name='min_units')")
        if "ratio_pair" in data:
            cons.append("(C3) ratio: make[p] >= ratio_factor * make[q]  for the pair (p, q) = ratio_pair")
            code.append("p, q = data['ratio_pair']")
            code.append("model.addConstr(make[p] >= data['ratio_factor'] * make[q], name='ratio')")
        return {"variables": f"- make[i] >= 0, {integer}: units of product i produced",
                "objective": "maximize sum_i profit[i] * make[i]",
                "constraints": "\n".join(cons), "code": code}


# ================================================================================================
class Diet(Family):
    name = "diet"
    kind = "LP"

    def sample(self, rng, difficulty):
        n = int(rng.integers(2, 4 + 2 * difficulty))
        k = int(rng.integers(2, 3 + difficulty))
        data = {"cost": _ints(rng, 2, 30, n), "content": [_ints(rng, 0, 20, n) for _ in range(k)],
                "requirement": _ints(rng, 30, 200, k)}
        for row in data["content"]:
            if max(row) == 0:
                row[int(rng.integers(n))] = int(rng.integers(5, 20))
        if difficulty >= 2:
            data["max_servings"] = _ints(rng, 2, 10, n)
        return data, {}

    def build(self, data, options):
        m = LinearModel(self.name)
        x = [m.add_var(f"servings[{j}]", obj=c) for j, c in enumerate(data["cost"])]
        for k, req in enumerate(data["requirement"]):
            m.add_row({x[j]: a for j, a in enumerate(data["content"][k])}, ">=", req, "requirement")
        for j, u in enumerate(data.get("max_servings", [])):
            m.add_row({x[j]: 1.0}, "<=", u, "max_servings")
        return m

    def render(self, data, options, skin, rng):
        foods = skin.names("ingredient", len(data["cost"]))
        nutr = skin.names("nutrient", len(data["requirement"]))
        out = [f"{_cap(skin.organization)} wants the cheapest mix of {len(foods)} {skin.noun('ingredient', True)} ({_join(foods)}) that meets {len(nutr)} {skin.noun('nutrient', True)}."]
        price = _pick(rng, ("One serving of {f} costs ${c}.", "A serving of {f} is priced at ${c}.",
                            "{f} costs ${c} per serving.", "Each serving of {f} costs ${c}."))
        out.append(" ".join(price.format(f=f, c=fmt(c)) for f, c in zip(foods, data["cost"])))
        out.append("Amount each serving contributes to each requirement:")
        per = _pick(rng, ("For {r}: {items}.", "Toward {r} one serving gives {items}.", "{r} per serving: {items}."))
        out.append(_matrix_text(rng, nutr, foods, data["content"], lambda r, items: per.format(r=r, items=items)))
        out.append(" ".join(f"The mix must provide {phrase(rng, '>=')} {fmt(v)} units of {r}." for r, v in zip(nutr, data["requirement"])))
        if "max_servings" in data:
            out.append(" ".join(f"{phrase(rng, '<=').capitalize()} {fmt(u)} servings of {f} may be used." for f, u in zip(foods, data["max_servings"])))
        out.append("Fractional servings are allowed. " + phrase(rng, "goal_min"))
        return "\n".join(out)

    def sections(self, data, options):
        cons = ["(C1) requirement[k]: sum_j content[k][j] * servings[j] >= requirement[k]  for every requirement k"]
        code = ["cost, content, requirement = data['cost'], data['content'], data['requirement']",
                "F, K = range(len(cost)), range(len(requirement))",
                "model = gp.Model('diet')",
                "servings = model.addVars(F, lb=0, vtype=GRB.CONTINUOUS, name='servings')",
                "model.setObjective(gp.quicksum(cost[j] * servings[j] for j in F), GRB.MINIMIZE)",
                "model.addConstrs((gp.quicksum(content[k][j] * servings[j] for j in F) >= requirement[k] for k in K), name='requirement')"]
        if "max_servings" in data:
            cons.append("(C2) max_servings[j]: servings[j] <= max_servings[j]  for every food j")
            code.append("model.addConstrs((servings[j] <= data['max_servings'][j] for j in F), name='max_servings')")
        return {"variables": "- servings[j] >= 0, continuous: servings of food j in the mix",
                "objective": "minimize sum_j cost[j] * servings[j]", "constraints": "\n".join(cons), "code": code}


# ================================================================================================
class Blending(Family):
    name = "blending"
    kind = "LP"

    def sample(self, rng, difficulty):
        n = int(rng.integers(3, 4 + difficulty))   # two inputs rarely make every constraint informative
        q = int(rng.integers(1, 1 + difficulty))
        demand = int(rng.integers(50, 500))
        avail = _ints(rng, demand // 3 + 1, demand, n)
        while sum(avail) < demand:
            avail[int(rng.integers(n))] += demand // 2
        return {"cost": _ints(rng, 10, 90, n), "available": avail, "demand": demand,
                "percent": [_ints(rng, 5, 60, n) for _ in range(q)],
                "min_percent": _ints(rng, 15, 40, q)}, {}

    def build(self, data, options):
        m = LinearModel(self.name)
        x = [m.add_var(f"use[{k}]", obj=c) for k, c in enumerate(data["cost"])]
        m.add_row({xi: 1.0 for xi in x}, "==", data["demand"], "demand")
        for q, lo in enumerate(data["min_percent"]):
            m.add_row({x[k]: p for k, p in enumerate(data["percent"][q])}, ">=", lo * data["demand"], "quality")
        for k, a in enumerate(data["available"]):
            m.add_row({x[k]: 1.0}, "<=", a, "available")
        return m

    def render(self, data, options, skin, rng):
        raws = skin.names("raw", len(data["cost"]))
        attrs = skin.names("attribute", len(data["min_percent"]))
        out = [f"{_cap(skin.organization)} must produce {phrase(rng, '==')} {fmt(data['demand'])} tonnes of a {skin.noun('blend')} by mixing {len(raws)} {skin.noun('raw', True)}: {_join(raws)}."]
        out.append(" ".join(f"{r} costs ${fmt(c)} per tonne and {phrase(rng, '<=')} {fmt(a)} tonnes of it are available." for r, c, a in zip(raws, data["cost"], data["available"])))
        out.append("Percentage of each measure contained in each input:")
        out.append(_matrix_text(rng, attrs, raws, data["percent"], lambda r, items: f"{r} (percent): {items}."))
        out.append(" ".join(f"The finished blend must contain {phrase(rng, '>=')} {fmt(v)} percent of {a}." for a, v in zip(attrs, data["min_percent"])))
        out.append(phrase(rng, "goal_min"))
        return "\n".join(out)

    def sections(self, data, options):
        return {"variables": "- use[k] >= 0, continuous: tonnes of input k in the blend",
                "objective": "minimize sum_k cost[k] * use[k]",
                "constraints": "\n".join([
                    "(C1) demand: sum_k use[k] == demand",
                    "(C2) quality[q]: sum_k percent[q][k] * use[k] >= min_percent[q] * demand  for every measure q",
                    "(C3) available[k]: use[k] <= available[k]  for every input k"]),
                "code": ["cost, available, demand = data['cost'], data['available'], data['demand']",
                         "percent, min_percent = data['percent'], data['min_percent']",
                         "I, Q = range(len(cost)), range(len(min_percent))",
                         "model = gp.Model('blending')",
                         "use = model.addVars(I, lb=0, vtype=GRB.CONTINUOUS, name='use')",
                         "model.setObjective(gp.quicksum(cost[k] * use[k] for k in I), GRB.MINIMIZE)",
                         "model.addConstr(use.sum() == demand, name='demand')",
                         "model.addConstrs((gp.quicksum(percent[q][k] * use[k] for k in I) >= min_percent[q] * demand for q in Q), name='quality')",
                         "model.addConstrs((use[k] <= available[k] for k in I), name='available')"]}


# ================================================================================================
class Transportation(Family):
    name = "transportation"
    kind = "LP"

    def sample(self, rng, difficulty):
        s = int(rng.integers(2, 3 + 2 * difficulty))
        d = int(rng.integers(2, 3 + 3 * difficulty))
        demand = _ints(rng, 10, 90, d)
        supply = _ints(rng, 20, 120, s)
        share = float(rng.uniform(0.6, 0.9))
        while sum(supply) * share < sum(demand):
            supply[int(rng.integers(s))] += int(rng.integers(10, 60))
        return {"supply": supply, "demand": demand, "cost": [_ints(rng, 1, 20, d) for _ in range(s)]}, \
            {"integer": difficulty == 3 and rng.random() < 0.5}

    def build(self, data, options):
        m = LinearModel(self.name)
        S, D = len(data["supply"]), len(data["demand"])
        x = {(i, j): m.add_var(f"ship[{i},{j}]", integer=options.get("integer", False), obj=data["cost"][i][j])
             for i in range(S) for j in range(D)}
        for i in range(S):
            m.add_row({x[i, j]: 1 for j in range(D)}, "<=", data["supply"][i], "supply")
        for j in range(D):
            m.add_row({x[i, j]: 1 for i in range(S)}, ">=", data["demand"][j], "demand")
        return m

    def render(self, data, options, skin, rng):
        src = skin.names("source", len(data["supply"]))
        dst = skin.names("sink", len(data["demand"]))
        unit = skin.noun("commodity", True)
        out = [f"{_cap(skin.organization)} ships {unit} from {len(src)} {skin.noun('source', True)} ({_join(src)}) to {len(dst)} {skin.noun('sink', True)} ({_join(dst)})."]
        out.append(" ".join(f"{s} can send {phrase(rng, '<=')} {fmt(v)} {unit}." for s, v in zip(src, data["supply"])))
        out.append(" ".join(f"{d} needs {phrase(rng, '>=')} {fmt(v)} {unit}." for d, v in zip(dst, data["demand"])))
        out.append("Shipping cost in dollars per unit:")
        out.append(_matrix_text(rng, src, dst, data["cost"], lambda r, items: f"From {r}: {items}."))
        if options.get("integer"):
            out.append(f"Only whole {unit} can be shipped.")
        out.append(phrase(rng, "goal_min"))
        return "\n".join(out)

    def sections(self, data, options):
        integer = "integer" if options.get("integer") else "continuous"
        return {"variables": f"- ship[i,j] >= 0, {integer}: units shipped from source i to destination j",
                "objective": "minimize sum_{i,j} cost[i][j] * ship[i,j]",
                "constraints": "(C1) supply[i]: sum_j ship[i,j] <= supply[i]  for every source i\n"
                               "(C2) demand[j]: sum_i ship[i,j] >= demand[j]  for every destination j",
                "code": ["supply, demand, cost = data['supply'], data['demand'], data['cost']",
                         "S, D = range(len(supply)), range(len(demand))",
                         "model = gp.Model('transportation')",
                         f"ship = model.addVars(S, D, lb=0, vtype={_vtype(options)}, name='ship')",
                         "model.setObjective(gp.quicksum(cost[i][j] * ship[i, j] for i in S for j in D), GRB.MINIMIZE)",
                         "model.addConstrs((ship.sum(i, '*') <= supply[i] for i in S), name='supply')",
                         "model.addConstrs((ship.sum('*', j) >= demand[j] for j in D), name='demand')"]}


# ================================================================================================
class Assignment(Family):
    name = "assignment"
    kind = "MILP"

    def sample(self, rng, difficulty):
        t = int(rng.integers(2, 3 + 2 * difficulty))
        w = t + int(rng.integers(0, 2 + difficulty))
        return {"cost": [_ints(rng, 5, 60, t) for _ in range(w)]}, {}

    def build(self, data, options):
        m = LinearModel(self.name)
        W, T = len(data["cost"]), len(data["cost"][0])
        x = {(i, j): m.add_var(f"assign[{i},{j}]", ub=1, integer=True, obj=data["cost"][i][j]) for i in range(W) for j in range(T)}
        for j in range(T):
            m.add_row({x[i, j]: 1 for i in range(W)}, "==", 1, "task")
        for i in range(W):
            m.add_row({x[i, j]: 1 for j in range(T)}, "<=", 1, "worker")
        return m

    def render(self, data, options, skin, rng):
        ws = skin.names("worker", len(data["cost"]))
        ts = skin.names("task", len(data["cost"][0]))
        out = [f"{_cap(skin.organization)} must give each of {len(ts)} {skin.noun('task', True)} ({_join(ts)}) to {phrase(rng, '==')} one of {len(ws)} {skin.noun('worker', True)} ({_join(ws)}); a {skin.noun('worker')} can take {phrase(rng, '<=')} one {skin.noun('task')}."]
        out.append("Cost in dollars of each pairing:")
        out.append(_matrix_text(rng, ws, ts, data["cost"], lambda r, items: f"{r}: {items}."))
        out.append(phrase(rng, "goal_min"))
        return "\n".join(out)

    def sections(self, data, options):
        return {"variables": "- assign[i,j] binary: 1 if worker i takes task j",
                "objective": "minimize sum_{i,j} cost[i][j] * assign[i,j]",
                "constraints": "(C1) task[j]: sum_i assign[i,j] == 1  for every task j\n"
                               "(C2) worker[i]: sum_j assign[i,j] <= 1  for every worker i",
                "code": ["cost = data['cost']",
                         "W, T = range(len(cost)), range(len(cost[0]))",
                         "model = gp.Model('assignment')",
                         "assign = model.addVars(W, T, vtype=GRB.BINARY, name='assign')",
                         "model.setObjective(gp.quicksum(cost[i][j] * assign[i, j] for i in W for j in T), GRB.MINIMIZE)",
                         "model.addConstrs((assign.sum('*', j) == 1 for j in T), name='task')",
                         "model.addConstrs((assign.sum(i, '*') <= 1 for i in W), name='worker')"]}


# ================================================================================================
class Knapsack(Family):
    name = "knapsack"
    kind = "MILP"

    def sample(self, rng, difficulty):
        n = int(rng.integers(2, 5 + 4 * difficulty))
        dims = int(rng.integers(1, 1 + difficulty))
        weight = [_ints(rng, 3, 40, n) for _ in range(dims)]
        cap = [max(int(sum(w) * rng.uniform(0.3, 0.7)), max(w) + 1) for w in weight]
        return {"value": _ints(rng, 10, 99, n), "weight": weight, "capacity": cap}, {}

    def build(self, data, options):
        m = LinearModel(self.name, maximize=True)
        x = [m.add_var(f"pick[{i}]", ub=1, integer=True, obj=v) for i, v in enumerate(data["value"])]
        for d, cap in enumerate(data["capacity"]):
            m.add_row({x[i]: w for i, w in enumerate(data["weight"][d])}, "<=", cap, "capacity")
        return m

    def render(self, data, options, skin, rng):
        items = skin.names("project", len(data["value"]))
        buds = skin.names("budget", len(data["capacity"]))
        out = [f"{_cap(skin.organization)} can fund any subset of {len(items)} {skin.noun('project', True)}: {_join(items)}. Each is either fully funded or not at all."]
        ret = _pick(rng, ("{i} returns {v} thousand dollars.", "{i} is worth {v} thousand dollars.",
                          "Funding {i} yields {v} thousand dollars.", "The return of {i} is {v} thousand dollars."))
        out.append(" ".join(ret.format(i=i, v=fmt(v)) for i, v in zip(items, data["value"])))
        out.append("Amount each one consumes of each budget (thousand dollars):")
        use = _pick(rng, ("{r}: {its}.", "From {r} they need {its}.", "They draw on {r} as follows: {its}."))
        out.append(_matrix_text(rng, buds, items, data["weight"], lambda r, its: use.format(r=r, its=its)))
        out.append(" ".join(f"{b} allows {phrase(rng, '<=')} {fmt(c)} thousand dollars in total." for b, c in zip(buds, data["capacity"])))
        out.append("What is the maximum total return?")
        return "\n".join(out)

    def sections(self, data, options):
        return {"variables": "- pick[i] binary: 1 if item i is selected",
                "objective": "maximize sum_i value[i] * pick[i]",
                "constraints": "(C1) capacity[d]: sum_i weight[d][i] * pick[i] <= capacity[d]  for every budget d",
                "code": ["value, weight, capacity = data['value'], data['weight'], data['capacity']",
                         "I, B = range(len(value)), range(len(capacity))",
                         "model = gp.Model('knapsack')",
                         "pick = model.addVars(I, vtype=GRB.BINARY, name='pick')",
                         "model.setObjective(gp.quicksum(value[i] * pick[i] for i in I), GRB.MAXIMIZE)",
                         "model.addConstrs((gp.quicksum(weight[d][i] * pick[i] for i in I) <= capacity[d] for d in B), name='capacity')"]}


# ================================================================================================
class FacilityLocation(Family):
    name = "facility_location"
    kind = "MILP"

    def sample(self, rng, difficulty):
        f = int(rng.integers(2, 3 + difficulty))
        c = int(rng.integers(3, 3 + 4 * difficulty))
        demand = _ints(rng, 10, 60, c)
        cap = _ints(rng, max(demand) + 5, sum(demand), f)
        while sum(cap) < sum(demand) * 1.2:
            cap[int(rng.integers(f))] += 30
        return {"fixed_cost": _ints(rng, 100, 900, f), "capacity": cap, "demand": demand,
                "unit_cost": [_ints(rng, 1, 25, c) for _ in range(f)]}, {}

    def build(self, data, options):
        m = LinearModel(self.name)
        F, C = len(data["fixed_cost"]), len(data["demand"])
        y = [m.add_var(f"open[{i}]", ub=1, integer=True, obj=fc) for i, fc in enumerate(data["fixed_cost"])]
        x = {(i, j): m.add_var(f"serve[{i},{j}]", obj=data["unit_cost"][i][j]) for i in range(F) for j in range(C)}
        for j in range(C):
            m.add_row({x[i, j]: 1 for i in range(F)}, ">=", data["demand"][j], "demand")
        for i in range(F):
            row = {x[i, j]: 1 for j in range(C)}
            row[y[i]] = -data["capacity"][i]
            m.add_row(row, "<=", 0, "capacity")
        return m

    def render(self, data, options, skin, rng):
        fs = skin.names("facility", len(data["fixed_cost"]))
        cs = skin.names("customer", len(data["demand"]))
        out = [f"{_cap(skin.organization)} may open any of {len(fs)} {skin.noun('facility', True)} ({_join(fs)}) to serve {len(cs)} {skin.noun('customer', True)} ({_join(cs)})."]
        out.append(" ".join(f"Opening {f} costs ${fmt(fc)} and lets it ship {phrase(rng, '<=')} {fmt(cap)} units; a closed site ships nothing." for f, fc, cap in zip(fs, data["fixed_cost"], data["capacity"])))
        out.append(" ".join(f"{c} requires {phrase(rng, '>=')} {fmt(d)} units." for c, d in zip(cs, data["demand"])))
        out.append("Delivery cost in dollars per unit:")
        out.append(_matrix_text(rng, fs, cs, data["unit_cost"], lambda r, items: f"From {r}: {items}."))
        out.append(phrase(rng, "goal_min") + " (opening costs plus delivery costs)")
        return "\n".join(out)

    def sections(self, data, options):
        return {"variables": "- open[i] binary: 1 if site i is opened\n- serve[i,j] >= 0, continuous: units sent from site i to customer j",
                "objective": "minimize sum_i fixed_cost[i] * open[i] + sum_{i,j} unit_cost[i][j] * serve[i,j]",
                "constraints": "(C1) demand[j]: sum_i serve[i,j] >= demand[j]  for every customer j\n"
                               "(C2) capacity[i]: sum_j serve[i,j] <= capacity[i] * open[i]  for every site i",
                "code": ["fixed_cost, capacity, demand, unit_cost = data['fixed_cost'], data['capacity'], data['demand'], data['unit_cost']",
                         "F, C = range(len(fixed_cost)), range(len(demand))",
                         "model = gp.Model('facility_location')",
                         "open_ = model.addVars(F, vtype=GRB.BINARY, name='open')",
                         "serve = model.addVars(F, C, lb=0, vtype=GRB.CONTINUOUS, name='serve')",
                         "model.setObjective(gp.quicksum(fixed_cost[i] * open_[i] for i in F) + gp.quicksum(unit_cost[i][j] * serve[i, j] for i in F for j in C), GRB.MINIMIZE)",
                         "model.addConstrs((serve.sum('*', j) >= demand[j] for j in C), name='demand')",
                         "model.addConstrs((serve.sum(i, '*') <= capacity[i] * open_[i] for i in F), name='capacity')"]}


# ================================================================================================
class SetCover(Family):
    name = "set_cover"
    kind = "MILP"
    structure_keys = ("covers",)

    def sample(self, rng, difficulty):
        e = int(rng.integers(4, 5 + 3 * difficulty))
        s = int(rng.integers(4, 4 + 2 * difficulty))
        multi = difficulty >= 2 and rng.random() < 0.5
        need = [int(v) for v in rng.integers(1, 3, size=e)] if multi else [1] * e
        covers = [sorted(int(v) for v in rng.choice(e, size=int(rng.integers(2, max(3, e // 2) + 1)), replace=False))
                  for _ in range(s)]
        for el in range(e):  # every element coverable as often as needed
            have = [k for k, cov in enumerate(covers) if el in cov]
            for k in rng.permutation(s):
                if len(have) >= need[el]:
                    break
                if int(k) not in have:
                    covers[int(k)] = sorted(covers[int(k)] + [el])
                    have.append(int(k))
        return {"cost": _ints(rng, 10, 80, s), "covers": covers, "need": need}, {}

    def build(self, data, options):
        m = LinearModel(self.name)
        x = [m.add_var(f"use[{k}]", ub=1, integer=True, obj=c) for k, c in enumerate(data["cost"])]
        for el, need in enumerate(data["need"]):
            m.add_row({x[k]: 1 for k, cov in enumerate(data["covers"]) if el in cov}, ">=", need, "cover")
        return m

    def render(self, data, options, skin, rng):
        sets = skin.names("service", len(data["cost"]))
        zones = skin.names("zone", len(data["need"]))
        out = [f"{_cap(skin.organization)} chooses which of {len(sets)} {skin.noun('service', True)} to hire so that each of {len(zones)} {skin.noun('zone', True)} is covered."]
        for s, c, cov in zip(sets, data["cost"], data["covers"]):
            out.append(f"{s} costs ${fmt(c)} and covers {_join([zones[e] for e in cov])}.")
        needs = sorted(set(data["need"]))
        if needs == [1]:
            out.append(f"Every {skin.noun('zone')} must be covered by {phrase(rng, '>=')} 1 hired {skin.noun('service')}.")
        else:
            for v in needs:
                zs = [z for z, n in zip(zones, data["need"]) if n == v]
                out.append(f"{_join(zs)} must each be covered by {phrase(rng, '>=')} {fmt(v)} hired {skin.noun('service', True)}.")
        out.append(phrase(rng, "goal_min"))
        return "\n".join(out)

    def sections(self, data, options):
        return {"variables": "- use[k] binary: 1 if option k is hired",
                "objective": "minimize sum_k cost[k] * use[k]",
                "constraints": "(C1) cover[e]: sum_{k : e in covers[k]} use[k] >= need[e]  for every element e",
                "code": ["cost, covers, need = data['cost'], data['covers'], data['need']",
                         "K, E = range(len(cost)), range(len(need))",
                         "model = gp.Model('set_cover')",
                         "use = model.addVars(K, vtype=GRB.BINARY, name='use')",
                         "model.setObjective(gp.quicksum(cost[k] * use[k] for k in K), GRB.MINIMIZE)",
                         "model.addConstrs((gp.quicksum(use[k] for k in K if e in covers[k]) >= need[e] for e in E), name='cover')"]}


# ================================================================================================
class StaffScheduling(Family):
    name = "staff_scheduling"
    kind = "MILP"
    structure_keys = ("shift_periods",)

    def sample(self, rng, difficulty):
        periods = int(rng.choice([6, 7, 8][: difficulty + 1]))
        length = int(rng.integers(2, 4))
        starts = sorted(int(v) for v in rng.choice(periods, size=min(periods, int(rng.integers(3, periods + 1))), replace=False))
        if 0 not in starts:
            starts[0] = 0
        shift_periods = [sorted({(s + k) % periods for k in range(length)}) for s in starts]
        covered = set().union(*map(set, shift_periods))
        for t in range(periods):
            if t not in covered:
                shift_periods.append(sorted({(t + k) % periods for k in range(length)}))
        n = len(shift_periods)
        data = {"required": _ints(rng, 3, 25, periods), "shift_cost": _ints(rng, 50, 150, n), "shift_periods": shift_periods}
        if difficulty >= 2:
            data["max_staff"] = _ints(rng, 5, 20, n)
        return data, {}

    def build(self, data, options):
        m = LinearModel(self.name)
        y = [m.add_var(f"staff[{s}]", integer=True, obj=c) for s, c in enumerate(data["shift_cost"])]
        for t, req in enumerate(data["required"]):
            m.add_row({y[s]: 1 for s, ps in enumerate(data["shift_periods"]) if t in ps}, ">=", req, "coverage")
        for s, u in enumerate(data.get("max_staff", [])):
            m.add_row({y[s]: 1}, "<=", u, "max_staff")
        return m

    def render(self, data, options, skin, rng):
        per = skin.names("period", len(data["required"]))
        shifts = skin.names("shift", len(data["shift_cost"]))
        out = [f"{_cap(skin.organization)} staffs {len(per)} consecutive {skin.noun('period', True)} ({_join(per)}), which repeat in a cycle, using {len(shifts)} {skin.noun('shift', True)}."]
        out.append(" ".join(f"{p} needs {phrase(rng, '>=')} {fmt(r)} people on duty." for p, r in zip(per, data["required"])))
        for s, c, ps in zip(shifts, data["shift_cost"], data["shift_periods"]):
            out.append(f"Each person on {s} works {_join([per[t] for t in ps])} and costs ${fmt(c)}.")
        if "max_staff" in data:
            out.append(" ".join(f"{s} can take {phrase(rng, '<=')} {fmt(u)} people." for s, u in zip(shifts, data["max_staff"])))
        out.append("Staff numbers must be whole. " + phrase(rng, "goal_min"))
        return "\n".join(out)

    def sections(self, data, options):
        cons = ["(C1) coverage[t]: sum_{s : t in shift_periods[s]} staff[s] >= required[t]  for every period t"]
        code = ["required, shift_cost, shift_periods = data['required'], data['shift_cost'], data['shift_periods']",
                "T, S = range(len(required)), range(len(shift_cost))",
                "model = gp.Model('staff_scheduling')",
                "staff = model.addVars(S, lb=0, vtype=GRB.INTEGER, name='staff')",
                "model.setObjective(gp.quicksum(shift_cost[s] * staff[s] for s in S), GRB.MINIMIZE)",
                "model.addConstrs((gp.quicksum(staff[s] for s in S if t in shift_periods[s]) >= required[t] for t in T), name='coverage')"]
        if "max_staff" in data:
            cons.append("(C2) max_staff[s]: staff[s] <= max_staff[s]  for every shift s")
            code.append("model.addConstrs((staff[s] <= data['max_staff'][s] for s in S), name='max_staff')")
        return {"variables": "- staff[s] >= 0, integer: people assigned to shift pattern s",
                "objective": "minimize sum_s shift_cost[s] * staff[s]", "constraints": "\n".join(cons), "code": code}


# ================================================================================================
class MinCostFlow(Family):
    """Single-commodity min-cost flow.  Sources may send *up to* their supply (total supply exceeds
    total demand), sinks must receive *at least* their demand, transshipment nodes conserve flow
    (written inflow - outflow == 0)."""

    name = "min_cost_flow"
    kind = "LP"
    structure_keys = ("arcs",)

    def sample(self, rng, difficulty):
        n = int(rng.integers(4, 5 + 2 * difficulty))
        arcs = {(i, i + 1) for i in range(n - 1)}  # a backbone path keeps it feasible
        for _ in range(int(rng.integers(n, 2 * n + 1))):
            a, b = sorted(int(v) for v in rng.choice(n, size=2, replace=False))
            arcs.add((a, b) if rng.random() < 0.8 else (b, a))
        arcs = sorted(arcs)
        n_sinks = int(rng.integers(1, min(3, n - 3) + 1))  # keeps >= 1 transshipment node
        sinks = [n - 1 - k for k in range(n_sinks)]
        demand = [0] * n
        for s in sinks:
            demand[s] = int(rng.integers(8, 40))
        total = sum(demand)
        supply = [0] * n
        # Two sources: the first is limited (its limit binds), the second covers the rest.
        supply[0] = max(2, int(total * rng.uniform(0.3, 0.7)))
        supply[1] = total - supply[0] + int(rng.integers(5, 30))
        # Backbone links are costly but roomy; shortcuts are cheap but capped, so capacities bind.
        backbone = [b == a + 1 for a, b in arcs]
        cost = [int(rng.integers(8, 16)) if bb else int(rng.integers(1, 8)) for bb in backbone]
        cap = [supply[0] + supply[1] + int(rng.integers(0, 10)) if bb else int(rng.integers(max(2, total // 5), max(3, total * 3 // 4)))
               for bb in backbone]
        return {"supply": supply, "demand": demand, "arcs": [list(a) for a in arcs],
                "arc_cost": cost, "arc_capacity": cap}, {}

    def build(self, data, options):
        m = LinearModel(self.name)
        arcs = data["arcs"]
        f = [m.add_var(f"flow[{k}]", obj=c) for k, c in enumerate(data["arc_cost"])]

        def net_in(v):
            row = {}
            for k, (a, b) in enumerate(arcs):
                if b == v:
                    row[f[k]] = row.get(f[k], 0) + 1
                if a == v:
                    row[f[k]] = row.get(f[k], 0) - 1
            return row

        for v, s in enumerate(data["supply"]):
            if s > 0:
                m.add_row({j: -a for j, a in net_in(v).items()}, "<=", s, "supply")
        for v, d in enumerate(data["demand"]):
            if d > 0:
                m.add_row(net_in(v), ">=", d, "demand")
        for v, (s, d) in enumerate(zip(data["supply"], data["demand"])):
            if s == 0 and d == 0:
                m.add_row(net_in(v), "==", 0, "conservation")
        for k, cap in enumerate(data["arc_capacity"]):
            m.add_row({f[k]: 1}, "<=", cap, "capacity")
        return m

    def render(self, data, options, skin, rng):
        nodes = skin.names("node", len(data["supply"]))
        unit = skin.noun("commodity", True)
        out = [f"{_cap(skin.organization)} moves {unit} through a network of {len(nodes)} {skin.noun('node', True)}: {_join(nodes)}."]
        out += _node_balance_sentences(data, nodes, unit, skin, rng)
        out.append("Available one-way links:")
        for (a, b), c, cap in zip(data["arcs"], data["arc_cost"], data["arc_capacity"]):
            out.append(f"- {nodes[a]} -> {nodes[b]}: ${fmt(c)} per unit, {phrase(rng, '<=')} {fmt(cap)} {unit}")
        out.append("Flows may be fractional. " + phrase(rng, "goal_min"))
        return "\n".join(out)

    def sections(self, data, options):
        return {"variables": "- flow[k] >= 0, continuous: units sent along link k = (a, b)",
                "objective": "minimize sum_k arc_cost[k] * flow[k]",
                "constraints": "(C1) supply[v]: outflow(v) - inflow(v) <= supply[v]  for every node with supply > 0\n"
                               "(C2) demand[v]: inflow(v) - outflow(v) >= demand[v]  for every node with demand > 0\n"
                               "(C3) conservation[v]: inflow(v) - outflow(v) == 0  for every other node\n"
                               "(C4) capacity[k]: flow[k] <= arc_capacity[k]  for every link k\n"
                               "where inflow(v) = sum of flow[k] over links k = (a, v), outflow(v) = sum over links k = (v, b)",
                "code": ["supply, demand, arcs = data['supply'], data['demand'], data['arcs']",
                         "arc_cost, arc_capacity = data['arc_cost'], data['arc_capacity']",
                         "V, A = range(len(supply)), range(len(arcs))",
                         "model = gp.Model('min_cost_flow')",
                         "flow = model.addVars(A, lb=0, vtype=GRB.CONTINUOUS, name='flow')",
                         "inflow = {v: gp.quicksum(flow[k] for k in A if arcs[k][1] == v) for v in V}",
                         "outflow = {v: gp.quicksum(flow[k] for k in A if arcs[k][0] == v) for v in V}",
                         "model.setObjective(gp.quicksum(arc_cost[k] * flow[k] for k in A), GRB.MINIMIZE)",
                         "model.addConstrs((outflow[v] - inflow[v] <= supply[v] for v in V if supply[v] > 0), name='supply')",
                         "model.addConstrs((inflow[v] - outflow[v] >= demand[v] for v in V if demand[v] > 0), name='demand')",
                         "model.addConstrs((inflow[v] - outflow[v] == 0 for v in V if supply[v] == 0 and demand[v] == 0), name='conservation')",
                         "model.addConstrs((flow[k] <= arc_capacity[k] for k in A), name='capacity')"]}


# ================================================================================================
class Inventory(Family):
    name = "inventory"
    kind = "LP"

    def sample(self, rng, difficulty):
        T = int(rng.integers(3, 4 + 2 * difficulty))
        demand = _ints(rng, 10, 80, T)
        cap = _ints(rng, 30, 110, T)
        for t in range(T):  # cumulative capacity covers cumulative demand
            while sum(cap[: t + 1]) < sum(demand[: t + 1]) + 5:
                cap[t] += 15
        data = {"demand": demand, "unit_cost": _ints(rng, 5, 30, T), "capacity": cap,
                "holding_cost": int(rng.integers(1, 6)), "initial_stock": int(rng.integers(2, 20))}
        setup = difficulty >= 2 and rng.random() < 0.6
        if setup:
            data["setup_cost"] = _ints(rng, 50, 300, T)
        return data, {"setup": setup}

    def is_mip(self, options):
        return bool(options.get("setup"))

    def build(self, data, options):
        m = LinearModel(self.name)
        T = len(data["demand"])
        x = [m.add_var(f"produce[{t}]", obj=data["unit_cost"][t]) for t in range(T)]
        s = [m.add_var(f"stock[{t}]", obj=data["holding_cost"]) for t in range(T)]
        z = [m.add_var(f"setup[{t}]", ub=1, integer=True, obj=data["setup_cost"][t]) for t in range(T)] if options.get("setup") else None
        for t in range(T):
            row = {x[t]: 1, s[t]: -1}
            if t:
                row[s[t - 1]] = 1
            m.add_row(row, "==", data["demand"][t] - (data["initial_stock"] if t == 0 else 0), "balance")
        for t in range(T):
            row = {x[t]: 1}
            if z is not None:
                row[z[t]] = -data["capacity"][t]
                m.add_row(row, "<=", 0, "capacity")
            else:
                m.add_row(row, "<=", data["capacity"][t], "capacity")
        return m

    def render(self, data, options, skin, rng):
        per = skin.names("period", len(data["demand"]))
        prod = skin.noun("product")
        out = [f"{_cap(skin.organization)} plans production of one {prod} over {len(per)} {skin.noun('period', True)} ({_join(per)}). It starts with {fmt(data['initial_stock'])} units in stock."]
        for p, d, c, cap in zip(per, data["demand"], data["unit_cost"], data["capacity"]):
            out.append(f"In {p}: demand is {fmt(d)} units (must be met on time), producing costs ${fmt(c)} per unit, and {phrase(rng, '<=')} {fmt(cap)} units can be made.")
        out.append(f"Units left at the end of a {skin.noun('period')} cost ${fmt(data['holding_cost'])} each to hold.")
        if options.get("setup"):
            out.append("Producing anything in a period requires a setup, costing " +
                       _join([f"${fmt(v)} in {p}" for p, v in zip(per, data["setup_cost"])]) + ".")
        out.append(phrase(rng, "goal_min"))
        return "\n".join(out)

    def sections(self, data, options):
        setup = options.get("setup")
        variables = ["- produce[t] >= 0, continuous: units made in period t",
                     "- stock[t] >= 0, continuous: units held at the end of period t"]
        objective = "minimize sum_t (unit_cost[t] * produce[t] + holding_cost * stock[t])"
        cap = "(C2) capacity[t]: produce[t] <= capacity[t]" + (" * setup[t]" if setup else "") + "  for every period t"
        code = ["demand, unit_cost, capacity = data['demand'], data['unit_cost'], data['capacity']",
                "holding_cost, initial_stock = data['holding_cost'], data['initial_stock']",
                "T = range(len(demand))",
                "model = gp.Model('inventory')",
                "produce = model.addVars(T, lb=0, vtype=GRB.CONTINUOUS, name='produce')",
                "stock = model.addVars(T, lb=0, vtype=GRB.CONTINUOUS, name='stock')"]
        if setup:
            variables.append("- setup[t] binary: 1 if production is set up in period t")
            objective = "minimize sum_t (unit_cost[t] * produce[t] + holding_cost * stock[t] + setup_cost[t] * setup[t])"
            code += ["setup = model.addVars(T, vtype=GRB.BINARY, name='setup')",
                     "model.setObjective(gp.quicksum(unit_cost[t] * produce[t] + holding_cost * stock[t] + data['setup_cost'][t] * setup[t] for t in T), GRB.MINIMIZE)"]
        else:
            code.append("model.setObjective(gp.quicksum(unit_cost[t] * produce[t] + holding_cost * stock[t] for t in T), GRB.MINIMIZE)")
        code.append("model.addConstrs(((stock[t - 1] if t > 0 else initial_stock) + produce[t] - demand[t] == stock[t] for t in T), name='balance')")
        code.append("model.addConstrs((produce[t] <= capacity[t]" + (" * setup[t]" if setup else "") + " for t in T), name='capacity')")
        return {"variables": "\n".join(variables), "objective": objective,
                "constraints": "(C1) balance[t]: stock[t-1] + produce[t] - demand[t] == stock[t]  (stock[-1] = initial_stock)\n" + cap,
                "code": code}


# ================================================================================================
class BinPacking(Family):
    name = "bin_packing"
    kind = "MILP"

    def sample(self, rng, difficulty):
        n = int(rng.integers(4, 5 + 2 * difficulty))
        cap = int(rng.integers(50, 120))
        sizes = _ints(rng, max(5, cap // 6), int(cap * 0.7), n)
        bins: list[int] = []  # first-fit decreasing gives a feasible number of bins
        for s in sorted(sizes, reverse=True):
            for b in range(len(bins)):
                if bins[b] + s <= cap:
                    bins[b] += s
                    break
            else:
                bins.append(s)
        return {"size": sizes, "bin_capacity": cap, "bins_available": len(bins)}, {}

    def build(self, data, options):
        m = LinearModel(self.name)
        n, B = len(data["size"]), data["bins_available"]
        y = [m.add_var(f"used[{b}]", ub=1, integer=True, obj=1) for b in range(B)]
        x = {(i, b): m.add_var(f"put[{i},{b}]", ub=1, integer=True) for i in range(n) for b in range(B)}
        for i in range(n):
            m.add_row({x[i, b]: 1 for b in range(B)}, "==", 1, "assign")
        for b in range(B):
            row = {x[i, b]: data["size"][i] for i in range(n)}
            row[y[b]] = -data["bin_capacity"]
            m.add_row(row, "<=", 0, "capacity")
        return m

    def render(self, data, options, skin, rng):
        items = skin.names("item", len(data["size"]))
        cont = skin.noun("container", True)
        out = [f"{_cap(skin.organization)} must load {len(items)} {skin.noun('item', True)} into {cont}. Each {skin.noun('container')} holds {phrase(rng, '<=')} {fmt(data['bin_capacity'])} kg and {fmt(data['bins_available'])} identical {cont} are available."]
        weight = _pick(rng, ("{i} weighs {s} kg.", "{i} has a weight of {s} kg.", "The weight of {i} is {s} kg.",
                             "{i} comes to {s} kg."))
        out.append(" ".join(weight.format(i=i, s=fmt(s)) for i, s in zip(items, data["size"])))
        out.append(f"Each {skin.noun('item')} goes into {phrase(rng, '==')} one {skin.noun('container')} and cannot be split.")
        out.append(f"What is the minimum number of {cont} that must be used?")
        return "\n".join(out)

    def sections(self, data, options):
        return {"variables": "- used[b] binary: 1 if container b is used\n- put[i,b] binary: 1 if item i goes into container b",
                "objective": "minimize sum_b used[b]",
                "constraints": "(C1) assign[i]: sum_b put[i,b] == 1  for every item i\n"
                               "(C2) capacity[b]: sum_i size[i] * put[i,b] <= bin_capacity * used[b]  for every container b",
                "code": ["size, bin_capacity, bins_available = data['size'], data['bin_capacity'], data['bins_available']",
                         "I, B = range(len(size)), range(bins_available)",
                         "model = gp.Model('bin_packing')",
                         "used = model.addVars(B, vtype=GRB.BINARY, name='used')",
                         "put = model.addVars(I, B, vtype=GRB.BINARY, name='put')",
                         "model.setObjective(used.sum(), GRB.MINIMIZE)",
                         "model.addConstrs((put.sum(i, '*') == 1 for i in I), name='assign')",
                         "model.addConstrs((gp.quicksum(size[i] * put[i, b] for i in I) <= bin_capacity * used[b] for b in B), name='capacity')"]}


# ================================================================================================
class Portfolio(Family):
    """Mean-variance allocation (quadratic objective): maximize expected return minus
    risk_aversion x variance, investing at most the whole reserve, each holding capped."""

    name = "portfolio"
    kind = "QP"
    frozen_keys = ("covariance",)

    def sample(self, rng, difficulty):
        n = int(rng.integers(2, 4 + 2 * difficulty))
        factors = rng.normal(0, 0.12, size=(n, 2))
        cov = factors @ factors.T + np.diag(rng.uniform(0.005, 0.03, size=n))
        cov = np.round(cov, 4)
        cov = (cov + cov.T) / 2
        while np.linalg.eigvalsh(cov).min() <= 1e-4:
            cov = np.round(cov + np.eye(n) * 0.002, 4)
        mu = [round(float(v), 3) for v in rng.uniform(0.02, 0.15, size=n)]
        # Low risk aversion makes full investment attractive (the budget binds); a cap below the
        # unconstrained favourite's weight makes the cap bind.
        return {"expected_return": mu, "covariance": [[float(v) for v in row] for row in cov],
                "risk_aversion": int(rng.integers(1, 5)),
                "max_weight": round(float(rng.uniform(1.0 / n + 0.05, min(0.6, 1.0 / n + 0.3))), 2)}, {}

    def build(self, data, options):
        m = LinearModel(self.name, maximize=True)
        n = len(data["expected_return"])
        w = [m.add_var(f"weight[{i}]", obj=r) for i, r in enumerate(data["expected_return"])]
        cov, lam = data["covariance"], data["risk_aversion"]
        m.quad = {(i, j): -lam * cov[i][j] for i in range(n) for j in range(n) if cov[i][j] != 0}
        m.add_row({wi: 1 for wi in w}, "<=", 1, "budget")
        for i in range(n):
            m.add_row({w[i]: 1}, "<=", data["max_weight"], "max_weight")
        return m

    def render(self, data, options, skin, rng):
        assets = skin.names("asset", len(data["expected_return"]))
        out = [f"{_cap(skin.organization)} decides which fraction of its reserve to place in each of {len(assets)} {skin.noun('asset', True)}: {_join(assets)}. "
               "Fractions are non-negative (no short selling) and together may not exceed the whole reserve; anything not invested earns nothing."]
        ret = _pick(rng, ("{a} has an expected return of {r}.", "The expected return of {a} is {r}.",
                          "{a} is expected to return {r}.", "On average {a} returns {r}."))
        out.append(" ".join(ret.format(a=a, r=fmt(r)) for a, r in zip(assets, data["expected_return"])))
        out.append("Covariance of returns:")
        out.append(_table(assets, assets, data["covariance"]))
        out.append(_pick(rng, ("No single holding may exceed {w} of the reserve.",
                               "At most {w} of the reserve may go into any one holding.",
                               "Each holding is capped at {w} of the reserve.",
                               "The cap per holding is {w} of the reserve.",
                               "Any one fund may receive up to {w} of the reserve.",
                               "A single position can take no more than {w} of the reserve.")).format(
            w=fmt(data["max_weight"])))
        out.append(_pick(rng, ("The goal is to maximize expected return minus {k} times the variance of the portfolio return. ",
                               "The objective is the expected return less {k} times the variance of the portfolio return. ",
                               "Risk is penalised: maximize expected return minus {k} times the portfolio variance. ",
                               "It scores a portfolio as expected return minus {k} times the variance of its return. ")).format(
            k=fmt(data["risk_aversion"])) + 
                   "What is the best achievable value of this objective?")
        return "\n".join(out)

    def sections(self, data, options):
        return {"variables": "- weight[i] >= 0, continuous: fraction of the reserve in asset i",
                "objective": "maximize sum_i expected_return[i] * weight[i] - risk_aversion * sum_{i,j} covariance[i][j] * weight[i] * weight[j]",
                "constraints": "(C1) budget: sum_i weight[i] <= 1\n"
                               "(C2) max_weight[i]: weight[i] <= max_weight  for every asset i",
                "code": ["mu, cov = data['expected_return'], data['covariance']",
                         "risk_aversion, max_weight = data['risk_aversion'], data['max_weight']",
                         "N = range(len(mu))",
                         "model = gp.Model('portfolio')",
                         "weight = model.addVars(N, lb=0, vtype=GRB.CONTINUOUS, name='weight')",
                         "variance = gp.quicksum(cov[i][j] * weight[i] * weight[j] for i in N for j in N)",
                         "model.setObjective(gp.quicksum(mu[i] * weight[i] for i in N) - risk_aversion * variance, GRB.MAXIMIZE)",
                         "model.addConstr(weight.sum() <= 1, name='budget')",
                         "model.addConstrs((weight[i] <= max_weight for i in N), name='max_weight')"]}


# ================================================================================================
class CapitalBudgeting(Family):
    """Multi-period project selection with precedence: a MILP with a budget per period and
    'project b only if project a' links."""

    name = "capital_budgeting"
    kind = "MILP"
    structure_keys = ("requires",)

    def sample(self, rng, difficulty):
        n = int(rng.integers(3, 5 + 2 * difficulty))
        periods = int(rng.integers(2, 2 + difficulty))
        spend = [_ints(rng, 5, 40, n) for _ in range(periods)]
        budget = [int(sum(row) * rng.uniform(0.35, 0.6)) for row in spend]
        pairs = []
        for _ in range(int(rng.integers(1, 1 + difficulty))):
            a, b = (int(v) for v in rng.choice(n, size=2, replace=False))
            if [b, a] not in pairs and [a, b] not in pairs:
                pairs.append([a, b])
        npv = _ints(rng, 10, 99, n)
        for a, b in pairs:  # b is attractive, its prerequisite a is not: the link matters
            npv[a] = int(rng.integers(5, 25))
            npv[b] = int(rng.integers(60, 99))
        return {"npv": npv, "spend": spend, "budget": budget, "requires": pairs}, {}

    def build(self, data, options):
        m = LinearModel(self.name, maximize=True)
        x = [m.add_var(f"fund[{i}]", ub=1, integer=True, obj=v) for i, v in enumerate(data["npv"])]
        for p, b in enumerate(data["budget"]):
            m.add_row({x[i]: c for i, c in enumerate(data["spend"][p])}, "<=", b, "budget")
        for a, b in data["requires"]:
            m.add_row({x[b]: 1, x[a]: -1}, "<=", 0, "precedence")
        return m

    def render(self, data, options, skin, rng):
        items = skin.names("project", len(data["npv"]))
        per = skin.names("period", len(data["budget"]))
        out = [f"{_cap(skin.organization)} is selecting among {len(items)} {skin.noun('project', True)} ({_join(items)}); each is accepted whole or rejected."]
        out.append(" ".join(f"{i} has a net present value of {fmt(v)} thousand dollars." for i, v in zip(items, data["npv"])))
        out.append("Spending (thousand dollars) needed in each period:")
        out.append(_matrix_text(rng, per, items, data["spend"], lambda r, its: f"In {r}: {its}."))
        out.append(" ".join(f"Spending in {p} may be {phrase(rng, '<=')} {fmt(b)} thousand dollars." for p, b in zip(per, data["budget"])))
        out.append(" ".join(f"{items[b]} can only be accepted if {items[a]} is accepted." for a, b in data["requires"]))
        out.append("What is the maximum total net present value?")
        return "\n".join(out)

    def sections(self, data, options):
        return {"variables": "- fund[i] binary: 1 if project i is accepted",
                "objective": "maximize sum_i npv[i] * fund[i]",
                "constraints": "(C1) budget[p]: sum_i spend[p][i] * fund[i] <= budget[p]  for every period p\n"
                               "(C2) precedence[(a, b)]: fund[b] <= fund[a]  for every pair (a, b) in requires",
                "code": ["npv, spend, budget, requires = data['npv'], data['spend'], data['budget'], data['requires']",
                         "I, P = range(len(npv)), range(len(budget))",
                         "model = gp.Model('capital_budgeting')",
                         "fund = model.addVars(I, vtype=GRB.BINARY, name='fund')",
                         "model.setObjective(gp.quicksum(npv[i] * fund[i] for i in I), GRB.MAXIMIZE)",
                         "model.addConstrs((gp.quicksum(spend[p][i] * fund[i] for i in I) <= budget[p] for p in P), name='budget')",
                         "model.addConstrs((fund[b] <= fund[a] for a, b in requires), name='precedence')"]}


# ================================================================================================
class TravelingSalesman(Family):
    """Small symmetric TSP, Miller-Tucker-Zemlin subtour elimination."""
    name = "tsp"
    kind = "MILP"

    def sample(self, rng, difficulty):
        n = int(rng.integers(4, 5 + difficulty))
        dist = [[0] * n for _ in range(n)]
        for i in range(n):
            for j in range(i + 1, n):
                dist[i][j] = dist[j][i] = int(rng.integers(5, 60))
        return {"dist": dist}, {}

    def build(self, data, options):
        m = LinearModel(self.name)
        d = data["dist"]
        n = len(d)
        x = {(i, j): m.add_var(f"x[{i},{j}]", ub=1, integer=True, obj=d[i][j])
             for i in range(n) for j in range(n) if i != j}
        u = {i: m.add_var(f"u[{i}]", lb=1, ub=n - 1) for i in range(1, n)}
        for i in range(n):
            m.add_row({x[i, j]: 1 for j in range(n) if j != i}, "==", 1, "degree")   # leave i once
        for j in range(n):
            m.add_row({x[i, j]: 1 for i in range(n) if i != j}, "==", 1, "degree")   # enter j once
        for (i, j), v in x.items():
            if i and j:
                m.add_row({u[i]: 1, u[j]: -1, v: n}, "<=", n - 1, "mtz")
        return m

    def render(self, data, options, skin, rng):
        stops = skin.names("node", len(data["dist"]))
        vehicle = skin.noun("container")
        out = [f"{_cap(skin.organization)} sends one {vehicle} from {stops[0]} on a round trip that visits each of "
               f"{_join(stops[1:])} {phrase(rng, '==')} once and returns to {stops[0]}.",
               rng.choice(["Travel distances in kilometres (the same in both directions):",
                           "Distances between the stops, in kilometres:", "Kilometres between each pair of stops:"]),
               _matrix_text(rng, stops, stops, data["dist"], lambda r, items: f"From {r}: {items}."),
               rng.choice(["What is the length of the shortest such round trip?",
                           "Find the shortest route that visits every stop once.",
                           "Determine the minimum total distance of the trip."])]
        return "\n".join(str(line) for line in out)

    def sections(self, data, options):
        return {"variables": "- x[i,j] binary (i != j): 1 if the trip goes from stop i straight to stop j\n"
                             "- u[i] in [1, n-1], continuous, for i >= 1: position of stop i in the trip (MTZ)",
                "objective": "minimize sum_{i != j} dist[i][j] * x[i,j]",
                "constraints": "(C1) leave[i]: sum_j x[i,j] == 1  for every stop i\n"
                               "(C2) enter[j]: sum_i x[i,j] == 1  for every stop j\n"
                               "(C3) mtz[i,j]: u[i] - u[j] + n * x[i,j] <= n - 1  for i != j, both >= 1",
                "code": ["dist = data['dist']",
                         "n = len(dist)",
                         "N = range(n)",
                         "arcs = [(i, j) for i in N for j in N if i != j]",
                         "model = gp.Model('tsp')",
                         "x = model.addVars(arcs, vtype=GRB.BINARY, name='x')",
                         "u = model.addVars(range(1, n), lb=1, ub=n - 1, name='u')",
                         "model.setObjective(gp.quicksum(dist[i][j] * x[i, j] for i, j in arcs), GRB.MINIMIZE)",
                         "model.addConstrs((x.sum(i, '*') == 1 for i in N), name='leave')",
                         "model.addConstrs((x.sum('*', j) == 1 for j in N), name='enter')",
                         "model.addConstrs((u[i] - u[j] + n * x[i, j] <= n - 1 for i, j in arcs if i and j), name='mtz')"]}


# ================================================================================================
class MachineScheduling(Family):
    """Jobs on identical parallel machines, minimizing the makespan."""
    name = "machine_scheduling"
    kind = "MILP"

    def sample(self, rng, difficulty):
        jobs = int(rng.integers(4, 6 + 2 * difficulty))
        machines = int(rng.integers(2, 3 + (difficulty >= 2)))
        return {"time": _ints(rng, 2, 30, jobs), "machines": machines}, {}

    structure_keys = ("machines",)

    def build(self, data, options):
        m = LinearModel(self.name)
        J, M = range(len(data["time"])), range(data["machines"])
        x = {(j, k): m.add_var(f"x[{j},{k}]", ub=1, integer=True) for j in J for k in M}
        c = m.add_var("makespan", obj=1)
        for j in J:
            m.add_row({x[j, k]: 1 for k in M}, "==", 1, "assign")
        for k in M:
            m.add_row({**{x[j, k]: data["time"][j] for j in J}, c: -1}, "<=", 0, "makespan")
        return m

    def render(self, data, options, skin, rng):
        jobs = skin.names("task", len(data["time"]))
        crews = skin.names("worker", data["machines"])
        out = [f"{_cap(skin.organization)} must split {len(jobs)} {skin.noun('task', True)} among "
               f"{_join(crews)}, who work in parallel; each {skin.noun('task')} is done entirely by one of them.",
               " ".join(f"{_cap(t)} takes {fmt(v)} hours." for t, v in zip(jobs, data["time"])),
               rng.choice(["Everyone starts at the same time.", "All of them start together.",
                           "Work starts for everyone at once."]),
               rng.choice(["What is the earliest time by which every job can be finished?",
                           "Minimize the makespan: the time at which the last person finishes.",
                           "Find the smallest possible finishing time of the whole workload."])]
        return "\n".join(str(line) for line in out)

    def sections(self, data, options):
        return {"variables": "- x[j,k] binary: 1 if job j goes to machine k\n"
                             "- makespan >= 0, continuous: the time the last machine finishes",
                "objective": "minimize makespan",
                "constraints": "(C1) assign[j]: sum_k x[j,k] == 1  for every job j\n"
                               "(C2) makespan[k]: sum_j time[j] * x[j,k] <= makespan  for every machine k",
                "code": ["time = data['time']",
                         "J, M = range(len(time)), range(data['machines'])",
                         "model = gp.Model('machine_scheduling')",
                         "x = model.addVars(J, M, vtype=GRB.BINARY, name='x')",
                         "makespan = model.addVar(lb=0, name='makespan')",
                         "model.setObjective(makespan, GRB.MINIMIZE)",
                         "model.addConstrs((x.sum(j, '*') == 1 for j in J), name='assign')",
                         "model.addConstrs((gp.quicksum(time[j] * x[j, k] for j in J) <= makespan for k in M), "
                         "name='makespan')"]}


# ================================================================================================
class VehicleRouting(Family):
    """Small capacitated VRP: vehicles of one capacity leave a depot (stop 0), every customer is
    visited once; Miller-Tucker-Zemlin load variables cut subtours and enforce the capacity."""
    name = "vrp"
    kind = "MILP"

    def sample(self, rng, difficulty):
        n = 1 + int(rng.integers(3, 4 + difficulty))      # the depot and 3..6 customers (7+ validate slowly)
        dist = [[0] * n for _ in range(n)]
        for i in range(n):
            for j in range(i + 1, n):
                # a central depot: one more route is cheap, so the fleet limit binds
                dist[i][j] = dist[j][i] = int(rng.integers(4, 25)) if i == 0 else int(rng.integers(20, 60))
        demand = _ints(rng, 2, 9, n - 1)
        capacity = max(max(demand) + 1, int(sum(demand) * rng.uniform(0.35, 0.6)))
        vehicles = -(-sum(demand) // capacity)
        return {"dist": dist, "demand": demand, "capacity": capacity, "vehicles": vehicles}, {}

    def build(self, data, options):
        m = LinearModel(self.name)
        d, q, cap = data["dist"], data["demand"], data["capacity"]
        n = len(d)
        x = {(i, j): m.add_var(f"x[{i},{j}]", ub=1, integer=True, obj=d[i][j])
             for i in range(n) for j in range(n) if i != j}
        load = {i: m.add_var(f"load[{i}]", lb=q[i - 1], ub=cap) for i in range(1, n)}
        for i in range(1, n):
            m.add_row({x[i, j]: 1 for j in range(n) if j != i}, "==", 1, "leave")
        for j in range(1, n):
            m.add_row({x[i, j]: 1 for i in range(n) if i != j}, "==", 1, "enter")
        m.add_row({x[0, j]: 1 for j in range(1, n)}, "<=", data["vehicles"], "fleet")
        for (i, j), v in x.items():
            if i and j:
                m.add_row({load[i]: 1, load[j]: -1, v: cap}, "<=", cap - q[j - 1], "load")
        return m

    def render(self, data, options, skin, rng):
        stops = skin.names("node", len(data["dist"]))
        depot, customers = stops[0], stops[1:]
        vehicle, unit = skin.noun("container"), skin.noun("commodity", True)
        out = [f"{_cap(skin.organization)} serves {len(customers)} {skin.noun('node', True)} ({_join(customers)}) from "
               f"{depot} with {phrase(rng, '<=')} {fmt(data['vehicles'])} vehicles ({vehicle}s), each carrying "
               f"{phrase(rng, '<=')} {fmt(data['capacity'])} {unit}.",
               " ".join(f"{c} needs {fmt(v)} {unit}." for c, v in zip(customers, data["demand"])),
               f"Every vehicle used starts at {depot}, visits some of the others and returns to {depot}; each of "
               f"them is visited by exactly one vehicle, which delivers its whole need.",
               rng.choice(["Travel distances in kilometres (the same in both directions):",
                           "Distances between the locations, in kilometres:"]),
               _matrix_text(rng, stops, stops, data["dist"], lambda r, items: f"From {r}: {items}."),
               rng.choice(["What is the minimum total distance driven?",
                           "Find the routes with the smallest total distance.",
                           "Determine the least total distance of all routes."])]
        return "\n".join(str(line) for line in out)

    def sections(self, data, options):
        return {"variables": "- x[i,j] binary (i != j): 1 if a vehicle drives from location i straight to j (0 is the depot)\n"
                             "- load[i] in [demand[i-1], capacity], continuous, for customers i >= 1: load delivered up to i",
                "objective": "minimize sum_{i != j} dist[i][j] * x[i,j]",
                "constraints": "(C1) leave[i]: sum_j x[i,j] == 1  for every customer i\n"
                               "(C2) enter[j]: sum_i x[i,j] == 1  for every customer j\n"
                               "(C3) fleet: sum_j x[0,j] <= vehicles\n"
                               "(C4) load[i,j]: load[i] - load[j] + capacity * x[i,j] <= capacity - demand[j-1]  for customers i != j",
                "code": ["dist, demand, capacity, vehicles = data['dist'], data['demand'], data['capacity'], data['vehicles']",
                         "n = len(dist)",
                         "N, C = range(n), range(1, n)",
                         "arcs = [(i, j) for i in N for j in N if i != j]",
                         "model = gp.Model('vrp')",
                         "x = model.addVars(arcs, vtype=GRB.BINARY, name='x')",
                         "load = model.addVars(C, lb={i: demand[i - 1] for i in C}, ub=capacity, name='load')",
                         "model.setObjective(gp.quicksum(dist[i][j] * x[i, j] for i, j in arcs), GRB.MINIMIZE)",
                         "model.addConstrs((x.sum(i, '*') == 1 for i in C), name='leave')",
                         "model.addConstrs((x.sum('*', j) == 1 for j in C), name='enter')",
                         "model.addConstr(gp.quicksum(x[0, j] for j in C) <= vehicles, name='fleet')",
                         "model.addConstrs((load[i] - load[j] + capacity * x[i, j] <= capacity - demand[j - 1] "
                         "for i in C for j in C if i != j), name='load')"]}


# ================================================================================================
class NetworkDesign(MinCostFlow):
    """Fixed-charge network design: a link carries flow only if it is opened, at a fixed cost, up
    to its capacity; the flow structure is min_cost_flow's (supply caps, demand floors,
    conservation at the other nodes)."""
    name = "network_design"
    kind = "MILP"

    def sample(self, rng, difficulty):
        data, options = super().sample(rng, difficulty)
        total = sum(data["demand"])
        # a fixed charge comparable to a link's variable cost at full use: opening fewer links pays
        data["fixed_cost"] = [int(rng.integers(max(5, total // 4), max(6, total * 2)))
                              for _ in data["arcs"]]
        return data, options

    def build(self, data, options):
        flow_model = super().build(data, options)
        m = LinearModel(self.name)
        f = [m.add_var(f"flow[{k}]", obj=c) for k, c in enumerate(data["arc_cost"])]
        y = [m.add_var(f"open[{k}]", ub=1, integer=True, obj=c) for k, c in enumerate(data["fixed_cost"])]
        for row in flow_model.rows:
            if row.group != "capacity":
                m.add_row({f[j]: a for j, a in row.coeffs.items()}, row.sense, row.rhs, row.group)
        for k, cap in enumerate(data["arc_capacity"]):
            m.add_row({f[k]: 1, y[k]: -cap}, "<=", 0, "link")
        return m

    def render(self, data, options, skin, rng):
        nodes = skin.names("node", len(data["supply"]))
        unit = skin.noun("commodity", True)
        out = [f"{_cap(skin.organization)} designs a network of {len(nodes)} {skin.noun('node', True)} ({_join(nodes)}) to move {unit}."]
        out += _node_balance_sentences(data, nodes, unit, skin, rng)
        out.append("A one-way link carries nothing unless it is opened; opening it costs a fixed amount, and an open "
                   "link carries up to its capacity at a cost per unit. Candidate links:")
        for (a, b), c, cap, fc in zip(data["arcs"], data["arc_cost"], data["arc_capacity"], data["fixed_cost"]):
            out.append(f"- {nodes[a]} -> {nodes[b]}: opening ${fmt(fc)}, ${fmt(c)} per unit, {phrase(rng, '<=')} "
                       f"{fmt(cap)} {unit}")
        out.append("Each link is either opened or not; flows may be fractional. "
                   "What is the minimum total of opening and shipping costs?")
        return "\n".join(out)

    def sections(self, data, options):
        base = super().sections(data, options)
        code = [line for line in base["code"] if "name='capacity'" not in line]
        code[0:2] = ["supply, demand, arcs = data['supply'], data['demand'], data['arcs']",
                     "arc_cost, arc_capacity, fixed_cost = data['arc_cost'], data['arc_capacity'], data['fixed_cost']"]
        code = [line.replace("gp.Model('min_cost_flow')", "gp.Model('network_design')") for line in code]
        code.insert(code.index("flow = model.addVars(A, lb=0, vtype=GRB.CONTINUOUS, name='flow')") + 1,
                    "is_open = model.addVars(A, vtype=GRB.BINARY, name='open')")
        code = [line.replace("gp.quicksum(arc_cost[k] * flow[k] for k in A)",
                             "gp.quicksum(arc_cost[k] * flow[k] + fixed_cost[k] * is_open[k] for k in A)")
                for line in code]
        code.append("model.addConstrs((flow[k] <= arc_capacity[k] * is_open[k] for k in A), name='link')")
        return {"variables": "- flow[k] >= 0, continuous: units sent along link k = (a, b)\n"
                             "- open[k] binary: 1 if link k is opened",
                "objective": "minimize sum_k (arc_cost[k] * flow[k] + fixed_cost[k] * open[k])",
                "constraints": base["constraints"].replace(
                    "(C4) capacity[k]: flow[k] <= arc_capacity[k]  for every link k",
                    "(C4) link[k]: flow[k] <= arc_capacity[k] * open[k]  for every link k"),
                "code": code}



# ================================================================================================
class PlotLayout(Family):
    """Rectangular fenced yards side by side along a road (a QCQP): each yard's length along the
    road times its depth must reach its required area (a bilinear, nonconvex constraint), the
    lengths share the road's frontage, d>=2 may cap the depth of every yard and ask for whole
    meters (a MIQCP); minimize the fencing of all four sides. Solved by SCIP (the shim routes
    quadratic constraints there)."""

    name = "plot_layout"
    kind = "QCQP"

    def sample(self, rng, difficulty):
        n = int(rng.integers(1, 2 + 2 * difficulty))
        area = _ints(rng, 20, 400, n)
        root = sum(float(np.sqrt(a)) for a in area)
        # a frontage below the square yards' total length makes the road bind (the yards get deeper)
        data = {"area": area, "fence_cost": _ints(rng, 2, 15, n),
                "frontage": max(2, int(round(root * rng.uniform(0.55, 0.9))))}
        if difficulty >= 2 and rng.random() < 0.6:   # binds for the deepest yard
            data["depth"] = int(np.ceil(max(float(np.sqrt(a)) for a in area) * rng.uniform(1.05, 1.6)))
        return data, {"integer": difficulty >= 2 and rng.random() < 0.5}

    def build(self, data, options):
        m = LinearModel(self.name)
        integer = options.get("integer", False)
        length = [m.add_var(f"length[{i}]", integer=integer, obj=2 * c) for i, c in enumerate(data["fence_cost"])]
        width = [m.add_var(f"width[{i}]", integer=integer, obj=2 * c) for i, c in enumerate(data["fence_cost"])]
        for i, a in enumerate(data["area"]):
            m.add_row({}, ">=", a, "area", quad={(length[i], width[i]): 1.0})
        m.add_row({v: 1.0 for v in length}, "<=", data["frontage"], "frontage")
        for v in width if "depth" in data else ():
            m.add_row({v: 1.0}, "<=", data["depth"], "depth")
        return m

    def render(self, data, options, skin, rng):
        yards = skin.names("zone", len(data["area"]))
        out = [f"{_cap(skin.organization)} is fencing off {len(yards)} rectangular "
               f"{'yard' if len(yards) == 1 else 'yards'}, one for each of {_join(yards)}, side by side along a "
               "service road. A yard's length runs along the road and its depth away from it, both in meters."]
        area = _pick(rng, ("The yard for {y} must cover {p} {a} square meters.",
                           "The yard for {y} needs {p} {a} square meters of ground.",
                           "{y} requires a yard of {p} {a} square meters.",
                           "The area of the yard for {y} must be {p} {a} square meters."))
        out.append(" ".join(area.format(y=y, p=phrase(rng, ">="), a=fmt(a)) for y, a in zip(yards, data["area"])))
        cost = _pick(rng, ("Fencing the yard for {y} costs ${c} per meter.",
                           "Fence for the {y} yard costs ${c} per meter.",
                           "Each meter of fence around the yard for {y} costs ${c}."))
        out.append(" ".join(cost.format(y=y, c=fmt(c)) for y, c in zip(yards, data["fence_cost"])))
        out.append(_pick(rng, ("All four sides of every yard are fenced.", "Every yard is fenced on all four sides.",
                               "Each yard needs fence along its whole perimeter.")))
        out.append(_pick(rng, ("Together the lengths along the road may total {p} {r} meters.",
                               "The road offers {p} {r} meters of frontage for all the yards together.",
                               "The yards' lengths along the road add up to {p} {r} meters.")).format(
            p=phrase(rng, "<="), r=fmt(data["frontage"])))
        if "depth" in data:
            out.append(_pick(rng, ("No yard may be deeper than {d} meters.",
                                   "The land behind the road is {d} meters deep, so no yard can reach further back.",
                                   "Each yard's depth is limited to {d} meters.")).format(d=fmt(data["depth"])))
        if options.get("integer"):
            out.append("Lengths and depths must be whole numbers of meters.")
        out.append(phrase(rng, "goal_min"))
        return "\n".join(out)

    def sections(self, data, options):
        integer = "integer" if options.get("integer") else "continuous"
        cons = ["(C1) area[i]: length[i] * width[i] >= area[i]  for every yard i (quadratic)",
                "(C2) frontage: sum_i length[i] <= frontage"]
        code = ["area, cost = data['area'], data['fence_cost']",
                "Y = range(len(area))",
                "model = gp.Model('plot_layout')",
                f"length = model.addVars(Y, lb=0, vtype={_vtype(options)}, name='length')",
                f"width = model.addVars(Y, lb=0, vtype={_vtype(options)}, name='width')",
                "model.setObjective(gp.quicksum(2 * cost[i] * (length[i] + width[i]) for i in Y), GRB.MINIMIZE)",
                "model.addConstrs((length[i] * width[i] >= area[i] for i in Y), name='area')",
                "model.addConstr(length.sum() <= data['frontage'], name='frontage')"]
        if "depth" in data:
            cons.append("(C3) depth[i]: width[i] <= depth  for every yard i")
            code.append("model.addConstrs((width[i] <= data['depth'] for i in Y), name='depth')")
        return {"variables": f"- length[i] >= 0, {integer}: meters of yard i along the road\n"
                             f"- width[i] >= 0, {integer}: meters of yard i away from the road (its depth)",
                "objective": "minimize sum_i 2 * fence_cost[i] * (length[i] + width[i])  (the fenced perimeters)",
                "constraints": "\n".join(cons), "code": code}

FAMILIES: dict[str, Family] = {f.name: f for f in (
    ProductionMix(), Diet(), Blending(), Transportation(), Assignment(), Knapsack(), FacilityLocation(),
    SetCover(), StaffScheduling(), MinCostFlow(), Inventory(), BinPacking(), Portfolio(), CapitalBudgeting(),
    TravelingSalesman(), MachineScheduling(), VehicleRouting(), NetworkDesign(), PlotLayout())}


def get_family(name: str) -> Family:
    try:
        return FAMILIES[name]
    except KeyError:
        raise KeyError(f"unknown family {name!r}; choose from {sorted(FAMILIES)}") from None


__all__ = ["FAMILIES", "Family", "get_family", "fmt", "DIFFICULTIES"]
