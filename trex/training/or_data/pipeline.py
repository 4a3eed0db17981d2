"""End-to-end generation: instance -> gold formulation -> sandboxed validation -> dedup ->
decontamination -> sharded JSONL export, resumable and deterministic.

Sample ``i`` uses seed ``seed * 1_000_003 + i``; it draws a size bin from the benchmarks' mixture
(``sizes``) and takes, in turn by ``i``, one of the configured (family, difficulty) pairs that reach
that bin (the nearest ones when none does), so corpora follow the benchmarks' sizes as far as the
families allow, and families that reach more bins get more samples. A run can stop anywhere and resume: shards are written atomically, then ``state.json`` (next
index, counts); on restart finished shards are re-read to rebuild the dedup index and work
continues at the next index.  A shard rewritten after a crash is identical (same indices, same
seeds), so the output does not depend on where the interruption happened.

Samples stream through the workers: a few per worker are in flight ahead of the one the driver
needs next, results are taken in index order (dedup and decontamination see the same order as a
serial run), and shard ``k`` holds the accepted samples of indices ``[k*chunk, (k+1)*chunk)``.
Once ``n`` are accepted the rest of the last shard's indices are not computed.

One output folder holds one corpus: ``corpus.json`` records the options that decide its contents
(CORPUS_KEYS: seed, families, difficulties, chunk, perturbations, decontamination, near-duplicate
threshold) on the first run. A re-run with the same options resumes (``n`` may grow, ``workers``
may change); one with other options stops with CorpusError, unless ``force`` deletes the folder's
corpus files and starts over. Worker processes die with the process that started them
(PR_SET_PDEATHSIG), and their sandbox zygotes end when the worker's pipe closes, so a killed run
leaves no processes behind.
"""
from __future__ import annotations

import ctypes
import json
import multiprocessing as mp
import os
import platform
import shutil
import signal
import sys
import time
from collections import deque
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from trex.training.or_data.contract import gold_formulation
from trex.training.or_data.dedup import Deduplicator, structure_key
from trex.training.or_data.export import (atomic_write_json, atomic_write_jsonl, cpt_document, git_commit, read_jsonl,
                                     sft_pair)
from trex.training.or_data.families import DIFFICULTIES, FAMILIES
from trex.training.or_data.instances import generate_instance
from trex.training.or_data.sizes import choose, draw_bin
from trex.training.or_data.validate import ValidationConfig, validate

STATE_FILE = "state.json"
CORPUS_FILE = "corpus.json"
# what run_pipeline writes into the output folder (force deletes exactly these)
CORPUS_OUTPUTS = ("cpt", "sft", STATE_FILE, CORPUS_FILE, "manifest.json", "cpt.jsonl", "sft.jsonl")
# PipelineConfig fields that decide a corpus's contents: a folder's corpus is resumed only with the same
CORPUS_KEYS = ("seed", "families", "difficulties", "chunk", "perturbations", "decontaminate", "benchmark_root",
               "near_dup_threshold")
# samples per shard: a shard is held in memory and its indices listed before any work
MAX_CHUNK = 100_000
# sample i uses seed * 1_000_003 + i: numpy seeds are non-negative
MAX_SEED = 2 ** 32 - 1
SIZE_STREAM = 5_150      # sample i's size bin is drawn from numpy's default_rng([its seed, SIZE_STREAM])
# samples submitted per worker ahead of the one the driver takes next: enough that a slow sample
# at the head does not idle the other workers, few enough that little is computed past the n-th
IN_FLIGHT_PER_WORKER = 4


class CorpusError(ValueError):
    """The output folder cannot take this run (another corpus, a damaged state file, not writable);
    the message names the folder and the fix."""


@dataclass
class PipelineConfig:
    n: int = 100
    seed: int = 0
    families: tuple = tuple(FAMILIES)
    difficulties: tuple = (1, 2, 3)
    workers: int = 2
    chunk: int = 48
    perturbations: int = 2
    decontaminate: bool = True
    benchmark_root: str | None = None     # or_benchmarks folder (None: trex.resources' default)
    near_dup_threshold: float = 0.8

    def __post_init__(self) -> None:
        if not self.families:
            raise ValueError(f"families is empty; choose at least one of {sorted(FAMILIES)}")
        unknown = [f for f in self.families if f not in FAMILIES]
        if unknown:
            raise ValueError(f"unknown families {unknown}; choose from {sorted(FAMILIES)}")
        if not self.difficulties:
            raise ValueError(f"difficulties is empty; choose at least one of {list(DIFFICULTIES)}")
        bad = [d for d in self.difficulties if d not in DIFFICULTIES]
        if bad:
            raise ValueError(f"unknown difficulties {bad}; choose from {list(DIFFICULTIES)}")
        for name in ("n", "workers", "chunk"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} = {getattr(self, name)}: must be >= 1")
        if self.chunk > MAX_CHUNK:
            raise ValueError(f"chunk = {self.chunk}: at most {MAX_CHUNK} samples per shard (a shard is built in "
                             f"memory); pass --chunk 48")
        if not 0 <= self.seed <= MAX_SEED:
            raise ValueError(f"seed = {self.seed}: must be in [0, {MAX_SEED}]; pass --seed 0")
        if self.perturbations < 0:
            raise ValueError(f"perturbations = {self.perturbations}: must be >= 0")


# ----------------------------------------------------------------------------------------------
# Worker side (one sandbox per worker process)
# ----------------------------------------------------------------------------------------------
_WORKER_SANDBOX = None


# prctl(2) option: the signal the calling process gets when its parent dies
PR_SET_PDEATHSIG = 1


def _die_with_parent(parent_pid: int) -> None:
    """Linux: SIGKILL this process when its parent dies (a kill -9 of the generator included)."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:       # the parent died before prctl took effect
        os._exit(1)


def _worker_init(parent_pid: int | None = None) -> None:
    global _WORKER_SANDBOX
    from trex.training.or_data.sandbox import Sandbox

    if parent_pid is not None:
        _die_with_parent(parent_pid)
    _WORKER_SANDBOX = Sandbox(workers=1)


@dataclass(frozen=True)
class SamplePlan:
    """What sample ``index`` is drawn as (chosen in the driver, so no worker measures ``reach``)."""
    seed: int
    size_bin: int
    family: str
    difficulty: int


def sample_plan(index: int, cfg: PipelineConfig) -> SamplePlan:
    seed = cfg.seed * 1_000_003 + index
    size_bin = draw_bin(np.random.default_rng([seed, SIZE_STREAM]))
    return SamplePlan(seed, size_bin, *choose(cfg.families, cfg.difficulties, index, size_bin))


def process_index(index: int, cfg: PipelineConfig, sandbox=None, plan: SamplePlan | None = None) -> dict:
    """Generate and validate sample ``index`` (drawn as ``plan``, by default ``sample_plan(index,
    cfg)``); returns a result dict (records only if accepted)."""
    t0 = time.perf_counter()
    plan = plan or sample_plan(index, cfg)
    seed, size_bin, family, difficulty = plan.seed, plan.size_bin, plan.family, plan.difficulty
    rejections: dict[str, int] = {}
    instance = generate_instance(family, seed, difficulty, rejections=rejections, size_bin=size_bin)
    if instance is None:
        tried = ", ".join(f"{k} {v}" for k, v in sorted(rejections.items()))
        return {"index": index, "family": family, "outcome": "generation_failed", "wall_s": time.perf_counter() - t0,
                "reason": f"no acceptable instance in {sum(rejections.values())} draws (rejected: {tried})"}
    formulation = gold_formulation(instance)
    report = validate(instance, formulation, sandbox or _WORKER_SANDBOX,
                      ValidationConfig(perturbations=cfg.perturbations))
    out = {"index": index, "family": family, "wall_s": time.perf_counter() - t0, "backend": report.backend}
    if not report.accepted:
        out.update(outcome="validation_failed", reason=report.reason)
        return out
    out.update(outcome="accepted", uid=instance.uid, text=instance.text,
               struct=structure_key(instance.family, instance.data, instance.options),
               cpt=cpt_document(instance, formulation, report), sft=sft_pair(instance, formulation, report))
    return out


# ----------------------------------------------------------------------------------------------
# Driver
# ----------------------------------------------------------------------------------------------
def hardware_info() -> dict:
    return {"machine": platform.machine(), "cpu_model": _cpu_model(),
            "cpu_count": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
            "python": platform.python_version(), "platform": platform.platform()}


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


@dataclass
class RunState:
    next_index: int = 0
    shards: int = 0
    accepted: int = 0
    counts: dict = field(default_factory=dict)
    per_family: dict = field(default_factory=dict)
    wall_s: float = 0.0


def _load_state(out: Path) -> RunState:
    path = out / STATE_FILE
    if not path.exists():
        return RunState()
    try:
        return RunState(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError) as exc:
        raise CorpusError(f"{path} is damaged ({type(exc).__name__}: {exc}); pass --force to start the corpus "
                          f"in {out} over, or another --out") from None


def corpus_options(cfg: PipelineConfig) -> dict:
    options = asdict(cfg)
    return {k: list(options[k]) if isinstance(options[k], tuple) else options[k] for k in CORPUS_KEYS}


def claim_output(cfg: PipelineConfig, out: Path, force: bool = False) -> None:
    """Make `out` this corpus's folder: record its options there, or check they are the recorded
    ones (CorpusError lists the differences); `force` first deletes the corpus files in it."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        if force:
            for name in CORPUS_OUTPUTS:
                target = out / name
                shutil.rmtree(target) if target.is_dir() else target.unlink(missing_ok=True)
        (out / "cpt").mkdir(exist_ok=True)
        (out / "sft").mkdir(exist_ok=True)
    except OSError as exc:
        raise CorpusError(f"--out {out}: cannot write there ({exc.strerror or exc}); pass a writable folder") from None
    wanted = corpus_options(cfg)
    path = out / CORPUS_FILE
    if path.exists():
        try:
            recorded = json.loads(path.read_text())
        except ValueError as exc:
            raise CorpusError(f"{path} is damaged ({exc}); pass --force to start the corpus in {out} over") from None
        differ = {k: (recorded.get(k), v) for k, v in wanted.items() if recorded.get(k) != v}
        if differ:
            listed = "; ".join(f"{k}: {a!r} recorded, {b!r} asked" for k, (a, b) in differ.items())
            raise CorpusError(f"--out {out} holds a corpus generated with other options ({listed}); re-run with "
                              f"the recorded options to resume it, pass another --out, or --force to delete it "
                              f"and start over")
        return
    from trex.training.or_data.export import atomic_write_json
    atomic_write_json(path, wanted)


# why a sample of each outcome decided in the driver is left out
DRIVER_REASONS = {"duplicate": "the same text or structure as an earlier sample",
                  "contaminated": "overlaps a benchmark problem (decontamination)"}


class _Stream:
    """The results of samples ``start``, ``start + 1``, ... taken in index order. With a pool, up to
    IN_FLIGHT_PER_WORKER per worker are submitted ahead (each with its plan, chosen here), and no
    more than the samples still ``needed`` (nearly every sample is accepted: near the end, the
    window would otherwise compute up to a full window past the n-th)."""

    def __init__(self, cfg: PipelineConfig, pool: ProcessPoolExecutor | None, start: int, needed: int):
        self.cfg, self.pool, self.next_submit = cfg, pool, start
        self.pending: deque = deque()
        if pool is not None:    # start every worker now, while the first plans measure sizes.reach (~0.4 s)
            for _ in range(cfg.workers):
                pool.submit(os.getpid)
        self._fill(needed)

    def _fill(self, needed: int) -> None:
        while self.pool is not None and len(self.pending) < min(IN_FLIGHT_PER_WORKER * self.cfg.workers, needed):
            index = self.next_submit
            self.pending.append(self.pool.submit(process_index, index, self.cfg, None, sample_plan(index, self.cfg)))
            self.next_submit += 1

    def take(self, index: int, needed: int) -> dict:
        """Sample ``index``'s result, while ``needed`` more accepted samples are wanted."""
        if self.pool is None:
            return process_index(index, self.cfg)
        self._fill(needed)
        result = self.pending.popleft().result()
        self._fill(needed - 1)
        assert result["index"] == index, (result["index"], index)
        return result


def run_pipeline(cfg: PipelineConfig, out_dir: str | Path, progress: Callable[[int, int], None] | None = None,
                 stop_after_shards: int | None = None, force: bool = False,
                 on_sample: Callable[[dict], None] | None = None,
                 on_reject: Callable[[dict], None] | None = None) -> RunState:
    """Generate until ``cfg.n`` accepted samples exist in ``out_dir`` (resuming if it has some of
    this corpus; CorpusError if it holds another one, unless ``force``). ``progress(accepted, n)``
    runs after every shard, ``on_sample(result)`` as the driver takes each sample from a worker
    (in index order, with its outcome there), ``on_reject(result)`` for every sample left out,
    with its final ``outcome`` and ``reason``, as the driver decides it."""
    out = Path(out_dir)
    claim_output(cfg, out, force)
    state = _load_state(out)
    dedup = Deduplicator(cfg.near_dup_threshold)
    for k in range(state.shards):  # rebuild the dedup index from finished shards
        for rec in read_jsonl(out / "sft" / f"shard-{k:05d}.jsonl"):
            prov = rec["provenance"]
            dedup.check_and_add(rec["id"], rec["problem"], structure_key(prov["family"], prov["data"], prov["options"]))
    if progress:
        progress(state.accepted, cfg.n)
    pool = (ProcessPoolExecutor(max_workers=cfg.workers, mp_context=mp.get_context("spawn"),
                                initializer=_worker_init, initargs=(os.getpid(),))
            if cfg.workers > 1 else None)
    if pool is None:
        _worker_init()
    try:
        # the first samples are submitted (the workers start) before the decontamination index is built
        stream = _Stream(cfg, pool, state.next_index, cfg.n - state.accepted) if state.accepted < cfg.n else None
        decontam = None
        if cfg.decontaminate:
            from trex.training.or_data.decontam import cached_decontaminator

            decontam = cached_decontaminator(cfg.benchmark_root)
        t_start = time.perf_counter() - state.wall_s
        shards_this_run = 0
        while state.accepted < cfg.n:
            start = state.next_index
            cpt, sft = [], []
            for index in range(start, start + cfg.chunk):
                if state.accepted + len(sft) >= cfg.n:
                    break       # the shard's remaining indices are not needed (a resumed run starts after them)
                r = stream.take(index, cfg.n - state.accepted - len(sft))
                if on_sample:
                    on_sample(r)
                outcome = r["outcome"]
                if outcome == "accepted":
                    dup = dedup.check_and_add(r["uid"], r["text"], r["struct"])
                    if dup:
                        outcome = "duplicate"
                    elif decontam is not None and decontam.check(r["text"]):
                        outcome = "contaminated"
                if outcome == "accepted":
                    cpt.append(r["cpt"])
                    sft.append(r["sft"])
                    fam = state.per_family.setdefault(r["family"], {"accepted": 0, "rejected": 0})
                    fam["accepted"] += 1
                else:
                    state.per_family.setdefault(r["family"], {"accepted": 0, "rejected": 0})["rejected"] += 1
                    if on_reject:
                        on_reject({**{k: r.get(k) for k in ("index", "family", "reason")}, "outcome": outcome,
                                   "reason": DRIVER_REASONS.get(outcome) or r.get("reason") or outcome})
                state.counts[outcome] = state.counts.get(outcome, 0) + 1
            atomic_write_jsonl(out / "cpt" / f"shard-{state.shards:05d}.jsonl", cpt)
            atomic_write_jsonl(out / "sft" / f"shard-{state.shards:05d}.jsonl", sft)
            state.shards += 1
            state.accepted += len(sft)
            state.next_index = start + cfg.chunk
            state.wall_s = time.perf_counter() - t_start
            atomic_write_json(out / STATE_FILE, asdict(state))
            if progress:
                progress(state.accepted, cfg.n)
            shards_this_run += 1
            if stop_after_shards is not None and shards_this_run >= stop_after_shards:
                return state
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        elif _WORKER_SANDBOX is not None:
            _WORKER_SANDBOX.close()
    _finalize(out, cfg, state)
    return state


def _finalize(out: Path, cfg: PipelineConfig, state: RunState) -> None:
    for kind in ("cpt", "sft"):
        records = []
        for k in range(state.shards):
            records += read_jsonl(out / kind / f"shard-{k:05d}.jsonl")
        atomic_write_jsonl(out / f"{kind}.jsonl", records)
    atomic_write_json(out / "manifest.json", {
        "config": asdict(cfg), "state": asdict(state), "commit": git_commit(), "hardware": hardware_info(),
        "files": {"cpt": "cpt.jsonl", "sft": "sft.jsonl"},
        "accepted_per_s": state.accepted / state.wall_s if state.wall_s else None,
    })
