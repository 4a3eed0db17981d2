"""Checkpoint protocol: atomic commit, kill -9 during a save keeps the previous one loadable."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from trex.training.checkpoint import Checkpointer

CHILD = textwrap.dedent("""
    import sys, time, torch
    import trex.training.checkpoint as ck
    directory, phase = sys.argv[1], sys.argv[2]
    saver = ck.Checkpointer(directory, keep=3)
    saver.save(1, {"step": 1, "w": torch.arange(10.0)})
    real_save, real_text = torch.save, ck.atomic_write_text
    def stall():
        print("STALLED", flush=True)
        time.sleep(120)
    def slow_save(obj, f):             # the rank file is half-way: bytes in the temp file, not renamed
        real_save(obj, f)
        f.flush()
        stall()
    def slow_meta(path, text):         # every rank file is written, the directory is not committed
        stall()
    if phase == "rank_file":
        torch.save = slow_save
    else:
        ck.atomic_write_text = slow_meta
    saver.save(2, {"step": 2, "w": torch.arange(10.0) * 2})
""")


@pytest.mark.parametrize("phase", ["rank_file", "commit"])
def test_kill_during_save_keeps_previous_checkpoint(tmp_path, phase):
    directory = tmp_path / "ckpt"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(directory), phase],
                             stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = child.stdout.readline()
        assert line.strip() == "STALLED", f"child did not reach the save ({line!r}, rc={child.poll()})"
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL
    assert list(directory.glob(".tmp-step_00000002")), "the interrupted save left no temp directory"
    saver = Checkpointer(directory)
    latest = saver.latest()
    assert latest is not None and latest.name == "step_00000001"
    state = saver.load(latest)
    assert state["step"] == 1 and torch.equal(state["w"], torch.arange(10.0))
    # the next save succeeds and clears the leftover
    saver.save(2, {"step": 2})
    assert saver.latest().name == "step_00000002"
    assert not list(directory.glob(".tmp-*"))


def test_keep_prunes_old_and_latest_falls_back(tmp_path):
    saver = Checkpointer(tmp_path, keep=2)
    for step in (1, 2, 3):
        saver.save(step, {"step": step})
    assert sorted(p.name for p in tmp_path.glob("step_*")) == ["step_00000002", "step_00000003"]
    (tmp_path / "latest").write_text("step_00000009")   # names nothing complete
    assert saver.latest().name == "step_00000003"


def test_world_size_mismatch_is_explained(tmp_path):
    Checkpointer(tmp_path).save(1, {"step": 1})
    with pytest.raises(ValueError, match="same number of processes"):
        Checkpointer(tmp_path, world=2).load(tmp_path / "step_00000001")
