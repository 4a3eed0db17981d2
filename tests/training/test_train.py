"""The train loop on the real tiny DeepSeek-V4: learning, exact resume, NaN handling, CLI."""
import json
import shutil
from pathlib import Path

import pytest
import torch

import trex.training.model as model_lib
from trex.training.train import TrainingStopped, main, train

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


@pytest.mark.parametrize("optimizer", ["adamw", "adamw_fused", "swap_adamw"])
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
    argv = ["--config", str(REPO / "trex/configs/tiny_sft.toml"), "--model.compile", "eager",
            "--train.steps", "2", "--checkpoint.dir", str(tmp_path / "ck"),
            "--log.jsonl", str(tmp_path / "log.jsonl"), "--log.progress", "false"]
    assert main(argv + ["--train.stop_after", "1"]) == 0          # first slice stops after step 1
    assert (tmp_path / "ck" / "latest").read_text() == "step_00000001"
    assert main(argv) == 0                                         # second slice resumes
    assert "done: step 2" in capsys.readouterr().out
    assert (tmp_path / "ck" / "latest").read_text() == "step_00000002"
    assert not (tmp_path / "ck" / "tokenizer.json").exists()     # the byte tokenizer is code, not a file
    steps = [json.loads(line)["step"] for line in (tmp_path / "log.jsonl").read_text().splitlines()]
    assert steps == [1, 2]
    assert main(["--config", str(REPO / "trex/configs/tiny_sft.toml"), "--optim.lrr", "1"]) == 2


def test_checkpoint_carries_the_bpe_tokenizer(make_config, cpt_corpus, tmp_path, monkeypatch):
    from trex.training.data import read_records
    from trex.training.or_eval.model_io import load_for_eval
    from trex.training.or_tokenizer import ORTokenizer

    bpe = ORTokenizer.train((r["text"] for r in read_records(cpt_corpus)), vocab_size=300)
    trained_with = bpe.save(tmp_path / "bpe" / "tokenizer.json")
    monkeypatch.setenv("TREX_OR_TOKENIZER", str(trained_with))
    ckpt = tmp_path / "ck"
    result = train(make_config(**{"data.tokenizer": "trex.training.or_tokenizer:from_env", "train.steps": 2,
                                  "checkpoint.dir": str(ckpt)}))
    assert result.final_step == 2
    saved = ckpt / "tokenizer.json"
    assert saved.read_text() == trained_with.read_text()
    assert not list(ckpt.glob(".tokenizer*"))                     # no temp file left behind
    text = "every tile fuses 12 rows."
    assert ORTokenizer.load(ckpt).encode(text) == bpe.encode(text)
    # what `trex or-eval --model CKPT` does: the tokenizer comes from the checkpoint, not the environment
    monkeypatch.delenv("TREX_OR_TOKENIZER")
    _, tokenizer, _ = load_for_eval(ckpt, device="cpu")
    assert tokenizer.encode(text) == bpe.encode(text) and tokenizer.vocab_size == bpe.vocab_size


@pytest.mark.slow   # compiling the tiny model with trex takes minutes on a shared 2-core CPU
def test_trex_backend_trains(make_config, tmp_path):
    result = train(make_config(**{"train.steps": 3, "model.compile": "trex",
                                  "log.summary": str(tmp_path / "summary.json")}))
    assert len(result.losses) == 3 and all(map(torch.isfinite, torch.tensor(result.losses)))
    compiled = json.loads((tmp_path / "summary.json").read_text())["compile"]
    assert compiled["mode"] == "trex" and compiled["trex_graphs"] > 0
    # trex replaced chains of the tiny model with its fused ops (counted per pattern)
    assert compiled["trex_fused_total"] > 0, compiled
    assert compiled["trex_fused_total"] == sum(compiled["trex_fused_by_pattern"].values())
