"""`trex tune` (tuning.cli:main)."""
import json

import pytest

from codegen_ascendc.emulator import compiler_available
from tuning.cli import main


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


def test_cuda_without_a_gpu_exits_with_the_reason(tmp_path, capsys):
    from tuning.cuda import available
    ok, why = available()
    if ok:
        pytest.skip("a CUDA GPU with Triton is present; this checks the message on hosts without one")
    assert main(["--pattern", "rms_norm", "--shape", "ROWS=8,D=64", "--target", "cuda",
                 "--store", str(tmp_path / "s.json")]) == 3
    assert why in capsys.readouterr().err
