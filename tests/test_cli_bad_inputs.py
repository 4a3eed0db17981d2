"""Every bad command line of issue 20 in one table: `trex <command> ...` exits 2 and prints one line
(argparse's usage block aside) that names the argument and says what to pass instead; no traceback,
no work started. Rows of commands other helpers own carry the owner; they are xfail (not strict)
until their fix lands."""
from __future__ import annotations

import io
import os
import traceback

import pytest

from trex.compiler.cli import main as trex_main

# A row: id -> (argv after `trex`, environment changes, fragments the message line must hold, owner
# of the command where it is not the training stack). In argv, {tmp} is the test's temp folder,
# {file} a regular file (so {file}/sub cannot be created, even as root), {bad_toml} / {binary_toml}
# config files, {corpus} a small text corpus, {damaged_state} an or-data folder whose state.json is cut.
TRAIN = ["train", "--data.paths", '["{corpus}"]', "--train.device", "cpu", "--model.compile", "eager",
         "--log.progress", "false"]
GENERATE = ["or-data", "generate", "--n", "2", "--no-decontam", "--no-progress", "--workers", "1"]
TOKENIZER = ["or-data", "tokenizer", "--corpus", "{corpus}"]

ROWS: dict[str, tuple[list[str], dict, list[str], str | None]] = {
    "malformed TOML": (["train", "--config", "{bad_toml}"], {}, ["{bad_toml}", "is not valid TOML", "--config"], None),
    "binary TOML": (["train", "--config", "{binary_toml}"], {}, ["{binary_toml}", "is not valid TOML", "--config"],
                    None),
    "--optim.lr -1": ([*TRAIN, "--optim.lr", "-1"], {}, ["optim.lr = -1.0", "must be > 0", "--optim.lr 0.0003"], None),
    "--optim.betas [2.0, 0.9]": ([*TRAIN, "--optim.betas", "[2.0, 0.9]"], {},
                                 ["optim.betas = [2.0, 0.9]", "in [0, 1)", "--optim.betas [0.9, 0.95]"], None),
    "--checkpoint.keep 0": ([*TRAIN, "--checkpoint.keep", "0"], {}, ["checkpoint.keep = 0", ">= 1"], None),
    "--model.overrides.dim -8": ([*TRAIN, "--model.overrides.dim", "-8"], {},
                                 ["model.overrides.dim = -8", ">= 1", "--model.overrides.dim 128"], None),
    "--train.seed -1": ([*TRAIN, "--train.seed", "-1"], {}, ["train.seed = -1", "--train.seed 0"], None),
    "--checkpoint.every -1": ([*TRAIN, "--checkpoint.every", "-1"], {},
                              ["checkpoint.every = -1", ">= 0", "save only at the end"], None),
    "--train.stop_after -1": ([*TRAIN, "--train.stop_after", "-1"], {},
                              ["train.stop_after = -1", ">= 0", "run to train.steps"], None),
    "unwritable --checkpoint.dir": ([*TRAIN, "--checkpoint.dir", "{file}/sub"], {},
                                    ["checkpoint.dir", "{file}/sub", "writable"], None),
    "unwritable --log.jsonl": ([*TRAIN, "--log.jsonl", "{file}/sub/log.jsonl"], {},
                               ["log.jsonl", "{file}/sub", "writable"], None),
    "or-data --seed -1": ([*GENERATE, "--out", "{tmp}/corpus", "--seed", "-1"], {}, ["seed = -1", "--seed 0"], None),
    "corrupt state.json": ([*GENERATE, "--out", "{damaged_state}"], {}, ["state.json is damaged", "--force"], None),
    "--chunk 10**12": ([*GENERATE, "--out", "{tmp}/corpus", "--chunk", str(10 ** 12)], {},
                       ["chunk = 1000000000000", "--chunk 48"], None),
    "unwritable generate --out": ([*GENERATE, "--out", "{file}/sub"], {}, ["--out {file}/sub", "writable"], None),
    "tokenizer --vocab-size 2**40": ([*TOKENIZER, "--vocab-size", str(2 ** 40), "--out", "{tmp}/tok"], {},
                                     ["--vocab-size 1099511627776", "pass --vocab-size in"], None),
    "unwritable tokenizer --out": ([*TOKENIZER, "--vocab-size", "300", "--out", "{file}/sub"], {},
                                   ["--out {file}/sub", "writable"], None),
    "demo --steps 0": (["demo", "--steps", "0"], {}, ["--steps", "pass a whole number >= 2"], None),
    "demo --seq-len 0": (["demo", "--seq-len", "0"], {}, ["--seq-len", "pass a whole number >= 1"], None),
    # other owners' commands
    "explain --patterns nosuch": (["explain", "--example", "rms_norm", "--patterns", "nosuch"], {},
                                  ["--patterns", "nosuch"], "h21/h22"),
    "explain --target nosuch": (["explain", "--example", "rms_norm", "--target", "nosuch"], {},
                                ["--target", "nosuch"], "h21/h22"),
    "unwritable explain --dump-dir": (["explain", "--example", "rms_norm", "--dump-dir", "{file}/sub"], {},
                                      ["--dump-dir", "{file}/sub"], "h21"),
    "codegen --sizes D=abc": (["codegen", "--pattern", "rms_norm", "--out", "{tmp}/cg", "--sizes", "D=abc"], {},
                              ["--sizes", "D=abc"], "h23"),
    "codegen --sizes D=0": (["codegen", "--pattern", "rms_norm", "--out", "{tmp}/cg", "--sizes", "D=0"], {},
                            ["--sizes", "D=0"], "h23"),
    "codegen --sizes rows=64": (["codegen", "--pattern", "rms_norm", "--out", "{tmp}/cg", "--sizes", "rows=64"], {},
                                ["--sizes", "rows"], "h23"),
    "tune --resume missing": (["tune", "--pattern", "rms_norm", "--resume", "{tmp}/nope.json"], {},
                              ["--resume", "nope.json"], "h24"),
    "tune --max-candidates 0": (["tune", "--pattern", "rms_norm", "--max-candidates", "0"], {},
                                ["--max-candidates", "--max-candidates 24"], "h24"),
}


# rows of other owners whose fix had not landed when this table was last checked (git log): xfail,
# not strict, so each starts counting as soon as it passes; remove a row from here once it does
NOT_LANDED: set[str] = set()   # rows whose owner has not landed the fix: xfail(strict=False)


def _emulator_main(argv):
    from trex.codegen_ascendc.emulator.__main__ import main
    return main(argv)


# rows that are not `trex <command>`: id -> (callable, argv, fragments, owner)
MODULE_ROWS = {
    "emulator nope.cpp": (_emulator_main, ["{tmp}/nope.cpp"], ["nope.cpp", "does not exist"], "h23"),
}


@pytest.fixture
def paths(tmp_path):
    regular = tmp_path / "a_file"
    regular.write_text("not a folder")
    bad = tmp_path / "bad.toml"
    bad.write_text("[optim]\nlr = \n[train\n")
    binary = tmp_path / "binary.toml"
    binary.write_bytes(bytes(range(256)) * 4)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text(" ".join(f"row {i} of the buffer." for i in range(200)))
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "state.json").write_text('{"next_index": 4, "sha')
    return {"tmp": str(tmp_path), "file": str(regular), "bad_toml": str(bad), "binary_toml": str(binary),
            "corpus": str(corpus), "damaged_state": str(damaged)}


def _message_lines(err: str) -> list[str]:
    """stderr without argparse's usage block (its 'usage:' line and the indented lines after it)."""
    lines = [line for line in err.splitlines() if line.strip()]
    if lines and lines[0].startswith("usage:"):
        lines = lines[1:]
        while lines and lines[0].startswith(" "):
            lines = lines[1:]
    return lines


def _run(fn, argv, capsys) -> tuple[int | None, str]:
    try:
        code = fn(argv)
    except SystemExit as exc:
        code = exc.code
    except Exception:                          # a traceback is what the row must not produce
        return None, capsys.readouterr().err + traceback.format_exc()
    return code, capsys.readouterr().err


def _check(fn, argv, fragments, paths, capsys):
    argv = [a.format(**paths) for a in argv]
    code, err = _run(fn, argv, capsys)
    assert "Traceback" not in err, err[-3000:]
    assert code == 2, (code, err[-2000:])
    lines = _message_lines(err)
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{err[-2000:]}"
    for fragment in fragments:
        assert fragment.format(**paths) in lines[0], (fragment, lines[0])


def _params(rows):
    out = []
    for name, row in rows.items():
        owner = row[-1]
        marks = ([pytest.mark.xfail(reason=f"owned by {owner}; not fixed yet", strict=False)]
                 if name in NOT_LANDED else [])
        out.append(pytest.param(name, marks=marks, id=name))
    return out


@pytest.mark.parametrize("row", _params(ROWS))
def test_bad_command_line_exits_2_with_one_line(row, paths, monkeypatch, capsys, tmp_path):
    argv, env, fragments, _owner = ROWS[row]
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)           # nothing a row writes lands in the checkout
    _check(trex_main, argv, fragments, paths, capsys)


@pytest.mark.parametrize("row", _params(MODULE_ROWS))
def test_bad_module_command_line_exits_2_with_one_line(row, paths, monkeypatch, capsys, tmp_path):
    fn, argv, fragments, _owner = MODULE_ROWS[row]
    monkeypatch.chdir(tmp_path)
    _check(fn, argv, fragments, paths, capsys)


def test_the_table_holds_every_bad_input_of_issue_20():
    """The issue's list, so a row cannot silently disappear (N = handled rows, printed by -rA)."""
    named = set(ROWS) | set(MODULE_ROWS) | {"TREX_LOGS typo"}   # that one warns: its own test below
    assert len(named) >= 29, sorted(named)


def test_trex_logs_typo_is_one_warning_line_naming_the_valid_channels(monkeypatch):
    """TREX_LOGS is read by every torch.compile(backend="trex") of a user's program, so a typo warns
    once (one line naming the variable, the bad value and the valid channels) instead of stopping it."""
    from trex.compiler import logs
    monkeypatch.setenv("TREX_LOGS", "matchez")
    monkeypatch.setattr(logs, "_warned_specs", set())
    stream = io.StringIO()      # trex's log handler holds the stderr of import time
    monkeypatch.setattr(logs.log.handlers[0], "stream", stream)
    assert not logs.enabled("matches") and not logs.enabled("graphs")   # warned once, for both
    lines = [line for line in stream.getvalue().splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "TREX_LOGS" in lines[0] and "matchez" in lines[0] and "matches" in lines[0], lines[0]
