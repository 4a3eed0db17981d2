"""bench/train_step.py --merge: one result from device calls that each ran some modes (session 10's
flash_h200: eager and trex in one call, Inductor's 207 s compile in a second), on the CPU."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _mode(mode, status="ok", losses=(3.0, 2.0, 1.5), step_s=0.2):
    r = {"mode": mode, "status": status}
    if status == "ok":
        r.update(tokens_per_s=4096 / step_s, mfu=0.1 / step_s, step_time_s=step_s, first_step_s=1.0,
                 tokens_per_step=4096, per_step=[{"step": i + 1, "loss": v} for i, v in enumerate(losses)],
                 anatomy={"launches": 10.0, "device_us": 100.0, "wall_us": 200.0, "busy_share": 0.5,
                          "tail": {"launches": 5.0, "launch_share": 0.5, "device_share": 0.1},
                          "family_share": {"GEMM": 0.75, "optimizer": 0.25},
                          "family_launches": {"GEMM": 6.0, "optimizer": 4.0}})
    return r


def _record(commit, results):
    return {"benchmark": "train_step", "time_utc": "2026-12-01T22:00:00+00:00", "commit": commit,
            "hardware": {"gpu": "NVIDIA H200", "torch": "2.11.0+cu130"},
            "args": {"model": "flash_h200", "n_layers": 0, "device": "cuda"}, "results": results}


def _merge(*args):
    return subprocess.run([sys.executable, str(REPO / "bench" / "train_step.py"), "--merge", *map(str, args)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)


def test_merge_takes_each_modes_ok_result_and_keeps_every_sources_stamp(tmp_path):
    first = tmp_path / "call2.json"
    first.write_text(json.dumps(_record("aaa", [_mode("eager"), _mode("trex", losses=(3.0, 2.1, 1.4), step_s=0.1),
                                                _mode("inductor", status="timeout")])))
    second = tmp_path / "call3.json"
    second.write_text(json.dumps(_record("bbb", [_mode("inductor", losses=(3.0, 2.5), step_s=0.15)])))
    out = tmp_path / "merged.json"
    proc = _merge(first, second, "--out", out)
    assert proc.returncode == 0, proc.stderr
    rec = json.loads(out.read_text())
    assert [s["commit"] for s in rec["merged_from"]] == ["aaa", "bbb"]
    assert {r["mode"]: (r["status"], r["source"]) for r in rec["results"]} == {
        "eager": ("ok", "call2.json"), "trex": ("ok", "call2.json"), "inductor": ("ok", "call3.json")}
    vs = rec["loss_curves"]["vs_eager"]
    assert vs["trex"]["steps"] == 3 and vs["trex"]["max_abs_diff"] == pytest.approx(0.1)
    assert vs["inductor"]["steps"] == 2 and vs["inductor"]["last_abs_diff"] == pytest.approx(0.5)
    assert "x2.00" in proc.stdout                      # trex's tokens/s over eager's in the table
    pytest.importorskip("matplotlib")
    assert out.with_suffix(".png").stat().st_size > 0
    assert (tmp_path / "merged_anatomy.png").stat().st_size > 0


def test_merge_of_a_file_that_is_not_a_result_says_which_and_exits_2(tmp_path):
    bad = tmp_path / "profile_trex.json"
    bad.write_text(json.dumps({"mode": "trex"}))
    proc = _merge(bad, "--out", tmp_path / "m.json")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "--merge" in proc.stderr and "profile_trex.json" in proc.stderr
    assert not (tmp_path / "m.json").exists()
