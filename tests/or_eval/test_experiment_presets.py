"""The presets and the time guard of the ablation driver, and the right-padded greedy decoding it
uses (fast: no training)."""
import json
import time
from pathlib import Path

import pytest
import torch

from trex.training.or_eval import experiment as E
from trex.training.or_eval.benchmarks import ORProblem, RefStatus
from trex.training.or_eval.generate import greedy_generate, greedy_generate_padded, last_position_logits



@pytest.mark.parametrize("name", sorted(E.PRESETS))
def test_every_preset_builds_with_equal_compute(name):
    cfg = E.preset(name)
    assert set(cfg.arms) == set(E.ARMS) and E.BASELINE_ARM in cfg.arms
    # sft_only trains cpt_steps + sft_steps on the same batch shape as the CPT arms' two stages
    steps = {arm: (cfg.cpt_steps + cfg.sft_steps) for arm in cfg.arms}
    assert len(set(steps.values())) == 1 and cfg.cpt_steps > 0 and cfg.sft_steps > 0
    from trex.training.model import get_config
    args = get_config(cfg.stage.model).replace(**cfg.stage.model_overrides)
    assert args.vocab_size >= cfg.tokenizer_vocab
    # the intermediate files must stay out of the folder whose files are fetched
    assert not Path(cfg.work_dir).resolve().is_relative_to(Path(cfg.out_dir).resolve())


def test_h200_6min_preset_keeps_the_design_and_a_time_guard():
    fast, full = E.preset("h200_6min"), E.preset("h200")
    assert fast.split_sizes == full.split_sizes and fast.stage.compile == "trex" == full.stage.compile
    assert fast.stage.device == "cuda" and fast.stage.precision == "bf16"
    assert fast.public_benchmarks and fast.public_limit
    # the guard leaves room under the 6.5-minute device call for start-up and one decoding batch
    assert fast.time_budget_s is not None and fast.time_budget_s + fast.reserve_s <= 360
    assert Path(fast.work_dir).is_absolute() and str(fast.work_dir).startswith("/tmp/")
    assert full.time_budget_s is None


def test_settings_override_fields_and_name_their_errors():
    cfg = E.apply_settings(E.preset("h200_6min"), ["test_per_family=2", "stage.seq_len=256",
                                                  "public_benchmarks=[]", "stage.device=cpu", "name=x"])
    assert (cfg.test_per_family, cfg.stage.seq_len, cfg.public_benchmarks, cfg.stage.device, cfg.name) == \
        (2, 256, (), "cpu", "x")
    with pytest.raises(ValueError, match="KEY=VALUE"):
        E.apply_settings(cfg, ["test_per_family"])
    with pytest.raises(ValueError, match="unknown field"):
        E.apply_settings(cfg, ["no_such_field=1"])
    with pytest.raises(ValueError, match="stage.FIELD"):
        E.apply_settings(cfg, ["model.dim=3"])


def _problem(i, family, split="seen"):
    return ORProblem(id=str(i), benchmark="generated", question=f"q{i}", reference_objective=1.0,
                     reference_status=RefStatus.OPTIMAL, family=family, split=split)


def test_priority_order_is_round_robin_over_families():
    problems = [_problem(i, f) for i, f in enumerate("aaabbc")]
    order = E.priority_order(problems)
    assert [problems[i].family for i in order] == list("abcaba")
    assert sorted(order) == list(range(6))


def test_common_verdicts_keep_only_items_every_arm_evaluated():
    verdicts = {"sft_only": {"strict_1e-6": [True, False, None]},
                "cpt_pure_sft": {"strict_1e-6": [None, True, True]}}
    common = E._common_verdicts(verdicts, 3)
    assert common == {"sft_only": {"strict_1e-6": [None, False, None]},
                      "cpt_pure_sft": {"strict_1e-6": [None, True, None]}}


def _tiny_model(**changes):
    from trex.training.model import Transformer, get_config
    torch.manual_seed(0)
    # index_topk above the number of compressed entries: the CSA top-k keeps every entry, so no
    # exact tie can be broken differently at different padded lengths (see generate.py)
    args = get_config("tiny").replace(vocab_size=300, max_seq_len=96, index_topk=64, **changes)
    return Transformer(args).eval()


def test_last_position_logits_match_the_full_forward():
    model = _tiny_model()
    tokens = torch.randint(0, 300, (3, 50), generator=torch.Generator().manual_seed(1))
    last = torch.tensor([10, 49, 3])
    with torch.no_grad():
        full = model(tokens)[0][torch.arange(3), last]
        assert torch.allclose(last_position_logits(model, tokens, last), full, atol=1e-5)


def test_padded_decoding_matches_one_by_one_decoding():
    model = _tiny_model()
    g = torch.Generator().manual_seed(2)
    # lengths below, at and past the window (96): the last ones slide the window
    prompts = [torch.randint(3, 300, (n,), generator=g).tolist() for n in (5, 17, 40, 64, 90, 96, 120)]
    eos = 7
    one_by_one = [greedy_generate(model, p, 10, eos_id=eos) for p in prompts]
    assert greedy_generate_padded(model, prompts, 10, eos_id=eos, batch_size=3) == one_by_one
    assert greedy_generate_padded(model, prompts, 0, eos_id=eos) == [[] for _ in prompts]
    # a passed deadline starts no batch: nothing is generated, nothing is cut short
    assert greedy_generate_padded(model, prompts, 10, eos_id=eos, deadline=time.monotonic() - 1) == \
        [None] * len(prompts)
    with pytest.raises(ValueError, match="batch_size"):
        greedy_generate_padded(model, prompts, 10, eos_id=eos, batch_size=0)


def test_time_guard_records_what_it_skipped(tmp_path, monkeypatch):
    """With the budget already spent: the first arm is trained but none of its prompts is decoded
    (its items count as not evaluated), the later arms are not run, and the JSON says so."""
    pytest.importorskip("trex.training.or_data.sandbox")
    from trex.training.or_tokenizer import ORTokenizer
    from trex.training.or_eval.toy_source import ToySource

    trained = []

    def fake_train_arm(cfg, arm, work, tokenizer_path):
        trained.append(arm)
        time.sleep(0.05)
        return tmp_path / "ckpt", [{"steps": cfg.cpt_steps + cfg.sft_steps, "tokens": 1}]

    monkeypatch.setattr(E, "train_arm", fake_train_arm)
    monkeypatch.setattr("trex.training.or_eval.model_io.load_for_eval",
                        lambda ckpt, device: (torch.nn.Linear(1, 1), ORTokenizer.load(tmp_path / "work"), {}))
    cfg = E.preset("toy", out_dir=str(tmp_path / "out"), work_dir=str(tmp_path / "work"), name="guard",
                   time_budget_s=0.01, reserve_s=0.0)
    result = E.run_experiment(cfg, ToySource())
    assert trained == ["sft_only"]
    on_disk = json.loads((tmp_path / "out" / "guard.json").read_text())
    assert on_disk["complete"] is False
    assert on_disk["arms_not_run"] == ["cpt_balanced_sft", "cpt_pure_sft"]
    assert on_disk["arms"]["sft_only"]["n_evaluated"] == 0
    assert on_disk["n_test_problems_evaluated_in_every_arm"] == 0
    assert any("not complete" in e for e in on_disk["time_guard"]["events"])
    assert any("not run" in e for e in on_disk["time_guard"]["events"])
    assert result["wall_s"] == on_disk["wall_s"]


def test_sandbox_preflight_fails_fast_and_says_why():
    from trex.training.or_eval.scoring import Outcome, RunStatus
    assert E.sandbox_preflight(lambda code, p: Outcome(RunStatus.OPTIMAL, 7.0))["objective"] == 7.0
    with pytest.raises(RuntimeError, match="site-packages"):
        E.sandbox_preflight(lambda code, p: Outcome(RunStatus.ERROR, error="No module named 'highspy'"))
    with pytest.raises(RuntimeError, match="objective 6.0"):
        E.sandbox_preflight(lambda code, p: Outcome(RunStatus.OPTIMAL, 6.0))


def test_sandbox_preflight_program_solves_in_the_real_sandbox():
    pytest.importorskip("trex.training.or_data.sandbox")
    from trex.training.or_eval.evaluate import SandboxExecutor
    with SandboxExecutor(workers=1) as executor:
        preflight = E.sandbox_preflight(executor)
    assert {k: preflight[k] for k in ("status", "objective")} == {"status": "optimal", "objective": 7.0}
    # the record says which isolation layers the run had (the network namespace may be absent here)
    layers = preflight["isolation"]["enforced_in_every_run"]
    assert {"static_check", "process_group", "audit_hook", "minimal_env"} <= set(layers), layers
