"""Bad input to `trex or-eval` and `python -m trex.training.or_eval.experiment`: exit status 2 and a
message naming the argument and the fix, never a traceback, nothing written."""
import subprocess
import sys

import pytest
import torch

from trex.training.or_eval import cli
from trex.training.or_eval import experiment as E


def _or_eval_exit(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main(["--benchmark", "nl4opt", "--model", "unused", *argv])
    assert exc.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("argv, named", [
    (["--limit", "0"], "--limit"), (["--limit", "-1"], "--limit"), (["--limit", "x"], "--limit"),
    (["--max-new-tokens", "0"], "--max-new-tokens"), (["--workers", "0"], "--workers"),
    (["--device", "tpu"], "--device"), (["--device", "cpu:1"], "--device"),
])
def test_or_eval_rejects_bad_numbers_and_devices(argv, named, capsys):
    err = _or_eval_exit(argv, capsys)
    assert f"argument {named}:" in err and "pass" in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="the machine has CUDA")
def test_or_eval_cuda_without_cuda_names_device(capsys):
    err = _or_eval_exit(["--device", "cuda"], capsys)
    assert "--device" in err and "--device cpu" in err


def test_or_eval_missing_data_root_names_both_ways_to_set_it(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TREX_OR_BENCHMARKS", str(tmp_path / "nowhere"))
    assert cli.main(["--benchmark", "nl4opt", "--model", "unused"]) == 2
    err = capsys.readouterr().err
    assert "--data-root" in err and "TREX_OR_BENCHMARKS" in err and "Traceback" not in err
    # nothing set and no shared/ folder: the message says so and names both ways
    from trex.training.or_eval import benchmarks

    def nowhere():
        raise FileNotFoundError("not found")
    monkeypatch.delenv("TREX_OR_BENCHMARKS")
    monkeypatch.setattr(benchmarks, "default_data_root", nowhere)
    monkeypatch.setattr(cli, "default_data_root", nowhere)
    assert cli.main(["--benchmark", "nl4opt", "--model", "unused"]) == 2
    err = capsys.readouterr().err
    assert "--data-root not given" in err and "pass --data-root DIR" in err and "TREX_OR_BENCHMARKS" in err
    assert cli.main(["--benchmark", "nl4opt", "--model", "unused", "--data-root", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "--data-root" in err and str(tmp_path / "nl4opt" / "nl4opt.jsonl") in err


def test_or_eval_empty_generated_file_is_a_clean_error(tmp_path, capsys):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert cli.main(["--benchmark", f"generated:{empty}", "--model", "unused"]) == 2
    assert "no problems to evaluate" in capsys.readouterr().err


def _experiment_exit(argv, tmp_path, capsys) -> str:
    out, work = tmp_path / "out", tmp_path / "work"
    with pytest.raises(SystemExit) as exc:
        E.main(["--preset", "toy", "--out-dir", str(out), "--work-dir", str(work), *argv])
    assert exc.value.code == 2
    assert not out.exists() and not work.exists()   # rejected before any file is written
    return capsys.readouterr().err


@pytest.mark.parametrize("argv, expected", [
    (["--set", "cpt_steps=abc"], "--set cpt_steps=abc: cpt_steps takes int"),
    (["--set", "general_share=\"half\""], "general_share takes float"),
    (["--set", "split_sizes=[1,2]"], "split_sizes takes tuple[int, int, int]"),
    (["--set", "stage.seq_len=1.5"], "stage.seq_len takes int"),
    (["--set", "no_such_field=1"], "--set no_such_field: unknown field"),
    (["--set", "stage.no_such_field=1"], "'stage.seq_len'"),
    (["--set", "cpt_steps"], "KEY=VALUE"),
    (["--arms", "nope"], "unknown arms ['nope']"),
    (["--arms", ","], "arms is empty"),
    (["--set", "arms=[\"sft_only\",\"nope\"]"], "unknown arms ['nope']"),
    (["--sft-steps", "0"], "--sft-steps >= 1"),
    (["--set", "seen_families=[\"no_such_family\"]"], "not produced by the data source"),
])
def test_experiment_rejects_bad_settings_before_work(argv, expected, tmp_path, capsys):
    err = _experiment_exit(argv, tmp_path, capsys)
    assert expected in err and "usage:" in err


def test_settings_are_converted_to_the_field_types():
    cfg = E.apply_settings(E.preset("toy"), ["general_share=1", "split_sizes=[1,1,1]", "name=2024",
                                             "public_limit=null", "arms=[\"sft_only\"]", "stage.lr=0.01"])
    assert cfg.general_share == 1.0 and isinstance(cfg.general_share, float)
    assert cfg.split_sizes == (1, 1, 1) and cfg.name == "2024" and cfg.public_limit is None
    assert cfg.arms == ("sft_only",) and cfg.stage.lr == 0.01


def test_experiment_bad_setting_from_the_command_line_has_no_traceback(tmp_path):
    run = subprocess.run([sys.executable, "-m", "trex.training.or_eval.experiment", "--out-dir", str(tmp_path / "o"),
                          "--work-dir", str(tmp_path / "w"), "--set", "cpt_steps=abc"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert "cpt_steps takes int" in run.stderr and not (tmp_path / "o").exists()
