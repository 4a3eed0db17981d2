"""`trex train` on a wrong config value: exit code 2 and one line that names the key and the fix,
before any model is built (no traceback)."""
import json

import pytest

import trex.training.train as train_module
from trex.training.train import main


def _sentences(n: int) -> str:
    return " ".join(f"the solver reads row {i} of the buffer." for i in range(n))


@pytest.fixture
def plain_text_corpus(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text(_sentences(60))
    return str(path)


# (extra argv, environment variables to remove, fragments the message must hold: the key, the fix)
CASES = {
    "unknown model name": (["--model.name", "nope"], [], ["model.name = 'nope'", "'tiny'", "'small'"]),
    "unknown model override": (["--model.overrides.nope", "1"], [],
                               ["model.overrides.nope", "ModelArgs has no field", "'n_layers'", "'dim'"]),
    "override ModelArgs rejects": (["--model.overrides.n_hash_layers", "9"], [],
                                   ["model.overrides", "n_hash_layers=9 exceeds n_layers=4"]),
    "tokenizer module missing": (["--data.tokenizer", "nope.mod:x"], [],
                                 ["data.tokenizer = 'nope.mod:x'", "No module named 'nope'",
                                  "package.module:factory"]),
    "expert parallel without torchrun": (["--distributed.ep", "2"], ["WORLD_SIZE"],
                                         ["distributed.ep = 2", "torchrun --nproc_per_node 2"]),
    "ep not dividing the experts": (["--distributed.ep", "3"], [], ["distributed.ep = 3", "8 routed experts"]),
    "tokenizer factory fails": (["--data.tokenizer", "trex.training.or_tokenizer:from_env"], ["TREX_OR_TOKENIZER"],
                                ["data.tokenizer = 'trex.training.or_tokenizer:from_env'", "$TREX_OR_TOKENIZER"]),
    "sft on plain text": (["--data.kind", "sft"], [], ["data.prompt_field", "data.response_field", "'text'"]),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_value_exits_2_naming_the_key(case, plain_text_corpus, tmp_path, monkeypatch, capsys):
    extra, unset, fragments = CASES[case]
    for name in unset:
        monkeypatch.delenv(name, raising=False)

    def no_model(*args, **kwargs):
        raise AssertionError(f"{case}: a model was built before the config error was reported")
    monkeypatch.setattr(train_module, "build_model", no_model)
    argv = ["--data.paths", json.dumps([plain_text_corpus]), "--train.device", "cpu", "--model.compile", "eager",
            "--train.steps", "1", "--log.progress", "false", "--log.jsonl", str(tmp_path / "log.jsonl"), *extra]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("trex train: ") and err.count("\n") == 1, err
    for fragment in fragments:
        assert fragment in err, (fragment, err)
