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


# How a checkpoint gets damaged after its save: each must be detected and skipped
def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_64_bytes(path):
    data = bytearray(path.read_bytes())
    middle = len(data) // 2
    data[middle:middle + 64] = bytes(b ^ 0xFF for b in data[middle:middle + 64])
    path.write_bytes(bytes(data))


DAMAGE = {
    "truncated rank file": ("rank_00000.pt", _truncate),
    "empty rank file": ("rank_00000.pt", lambda p: p.write_bytes(b"")),
    "flipped bytes in the rank file": ("rank_00000.pt", _flip_64_bytes),
    "cut meta.json": ("meta.json", lambda p: p.write_text(p.read_text()[:15])),
    "missing rank file": ("rank_00000.pt", lambda p: p.unlink()),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_damaged_newest_checkpoint_falls_back_to_the_older_one(tmp_path, damage):
    name, harm = DAMAGE[damage]
    saver = Checkpointer(tmp_path, keep=2)
    for step in (1, 2):
        saver.save(step, {"step": step, "w": torch.arange(1000.0) * step})
    harm(tmp_path / "step_00000002" / name)
    warnings = []
    step_dir, state = saver.load_newest(warn=warnings.append)
    assert step_dir.name == "step_00000001" and torch.equal(state["w"], torch.arange(1000.0))
    assert len(warnings) == 1 and str(tmp_path / "step_00000002" / name) in warnings[0], warnings


def test_no_loadable_checkpoint_names_every_file_and_the_fix(tmp_path):
    from trex.training.checkpoint import NoLoadableCheckpoint
    saver = Checkpointer(tmp_path, keep=2)
    for step in (1, 2):
        saver.save(step, {"step": step})
        _truncate(tmp_path / f"step_{step:08d}" / "rank_00000.pt")
    with pytest.raises(NoLoadableCheckpoint) as info:
        saver.load_newest(warn=lambda m: None)
    message = str(info.value)
    assert "step_00000001/rank_00000.pt" in message and "step_00000002/rank_00000.pt" in message
    assert "--checkpoint.resume false" in message
    assert Checkpointer(tmp_path / "empty").load_newest() is None


def _log_steps(path):
    import json
    return [json.loads(line)["step"] for line in Path(path).read_text().splitlines()]


def test_train_resumes_past_a_truncated_newest_checkpoint_and_logs_each_step_once(make_config, tmp_path, capsys):
    from trex.training.train import train
    ckpt = tmp_path / "ckpt"
    common = {"checkpoint.dir": str(ckpt), "checkpoint.every": 2, "checkpoint.keep": 2}
    train(make_config(**common, **{"train.steps": 6, "train.stop_after": 4}))
    assert _log_steps(tmp_path / "log.jsonl") == [1, 2, 3, 4]
    _truncate(ckpt / "step_00000004" / "rank_00000.pt")
    capsys.readouterr()
    result = train(make_config(**common, **{"train.steps": 6}))
    err = capsys.readouterr().err
    assert result.resumed_from == 2 and result.final_step == 6
    assert "step_00000004/rank_00000.pt" in err and "warning" in err, err
    # steps 3 and 4 of the first run were logged, then lost with their checkpoint: logged once, by the re-run
    assert _log_steps(tmp_path / "log.jsonl") == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("policy", ["given", "stored", "error"])
def test_resume_with_a_changed_lr_says_which_value_wins(make_config, tmp_path, capsys, policy):
    from trex.training.config import ConfigError
    from trex.training.train import lr_lambda, train
    common = {"checkpoint.dir": str(tmp_path / "ckpt"), "train.steps": 6, "schedule.warmup_steps": 2}
    train(make_config(**common, **{"train.stop_after": 3, "optim.lr": 3e-3}))
    capsys.readouterr()
    again = make_config(**common, **{"optim.lr": 1e-3, "checkpoint.resume_settings": policy})
    if policy == "error":
        with pytest.raises(ConfigError, match=r"optim\.lr 0\.003 \(checkpoint\) vs 0\.001 \(given\)"):
            train(again)
        return
    result = train(again)
    err = capsys.readouterr().err
    assert f"checkpoint.resume_settings = {policy}" in err and "optim.lr 0.003 (checkpoint) vs 0.001 (given)" in err
    base = {"given": 1e-3, "stored": 3e-3}[policy]
    schedule = lr_lambda(2, 6, make_config().schedule.min_lr_ratio)
    assert [r["lr"] for r in result.records] == pytest.approx([base * schedule(s - 1) for s in (4, 5, 6)])
    assert again.optim.lr == 1e-3                   # the caller's config object is not changed


def test_resume_with_another_model_is_a_config_error(make_config, tmp_path):
    from trex.training.config import ConfigError
    from trex.training.train import train
    common = {"checkpoint.dir": str(tmp_path / "ckpt"), "train.steps": 2}
    train(make_config(**common))
    with pytest.raises(ConfigError, match=r"data\.seq_len 32 -> 16.*--checkpoint\.resume false"):
        train(make_config(**{**common, "data.seq_len": 16, "train.steps": 4}))
