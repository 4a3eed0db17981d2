"""2-process gloo runs through torchrun: expert-parallel dispatch, and FSDP2 + EP training whose
losses agree with one process on the same global batch."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trex.training.train import train

HERE = Path(__file__).parent
pytestmark = pytest.mark.distributed


def _torchrun(args, nproc=2, timeout=240):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=HERE.parents[1])
    assert proc.returncode == 0, f"torchrun failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    return proc


def test_expert_parallel_dispatch_reaches_remote_experts():
    proc = _torchrun([str(HERE / "_ep_worker.py")])
    assert proc.stdout.count("expert-parallel dispatch matches") == 2


def _train_two_processes(overrides: dict, paths: list[str]) -> None:
    argv = ["-m", "trex.training.train"]
    for key, value in overrides.items():
        argv += [f"--{key}", json.dumps(value) if not isinstance(value, bool) else str(value).lower()]
    argv += ["--data.paths", json.dumps(paths)]
    _torchrun(argv)


def _losses(log: Path) -> list[float]:
    return [json.loads(line)["loss"] for line in log.read_text().splitlines()]


def test_two_process_fsdp_ep_losses_match_one_process(make_config, tmp_path, cpt_corpus):
    steps = 3
    common = {"train.steps": steps, "train.grad_accum": 2, "model.overrides.moe_dispatch": "sparse"}
    single = train(make_config(**common, **{"data.micro_batch": 4})).losses
    log = tmp_path / "dist.jsonl"
    overrides = {"model.compile": "eager", "data.seq_len": 32, "data.micro_batch": 2, "train.steps": steps, "train.grad_accum": 2,
                 "train.device": "cpu", "schedule.warmup_steps": 2, "optim.lr": 3e-3, "log.progress": False,
                 "log.jsonl": str(log), "distributed.ep": 2, "checkpoint.dir": str(tmp_path / "ck"), "model.overrides.moe_dispatch": "sparse"}
    _train_two_processes(overrides, cpt_corpus)
    dist_losses = _losses(log)
    assert len(dist_losses) == steps
    print("1 process:", single, "\n2 processes (FSDP2 + EP):", dist_losses)
    for a, b in zip(single, dist_losses):
        assert abs(a - b) <= 1e-4 * abs(a), (single, dist_losses)
    # the run really was sharded: each rank saved half the embedding rows and half the experts
    shard = torch.load(tmp_path / "ck" / f"step_{steps:08d}" / "rank_00001.pt", weights_only=False)["model"]
    assert shard["embed.weight"].shape[0] == 4096 // 2
    experts = {key.split(".experts.")[1].split(".")[0] for key in shard if key.startswith("layers.0.") and ".experts." in key}
    assert experts == {"0", "1", "2", "3"}               # 4 of the tiny config's 8 routed experts


@pytest.mark.slow   # two torchrun launches
def test_two_process_resume_continues_bit_identically(tmp_path, cpt_corpus):
    """Sharded (DTensor) model and optimizer states and local experts round-trip through a checkpoint."""
    base = {"model.compile": "eager", "data.seq_len": 32, "data.micro_batch": 2, "train.steps": 4,
            "train.device": "cpu", "schedule.warmup_steps": 2, "optim.lr": 3e-3, "log.progress": False,
            "distributed.ep": 2, "checkpoint.every": 2, "checkpoint.keep": 2}
    _train_two_processes({**base, "log.jsonl": str(tmp_path / "a.jsonl"), "checkpoint.dir": str(tmp_path / "a")},
                         cpt_corpus)
    import shutil
    (tmp_path / "b").mkdir()
    shutil.copytree(tmp_path / "a" / "step_00000002", tmp_path / "b" / "step_00000002")
    _train_two_processes({**base, "log.jsonl": str(tmp_path / "b.jsonl"), "checkpoint.dir": str(tmp_path / "b")},
                         cpt_corpus)
    full, resumed = _losses(tmp_path / "a.jsonl"), _losses(tmp_path / "b.jsonl")
    assert len(full) == 4 and resumed == full[2:], (full, resumed)
