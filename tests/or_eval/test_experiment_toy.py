"""CPU end-to-end toy run of the CPT ablation: tiny model, a few training-loop steps per stage,
greedy evaluation of 20 generated problems in the sandbox, JSON (+ PNG when matplotlib exists).

Slow (minutes on 2 shared cores): the numbers mean nothing at this scale; the test checks the
plumbing and the bookkeeping (equal compute, family split, statistics, files)."""
import json

import pytest

from trex.training.or_eval.experiment import ARMS, SPLITS, preset, run_experiment

pytest.importorskip("trex.training.train")
pytest.importorskip("trex.training.or_data.sandbox")


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_toy_ablation_end_to_end(tmp_path):
    from trex.training.or_eval.toy_source import ToySource

    cfg = preset("toy", out_dir=str(tmp_path / "results"), work_dir=str(tmp_path / "work"), name="toy",
                 seen_families=["cap_max", "floor_min"], cpt_only_families=["pair_max"],
                 held_out_families=["clash"])
    result = run_experiment(cfg, ToySource(), command="pytest toy")
    on_disk = json.loads((tmp_path / "results" / "toy.json").read_text())
    assert on_disk["n_test_problems"] == 20 == result["n_test_problems"]
    assert set(on_disk["arms"]) == set(ARMS)
    # equal compute: every arm ran the same number of optimizer steps on the same batch shape
    steps = {arm: a["train_steps"] for arm, a in on_disk["arms"].items()}
    assert set(steps.values()) == {cfg.cpt_steps + cfg.sft_steps}, steps
    tokens = {arm: a["train_tokens"] for arm, a in on_disk["arms"].items()}
    assert len(set(tokens.values())) == 1, tokens
    # SFT after CPT starts from the CPT checkpoint
    for arm in ("cpt_balanced_sft", "cpt_pure_sft"):
        cpt, sft = on_disk["arms"][arm]["stages"]
        assert sft["init_from"] == cpt["checkpoint"]
    # the split is disjoint and covers the test set
    split = on_disk["family_split"]
    assert split == {"seen": ["cap_max", "floor_min"], "cpt_only": ["pair_max"], "held_out": ["clash"]}
    # every SFT row fits the window (the loss mask sees the whole response) and SFT learned something
    assert on_disk["data"]["sft"]["rows_dropped_too_long"] == 0
    sft_stage = on_disk["arms"]["sft_only"]["stages"][0]
    assert sft_stage["first_loss"] > 0 and sft_stage["last_loss"] < sft_stage["first_loss"]
    analysis = on_disk["analysis"]["rules"]["strict_1e-6"]
    for arm in ARMS:
        assert analysis["pass_at_1"][arm]["all"]["n"] == 20
        assert sum(analysis["pass_at_1"][arm][s]["n"] for s in SPLITS) == 20
    for arm in ("cpt_balanced_sft", "cpt_pure_sft"):
        mc = analysis["mcnemar_vs_sft_only"][arm]["cpt_only"]
        assert mc["n"] == 5 and 0.0 <= mc["p_value"] <= 1.0
    # the balanced corpus mixes general text; the pure one does not
    data = on_disk["data"]
    assert data["cpt_balanced"]["general_chars"] > 0 and data["general"]["provenance"]["license"].startswith("Python")
    # only the results land in out_dir (datasets and checkpoints stay in work_dir)
    assert {f.name for f in (tmp_path / "results").iterdir()} <= {"toy.json", "toy.png", "toy_items.json"}
    items = json.loads((tmp_path / "results" / "toy_items.json").read_text())
    assert len(items["arms"]["sft_only"]["generated"]["items"]) == 20
    assert on_disk["complete"] and on_disk["n_test_problems_evaluated_in_every_arm"] == 20
    assert on_disk["plot"] or "matplotlib" in on_disk["plot_note"]
    assert on_disk["commit"] is None or len(on_disk["commit"]) == 40
