"""Generators, rendering, and the two acceptance rates (gold passes, corruptions are rejected).

The rates are measured on a small sample here to stay fast; bench/or_pipeline.py measures them on
a larger sample (bench/results/or_pipeline.json)."""
import numpy as np
import pytest

from trex.training.or_data.contract import gold_formulation
from trex.training.or_data.corrupt import CORRUPTIONS
from trex.training.or_data.families import DIFFICULTIES, FAMILIES
from trex.training.or_data.instances import generate_instance, missing_numbers, quantity_numbers
from trex.training.or_data.skins import SKINS
from trex.training.or_data.validate import validate

SEEDS = (11, 12)


def test_catalogue():
    assert len(FAMILIES) >= 12
    kinds = {f.kind for f in FAMILIES.values()}
    assert {"LP", "MILP", "QP"} <= kinds
    assert len(SKINS) >= 5


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_seeded_and_reproducible(name):
    a = generate_instance(name, 5, 2)
    b = generate_instance(name, 5, 2)
    c = generate_instance(name, 6, 2)
    assert a is not None and c is not None
    assert a.to_dict() == b.to_dict()
    assert (a.data, a.text) != (c.data, c.text)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_every_number_is_in_the_text(name):
    fam = FAMILIES[name]
    for seed in SEEDS:
        inst = generate_instance(name, seed)
        assert missing_numbers(inst.text, quantity_numbers(fam, inst.data)) == []
    # and the check itself bites: dropping one number (in digits or in words) from the text is noticed
    numbers = quantity_numbers(fam, inst.data)
    victim = max(numbers)
    from trex.training.or_data.families import fmt
    from trex.training.or_data.numbers_text import digits_for_words
    import re
    damaged = re.sub(r"(?<![\d.])" + re.escape(fmt(victim)) + r"(?![\d])(?!\.\d)", "many", digits_for_words(inst.text))
    assert fmt(victim) in missing_numbers(damaged, numbers)


def test_difficulty_scales_size():
    for name, fam in FAMILIES.items():
        sizes = {d: np.mean([fam.build(*fam.sample(np.random.default_rng(s), d)).num_vars for s in range(8)])
                 for d in DIFFICULTIES}
        assert sizes[3] > sizes[1], (name, sizes)


def test_skins_change_words_not_structure():
    texts = {s: generate_instance("transportation", 3, 2, skin=s) for s in SKINS}
    datas = {str(i.data) for i in texts.values()}
    assert len(datas) == 1  # same seed, same structure whatever the skin
    assert len({i.text for i in texts.values()}) == len(SKINS)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_gold_reconstruction_passes(name, or_sandbox):
    results = []
    for seed in SEEDS:
        inst = generate_instance(name, seed)
        report = validate(inst, gold_formulation(inst), or_sandbox)
        results.append(report.accepted)
        assert report.accepted, (name, seed, report.reason)
    assert np.mean(results) >= 0.99


# Corruptions that leave an equivalent model (so accepting them is right), with the reason.
EQUIVALENT_CORRUPTIONS = {
    ("tsp", "flipped_sense"): "one degree row flipped from == 1 to <= 1 is implied by the other rows "
                              "(n arcs in all, every stop entered exactly once)",
}


def test_corruptions_are_rejected(or_sandbox):
    rejected, total, accepted_cases = 0, 0, []
    for name in sorted(FAMILIES):
        inst = generate_instance(name, SEEDS[0])
        gold = gold_formulation(inst)
        rng = np.random.default_rng(0)
        for cname, corrupt in CORRUPTIONS.items():
            bad = corrupt(gold, rng, inst)
            if bad is None:
                continue
            assert bad != gold
            total += 1
            report = validate(inst, bad, or_sandbox)
            if report.accepted and (name, cname) in EQUIVALENT_CORRUPTIONS:
                total -= 1
            elif report.accepted:
                accepted_cases.append((name, cname))
            else:
                rejected += 1
    assert total >= 4 * len(FAMILIES) - 2 - len(EQUIVALENT_CORRUPTIONS)
    assert rejected / total >= 0.99, accepted_cases
