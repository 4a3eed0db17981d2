"""`trex or-data`: bad arguments exit 2 with a message naming the argument; the `tokenizer`
sub-command trains the BPE of trex/training/or_tokenizer.py offline."""
import argparse
import json

import pytest

from trex.training.or_data import cli


def _exit_message(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("argv, named, fix", [
    (["--n", "0"], "--n", ">= 1"), (["--n", "-3"], "--n", ">= 1"), (["--n", "many"], "--n", "whole number"),
    (["--n", "2", "--families", "nope"], "--families", "knapsack"),
    (["--n", "2", "--families", ","], "--families", "comma list"),
    (["--n", "2", "--difficulties", "7"], "--difficulties", "[1, 2, 3]"),
    (["--n", "2", "--workers", "0"], "--workers", ">= 1"),
    (["--n", "2", "--chunk", "0"], "--chunk", ">= 1"),
])
def test_generate_rejects_bad_arguments(argv, named, fix, tmp_path, capsys):
    out = tmp_path / "out"
    err = _exit_message(["generate", "--out", str(out), "--no-progress", *argv], capsys)
    assert f"argument {named}:" in err and fix in err
    assert not out.exists()


def test_generate_reports_a_config_error_with_status_2(tmp_path, capsys):
    """Past argparse (e.g. a caller building the namespace itself), PipelineConfig's ValueError is
    still a message and status 2, not a traceback."""
    args = argparse.Namespace(n=0, seed=0, families=("knapsack",), difficulties=(1,), workers=1, chunk=4,
                              perturbations=2, no_decontam=True, no_progress=True, out=str(tmp_path / "o"))
    assert cli._generate(args) == 2
    err = capsys.readouterr().err
    assert "trex or-data generate: n = 0: must be >= 1" in err
    args.n, args.families = 1, ("cutting_stock",)
    assert cli._generate(args) == 2
    assert "unknown families ['cutting_stock']" in capsys.readouterr().err


def _tiny_corpus(folder):
    cpt = folder / "cpt.jsonl"
    cpt.write_text("".join(json.dumps({"id": str(i), "text": f"Problem:\nShip {100 + i} tonnes from plant {i}.\n"
                                                             f"## Code\nmodel.optimize()\n"}) + "\n"
                           for i in range(30)))
    sft = folder / "sft.jsonl"
    sft.write_text("".join(json.dumps({"prompt": f"<|prompt|>Maximise {i} x<|response|>",
                                       "response": f"## Variables\nx >= 0\n## Objective\nmax {i} x\n"}) + "\n"
                           for i in range(30)))
    notes = folder / "notes.txt"
    notes.write_text("Résumé: a plain-text document, read whole. 東京 🎉\n" * 5)
    return [cpt, sft, notes]


def test_tokenizer_subcommand_trains_and_saves(tmp_path, capsys):
    from trex.training.or_tokenizer import PROMPT, RESPONSE, ORTokenizer

    corpus = _tiny_corpus(tmp_path)
    out = tmp_path / "tok" / "tokenizer.json"
    rc = cli.main(["tokenizer", "--corpus", *map(str, corpus), "--vocab-size", "300", "--out", str(out)])
    assert rc == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["out"] == str(out) and summary["texts"] == 30 + 30 + 1 and summary["chars"] > 0
    tok = ORTokenizer.load(out)
    assert summary["vocab_size"] == tok.vocab_size and 261 < tok.vocab_size <= 300
    text = "Ship 1234 tonnes: Résumé 東京 🎉"
    assert tok.decode(tok.encode(text)) == text
    assert tok.encode(PROMPT + RESPONSE) == [tok.prompt_id, tok.response_id]
    # merges were learned from the corpus: a corpus word costs fewer tokens than its bytes
    assert len(tok.encode("tonnes")) < len("tonnes")
    # a folder as --out gets tokenizer.json inside (a checkpoint dir)
    assert cli.main(["tokenizer", "--corpus", str(corpus[0]), "--vocab-size", "280", "--out",
                     str(tmp_path / "ckpt")]) == 0
    assert ORTokenizer.load(tmp_path / "ckpt").vocab_size <= 280


def test_tokenizer_subcommand_bad_input(tmp_path, capsys):
    corpus = _tiny_corpus(tmp_path)
    out = tmp_path / "tok.json"
    assert cli.main(["tokenizer", "--corpus", str(corpus[0]), "--vocab-size", "100", "--out", str(out)]) == 2
    assert "--vocab-size >= 261" in capsys.readouterr().err
    assert cli.main(["tokenizer", "--corpus", str(tmp_path / "none.jsonl"), "--vocab-size", "300",
                     "--out", str(out)]) == 2
    assert "--corpus" in capsys.readouterr().err
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "fine"}) + "\n" + json.dumps({"question": "no text here"}) + "\n")
    assert cli.main(["tokenizer", "--corpus", str(bad), "--vocab-size", "300", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2" in err and "'text'" in err
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert cli.main(["tokenizer", "--corpus", str(empty), "--vocab-size", "300", "--out", str(out)]) == 2
    assert "no text found" in capsys.readouterr().err
    assert not out.exists()
    err = _exit_message(["tokenizer", "--corpus", str(corpus[0]), "--vocab-size", "0", "--out", str(out)], capsys)
    assert "argument --vocab-size:" in err
