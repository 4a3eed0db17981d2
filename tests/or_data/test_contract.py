import numpy as np
import pytest

from trex.training.or_data.contract import (ModelReconstructor, build_prompt, check_contract, extract_code,
                                       gold_formulation, parse_formulation)
from trex.training.or_data.instances import generate_instance
from trex.training.or_data.perturb import apply_map, code_data_numbers, substitute_code_data, value_map
from trex.training.or_data.validate import validate


@pytest.fixture(scope="module")
def instance():
    return generate_instance("production_mix", 3, 2)


def test_gold_follows_contract(instance):
    text = gold_formulation(instance)
    assert check_contract(text) == []
    f = parse_formulation(text)
    assert list(f.sections)[:4] == ["Variables", "Objective", "Constraints", "Code"]
    assert "model.optimize()" in f.code


@pytest.mark.parametrize("edit, expected", [
    (lambda t: t.replace("## Objective\n", ""), "section '## Objective' appears 0 times"),
    (lambda t: t.replace("## Variables\n", "## Constraints\n", 1), "appears 2 times"),
    (lambda t: t + "\n```python\nprint(1)\n```\n", "2 python code blocks"),
    (lambda t: t.replace("import gurobipy as gp", "import gurobipy as gp\nimport os"), "forbidden import os"),
    (lambda t: t.replace("model.optimize()", "model.optimize()\nmodel.optimize()"), "2 optimize() calls"),
    (lambda t: t.replace("data = {", "values = {").replace("data[", "values["), "no top-level `data"),
    (lambda t: t + "trailing words", "text after the code block"),
])
def test_contract_violations(instance, edit, expected):
    problems = check_contract(edit(gold_formulation(instance)))
    assert any(expected in p for p in problems), problems


def test_model_reconstructor_any_callable(instance, or_sandbox):
    prompts = []

    def fake_model(prompt):
        prompts.append(prompt)
        return gold_formulation(instance)

    rec = ModelReconstructor(fake_model)
    out = rec(instance)
    assert prompts == [build_prompt(instance.text)] and instance.text in prompts[0]
    assert validate(instance, out, or_sandbox).accepted
    junk = ModelReconstructor(lambda p: "I think the answer is 42.")(instance)
    report = validate(instance, junk, or_sandbox)
    assert not report.accepted and report.reason.startswith("contract")
    with pytest.raises(TypeError):
        ModelReconstructor("not callable")


def test_perturbation_is_consistent(instance):
    code = extract_code(gold_formulation(instance))
    vmap = value_map(instance, np.random.default_rng(1))
    assert vmap and all(k not in (0.0, 1.0) for k in vmap)
    new_code = substitute_code_data(code, vmap)
    assert sorted(code_data_numbers(new_code)) == sorted(
        float(v) for v in code_data_numbers(extract_code(gold_formulation(
            type(instance)(**{**instance.to_dict(), "data": apply_map(instance.data, vmap)})))))


def test_hardcoded_numbers_fail_perturbation(instance, or_sandbox):
    """Code that ignores `data` and hard-codes one number matches the original optimum but not the
    perturbed ones: the perturbation check is what rejects it."""
    gold = gold_formulation(instance)
    caps = list(instance.data["capacity"])   # all of them: the capacity group binds somewhere (informative)
    cheat = gold.replace("<= capacity[r] for r in R)", f"<= {caps}[r] for r in R)")
    assert cheat != gold
    report = validate(instance, cheat, or_sandbox)
    assert not report.accepted and report.reason.startswith("perturbation"), report


from hypothesis import given, strategies as st  # noqa: E402

_numbers = st.one_of(st.integers(0, 500), st.floats(0.001, 500, allow_nan=False).map(lambda v: round(v, 3)))
_data = st.dictionaries(st.sampled_from(["a", "b", "cost", "cap"]),
                        st.one_of(_numbers, st.lists(_numbers, max_size=4),
                                  st.lists(st.lists(_numbers, max_size=3), max_size=3)), min_size=1)


@given(_data, st.dictionaries(_numbers.map(float), _numbers.map(float), max_size=6))
def test_substitute_code_data_matches_apply_map(data, vmap):
    from trex.training.or_data.contract import data_literal

    code = "import gurobipy as gp\n\n" + data_literal(data) + "\nx = data\nmodel = gp.Model()\nmodel.optimize()\n"
    new = substitute_code_data(code, vmap)
    import ast

    from trex.training.or_data.contract import find_data_assignment

    node = find_data_assignment(ast.parse(new))
    assert ast.literal_eval(node.value) == apply_map(data, vmap)
    assert new.endswith("\nx = data\nmodel = gp.Model()\nmodel.optimize()\n")
