"""`trex tune` (trex.tuning.cli:main)."""
import json

import pytest

from trex.codegen_ascendc.emulator import compiler_available
from trex.tuning.cli import main


@pytest.mark.skipif(not compiler_available(), reason="no C++ compiler for the AscendC emulator")
def test_tune_then_answer_from_the_store(tmp_path, capsys):
    store = tmp_path / "store.json"
    out = tmp_path / "result.json"
    args = ["--pattern", "swiglu_limited", "--shape", "ROWS=6,F=48", "--target", "ascend910c", "--store",
            str(store), "--max-candidates", "2", "--checks", "1", "-q"]
    assert main(args + ["--json", str(out)]) == 0
    first = capsys.readouterr().out
    assert "from search" in first and "modeled" in first
    result = json.loads(out.read_text())
    assert result["nodes"][0]["status"] == "root" and result["time_s"] <= result["baseline_time_s"]
    assert main(args) == 0
    assert "from store" in capsys.readouterr().out
    assert main(["--show", "--store", str(store)]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert list(shown["configs"]) == ["swiglu_limited|F=48,ROWS<=8|bf16|ascend910c"]


def test_bad_shape_names_the_sizes(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--pattern", "rms_norm", "--shape", "ROWS=4,Q=3", "--store", str(tmp_path / "s.json")])
    assert e.value.code == 2
    assert "not a size of pattern 'rms_norm'" in capsys.readouterr().err


def test_cuda_without_a_gpu_exits_with_the_reason(tmp_path, capsys, monkeypatch):
    from trex.tuning.cuda import available
    # tests/conftest.py turns Triton's interpreter on for CPU hosts, and with it the CPU backend
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    ok, why = available()
    if ok:
        pytest.skip("a CUDA GPU with Triton is present; this checks the message on hosts without one")
    assert main(["--pattern", "rms_norm", "--shape", "ROWS=8,D=64", "--target", "cuda",
                 "--store", str(tmp_path / "s.json")]) == 3
    assert why in capsys.readouterr().err


@pytest.mark.skipif(not compiler_available(), reason="no C++ compiler for the AscendC emulator")
def test_resume_branches_a_saved_tree(tmp_path, capsys):
    store, out, more = tmp_path / "store.json", tmp_path / "first.json", tmp_path / "more.json"
    base = ["--pattern", "rms_norm", "--shape", "ROWS=12,D=32", "--target", "ascend910b", "--store", str(store),
            "--checks", "1", "-q"]
    assert main(base + ["--max-candidates", "2", "--json", str(out)]) == 0
    first = json.loads(out.read_text())
    assert main(base + ["--max-candidates", "2", "--resume", str(out), "--from-node", "0", "--json", str(more)]) == 0
    second = json.loads(more.read_text())
    assert len(second["nodes"]) > len(first["nodes"])
    assert second["nodes"][:len(first["nodes"])] == first["nodes"]
    capsys.readouterr()
    # a tree of another key cannot be resumed
    assert main(["--pattern", "rms_norm", "--shape", "ROWS=12,D=64", "--target", "ascend910b", "--store", str(store),
                 "--resume", str(out), "-q"]) == 2
    assert "resume with the same pattern" in capsys.readouterr().err


@pytest.mark.parametrize("args,name", [(["--max-candidates", "0"], "--max-candidates"),
                                       (["--max-candidates", "-3"], "--max-candidates"),
                                       (["--time-budget", "0"], "--time-budget"), (["--time-budget", "-5"], "--time-budget"),
                                       (["--patience", "0"], "--patience"), (["--patience", "-1"], "--patience"),
                                       (["--checks", "0"], "--checks"),
                                       (["--resume", "/no/such/tree.json"], "--resume /no/such/tree.json: no such file")])
def test_bad_budgets_and_files_are_one_line_exit_2_and_nothing_is_compiled(tmp_path, capsys, args, name):
    from trex.tuning import harness
    compiles = harness.COMPILE_COUNT["n"]
    store = tmp_path / "s.json"
    assert main(["--pattern", "rms_norm", "--shape", "ROWS=8,D=32", "--store", str(store), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and name in err and err.startswith("trex tune: "), err
    assert harness.COMPILE_COUNT["n"] == compiles and not store.exists()


def test_a_corrupt_store_is_one_line_naming_it(tmp_path, capsys):
    store = tmp_path / "s.json"
    store.write_text('{"format": "trex-tun')
    assert main(["--show", "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(store) in err and "truncated or corrupt" in err
