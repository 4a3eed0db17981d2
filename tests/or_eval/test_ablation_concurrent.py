"""The three-arms-in-one-call driver (trex.training.or_eval.concurrent_arms): the step sizing keeps
equal compute and leaves decoding its time, the README table renders a combined JSON, bad arguments
exit 2, and (slow) the whole flow runs on the CPU at toy scale: three worker processes, a probe,
scoring, the combined JSON + PNG."""
import json

import pytest

from trex.training.or_eval.concurrent_arms import ConcurrentPlan, main, render_table, size_steps
from trex.training.or_eval.experiment import combine_runs, preset


def test_h200_arms3_preset_keeps_the_arm_design():
    cfg, arm = preset("h200_arms3"), preset("h200_arm")
    assert cfg.arms == ("sft_only", "cpt_balanced_sft", "cpt_pure_sft")
    assert (cfg.cpt_steps, cfg.sft_steps, cfg.stage, cfg.test_per_family, cfg.split_sizes) == \
        (arm.cpt_steps, arm.sft_steps, arm.stage, arm.test_per_family, arm.split_sizes)
    n_prompts = sum(cfg.split_sizes) * cfg.test_per_family + 2 * cfg.public_limit
    assert cfg.eval_batch_size >= n_prompts          # one decoding batch
    assert cfg.time_budget_s + 20 <= 570             # the bench script's full part


def test_size_steps_fits_scales_and_refuses():
    plan = ConcurrentPlan(decode_min_s=100, score_tail_s=40, stage_setup_s=10, min_steps=20)
    roomy = size_steps(550, 365, 0.2, 1000, plan)
    assert (roomy["cpt_steps"], roomy["sft_steps"], roomy["scaled"]) == (550, 365, False)
    assert size_steps(550, 365, 0.2, float("inf"), plan)["total_steps"] == 915
    tight = size_steps(550, 365, 0.5, 400, plan)             # (400 - 100 - 40 - 20) / 0.5 = 480 steps
    assert tight["total_steps"] == 480 and tight["scaled"] and tight["fits"]
    assert tight["cpt_steps"] + tight["sft_steps"] == 480
    assert abs(tight["cpt_steps"] / 480 - 550 / 915) < 0.01   # the CPT:SFT ratio kept
    assert tight["predicted_train_s"] <= tight["train_s_available"] + 2 * plan.stage_setup_s
    assert not size_steps(550, 365, 0.5, 150, plan)["fits"]  # nothing left after decoding's share
    assert size_steps(550, 365, 0.5, 150, plan)["total_steps"] == 0
    one_stage = size_steps(550, 365, 0.5, 400, plan, stages_per_arm=1)
    assert one_stage["total_steps"] == 500


def _fake_run(tmp_path):
    """A one-run JSON with three arms on 6 items (2 per split) and its items file, as run_concurrent writes."""
    splits = ["seen", "seen", "cpt_only", "cpt_only", "held_out", "held_out"]
    correct = {"sft_only": [1, 0, 0, 0, 0, 0], "cpt_pure_sft": [1, 1, 1, 1, 0, 0],
               "cpt_balanced_sft": [1, 0, 1, 0, 0, None]}
    items, arms = {}, {}
    for arm, flags in correct.items():
        rows = [{"id": f"i{k}", "split": s, "correct": {"strict_1e-6": None if f is None else bool(f),
                                                         "legacy_5pct_rounded": None if f is None else bool(f)}}
                for k, (s, f) in enumerate(zip(splits, flags))]
        items[arm] = {"generated": {"items": rows}}
        arms[arm] = {"train_tokens": 1000, "train_steps": 10, "stages": [], "timing_s": {},
                     "public_benchmarks": {"nl4opt": {"n": 2, "rules": {"strict_1e-6": {"correct": 1, "scored": 2}}}},
                     "generated": {"overall": {"format_rate": 0.5}}, "n_evaluated": 6, "n_not_evaluated": 0}
    (tmp_path / "run_items.json").write_text(json.dumps({"arms": items}))
    (tmp_path / "run.json").write_text(json.dumps({"arms": arms, "family_split": {"seen": ["a"]},
                                                   "items_file": str(tmp_path / "run_items.json")}))
    return tmp_path / "run.json"


def test_one_run_of_three_arms_combines_and_renders(tmp_path, capsys):
    combined = combine_runs([_fake_run(tmp_path)], tmp_path / "out", "three")
    assert combined["n_items"] == 6 and combined["n_paired"] == 5 and combined["equal_compute"]
    assert combined["arms"]["cpt_pure_sft"]["generated"]["overall"]["format_rate"] == 0.5
    table = render_table(combined)
    lines = table.splitlines()
    assert lines[0].startswith("| arm | all | seen | cpt_only | held_out | McNemar p") and "nl4opt" in lines[0]
    row = {line.split(" | ")[0].strip("| "): line for line in lines[2:]}
    assert set(row) == {"sft_only", "cpt_pure_sft", "cpt_balanced_sft"}
    assert "4/5 (80.0%" in row["cpt_pure_sft"]         # item 6 dropped: not evaluated in every arm
    assert "(baseline)" in row["sft_only"] and "| 50% | " in row["sft_only"] and "| 1/2 |" in row["sft_only"]
    p_cpt_only = combined["analysis"]["rules"]["strict_1e-6"]["mcnemar_vs_sft_only"]["cpt_pure_sft"]["cpt_only"]
    assert f"{p_cpt_only['p_value']:.3g} / " in row["cpt_pure_sft"]
    assert main(["--table", str(tmp_path / "out" / "three.json")]) == 0
    assert capsys.readouterr().out.strip() == table


@pytest.mark.parametrize("argv, named", [
    (["--table", "/nonexistent.json"], "--table"),
    (["--plan", "nope=1"], "--plan"),
    (["--plan", "decode_min_s=fast"], "--plan"),
    (["--probe-s", "0"], "--probe-s"),
    (["--worker", "sft_only"], "--worker"),
    (["--set", "arms=[\"nope\"]"], "arms"),
])
def test_bad_arguments_exit_2(argv, named, capsys):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and named in capsys.readouterr().err


SMALL_V4 = {"vocab_size": 512, "dim": 64, "n_layers": 2, "n_heads": 2, "q_lora_rank": 32, "o_lora_rank": 16,
            "moe_inter_dim": 32, "n_routed_experts": 4, "compress_ratios": [0, 0, 0], "window_size": 128,
            "max_seq_len": 128}
TOY = ["--source", "toy", "--set", "split_sizes=[2,1,1]", "--set", "cpt_docs_per_family=16",
       "--set", "sft_pairs_per_family=16", "--set", "test_per_family=3", "--set", "cpt_steps=4",
       "--set", "sft_steps=2", "--set", "tokenizer_vocab=400", "--set", "max_new_tokens=12",
       "--set", "max_new_tokens_quantile=null", "--set", "eval_workers=2", "--set", "eval_batch_size=16",
       "--set", "public_benchmarks=[]", "--set", "stage.compile=eager", "--set", "stage.seq_len=128",
       "--set", "stage.micro_batch=4", "--set", "stage.warmup_steps=1", "--set", "stage.precision=fp32",
       "--set", "stage.device=cpu", "--plan", "calibrate_s=2", "--plan", "worker_threads=1",
       "--plan", "decode_min_s=5", "--plan", "score_tail_s=5", "--plan", "stage_setup_s=1", "--plan", "min_steps=2"]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_three_arms_in_one_call_on_cpu(tmp_path, capsys, monkeypatch):
    from trex.training.or_eval.experiment import PRESETS
    monkeypatch.chdir(__import__("pathlib").Path(__file__).resolve().parents[2])   # workers: python -m trex...
    small = {**PRESETS["h200_arm"]["stage"].model_overrides, **SMALL_V4}
    common = [*TOY, "--set", f"stage.model_overrides={json.dumps(small)}", "--preset", "h200_arms3"]
    # the probe: every arm compiles, steps side by side, decodes; nothing is trained for real
    assert main([*common, "--out-dir", str(tmp_path / "probe"), "--work-dir", str(tmp_path / "wp"),
                 "--probe-s", "2", "--plan", "probe_decode_tokens=4"]) == 0
    probe = json.loads((tmp_path / "probe" / "or_cpt_ablation_probe.json").read_text())
    assert set(probe["arms"]) == {"sft_only", "cpt_balanced_sft", "cpt_pure_sft"} and not probe["arms_lost"]
    for m in probe["arms"].values():
        assert m["steps"] >= 1 and m["tokens_per_s"] > 0 and m["decode"]["decode_step_s"] >= 0
    assert "tokens/s" in capsys.readouterr().out
    # the full flow, without a time budget: the preset's 6 steps in every arm
    assert main([*common, "--out-dir", str(tmp_path / "out"), "--work-dir", str(tmp_path / "w"),
                 "--time-budget-s", "0"]) == 0
    combined = json.loads((tmp_path / "out" / "or_cpt_ablation.json").read_text())
    assert combined["complete"] and combined["equal_compute"] and combined["n_paired"] == 12
    assert {a["train_steps"] for a in combined["arms"].values()} == {6}
    assert combined["sizing"]["total_steps"] == 6 and not combined["sizing"]["scaled"]
    assert combined["plot"] or combined["plot_note"]
    stages = {arm: [s["kind"] for s in a["stages"]] for arm, a in combined["arms"].items()}
    assert stages == {"sft_only": ["sft_packed"], "cpt_balanced_sft": ["cpt", "sft_packed"],
                      "cpt_pure_sft": ["cpt", "sft_packed"]}
    assert "| cpt_pure_sft |" in capsys.readouterr().out
    # a budget that leaves almost no decoding time: steps scaled down (equal), decoding cut and recorded.
    # The budget is the full run's time to its sizing (data, workers, calibration) plus 45 s and half
    # again for load (a fixed 75 s left no time at all on a loaded machine: setup alone took 169 s);
    # the preset asks for far more steps than any such budget holds, so they are always scaled down
    sized_at = next(float(e.split("s:", 1)[0]) for e in combined["time_guard"]["events"] if "concurrent step" in e)
    budget = round(1.5 * sized_at + 45)
    assert main([*common, "--out-dir", str(tmp_path / "cut"), "--work-dir", str(tmp_path / "w2"),
                 "--set", "cpt_steps=40000", "--set", "sft_steps=20000", "--set", "max_new_tokens=64",
                 "--time-budget-s", str(budget), "--set", "reserve_s=0", "--plan", "decode_min_s=1",
                 "--plan", "score_tail_s=8"]) == 0
    cut = json.loads((tmp_path / "cut" / "or_cpt_ablation.json").read_text())
    assert cut["sizing"]["scaled"] and cut["equal_compute"]
    assert {a["train_steps"] for a in cut["arms"].values()} == {cut["sizing"]["total_steps"]}
    assert any("steps per arm" in e for e in cut["time_guard"]["events"])
