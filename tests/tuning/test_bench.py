"""trex.tuning.bench (the acceptance record) and the verifier's row windows: windowed references equal the
full reference's rows; the CUDA bench runs end to end on the CPU through Triton's interpreter and
writes a record whose tuned times are never slower than the cost model's choice, and its store."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest
import torch

from trex.compiler.kernel_ir import bind_sizes
from trex.tuning import harness, verify

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROPE = {"ROWS": 48, "HD": 32, "RD": 8, "CDIV": 4, "CROWS": 12}


def _rope(sizes=ROPE):
    p = harness.build_program("rope", "fp32")
    ins = harness.make_inputs(p, sizes, seed=3)
    return p, ins, harness.scalars_for("rope", p, sizes)


@pytest.mark.parametrize("lo,hi", [(0, 8), (20, 36), (40, 48)])
def test_row_window_references_are_the_full_reference_rows(lo, hi):
    p, ins, sc = _rope()
    full = harness.reference_eager(p, ins, sc)
    w = harness.row_window_inputs(p, ins, bind_sizes(p, ins, sc), lo, hi)
    part = harness.reference_eager(p, w, sc)
    assert torch.equal(part["y"], full["y"][lo:hi])


def test_row_window_must_start_on_a_row_group():
    p, ins, sc = _rope()
    with pytest.raises(ValueError, match="multiple of"):
        harness.row_window_inputs(p, ins, bind_sizes(p, ins, sc), 2, 10)


def test_windows_only_for_many_row_groups():
    p, ins, sc = _rope()
    assert verify._windows(p, bind_sizes(p, ins, sc), seed=5) is None       # 12 groups: every row
    big = {"ROWS": 4 * 4096, "HD": 32, "RD": 8, "CDIV": 4, "CROWS": 4096}
    p, ins, sc = _rope(big)
    wins = verify._windows(p, bind_sizes(p, ins, sc), seed=123456789)
    span = verify.WINDOW_GROUPS * 4
    assert wins[0] == (0, span) and wins[-1] == (big["ROWS"] - span, big["ROWS"])
    assert all(lo % 4 == 0 and hi - lo == span and 0 <= lo < hi <= big["ROWS"] for lo, hi in wins)
    rms = harness.build_program("rms_norm", "fp32")
    rins = harness.make_inputs(rms, {"ROWS": 5000, "D": 8}, seed=0)
    assert verify._windows(rms, bind_sizes(rms, rins, {"eps": 1e-6}), seed=1) is None


def test_cuda_backend_refuses_blocks_over_1024_threads(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    from trex.tuning.cuda import CudaBackend, available
    if not available()[0]:
        pytest.skip(available()[1])
    b = CudaBackend("cuda", "rms_norm", "bf16", {"ROWS": 64, "D": 256})
    cfg, _ = b.initial()
    assert b.infeasible(dict(cfg, num_warps=32)) == []
    assert "1024 threads per block" in b.infeasible(dict(cfg, num_warps=64))[0]


def test_knobs_that_cannot_change_the_kernel_are_fixed(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    from trex.tuning.cuda import CudaBackend, available
    if not available()[0]:
        pytest.skip(available()[1])
    rms = CudaBackend("cuda", "rms_norm", "bf16", {"ROWS": 64, "D": 256})
    rms.initial()
    # a loop-free row kernel: no second pass, no history, nothing for Triton to pipeline
    assert {"reverse_second_pass", "hist_scratch", "num_stages"} <= rms.fixed_knobs
    mhc = CudaBackend("cuda", "mhc_pre", "bf16", {"ROWS": 32, "N": 4, "HD": 64, "ITERS": 4})
    mhc.initial()
    assert "num_stages" not in mhc.fixed_knobs          # its ChunkLoops are `for` loops


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed")
def test_cuda_bench_on_the_interpreter_writes_a_never_slower_record(tmp_path):
    out = tmp_path / "tuning_cpu.json"
    env = dict(os.environ, TRITON_INTERPRET="1", TREX_TRITON_CACHE=str(tmp_path / "kernels"), OMP_NUM_THREADS="2")
    proc = subprocess.run([sys.executable, "-m", "trex.tuning.bench", "--target", "cuda", "--shapes", "tiny",
                           "--patterns", "rms_norm,rope", "--max-candidates", "2", "--remeasure", "2",
                           "--budget-s", "600", "--out", str(out)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    assert doc["complete"] and doc["never_slower_all"] and doc["skipped"] == []
    assert doc["environment"]["torch"] == torch.__version__ and doc["environment"]["device"] == "cpu"
    assert [r["pattern"] for r in doc["rows"]] == ["rms_norm", "rope"]
    for r in doc["rows"]:
        assert r["profile"].startswith("interpreted")
        assert r["ratio"] >= 1.0 and r["tuned_us"] <= r["model_us"]
        assert len(r["remeasured_us"]["model"]) == 2
        assert r["search"]["compiled"] >= 1 and r["search"]["rejected_by_verifier"] == 0
        fixed = ("reverse_second_pass", "hist_scratch", "num_stages")
        if r["pattern"] == "rms_norm":
            assert not [n for n in r["tree"] if (n["move"] or "").startswith(fixed)]
        if not r["kept"]:
            assert r["tuned_config"] == r["model_config"] and r["ratio"] == 1.0
    store = json.loads((tmp_path / "tuning_cpu_store.json").read_text())
    assert sorted(e["op"] for e in store["configs"].values()) == ["rms_norm", "rope"]
    assert (tmp_path / "tuning_cpu.md").read_text().startswith("| pattern |")


def test_a_candidate_starts_only_when_its_expected_duration_fits_the_budget(tmp_path):
    import time
    from types import SimpleNamespace

    from trex.tuning.search import Search
    from trex.tuning.store import Store
    backend = SimpleNamespace(target="cuda", pattern="rms_norm", dtype="bf16", named_sizes={"ROWS": 8, "D": 64})
    s = Search(backend, Store(tmp_path / "store.json"), time_budget_s=10.0, max_candidates=99, patience=99)
    s.compiled = 2
    s._eval_s = [6.0, 2.0]           # the root paid the first compiles; the children's mean is the estimate
    assert s._out_of_budget(time.monotonic() - 7.0, 0) == ""
    stop = s._out_of_budget(time.monotonic() - 8.5, 0)
    assert stop.startswith("time budget (10 s) used") and "~2.0 s" in stop
    s._eval_s = [6.0]                # only the root so far: it is the estimate
    assert s._out_of_budget(time.monotonic() - 3.0, 0) == ""
    assert "would not fit" in s._out_of_budget(time.monotonic() - 4.5, 0)
