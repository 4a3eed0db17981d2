"""The train loop on the real tiny DeepSeek-V4: learning, exact resume, NaN handling, CLI."""
import json
import shutil
from pathlib import Path

import pytest
import torch

import training.model as model_lib
from training.train import TrainingStopped, main, train

REPO = Path(__file__).parents[2]


def test_tiny_cpt_loss_falls_and_logs(make_config, tmp_path):
    cfg = make_config(**{"train.steps": 6, "train.grad_accum": 2})
    result = train(cfg)
    losses = result.losses
    assert len(losses) == 6 and all(map(torch.isfinite, torch.tensor(losses)))
    assert sum(losses[-2:]) / 2 < losses[0] - 1.0, losses
    records = [json.loads(line) for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(1, 7))
    for key in ("loss", "loss_lm", "loss_mtp", "grad_norm", "lr", "tokens_per_s", "mfu", "peak_mem_bytes"):
        assert key in records[0], key
    assert records[0]["tokens"] == 2 * 2 * 32                  # micro_batch x grad_accum x seq_len
    assert records[0]["lr"] < records[1]["lr"]                  # warmup
    assert records[-1]["lr"] < records[3]["lr"]                 # cosine decay
    assert records[0]["loss_mtp"] > 0


@pytest.mark.parametrize("optimizer", ["adamw", "swap_adamw"])
def test_resume_continues_bit_identically(make_config, tmp_path, optimizer):
    common = {"train.steps": 4, "train.grad_accum": 2 if optimizer == "adamw" else 1,
              "optim.name": optimizer, "optim.swap_chunk_mb": 0.25}
    full = train(make_config(**common, **{"checkpoint.dir": str(tmp_path / "a"), "checkpoint.every": 2,
                                          "checkpoint.keep": 2}))
    # a run that crashed right after its step-2 checkpoint: only that checkpoint is on disk
    crashed = tmp_path / "b"
    crashed.mkdir()
    shutil.copytree(tmp_path / "a" / "step_00000002", crashed / "step_00000002")
    resumed = train(make_config(**common, **{"checkpoint.dir": str(crashed)}))
    assert resumed.resumed_from == 2
    assert [r["step"] for r in resumed.records] == [3, 4]
    assert resumed.losses == full.losses[2:]                    # bit-identical floats
    assert [r["grad_norm"] for r in resumed.records] == [r["grad_norm"] for r in full.records[2:]]


def test_sft_trains_on_responses_only(make_config, sft_corpus):
    cfg = make_config(**{"data.kind": "sft", "data.paths": sft_corpus, "data.seq_len": 16,
                         "data.micro_batch": 4, "train.steps": 8})
    losses = train(cfg).losses
    assert losses[-1] < losses[0] - 1.0, losses


def _poison_steps(monkeypatch, bad_calls):
    """Make lm_loss return NaN on the given (1-based) calls."""
    real, calls = model_lib.lm_loss, {"n": 0}

    def poisoned(*args, **kwargs):
        calls["n"] += 1
        loss, parts = real(*args, **kwargs)
        return (loss * float("nan"), parts) if calls["n"] in bad_calls else (loss, parts)
    monkeypatch.setattr(model_lib, "lm_loss", poisoned)


def test_nan_step_is_skipped_and_reported(make_config, monkeypatch, capsys):
    _poison_steps(monkeypatch, {3})
    result = train(make_config(**{"train.steps": 5}))
    assert [r["skipped"] for r in result.records] == [False, False, True, False, False]
    assert all(map(torch.isfinite, torch.tensor(result.losses[3:])))
    assert "step 3: non-finite loss" in capsys.readouterr().err


def test_too_many_bad_steps_stop_the_run(make_config, monkeypatch):
    _poison_steps(monkeypatch, set(range(2, 100)))
    with pytest.raises(TrainingStopped, match=r"3 consecutive steps.*train.max_bad_steps = 3"):
        train(make_config(**{"train.steps": 10, "train.max_bad_steps": 3}))


def test_cli_runs_shipped_sft_config_in_two_slices(tmp_path, capsys):
    argv = ["--config", str(REPO / "configs/tiny_sft.toml"), "--model.compile", "eager",
            "--train.steps", "2", "--checkpoint.dir", str(tmp_path / "ck"),
            "--log.jsonl", str(tmp_path / "log.jsonl"), "--log.progress", "false"]
    assert main(argv + ["--train.stop_after", "1"]) == 0          # first slice stops after step 1
    assert (tmp_path / "ck" / "latest").read_text() == "step_00000001"
    assert main(argv) == 0                                         # second slice resumes
    assert "done: step 2" in capsys.readouterr().out
    assert (tmp_path / "ck" / "latest").read_text() == "step_00000002"
    steps = [json.loads(line)["step"] for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert steps == [1, 2]
    assert main(["--config", str(REPO / "configs/tiny_sft.toml"), "--optim.lrr", "1"]) == 2


@pytest.mark.slow   # compiling the tiny model with trex takes minutes on a shared 2-core CPU
def test_trex_backend_trains(make_config):
    pytest.importorskip("trex_compiler.backend", reason="the trex backend is not built yet")
    losses = train(make_config(**{"train.steps": 3, "model.compile": "trex"})).losses
    assert len(losses) == 3 and all(map(torch.isfinite, torch.tensor(losses)))
