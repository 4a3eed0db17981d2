"""`trex or-eval` on a tiny checkpoint written by the training loop (2 steps, eager, CPU)."""
import json

import pytest
import torch

from trex.training.or_data.sandbox import KERNEL_LAYERS
from trex.training.or_eval import cli
from trex.training.or_tokenizer import TOKENIZER_ENV, ORTokenizer, format_prompt

pytest.importorskip("trex.training.train")
pytest.importorskip("trex.training.or_data.sandbox")


class StandInLM(torch.nn.Module):
    """A bigram model with the Transformer's forward signature: enough to drive the CLI quickly."""

    def __init__(self, vocab: int):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, 16)
        self.out = torch.nn.Linear(16, vocab)

    def forward(self, tokens):
        return self.out(self.emb(tokens)), None


def test_or_eval_cli_wiring_fast(monkeypatch, small_tokenizer, data_root, tmp_path, capsys):
    from trex.training.or_eval import model_io

    torch.manual_seed(0)
    model = StandInLM(small_tokenizer.vocab_size)
    monkeypatch.setattr(model_io, "load_for_eval",
                        lambda path, device="auto": (model, small_tokenizer, {"step": 0, "path": str(path)}))
    out = tmp_path / "mamo.json"
    rc = cli.main(["--benchmark", "mamo_easy", "--model", "stand-in", "--limit", "3", "--out", str(out),
                   "--max-new-tokens", "5", "--workers", "1", "--data-root", str(data_root)])
    assert rc == 0
    captured = capsys.readouterr()
    printed = captured.out
    for rule in ("strict_1e-6", "legacy_5pct_rounded", "mamo_decimals"):
        assert rule in printed
    # every item the native rule scores wrong gets one FAILED line with its reason (on stderr)
    failed = [line for line in captured.err.splitlines() if line.startswith("FAILED ")]
    assert len(failed) == 3 and all("no ```python block in the response" in line for line in failed), captured.err
    report = json.loads(out.read_text())
    assert report["summary"]["overall"]["n"] == 3
    assert report["native_rules"] == {"mamo_easy": "mamo_decimals"}
    assert all(item["run_status"] == "no_code" for item in report["items"])   # a bigram model writes no program
    assert all(item["failure"] == "no ```python block in the response" for item in report["items"])
    assert set(KERNEL_LAYERS) <= set(report["sandbox"]["verified_at_start"]) or report["sandbox"]["weak_sandbox_allowed"]


@pytest.fixture(scope="module")
def tiny_checkpoint(tmp_path_factory):
    from trex.training.config import load_config
    from trex.training.train import train

    root = tmp_path_factory.mktemp("tiny_ckpt")
    rows = [{"prompt": format_prompt(f"Maximise {i} x subject to x <= {i + 2}."),
             "response": f"```python\nimport gurobipy as gp\nmodel = gp.Model()\nx = model.addVar(ub={i + 2})\n"
                         f"model.setObjective({i} * x, -1)\nmodel.optimize()\n```"} for i in range(12)]
    (root / "sft.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tok = ORTokenizer.train([r["prompt"] + r["response"] for r in rows], vocab_size=300)
    tok.save(root / "ckpt")
    mp = pytest.MonkeyPatch()
    mp.setenv(TOKENIZER_ENV, str(root / "ckpt"))
    try:
        cfg = load_config(None, [("data.kind", "sft"), ("data.paths", [str(root / "sft.jsonl")]),
                                 ("data.tokenizer", "trex.training.or_tokenizer:from_env"), ("data.seq_len", 64),
                                 ("model.compile", "eager"), ("model.overrides", {"vocab_size": 320}),
                                 ("train.steps", 2), ("train.device", "cpu"), ("checkpoint.dir", str(root / "ckpt")),
                                 ("log.progress", False)])
        train(cfg)
    finally:
        mp.undo()
    return root / "ckpt"


@pytest.mark.slow
def test_or_eval_cli_on_training_loop_checkpoint(tiny_checkpoint, data_root, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("TREX_OR_BENCHMARKS", str(data_root))
    out = tmp_path / "nl4opt.json"
    rc = cli.main(["--benchmark", "nl4opt", "--model", str(tiny_checkpoint), "--limit", "2", "--out", str(out),
                   "--max-new-tokens", "3", "--workers", "1", "--device", "cpu"])
    assert rc == 0
    printed = capsys.readouterr().out
    assert "strict_1e-6" in printed and "legacy_5pct_rounded" in printed and str(out) in printed
    report = json.loads(out.read_text())
    assert report["summary"]["overall"]["n"] == 2
    assert report["native_rules"] == {"nl4opt": "legacy_5pct_rounded"}
    assert report["meta"]["checkpoint"]["step"] == 2
    assert report["decoding"] == {"kind": "greedy", "samples": 1, "max_new_tokens": 3}


def test_or_eval_cli_errors_are_named(tmp_path, capsys):
    assert cli.main(["--benchmark", "nope", "--model", str(tmp_path)]) == 2
    assert "choose one of" in capsys.readouterr().err
