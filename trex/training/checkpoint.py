"""Training-state checkpoints: model, optimizer, scheduler, data position and RNG states.

Layout of `checkpoint.dir`:

    step_00000120/rank_00000.pt   one file per rank (its local shards under FSDP2/EP)
    step_00000120/meta.json       written last; a step directory without it is never loaded
    latest                        the name of the newest complete step directory

A save writes every rank's file into `.tmp-step_N/` (each file itself temp + fsync + rename),
then rank 0 writes meta.json, renames the directory to `step_N` and replaces `latest`, all with
os.replace / rename, which are atomic on POSIX. A process killed at any moment (kill -9) leaves
the previous checkpoint and `latest` untouched; the next save clears the leftover temp directory.

Tensors are stored as this rank's local tensors on the CPU; loading copies them back into the
live (possibly sharded) model and re-wraps optimizer states as DTensors where the parameter is one.
Checkpoint files are pickles written by this code (torch.load(weights_only=False)): load only
checkpoints you wrote.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

try:
    from torch.distributed.tensor import DTensor
except ImportError:  # pragma: no cover
    DTensor = ()

LATEST = "latest"
META = "meta.json"


def _step_dir_name(step: int) -> str:
    return f"step_{step:08d}"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, write: Callable[[object], None]) -> None:
    """Write through `write(fileobj)` into a temp file next to `path`, fsync, then rename over it."""
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, lambda f: f.write(text.encode()))


# ---------------------------------------------------------------------------------------------
# State conversion (local shards on the CPU)


def _local_cpu(t):
    if isinstance(t, DTensor):
        t = t.to_local()
    return t.detach().cpu().clone() if torch.is_tensor(t) else t


def model_state(model: torch.nn.Module) -> dict:
    return {k: _local_cpu(v) for k, v in model.state_dict().items()}


@torch.no_grad()
def load_model_state(model: torch.nn.Module, state: dict) -> None:
    live = model.state_dict()
    missing, unexpected = sorted(set(live) - set(state)), sorted(set(state) - set(live))
    if missing or unexpected:
        raise KeyError(f"checkpoint does not fit the model: missing {missing[:5]}, unexpected "
                       f"{unexpected[:5]}; was it written with the same model config and parallelism?")
    for k, v in live.items():
        dst = v.to_local() if isinstance(v, DTensor) else v
        if dst.shape != state[k].shape:
            raise ValueError(f"checkpoint tensor {k!r} has local shape {tuple(state[k].shape)}, the model "
                             f"{tuple(dst.shape)}; resume with the same world size and distributed.ep")
        dst.copy_(state[k])


def _flat_params(optimizer: torch.optim.Optimizer) -> list:
    return [p for g in optimizer.param_groups for p in g["params"]]


def optimizer_state(optimizer: torch.optim.Optimizer) -> dict:
    sd = optimizer.state_dict()
    sd["state"] = {i: {k: _local_cpu(v) for k, v in st.items()} for i, st in sd["state"].items()}
    return sd


def load_optimizer_state(optimizer: torch.optim.Optimizer, state: dict) -> None:
    params = _flat_params(optimizer)
    rewrapped = {}
    for i, st in state["state"].items():
        p = params[int(i)]
        out = {}
        for k, v in st.items():
            if isinstance(p, DTensor) and torch.is_tensor(v) and v.ndim > 0:
                v = DTensor.from_local(v.to(p.device), p.device_mesh, p.placements,
                                       run_check=False, shape=p.shape, stride=p.stride())
            out[k] = v
        rewrapped[i] = out
    optimizer.load_state_dict({**state, "state": rewrapped})


def rng_state() -> dict:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


# ---------------------------------------------------------------------------------------------
# Directory protocol


class Checkpointer:
    """Saves and finds checkpoints in one directory; `barrier` synchronises ranks (no-op alone)."""

    def __init__(self, directory: str | Path, keep: int = 2, rank: int = 0, world: int = 1,
                 barrier: Callable[[], None] = lambda: None):
        if keep < 1:
            raise ValueError(f"checkpoint.keep = {keep}; keep at least 1 checkpoint")
        self.dir = Path(directory)
        self.keep, self.rank, self.world, self.barrier = keep, rank, world, barrier
        self.dir.mkdir(parents=True, exist_ok=True)

    def _rank_file(self, step_dir: Path, rank: int | None = None) -> Path:
        return step_dir / f"rank_{self.rank if rank is None else rank:05d}.pt"

    def save(self, step: int, state: dict) -> Path:
        final = self.dir / _step_dir_name(step)
        tmp = self.dir / f".tmp-{final.name}"
        if self.rank == 0:
            shutil.rmtree(tmp, ignore_errors=True)   # a leftover from a killed save
            tmp.mkdir()
        self.barrier()
        atomic_write_bytes(self._rank_file(tmp), lambda f: torch.save(state, f))
        self.barrier()
        if self.rank == 0:
            meta = {"step": step, "world": self.world, "time": time.time()}
            atomic_write_text(tmp / META, json.dumps(meta))
            if final.exists():                       # re-saving the same step: replace it
                shutil.rmtree(final)
            os.rename(tmp, final)
            _fsync_dir(self.dir)
            atomic_write_text(self.dir / LATEST, final.name)
            self._prune()
        self.barrier()
        return final

    def _complete(self) -> list[Path]:
        return sorted(p for p in self.dir.glob("step_*") if (p / META).is_file())

    def _prune(self) -> None:
        for old in self._complete()[:-self.keep]:
            shutil.rmtree(old, ignore_errors=True)
        for leftover in self.dir.glob(".tmp-step_*"):
            shutil.rmtree(leftover, ignore_errors=True)

    def latest(self) -> Path | None:
        """The newest complete checkpoint: `latest` if it names one, else the newest with meta.json."""
        pointer = self.dir / LATEST
        if pointer.is_file():
            named = self.dir / pointer.read_text().strip()
            if (named / META).is_file():
                return named
        complete = self._complete()
        return complete[-1] if complete else None

    def load(self, step_dir: Path) -> dict:
        meta = json.loads((step_dir / META).read_text())
        if meta["world"] != self.world:
            raise ValueError(f"{step_dir} was written by {meta['world']} ranks, this run has {self.world}; "
                             f"resume with the same number of processes")
        return torch.load(self._rank_file(step_dir), map_location="cpu", weights_only=False)
