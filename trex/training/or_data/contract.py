"""The formulation output contract, and the reconstructors that produce it.

A formulation is markdown with exactly these four headers, once each, in this order::

    ## Variables
    - x[i] >= 0, continuous: ...
    ## Objective
    minimize ...
    ## Constraints
    (C1) name[i]: ...
    ## Code
    ```python
    import gurobipy as gp
    from gurobipy import GRB

    data = {...}          # every number of the problem, as given in the text
    ...                   # builds `model` from `data` only
    model.optimize()
    ```

Machine checks (``check_contract``): headers once and in order; exactly one python block, last;
code parses and passes the sandbox safety check (allow-listed imports, no eval/open/...); exactly
one ``.optimize()`` call; a top-level ``data = {...}`` literal (model-data separation, which the
perturbation check relies on).
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Callable

from trex.training.or_data.families import get_family
from trex.training.or_data.sandbox import check_code_safety

SECTIONS = ("Variables", "Objective", "Constraints", "Code")
HEADER_RE = re.compile(r"^## +(\w+)[ \t]*$", re.MULTILINE)
CODE_BLOCK_RE = re.compile(r"```python[ \t]*\n(.*?)```", re.DOTALL)

CODE_HEADER = "import gurobipy as gp\nfrom gurobipy import GRB\n"

PROMPT_TEMPLATE = (
    "Formulate the following optimization problem. Answer with the sections ## Variables, "
    "## Objective, ## Constraints and ## Code; the code is gurobipy Python that puts every number "
    "of the problem into a dict named data, builds a model named model from it, and calls "
    "model.optimize().\n\n### Problem\n{problem}\n\n### Formulation\n"
)


def build_prompt(problem_text: str) -> str:
    return PROMPT_TEMPLATE.format(problem=problem_text)


@dataclass
class Formulation:
    sections: dict[str, str]
    code: str | None


def data_literal(data: dict) -> str:
    """The code line holding the data (JSON is valid Python for numbers, lists and str keys)."""
    return "data = " + json.dumps(data, separators=(", ", ": "))


def assemble(sections: dict[str, str], code_lines: list[str], data: dict) -> str:
    code = CODE_HEADER + "\n" + data_literal(data) + "\n" + "\n".join(code_lines) + "\nmodel.optimize()\n"
    return (f"## Variables\n{sections['variables'].strip()}\n"
            f"## Objective\n{sections['objective'].strip()}\n"
            f"## Constraints\n{sections['constraints'].strip()}\n"
            f"## Code\n```python\n{code}```\n")


def gold_formulation(instance) -> str:
    """Gold reconstructor: the formulation written from the instance structure."""
    fam = get_family(instance.family)
    secs = fam.sections(instance.data, instance.options)
    return assemble(secs, secs["code"], instance.data)


class ModelReconstructor:
    """Any callable prompt -> completion (later the trained model) used as a reconstructor."""

    def __init__(self, generate: Callable[[str], str], name: str = "model"):
        if not callable(generate):
            raise TypeError("ModelReconstructor(generate=...) needs a callable prompt -> text")
        self.generate = generate
        self.name = name

    def __call__(self, instance) -> str:
        return self.generate(build_prompt(instance.text))


def parse_formulation(text: str) -> Formulation:
    headers = list(HEADER_RE.finditer(text))
    sections: dict[str, str] = {}
    for k, h in enumerate(headers):
        end = headers[k + 1].start() if k + 1 < len(headers) else len(text)
        sections.setdefault(h.group(1), text[h.end():end].strip())
    blocks = CODE_BLOCK_RE.findall(text)
    return Formulation(sections, blocks[0] if len(blocks) == 1 else None)


def find_data_assignment(tree: ast.Module) -> ast.Assign | None:
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "data" and isinstance(node.value, ast.Dict)):
            return node
    return None


def count_optimize_calls(tree: ast.AST) -> int:
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
               and n.func.attr == "optimize")


def check_contract(text: str) -> list[str]:
    """Contract violations of a formulation (empty list = passes)."""
    problems: list[str] = []
    names = [h.group(1) for h in HEADER_RE.finditer(text)]
    for s in SECTIONS:
        if names.count(s) != 1:
            problems.append(f"section '## {s}' appears {names.count(s)} times (needs exactly 1)")
    if [n for n in names if n in SECTIONS] != list(SECTIONS) and not problems:
        problems.append(f"sections out of order: {names}")
    blocks = CODE_BLOCK_RE.findall(text)
    if len(blocks) != 1:
        return problems + [f"{len(blocks)} python code blocks (needs exactly 1)"]
    last_block_end = text.rfind("```")
    if text[last_block_end + 3:].strip():
        problems.append("text after the code block")
    code = blocks[0]
    safety = check_code_safety(code)
    if safety:
        return problems + safety
    tree = ast.parse(code)
    if count_optimize_calls(tree) != 1:
        problems.append(f"{count_optimize_calls(tree)} optimize() calls (needs exactly 1)")
    assign = find_data_assignment(tree)
    if assign is None:
        problems.append("no top-level `data = {...}` literal")
    else:
        try:
            ast.literal_eval(assign.value)
        except ValueError:
            problems.append("`data` is not a literal (numbers, lists, dicts only)")
    return problems


def extract_code(text: str) -> str | None:
    return parse_formulation(text).code
