"""Surface variety of generated problems (names, numbers in words, merged parallel sentences,
integrality stated, instances without an optimum) and the `trex or-data stats` command."""
import json
import re

import numpy as np
import pytest

from trex.training.or_data import stats, surface
from trex.training.or_data.cli import main as or_data_main
from trex.training.or_data.families import FAMILIES, get_family
from trex.training.or_data.instances import generate_instance, missing_numbers, quantity_numbers
from trex.training.or_data.numbers_text import digits_for_words, to_words
from trex.training.or_data.skins import ROLE_NAMING, SKINS
from trex.training.or_data.solver import solve


def test_numbers_in_words_read_back():
    assert all(digits_for_words(to_words(n)) == str(n) for n in range(1000))
    assert digits_for_words("Twice as many as forty-five, half of two hundred and three") == "2 as many as 45, 0.5 of 203"
    with pytest.raises(ValueError, match="0..999"):
        to_words(1000)


def test_named_entities_hold_no_numbers():
    rng = np.random.default_rng(0)
    for skin in SKINS.values():
        named = skin.with_names(rng)
        for role in ROLE_NAMING:
            names = named.names(role, 12)
            assert len(set(names)) == 12
            assert not any(re.search(r"\d", n) or digits_for_words(n) != n for n in names), names


def test_parallel_sentences_merge_keeping_every_number():
    line = ("Oak has at most 12 units available. Elm has no more than 30 units available. "
            "Ash has up to 7 units available.")
    merged = surface._merge(surface._same_phrases(surface._SENTENCE_END.split(line)))
    assert merged == "Oak, Elm and Ash has at most 12, 30 and 7 units available, respectively."
    assert surface._merge(["Oak costs $5.", "Elm weighs 6 kg."]) is None      # not parallel


def test_integrality_is_said_once():
    rng = np.random.default_rng(1)
    assert surface.vary("Plan it.\nWhat is the cost?", [True, True], rng).split("\n")[1] in surface.INTEGRAL
    assert surface.vary("Plan it.\nWhat is the cost?", [False], rng).split("\n")[1] in surface.FRACTIONAL
    assert surface.vary("Only whole units.\nWhat?", [True], rng) == "Only whole units.\nWhat?"


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_varied_text_still_carries_every_number(name):
    fam = get_family(name)
    for seed in range(6):
        inst = generate_instance(name, seed)
        assert inst is not None and not missing_numbers(inst.text, quantity_numbers(fam, inst.data))


def test_instances_without_an_optimum():
    found = []
    for name in ("min_cost_flow", "set_cover", "facility_location", "diet"):
        for seed in range(30):
            inst = generate_instance(name, seed, no_optimum_share=1.0)
            if inst is not None and inst.status != "optimal":
                found.append(inst)
                break
    assert len(found) >= 3
    for inst in found:
        model = get_family(inst.family).build(inst.data, inst.options)
        assert solve(model, backend="highs").status == inst.status in ("infeasible", "unbounded")
        assert inst.objective is None
        assert all(v["drop"] and v["flip"] for v in inst.informative.values())   # every group matters


def _corpus(tmp_path, n=30):
    rows = []
    for k in range(n):
        name = sorted(FAMILIES)[k % len(FAMILIES)]
        inst = generate_instance(name, k)
        rows.append({"problem": inst.text, "provenance": {"family": inst.family, "data": inst.data,
                                                          "options": inst.options, "status": inst.status}})
    (tmp_path / "sft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def test_stats_command(tmp_path, capsys):
    rows = _corpus(tmp_path)
    out = tmp_path / "stats.json"
    assert or_data_main(["stats", str(tmp_path), "--data-root", str(tmp_path / "none"), "--out", str(out)]) == 0
    report = json.loads(out.read_text())
    corpus = report["corpus"]
    assert corpus["n"] == len(rows) and corpus["variables"]["n"] == len(rows)
    share = corpus["distinct_sentence_share"]
    assert 0 < share["skeleton"] <= share["numbers_masked"] <= 1
    assert "generated corpus vs benchmarks" in capsys.readouterr().out
    assert or_data_main(["stats", str(tmp_path / "missing")]) == 2
    assert "sft.jsonl" in capsys.readouterr().err


def test_stats_measures():
    assert stats.sentences("A b. C d?\n| x | y |\nE f!") == ["A b.", "C d?", "E f!"]
    assert stats.mask_numbers("Buy 12 or forty-five at $3.50.") == "Buy # or # at #."
    assert stats.skeleton("Send 12 to Dayton store.") == "Send # to N store."
    assert stats.histogram([1, 2, 2, 7, 300])["2"] == 0.4


def test_ratio_constraint_is_said_in_words(or_sandbox):
    from trex.training.or_data.contract import gold_formulation
    from trex.training.or_data.numbers_text import MULTIPLIERS
    from trex.training.or_data.validate import validate

    inst = next(i for seed in range(60) if (i := generate_instance("production_mix", seed, difficulty=3))
                and "ratio_pair" in i.data)
    words = [w for ws in MULTIPLIERS.values() for w in ws]
    assert any(f"{w} as many" in inst.text for w in words), inst.text
    assert "ratio" in inst.informative                       # the ratio binds: dropping it moves the optimum
    report = validate(inst, gold_formulation(inst), or_sandbox)
    assert report.accepted, report.reason
