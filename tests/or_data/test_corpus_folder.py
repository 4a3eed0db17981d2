"""One output folder holds one corpus (corpus.json records its options; other options stop with a
message, --force starts over), and a kill -9 of the generator leaves no processes behind."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from trex.training.or_data.cli import main as cli_main
from trex.training.or_data.pipeline import CORPUS_FILE, CorpusError, PipelineConfig, run_pipeline

FAST = dict(families=("knapsack", "diet"), workers=1, chunk=2, decontaminate=False)


def test_folder_records_its_options_and_refuses_others(tmp_path):
    run_pipeline(PipelineConfig(n=2, **FAST), tmp_path)
    recorded = json.loads((tmp_path / CORPUS_FILE).read_text())
    assert recorded["seed"] == 0 and recorded["families"] == ["knapsack", "diet"] and recorded["chunk"] == 2
    before = (tmp_path / "sft.jsonl").read_text()
    for change in ({"seed": 1}, {"families": ("knapsack",)}, {"chunk": 3}):
        with pytest.raises(CorpusError, match=f"{next(iter(change))}: .* recorded, .* asked.*--force"):
            run_pipeline(PipelineConfig(n=2, **{**FAST, **change}), tmp_path)
    assert (tmp_path / "sft.jsonl").read_text() == before        # nothing mixed in
    run_pipeline(PipelineConfig(n=3, **{**FAST, "workers": 1}), tmp_path)   # more samples: a resume
    assert len((tmp_path / "sft.jsonl").read_text().splitlines()) == 3


def test_force_starts_the_corpus_over_and_keeps_other_files(tmp_path):
    run_pipeline(PipelineConfig(n=2, **FAST), tmp_path)
    (tmp_path / "notes.txt").write_text("mine")
    run_pipeline(PipelineConfig(n=2, **{**FAST, "seed": 5}), tmp_path, force=True)
    assert json.loads((tmp_path / CORPUS_FILE).read_text())["seed"] == 5
    seeds = {json.loads(l)["provenance"]["seed"] for l in (tmp_path / "sft.jsonl").read_text().splitlines()}
    assert all(s >= 5 * 1_000_003 for s in seeds)
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_cli_reports_another_corpus_and_a_damaged_state_with_status_2(tmp_path, capsys):
    argv = ["generate", "--n", "2", "--out", str(tmp_path), "--workers", "1", "--chunk", "2",
            "--families", "knapsack,diet", "--no-decontam", "--no-progress"]
    assert cli_main(argv) == 0
    assert cli_main([*argv, "--seed", "3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "seed: 0 recorded, 3 asked" in err and "--force" in err
    (tmp_path / "state.json").write_text("{not json")
    assert cli_main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "state.json is damaged" in err and "--force" in err


def _descendants(pid: int) -> set[int]:
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        try:                                         # a worker may exit between the scan and the read
            tasks = list(Path(f"/proc/{p}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            try:
                children = (task / "children").read_text().split()
            except OSError:
                continue
            for c in map(int, children):
                if c not in found:
                    found.add(c)
                    todo.append(c)
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
@pytest.mark.parametrize("kill_after_s", [3.0, 8.0])
def test_kill_9_of_the_generator_leaves_no_processes(tmp_path, kill_after_s):
    """Workers (and their sandbox zygotes) started by `trex or-data generate` die with it."""
    out = tmp_path / "corpus"
    child = subprocess.Popen([sys.executable, "-m", "trex.training.or_data.cli", "generate", "--n", "500",
                              "--out", str(out), "--workers", "2", "--chunk", "8", "--no-decontam",
                              "--no-progress"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             env=dict(os.environ, OMP_NUM_THREADS="1"))
    seen: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (time.monotonic() < deadline - 60 + kill_after_s or len(seen) < 4):
            seen |= _descendants(child.pid)          # workers, their zygotes, the resource tracker
            assert child.poll() is None, child.stderr.read().decode()[-2000:]
            time.sleep(0.2)
        assert len(seen) >= 4, f"the generator started only {sorted(seen)}"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(_alive(p) for p in seen):
        time.sleep(0.2)
    left = sorted(p for p in seen if _alive(p))
    for p in left:                                   # don't leak them into the rest of the run
        os.kill(p, signal.SIGKILL)
    assert not left, f"processes outlived the killed generator: {left}"
