"""The one-arm-per-call ablation (preset h200_arm): its model sees the whole sequence, SFT rows are
packed, the arms spend equal tokens, the held-out test set is large enough, and single-arm runs
pair into one analysis (CPU smoke run at toy scale)."""
import dataclasses
import json

import pytest
import torch

from trex.training.data import PackedSFTDataset, SFTDataset
from trex.training.or_eval.experiment import (ABLATION_SEQ_LEN, StageConfig, apply_settings, combine_runs, main,
                                              preset, run_experiment, split_families)


class _CharTokenizer:
    bos_id, eos_id, pad_id = 1, 2, 0

    def encode(self, text):
        return [3 + (ord(c) % 50) for c in text]


def test_h200_arm_preset_design():
    from trex.training.model.args import get_config

    cfg = preset("h200_arm")
    args = get_config(cfg.stage.model, **cfg.stage.model_overrides)
    assert args.window_size >= cfg.stage.seq_len == ABLATION_SEQ_LEN and set(args.compress_ratios) == {0}
    assert cfg.stage.sft_packed
    tokens = (cfg.cpt_steps + cfg.sft_steps) * cfg.stage.micro_batch * cfg.stage.seq_len * cfg.stage.grad_accum
    assert 29e6 <= tokens <= 31e6
    seen, cpt_only, held_out = cfg.split_sizes
    assert cpt_only * cfg.test_per_family >= 400          # the primary comparison
    assert (cpt_only + held_out) * cfg.test_per_family >= 400
    assert cfg.time_budget_s <= 600 - 30                   # one 10-minute call, start-up included


def test_packed_sft_rows_fill_the_window_and_mask_prompts():
    records = [{"prompt": "p" * (5 + k % 7), "response": "r" * (3 + k % 5)} for k in range(40)]
    plain = SFTDataset(iter(records), _CharTokenizer(), seq_len=64)
    packed = PackedSFTDataset(iter(records), _CharTokenizer(), seq_len=64)
    assert len(packed) < len(plain) / 3
    learned_plain = sum(plain[i].loss_mask.sum().item() for i in range(len(plain)))
    learned_packed = sum(packed[i].loss_mask.sum().item() for i in range(len(packed)))
    assert learned_plain == learned_packed                 # every response token, no prompt token
    for i in range(len(packed)):
        s = packed[i]
        learned_tokens = s.labels[s.loss_mask.bool()]
        r = 3 + ord("r") % 50
        assert torch.all((learned_tokens == r) | (learned_tokens == _CharTokenizer.eos_id))


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_single_arm_runs_pair_into_one_analysis(tmp_path, capsys):
    from trex.training.or_eval.toy_source import ToySource

    small = {**preset("h200_arm").stage.model_overrides, "vocab_size": 512, "dim": 64, "n_layers": 2,
             "n_heads": 2, "q_lora_rank": 32, "o_lora_rank": 16, "moe_inter_dim": 32, "n_routed_experts": 4,
             "compress_ratios": [0, 0, 0], "window_size": 128, "max_seq_len": 128}
    runs = []
    for arm in ("sft_only", "cpt_pure_sft"):
        cfg = apply_settings(preset("h200_arm"), [
            f"out_dir={tmp_path / 'results'}", f"work_dir={tmp_path / 'work'}", f"name=arm_{arm}",
            "cpt_docs_per_family=16", "sft_pairs_per_family=16", "test_per_family=3", "cpt_steps=2",
            "sft_steps=1", "tokenizer_vocab=400", "max_new_tokens=12", "max_new_tokens_quantile=null",
            "eval_workers=2", "eval_batch_size=16", "public_benchmarks=[]", "time_budget_s=null"])
        cfg = dataclasses.replace(cfg, arms=(arm,), seen_families=["cap_max", "floor_min"],
                                  cpt_only_families=["pair_max"], held_out_families=["clash"],
                                  stage=StageConfig(compile="eager", seq_len=128, micro_batch=4, warmup_steps=1,
                                                    sft_packed=True, model_overrides=small, device="cpu"))
        split_families(cfg, ToySource().families())
        run_experiment(cfg, ToySource(), command="pytest")
        runs.append(tmp_path / "results" / f"arm_{arm}.json")
    combined = combine_runs(runs, tmp_path / "combined", "paired")
    assert combined["n_items"] == 12 and combined["n_paired"] == 12 and combined["equal_compute"]
    mc = combined["analysis"]["rules"]["strict_1e-6"]["mcnemar_vs_sft_only"]["cpt_pure_sft"]["cpt_only"]
    assert mc["n"] == 3 and 0.0 <= mc["p_value"] <= 1.0
    stage = json.loads(runs[0].read_text())["arms"]["sft_only"]["stages"][0]
    assert stage["overrides"]["data.kind"] == "sft_packed"
    assert json.loads((tmp_path / "combined" / "paired.json").read_text())["n_paired"] == 12
    with pytest.raises(ValueError, match="two runs"):
        combine_runs([runs[0], runs[0]], tmp_path / "combined", "dup")


def test_combine_bad_argument_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--combine", str(tmp_path / "missing.json")])
    assert exc.value.code == 2 and "--combine" in capsys.readouterr().err
