"""Training-state checkpoints: model, optimizer, scheduler, data position and RNG states.

Layout of `checkpoint.dir`:

    step_00000120/rank_00000.pt   one file per rank (its local shards under FSDP2/EP)
    step_00000120/meta.json       written last (step, world, each rank file's size and sha256);
                                  a step directory without it is never loaded
    latest                        the name of the newest complete step directory

A save writes every rank's file into `.tmp-step_N/` (each file itself temp + fsync + rename),
then rank 0 writes meta.json, renames the directory to `step_N` and replaces `latest`, all with
os.replace / rename, which are atomic on POSIX. A process killed at any moment (kill -9) leaves
the previous checkpoint and `latest` untouched; the next save clears the leftover temp directory.

A checkpoint damaged after its save (a truncated or emptied rank file, a cut meta.json, bytes that
no longer match the recorded sha256) is skipped by `load_newest`: it warns naming the file and
loads the newest older checkpoint that is complete and intact (`checkpoint.keep` >= 2 keeps one).

Tensors are stored as this rank's local tensors on the CPU; loading copies them back into the
live (possibly sharded) model and re-wraps optimizer states as DTensors where the parameter is one.
Checkpoint files are pickles written by this code (torch.load(weights_only=False)): load only
checkpoints you wrote.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from .errors import ConfigError

try:
    from torch.distributed.tensor import DTensor
except ImportError:  # pragma: no cover
    DTensor = ()

LATEST = "latest"
META = "meta.json"
_DIGEST_SUFFIX = ".sha256"       # a rank's digest next to its file until rank 0 folds it into meta.json


class CheckpointCorrupt(RuntimeError):
    """A checkpoint that cannot be loaded as saved; the message names the file and what is wrong."""


class NoLoadableCheckpoint(ConfigError):
    """checkpoint.dir holds checkpoints, but none of them loads."""


class _HashingWriter:
    """File object wrapper that feeds every byte written through sha256 (torch.save writes through it)."""

    def __init__(self, f):
        self.f, self.sha, self.bytes = f, hashlib.sha256(), 0

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        self.sha.update(view)
        self.bytes += len(view)
        return self.f.write(data)

    def flush(self) -> None:
        self.f.flush()


def file_sha256(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    return sha.hexdigest()


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
        rank_file = self._rank_file(tmp)
        digest = {}

        def write(f):
            hashing = _HashingWriter(f)
            torch.save(state, hashing)
            digest.update(sha256=hashing.sha.hexdigest(), bytes=hashing.bytes)
        atomic_write_bytes(rank_file, write)
        atomic_write_text(rank_file.with_name(rank_file.name + _DIGEST_SUFFIX), json.dumps(digest))
        self.barrier()
        if self.rank == 0:
            files = {}
            for rank in range(self.world):
                name = self._rank_file(tmp, rank).name
                sidecar = tmp / (name + _DIGEST_SUFFIX)
                files[name] = json.loads(sidecar.read_text())
                sidecar.unlink()
            meta = {"step": step, "world": self.world, "time": time.time(), "files": files}
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
        candidates = self._candidates()
        return candidates[0] if candidates else None

    def _candidates(self) -> list[Path]:
        """Complete step directories, the one `latest` names first, then newest to oldest."""
        complete = self._complete()[::-1]
        pointer = self.dir / LATEST
        if pointer.is_file():
            named = self.dir / pointer.read_text().strip()
            if named in complete:
                complete.remove(named)
                complete.insert(0, named)
        return complete

    def read_meta(self, step_dir: Path) -> dict:
        path = step_dir / META
        try:
            meta = json.loads(path.read_text())
            if not isinstance(meta, dict) or not {"step", "world"} <= set(meta):
                raise ValueError("it lacks step/world")
        except (OSError, ValueError) as e:
            raise CheckpointCorrupt(f"{path}: unreadable ({e})") from None
        if meta["world"] != self.world:
            raise ConfigError(f"{step_dir} was written by {meta['world']} ranks, this run has {self.world}; "
                              f"resume with the same number of processes")
        return meta

    def load(self, step_dir: Path) -> dict:
        """This rank's state from `step_dir`, its size and sha256 checked against meta.json first
        (CheckpointCorrupt names the file when they differ or it does not unpickle)."""
        meta = self.read_meta(step_dir)
        path = self._rank_file(step_dir)
        recorded = meta.get("files", {}).get(path.name)   # absent in checkpoints of older versions
        if not path.is_file():
            raise CheckpointCorrupt(f"{path}: missing")
        if recorded is not None:
            size = path.stat().st_size
            if size != recorded["bytes"]:
                raise CheckpointCorrupt(f"{path}: {size} bytes, {recorded['bytes']} were saved (truncated?)")
            if file_sha256(path) != recorded["sha256"]:
                raise CheckpointCorrupt(f"{path}: sha256 differs from the one saved in {META} (damaged)")
        try:
            return torch.load(path, map_location="cpu", weights_only=False)
        except Exception as e:      # torch.load raises what the unpickler or the zip reader raise
            raise CheckpointCorrupt(f"{path}: cannot be loaded ({type(e).__name__}: {e})") from None

    def load_newest(self, all_ranks_ok: Callable[[bool], bool] = lambda ok: ok,
                    warn: Callable[[str], None] = lambda m: print(m, file=sys.stderr)
                    ) -> tuple[Path, dict] | None:
        """The newest checkpoint every rank can load, and this rank's state; None where there is no
        checkpoint. A damaged one is skipped with a warning that names its file (`all_ranks_ok`
        combines the ranks' verdicts, so all ranks fall back to the same step)."""
        candidates = self._candidates()
        skipped = []
        for step_dir in candidates:
            state, problem = None, None
            try:
                state = self.load(step_dir)
            except CheckpointCorrupt as e:
                problem = str(e)
            if all_ranks_ok(problem is None):
                return step_dir, state
            skipped.append(problem or f"{step_dir}: another rank could not load its file")
            if self.rank == 0:
                warn(f"trex train: warning: skipping checkpoint {skipped[-1]}; trying the next older one")
        if candidates:
            raise NoLoadableCheckpoint(
                f"checkpoint.dir {self.dir}: none of its {len(candidates)} checkpoints loads ({'; '.join(skipped)}); "
                f"move them away, or pass --checkpoint.resume false to start from step 0")
        return None
