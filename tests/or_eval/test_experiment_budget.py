"""The h200_10min preset, the data-sized decoding length and the equal decoding shares of the time
guard (fast: no training, no decoding)."""
import json
import time

import pytest
import torch

from trex.training.or_eval import experiment as E


def test_h200_10min_preset_fits_one_10_minute_call_and_sizes_decoding_from_the_data():
    cfg, full = E.preset("h200_10min"), E.preset("h200")
    assert cfg.split_sizes == full.split_sizes and cfg.stage.compile == "trex" == full.stage.compile
    assert cfg.stage.device == "cuda" and cfg.stage.precision == "bf16"
    # the guard's budget plus start-up (~10 s before the clock starts) stays well under 600 s
    assert cfg.time_budget_s is not None and cfg.time_budget_s <= 560 and cfg.reserve_s >= 15
    assert cfg.max_new_tokens_quantile is not None and 0 < cfg.max_new_tokens_quantile < 1
    # every decoded prompt (generated + public) in one padded batch
    n_prompts = sum(cfg.split_sizes) * cfg.test_per_family + len(cfg.public_benchmarks) * cfg.public_limit
    assert cfg.eval_batch_size >= n_prompts
    assert "h200_6min" in E.PRESETS


def test_quantile_is_the_smallest_value_covering_the_fraction():
    values = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    assert [E.quantile(values, q) for q in (0.05, 0.1, 0.5, 0.95, 1.0)] == [1, 1, 5, 10, 10]
    with pytest.raises(ValueError, match="in \\(0, 1\\]"):
        E.quantile(values, 0)
    with pytest.raises(ValueError, match="empty"):
        E.quantile([], 0.5)


def test_max_new_tokens_plan_takes_the_quantile_plus_margin_capped_by_config_and_window():
    cfg = E.preset("h200_10min")   # seq_len 1536, max_new_tokens 768, q 0.95, margin 32
    manifest = {"response_tokens_quantiles": {"0.95": 400}}
    plan = E.plan_max_new_tokens(cfg, manifest, prompt_tokens_max=500)
    assert plan["max_new_tokens"] == 400 + cfg.max_new_tokens_margin and not plan["capped_by_window"]
    assert plan["response_tokens_at_quantile"] == 400
    # the configured maximum caps long responses
    assert E.plan_max_new_tokens(cfg, {"response_tokens_quantiles": {"0.95": 2000}}, 500)["max_new_tokens"] == \
        cfg.max_new_tokens
    # the longest prompt plus its response must fit the window: 1536 - 1200 + 1 < 432
    plan = E.plan_max_new_tokens(cfg, manifest, prompt_tokens_max=1200)
    assert plan["max_new_tokens"] == 337 and plan["capped_by_window"]
    with pytest.raises(ValueError, match="raise stage.seq_len"):
        E.plan_max_new_tokens(cfg, manifest, prompt_tokens_max=1600)
    with pytest.raises(ValueError, match="response_tokens_quantiles"):
        E.plan_max_new_tokens(cfg, {}, prompt_tokens_max=500)
    # without a quantile: the configured length, whatever the prompts
    fixed = E.preset("h200_6min")
    assert E.plan_max_new_tokens(fixed, {}, prompt_tokens_max=1000)["max_new_tokens"] == fixed.max_new_tokens


def test_every_arm_gets_an_equal_decoding_share_even_when_decoding_uses_all_of_it(tmp_path, monkeypatch):
    """Decoding that always runs to its deadline (as on the H200 without a KV cache) must not cost
    a later arm its evaluation: each arm decodes for the same share and every arm is evaluated."""
    pytest.importorskip("trex.training.or_data.sandbox")
    from trex.training.or_tokenizer import ORTokenizer
    from trex.training.or_eval.toy_source import ToySource

    trained, allowances = [], []

    def fake_train_arm(cfg, arm, work, tokenizer_path):
        trained.append(arm)
        time.sleep(0.2)
        steps = cfg.cpt_steps + cfg.sft_steps
        return tmp_path / "ckpt", [{"steps": steps, "tokens": 1, "median_step_s": 0.2 / steps, "setup_s": 0.0}]

    def decode_until_the_deadline(cfg, model, tok, questions, deadline, max_new_tokens):
        if deadline is None:   # the unbudgeted run that measures the data stage
            return ["no program here"] * len(questions)
        allowances.append(deadline - time.monotonic())
        time.sleep(max(0.0, deadline - time.monotonic()))
        return ["no program here"] * len(questions)   # complete responses (scored: no code)

    monkeypatch.setattr(E, "train_arm", fake_train_arm)
    monkeypatch.setattr(E, "_generate_all", decode_until_the_deadline)
    monkeypatch.setattr("trex.training.or_eval.model_io.load_for_eval",
                        lambda ckpt, device: (torch.nn.Linear(1, 1), ORTokenizer.load(tmp_path / "work"), {}))
    t0 = time.monotonic()
    cfg = E.preset("toy", out_dir=str(tmp_path / "out"), work_dir=str(tmp_path / "work"), name="shares",
                   time_budget_s=None, reserve_s=0.0, eval_overhead_s=0.5)
    # the budget: the data stage's own time (measured by a first run) plus ~6 s for the arms
    E.run_experiment(cfg, ToySource())
    data_s = time.monotonic() - t0
    trained.clear()
    allowances.clear()
    cfg = E.preset("toy", out_dir=str(tmp_path / "out"), work_dir=str(tmp_path / "work"), name="shares",
                   time_budget_s=data_s + 6.0, reserve_s=0.0, eval_overhead_s=0.5)
    result = E.run_experiment(cfg, ToySource())
    assert trained == list(E.ARMS) and result["arms_not_run"] == []
    assert all(arm["n_not_evaluated"] == 0 for arm in result["arms"].values())
    assert result["n_test_problems_evaluated_in_every_arm"] == result["n_test_problems"]
    share = result["time_guard"]["decode_share_s"]
    assert share > 0.5 and max(allowances) - min(allowances) < 0.5 and abs(allowances[0] - share) < 0.2
    on_disk = json.loads((tmp_path / "out" / "shares.json").read_text())
    assert on_disk["decoding"]["max_new_tokens"] == cfg.max_new_tokens
    assert [a["timing_s"]["decode_allowance"] for a in on_disk["arms"].values()] == \
        [pytest.approx(x, abs=0.1) for x in allowances]
