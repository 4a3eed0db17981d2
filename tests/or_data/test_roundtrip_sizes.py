"""The text -> model round trip and the benchmark-matched sizes."""
import re

import numpy as np
import pytest

from trex.training.or_data.families import FAMILIES, get_family
from trex.training.or_data.instances import _replay, generate_instance, render_text
from trex.training.or_data.roundtrip import round_trip
from trex.training.or_data.sizes import (SIZE_BINS, benchmark_sizes, bin_index, bin_labels, size_distance,
                                         target_shares)
from trex.training.or_data.skins import pick_skin


def _rendered(name, seed):
    fam = get_family(name)
    rng = np.random.default_rng(seed)
    data, options = fam.sample(rng, 2)
    model = fam.build(data, options)
    skin = pick_skin(rng).with_names(rng)
    state = rng.bit_generator.state
    text = render_text(fam, data, options, skin, model.integer, rng)
    return fam, data, options, text, _replay(fam, options, skin, model.integer, state)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_round_trip_reads_the_model_back(name):
    results = [round_trip(*_rendered(name, seed)) for seed in range(6)]
    assert sum(r.ok for r in results) >= 5, [r.reason for r in results]


@pytest.mark.parametrize("name", ["production_mix", "transportation", "knapsack", "inventory"])
def test_round_trip_rejects_a_changed_quantity(name):
    fam, data, options, text, render = _rendered(name, 3)
    assert round_trip(fam, data, options, text, render).ok
    # a quantity the model uses, said with another value: the model read back differs
    tokens = list(re.finditer(r"(?<![\d.])\d+(?![\d.])", text))
    changed = [text[:m.start()] + str(int(m.group()) + 9973) + text[m.end():] for m in tokens
               if int(m.group()) > 1]
    verdicts = [round_trip(fam, data, options, t, render) for t in changed]
    assert any(not v.ok and "differs" in v.reason for v in verdicts)


def test_round_trip_rejects_an_unsaid_quantity():
    fam, data, options, text, render = _rendered("diet", 1)
    cost = data["cost"][0]
    # the sentinel rendering says the quantity; the text that drops it does not
    dropped = re.sub(rf"\${cost}\b", "$", text, count=1)
    assert dropped != text
    assert not round_trip(fam, data, options, dropped, render).ok


def test_benchmark_sizes_are_measured_and_binned():
    sizes = benchmark_sizes()
    assert sizes["bench4opt"]["n"] == 425 and sizes["nl4opt"]["n"] == 192
    assert sum(sizes["nl4opt"]["variables"].values()) == 192
    shares = target_shares("variables")
    assert len(shares) == len(SIZE_BINS) + 1 and abs(sum(shares) - 1) < 1e-9
    assert bin_labels()[int(np.argmax(shares))] == "2"      # NL4OPT: two variables almost always
    assert size_distance(7, bin_index(7)) == 0 and size_distance(2, bin_index(40)) > 0


def test_generated_sizes_follow_the_target():
    """Drawn against the benchmarks' mixture, production_mix lands in the 2-variable bin far more
    often than its own uniform draw would."""
    def share_two(match):
        sizes = []
        for seed in range(30):
            inst = generate_instance("production_mix", seed, 3, require_informative=False, match_sizes=match,
                                     no_optimum_share=0.0)
            sizes.append(get_family("production_mix").build(inst.data, inst.options).num_vars)
        return sum(s == 2 for s in sizes) / len(sizes)

    assert share_two(True) > share_two(False) + 0.15


def test_instances_record_their_rejections():
    inst = generate_instance("knapsack", 4, 2)
    assert inst is not None and all(isinstance(v, int) and v > 0 for v in inst.rejections.values())
    assert set(inst.rejections) <= {"status", "uninformative", "missing_numbers", "roundtrip", "reference_disagrees"}


def test_pipeline_choice_follows_the_drawn_size():
    from trex.training.or_data.sizes import choose, reach

    two = bin_labels().index("2")
    assert {choose(("tsp", "diet"), (1, 2, 3), i, two)[0] for i in range(6)} == {"diet"}
    # no configured family reaches the bin: the nearest pairs take it
    family, difficulty = choose(("tsp",), (1, 2, 3), 0, two)
    assert family == "tsp" and min(reach("tsp", difficulty)) == min(min(reach("tsp", d)) for d in (1, 2, 3))


def test_stressed_draws_keep_word_table_quantities():
    """An instance without an optimum is a draw with one quantity scaled; a "twice as many" factor
    scaled to 15 has no words (it crashed the renderer)."""
    from trex.training.or_data.instances import _stressed

    fam = get_family("production_mix")
    data = {"profit": [5, 7], "usage": [[1, 2]], "capacity": [10], "ratio_pair": [0, 1], "ratio_factor": 3}
    for seed in range(40):
        assert _stressed(fam, data, np.random.default_rng(seed))["ratio_factor"] == 3
