"""`trex train --config FILE [--section.field VALUE ...]`: the training loop.

Read top to bottom, a run is:

 1. configuration   (trex/training/config.py: TOML + command-line overrides)
 2. devices         (torchrun environment -> process group, DeviceMesh; alone: one device)
 3. data            (tokenizer, CPT packing or SFT pairs, a resumable deterministic loader)
 4. model           (trex.training.model.Transformer; identical initial weights on every rank)
 5. parallelism     (expert parallel MoE + FSDP2 for the rest; trex/training/distributed.py)
 6. compile         (backend="trex" by default; --model.compile eager|inductor|trex|trex_inductor)
 7. optimizer       (AdamW or the host-swapping SwapAdamW) and warmup + cosine schedule
 8. resume          (the newest complete checkpoint in checkpoint.dir, if any)
 9. the loop        (grad accumulation, bf16 autocast, clipping, NaN/Inf skip, JSONL log,
                     progress bar, checkpoints)

Mixed precision: parameters, gradients and optimizer states stay fp32 (they are the master
weights); with train.precision = "bf16" the forward and backward run under
torch.autocast(dtype=bfloat16), so matmuls run in bf16 while reductions, losses and the
optimizer update stay fp32. One mechanism for one device, FSDP2 and the swap optimizer alike.
"""
from __future__ import annotations

import argparse
import contextlib
import copy
import importlib
import importlib.util
import json
import math
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch

from .checkpoint import (Checkpointer, load_model_state, load_optimizer_state, model_state,
                         optimizer_state, rng_state, set_rng_state)
from .config import (Config, ConfigError, check_output_paths, load_config, model_args, parse_overrides,
                     validate_launch)
from .data import DataLoader, build_dataset
from .tokenizer import load_tokenizer
from .distributed import (ParallelDims, clip_grad_norm, destroy_distributed, init_distributed,
                          parallelize, reduce_expert_grads)
from .optim import build_optimizer


class TrainingStopped(RuntimeError):
    """Raised when the run cannot continue (too many consecutive non-finite steps)."""


@dataclass
class TrainResult:
    records: list[dict] = field(default_factory=list)   # one per step run in this process
    final_step: int = 0
    resumed_from: int = 0
    stop_reason: str = ""        # "steps" | "stop_after" | "max_seconds"
    summary: dict = field(default_factory=dict)         # run_summary(): setup/compile times, fusions

    @property
    def losses(self) -> list[float]:
        return [r["loss"] for r in self.records]


# ---------------------------------------------------------------------------------------------
# helpers, in the order the loop uses them


def resolve_device(name: str, local_rank: int) -> torch.device:
    if name in ("auto", "npu") and importlib.util.find_spec("torch_npu") is not None:
        importlib.import_module("torch_npu")     # registers torch.npu and the "hccl" backend
    if name == "auto":
        name = next((d for d in ("cuda", "npu") if _available(d)), "cpu")
    if name != "cpu" and not _available(name):
        raise ConfigError(f"train.device = {name!r} but no {name} device is available; use cpu or auto")
    return torch.device(name, local_rank) if name != "cpu" else torch.device("cpu")


def _available(device_type: str) -> bool:
    try:
        return torch.get_device_module(device_type).is_available()
    except (RuntimeError, AttributeError):
        return False


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def build_model(cfg: Config, vocab_needed: int):
    lib = importlib.import_module("trex.training.model")
    args = model_args(cfg)      # model.name / model.overrides, checked when the config loaded
    if args.vocab_size < vocab_needed:
        raise ConfigError(f"model vocab_size {args.vocab_size} < tokenizer vocab_size {vocab_needed}; "
                          f"raise --model.overrides.vocab_size or use a smaller tokenizer")
    return lib, args, lib.Transformer(args)


def _register_cuda_kernels(device: torch.device) -> None:
    # Without this the fused ops on CUDA tensors run trex's composite PyTorch reference; with it
    # they run the Triton kernels printed from the Kernel IR (docs/gpu.md).
    if device.type == "cuda":
        importlib.import_module("trex.codegen_triton").register_cuda_target()


def _compile_trex(model, device: torch.device):
    # importing the backend registers "trex" with dynamo even where the package's entry points
    # are not installed (a bare checkout on a GPU machine)
    importlib.import_module("trex.compiler.backend")
    _register_cuda_kernels(device)
    return torch.compile(model, backend="trex")


def _compile_trex_inductor(model, device: torch.device):
    # trex's fusions, then Inductor for the rest of the graph (trex/codegen_triton/backend.py)
    importlib.import_module("trex.compiler.backend")
    importlib.import_module("trex.codegen_triton.backend")      # registers "trex_inductor" with dynamo
    _register_cuda_kernels(device)
    return torch.compile(model, backend="trex_inductor")


def prepare_moe_dispatch(model, policy: str, compiled: bool) -> int:
    """Apply model.compile_moe_dispatch to every MoE whose dispatcher is the sparse one (its
    per-expert row counts come from .tolist(), so Dynamo breaks the graph there and specialises on
    every count: a recompile per new count list, the whole step's compile repeated over the first
    steps until the recompile limit). Returns the number of MoE layers changed."""
    if not compiled or policy == "traced":
        return 0
    from .model.moe import sparse_dispatch
    changed = 0
    for module in model.modules():
        if getattr(module, "dispatcher", None) is sparse_dispatch and hasattr(module, "experts"):
            # recursive=False skips only the dispatch loop's frame: the expert calls inside it are
            # still compiled (one graph, dynamic row count); recursive=True runs all of it eagerly
            module.dispatcher = torch.compiler.disable(sparse_dispatch, recursive=policy == "eager")
            changed += 1
    return changed


# --model.compile value -> how the forward is wrapped (model, device) -> callable
COMPILERS = {
    "eager": lambda m, device: m,
    "inductor": lambda m, device: torch.compile(m),
    "trex": _compile_trex,
    "trex_inductor": _compile_trex_inductor,
}


# The file name `trex or-eval --model` looks for in checkpoint.dir (trex/training/or_eval/model_io.py)
TOKENIZER_FILE = "tokenizer.json"


def save_tokenizer(tokenizer, directory: Path) -> Path | None:
    """Write a tokenizer that can save itself (it has `.save(path)`, as the OR BPE tokenizer) to
    `directory/tokenizer.json`, so that the checkpoint carries the tokenizer it was trained with.
    Atomic as the checkpoint files are: saved to a temp file, fsynced, renamed over the old one.
    Returns the path, or None for a tokenizer without `.save` (the byte tokenizer is code)."""
    save = getattr(tokenizer, "save", None)
    if not callable(save):
        return None
    from .checkpoint import _fsync_dir
    final = Path(directory) / TOKENIZER_FILE
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = final.with_name(f".tokenizer.tmp-{os.getpid()}.json")   # .json: ORTokenizer.save takes it as a file
    try:
        save(str(tmp))
        if not tmp.is_file():
            raise RuntimeError(f"{type(tokenizer).__name__}.save({str(tmp)!r}) wrote no file there; a tokenizer "
                               f"saved with the checkpoint must write the file path it is given")
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, final)
    finally:
        tmp.unlink(missing_ok=True)
    _fsync_dir(final.parent)
    return final


class CompileStats:
    """What the compiler did during the run: Dynamo graphs and graph breaks, trex's fused chains
    per pattern and its fallbacks (trex.compiler.logs), and on CUDA the Triton kernels printed from
    the Kernel IR and the fused ops that fell back to the reference. Counters are process-wide, so
    the run reports the difference to the values at its start."""

    def __init__(self, mode: str, device: torch.device):
        self.mode, self.device = mode, device
        self._reports: list = []
        self._capture = None
        self._matches0: dict = {}
        self._dynamo0: dict = {}

    def __enter__(self) -> "CompileStats":
        if self.mode.startswith("trex"):
            from trex.compiler import logs
            self._matches0 = dict(logs.counters["matches"])
            self._capture = logs.capture()
            self._reports = self._capture.__enter__()
        self._dynamo0 = self._dynamo_counts()
        return self

    def __exit__(self, *exc) -> None:
        if self._capture is not None:
            self._capture.__exit__(*exc)

    @staticmethod
    def _dynamo_counts() -> dict:
        from torch._dynamo.utils import counters
        return {"unique_graphs": counters["stats"]["unique_graphs"],
                "graph_breaks": sum(counters["graph_break"].values())}

    def summary(self) -> dict:
        dynamo = {k: v - self._dynamo0.get(k, 0) for k, v in self._dynamo_counts().items()}
        out = {"mode": self.mode, "dynamo": dynamo}
        if not self.mode.startswith("trex"):
            return out
        from trex.compiler import logs
        fused = {p: n - self._matches0.get(p, 0) for p, n in logs.counters["matches"].items()
                 if n - self._matches0.get(p, 0)}
        out.update(trex_graphs=len(self._reports), trex_fused_by_pattern=fused,
                   trex_fused_total=sum(fused.values()),
                   trex_fallbacks=[fb for r in self._reports for fb in r.fallbacks],
                   trex_own_seconds=round(sum(sum(r.seconds.values()) for r in self._reports), 3))
        if self.device.type == "cuda":
            import trex.codegen_triton
            from trex.codegen_triton import target as cuda_target
            out.update(triton_kernels_compiled=len(trex.codegen_triton.kernel_report()),
                       triton_fallbacks={"/".join(map(str, k)): v for k, v in cuda_target._FAILED.items()})
        return out


def lr_lambda(warmup: int, total: int, min_ratio: float):
    """Linear warmup to 1 over `warmup` steps, then cosine from 1 to min_ratio at `total`."""
    def f(step: int) -> float:          # step = optimizer steps taken so far (0-based)
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return min_ratio + (1 - min_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
    return f


def autocast(device: torch.device, precision: str):
    if precision == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return contextlib.nullcontext()


# device type -> peak memory reader (bytes); CPU reports the process's peak resident set
def _cpu_peak() -> int:
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


PEAK_MEMORY = {
    "cuda": lambda dev: torch.cuda.max_memory_allocated(dev),
    "npu": lambda dev: torch.get_device_module("npu").max_memory_allocated(dev),
    "cpu": lambda dev: _cpu_peak(),
}


class MFUMeter:
    """Model FLOPs utilisation: trex.training.model.flops_per_token x tokens/s / (devices x peak), with the
    peak from trex/training/mfu.py's table for the detected accelerator; None where no peak is known (CPU)."""

    def __init__(self, lib, args, seq_len: int, world: int):
        from . import mfu as mfu_lib
        self.mfu_lib = mfu_lib
        self.flops_per_token = float(lib.flops_per_token(args, seq_len))
        self.device_key = mfu_lib.detect_device()
        self.world = world

    def achieved_flops(self, tokens_per_s: float) -> float:
        return self.flops_per_token * tokens_per_s

    def __call__(self, tokens_per_s: float) -> float | None:
        if self.device_key is None:
            return None
        return self.mfu_lib.mfu(self.flops_per_token, tokens_per_s, self.world, device=self.device_key)


class Progress:
    """tqdm bar on rank 0 only."""

    def __init__(self, enabled: bool, total: int, initial: int):
        self.bar = None
        if enabled:
            from tqdm import tqdm
            self.bar = tqdm(total=total, initial=initial, desc="train", dynamic_ncols=True, file=sys.stderr)

    def update(self, record: dict) -> None:
        if self.bar is not None:
            self.bar.set_postfix(loss=f"{record['loss']:.4f}", lr=f"{record['lr']:.2e}",
                                 tok_s=f"{record['tokens_per_s']:.0f}", refresh=False)
            self.bar.update(1)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class StepProfiler:
    """torch.profiler over the steps [first, first + count) of log.profile_steps. Each rank writes
    rank_R.json: wall time of the window and the device (else CPU) time per kernel / op name, which
    bench/train_multi.py turns into the all-to-all share; rank 0 also writes a Chrome trace."""

    def __init__(self, steps: list[int], directory: str, rank: int, device: torch.device, trace: bool = True):
        self.trace = trace
        self.first, self.count = (steps[0], steps[1]) if steps else (0, 0)
        self.dir, self.rank, self.device = Path(directory) if directory else None, rank, device
        self.prof, self.t0 = None, 0.0

    def begin(self, step: int) -> None:
        if self.count and step == self.first:
            from torch.profiler import ProfilerActivity, profile
            activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.device.type == "cuda" else [])
            self.prof = profile(activities=activities)
            self.prof.start()
            self.t0 = time.perf_counter()

    def end(self, step: int) -> None:
        if self.prof is None or step != self.first + self.count - 1:
            return
        if self.device.type != "cpu":
            torch.get_device_module(self.device.type).synchronize(self.device)
        wall = time.perf_counter() - self.t0
        self.prof.stop()
        times = {}
        for evt in self.prof.key_averages():
            device_us = getattr(evt, "device_time_total", 0) or getattr(evt, "cuda_time_total", 0)
            times[evt.key] = {"device_us": device_us, "cpu_us": evt.cpu_time_total, "count": evt.count}
        from .checkpoint import atomic_write_text
        self.dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.dir / f"rank_{self.rank}.json", json.dumps(
            {"first_step": self.first, "steps": self.count, "wall_s": wall, "ops": times}))
        if self.rank == 0 and self.trace:
            self.prof.export_chrome_trace(str(self.dir / "trace_rank0.json"))
        self.prof = None


class PhaseLog:
    """log.phases: one stderr line per setup phase and for the first steps, from every rank, with
    the seconds since train() began: a run stopped by an outside time limit shows where it was."""

    def __init__(self, enabled: bool, t_start: float):
        self.enabled, self.t_start, self.rank = enabled, t_start, int(os.environ.get("RANK", "0"))

    def __call__(self, message: str) -> None:
        if self.enabled:
            print(f"[trex train rank {self.rank} +{time.perf_counter() - self.t_start:.1f} s] {message}",
                  file=sys.stderr, flush=True)


class JsonlLog:
    """One JSON object per line, flushed per record. A run that starts at step S (0, or the step it
    resumed from) first drops the file's records of steps after S, atomically: they belong to a run
    that was stopped after its last checkpoint, so each step appears once in the file."""

    def __init__(self, path: str, enabled: bool, after_step: int = 0):
        self.f = None
        if enabled and path:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self._drop_after(Path(path), after_step)
            self.f = open(path, "a", encoding="utf-8")

    @staticmethod
    def _drop_after(path: Path, step: int) -> None:
        if not path.is_file():
            return
        kept = []
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:          # a line cut by a kill
                continue
            if isinstance(record, dict) and isinstance(record.get("step"), int) and record["step"] <= step:
                kept.append(line + "\n")
        from .checkpoint import atomic_write_text
        atomic_write_text(path, "".join(kept))

    def write(self, record: dict) -> None:
        if self.f is not None:
            self.f.write(json.dumps(record) + "\n")
            self.f.flush()

    def close(self) -> None:
        if self.f is not None:
            self.f.close()


# Settings a checkpoint carries that a resumed run may change (the optimizer's hyperparameters and
# the schedule); checkpoint.resume_settings decides whose value wins.
RESUME_KEYS = ("optim.lr", "optim.betas", "optim.eps", "optim.weight_decay", "optim.grad_clip",
               "schedule.warmup_steps", "schedule.min_lr_ratio", "train.steps")
# Settings the checkpoint's tensors and data position only fit unchanged
FIXED_KEYS = ("model.name", "model.overrides", "optim.name", "data.kind", "data.tokenizer", "data.seq_len",
              "data.micro_batch", "data.seed")


def _dotted(table: dict, key: str):
    section, name = key.split(".")
    return table.get(section, {}).get(name)


def settle_resume_settings(cfg: Config, stored: dict | None, step_dir: Path, is_main: bool) -> tuple[Config, dict]:
    """The config a resumed run uses, and {key: (stored, given)} for the RESUME_KEYS that differ.
    A FIXED_KEYS difference is a ConfigError; checkpoint.resume_settings = stored puts the
    checkpoint's values into the config, given keeps this run's, error stops. Prints one line."""
    if stored is None:               # a checkpoint of an older version: nothing to compare
        return cfg, {}
    given = cfg.to_dict()
    fixed = {k: (_dotted(stored, k), _dotted(given, k)) for k in FIXED_KEYS if _dotted(stored, k) != _dotted(given, k)}
    if fixed:
        listed = ", ".join(f"{k} {a!r} -> {b!r}" for k, (a, b) in fixed.items())
        raise ConfigError(f"checkpoint {step_dir} was trained with other settings than these ({listed}); its "
                          f"tensors and data position only fit the same ones: pass the checkpoint's values, "
                          f"another --checkpoint.dir, or --checkpoint.resume false")
    changed = {k: (_dotted(stored, k), _dotted(given, k)) for k in RESUME_KEYS
               if _dotted(stored, k) != _dotted(given, k)}
    if not changed:
        return cfg, {}
    policy = cfg.checkpoint.resume_settings
    listed = ", ".join(f"{k} {a!r} (checkpoint) vs {b!r} (given)" for k, (a, b) in changed.items())
    if policy == "error":
        raise ConfigError(f"resuming {step_dir} with changed settings: {listed}; pass "
                          f"--checkpoint.resume_settings given (use these values) or stored (keep the "
                          f"checkpoint's), or --checkpoint.resume false")
    if policy == "stored":
        cfg = copy.deepcopy(cfg)         # the caller's config object stays as given
        for key, (value, _) in changed.items():
            section, name = key.split(".")
            setattr(getattr(cfg, section), name, value)
    if is_main:
        winner = {"given": "the given values are used", "stored": "the checkpoint's values are kept"}[policy]
        other = {"given": "stored keeps the checkpoint's", "stored": "given uses the command line's"}[policy]
        print(f"trex train: resume: settings differ from {step_dir.name}: {listed}; {winner} "
              f"(checkpoint.resume_settings = {policy}; {other})", file=sys.stderr)
    return cfg, changed


def apply_given_hyperparameters(optimizer, scheduler, given_groups: list[dict]) -> None:
    """After loading a checkpoint's optimizer and scheduler: put back this run's hyperparameters
    (lr, betas, eps, weight_decay per group, as build_optimizer made them), with the lr at the
    schedule's current position."""
    factor = scheduler.lr_lambdas[0](scheduler.last_epoch)
    for group, given in zip(optimizer.param_groups, given_groups):
        group.update({k: v for k, v in given.items() if k != "lr"})
        group["lr"] = given["initial_lr"] * factor
    scheduler.base_lrs = [g["initial_lr"] for g in given_groups]
    scheduler._last_lr = [g["lr"] for g in optimizer.param_groups]


# ---------------------------------------------------------------------------------------------
# the run


def train(cfg: Config) -> TrainResult:
    t_start = time.perf_counter()
    validate_launch(cfg, int(os.environ.get("WORLD_SIZE", "1")))   # distributed.ep vs the processes
    # 2. devices and process groups
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = resolve_device(cfg.train.device, local_rank)
    if device.type != "cpu":
        torch.get_device_module(device.type).set_device(device)
    phase = PhaseLog(cfg.log.phases, t_start)
    phase(f"start: device {device}, compile {cfg.model.compile}, WORLD_SIZE {os.environ.get('WORLD_SIZE', '1')}")
    dims: ParallelDims = init_distributed(device.type, cfg.distributed.ep, cfg.distributed.backend)
    phase.rank = dims.rank
    phase(f"process group ready (world {dims.world}, ep {dims.ep})")
    is_main = dims.rank == 0
    try:
        return _train(cfg, device, dims, is_main, t_start, phase)
    finally:
        if dims.owns_process_group:
            destroy_distributed()


def _train(cfg: Config, device: torch.device, dims: ParallelDims, is_main: bool,
           t_start: float, phase: "PhaseLog") -> TrainResult:
    t_init = time.perf_counter()
    seed_everything(cfg.train.seed)     # same seed on every rank: identical initial weights

    # 3. data
    tokenizer = load_tokenizer(cfg.data.tokenizer)
    dataset = build_dataset(cfg.data, tokenizer)
    loader = DataLoader(dataset, cfg.data.micro_batch, cfg.data.seed, dims.rank, dims.world)
    phase(f"data ready ({len(dataset)} samples of {cfg.data.seq_len} tokens)")

    # 4. model (initialised on the CPU from the seeded RNG, so every device gets the same weights)
    lib, args, model = build_model(cfg, tokenizer.vocab_size)
    model.to(device)
    phase(f"model built and moved ({sum(p.numel() for p in model.parameters()) / 1e6:.1f} M parameters, "
          f"{args.n_layers} layers)")

    # the sparse MoE dispatch under torch.compile (before parallelize: expert parallelism keeps
    # the model's dispatcher as its local step)
    prepare_moe_dispatch(model, cfg.model.compile_moe_dispatch, cfg.model.compile != "eager")

    # 5. parallelism
    expert_params = parallelize(model, dims)
    if dims.enabled:
        phase("FSDP2 + expert parallelism applied")

    # 6. compile (lazily: the first forward compiles)
    forward = COMPILERS[cfg.model.compile](model, device)

    # 8a. the newest loadable checkpoint, read before the optimizer is built: its stored settings
    # may be the ones this run uses (checkpoint.resume_settings)
    checkpointer = (Checkpointer(cfg.checkpoint.dir, cfg.checkpoint.keep, dims.rank, dims.world, dims.barrier)
                    if cfg.checkpoint.dir else None)
    resumed = None
    if checkpointer and cfg.checkpoint.resume:
        resumed = checkpointer.load_newest(
            all_ranks_ok=lambda ok: dims.all_reduce_mean(float(ok), device) == 1.0)
    changed: dict = {}
    if resumed is not None:
        cfg, changed = settle_resume_settings(cfg, resumed[1].get("config"), resumed[0], is_main)

    # 7. optimizer and schedule
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = build_optimizer(params, cfg.optim)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lr_lambda(cfg.schedule.warmup_steps, cfg.train.steps, cfg.schedule.min_lr_ratio))

    # 8b. resume
    start_step, bad_in_a_row = 0, 0
    if resumed is not None:
        latest, state = resumed
        given_groups = [{k: v for k, v in g.items() if k != "params"} for g in optimizer.param_groups]
        load_model_state(model, state["model"])
        load_optimizer_state(optimizer, state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        if changed and cfg.checkpoint.resume_settings == "given":
            apply_given_hyperparameters(optimizer, scheduler, given_groups)
        loader.load_state_dict(state["data"])
        set_rng_state(state["rng"])
        start_step, bad_in_a_row = state["step"], state["bad_in_a_row"]
        del state
        if is_main:
            print(f"resumed from {latest} (step {start_step})", file=sys.stderr)

    tokenizer_saved = False

    def save(step: int) -> None:
        nonlocal tokenizer_saved
        if is_main and not tokenizer_saved:       # once per process, before its first checkpoint
            save_tokenizer(tokenizer, checkpointer.dir)
            tokenizer_saved = True
        checkpointer.save(step, {
            "step": step, "bad_in_a_row": bad_in_a_row,
            "model": model_state(model), "optimizer": optimizer_state(optimizer),
            "scheduler": scheduler.state_dict(), "data": loader.state_dict(), "rng": rng_state(),
            "config": cfg.to_dict()})

    # 9. the loop
    mfu = MFUMeter(lib, args, cfg.data.seq_len, dims.world)
    log = JsonlLog(cfg.log.jsonl, is_main, after_step=start_step)
    progress = Progress(cfg.log.progress and is_main, cfg.train.steps, start_step)
    profiler = StepProfiler(cfg.log.profile_steps, cfg.log.profile_dir, dims.rank, device, cfg.log.profile_trace)
    result = TrainResult(resumed_from=start_step, final_step=start_step)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    t_loop = time.perf_counter()
    compile_stats = CompileStats(cfg.model.compile, device).__enter__()
    last_step = min(cfg.train.steps, cfg.train.stop_after) if cfg.train.stop_after else cfg.train.steps
    result.stop_reason = "stop_after" if last_step < cfg.train.steps else "steps"
    try:
        for step in range(start_step + 1, last_step + 1):
            # the next step is assumed as long as the last one, except after the first step of
            # this process, whose time is mostly compilation
            next_step_s = result.records[-1]["step_time_s"] if len(result.records) > 1 else 0.0
            if cfg.train.max_seconds and step > start_step + 1 and _out_of_time(
                    cfg.train.max_seconds, t_start, next_step_s, dims, device):
                result.stop_reason = "max_seconds"
                if is_main:
                    print(f"stopping before step {step}: train.max_seconds = {cfg.train.max_seconds:g} would "
                          f"be exceeded ({time.perf_counter() - t_start:.1f} s used, next step estimated "
                          f"{next_step_s:.2f} s)", file=sys.stderr)
                break
            profiler.begin(step)
            t0 = time.perf_counter()
            lr = optimizer.param_groups[0]["lr"]
            loss_sum = torch.zeros((), device=device)
            part_sums: dict[str, torch.Tensor] = {}
            tokens = 0
            for micro in range(cfg.train.grad_accum):
                if dims.enabled:   # FSDP2: reduce-scatter gradients only after the last micro-batch
                    model.set_requires_gradient_sync(micro == cfg.train.grad_accum - 1)
                batch = {k: v.to(device, non_blocking=True) for k, v in loader.next_batch().items()}
                with autocast(device, cfg.train.precision):
                    logits, mtp_logits = forward(batch["tokens"])
                    loss, parts = lib.lm_loss(logits, mtp_logits, batch["labels"], batch["loss_mask"],
                                              mtp_weight=cfg.model.mtp_weight)
                (loss / cfg.train.grad_accum).backward()
                loss_sum += loss.detach().float()
                for k, v in parts.items():
                    part_sums[k] = part_sums.get(k, 0) + v.float()
                tokens += batch["tokens"].numel()
            reduce_expert_grads(expert_params, dims)
            grad_norm = float(clip_grad_norm(params, cfg.optim.grad_clip, dims, expert_params))
            loss_value = dims.all_reduce_mean(loss_sum / cfg.train.grad_accum, device)
            finite = math.isfinite(loss_value) and math.isfinite(grad_norm)
            if finite:
                optimizer.step()
                bad_in_a_row = 0
            else:
                bad_in_a_row += 1
            optimizer.zero_grad(set_to_none=True)
            scheduler.step()
            dt = time.perf_counter() - t0
            tokens_per_s = tokens * dims.world / dt
            record = {"step": step, "loss": loss_value, "grad_norm": grad_norm, "lr": lr,
                      "tokens": tokens * dims.world, "tokens_per_s": tokens_per_s, "mfu": mfu(tokens_per_s),
                      "model_flops_per_s": mfu.achieved_flops(tokens_per_s),
                      "step_time_s": dt, "peak_mem_bytes": PEAK_MEMORY[device.type](device),
                      "skipped": not finite, "epoch": loader.epoch}
            record.update({f"loss_{k}": dims.all_reduce_mean(v / cfg.train.grad_accum, device)
                           for k, v in part_sums.items()})
            result.records.append(record)
            if len(result.records) <= 3:
                phase(f"step {step} done in {dt:.2f} s (loss {loss_value:.4f})")
            profiler.end(step)
            result.final_step = step
            if step % cfg.log.every == 0 or not finite:
                log.write(record)
            progress.update(record)
            if not finite and is_main:
                print(f"step {step}: non-finite loss {loss_value} or grad norm {grad_norm}; step skipped "
                      f"({bad_in_a_row} in a row, limit train.max_bad_steps = {cfg.train.max_bad_steps})",
                      file=sys.stderr)
            if bad_in_a_row >= cfg.train.max_bad_steps:
                raise TrainingStopped(
                    f"stopping at step {step}: {bad_in_a_row} consecutive steps had a non-finite loss or "
                    f"gradient (train.max_bad_steps = {cfg.train.max_bad_steps}). Lower optim.lr, check the "
                    f"data for corrupt records, or train in fp32 (--train.precision fp32).")
            if checkpointer and cfg.checkpoint.every and step % cfg.checkpoint.every == 0:
                save(step)
        if checkpointer and result.final_step > start_step and (
                not cfg.checkpoint.every or result.final_step % cfg.checkpoint.every):
            save(result.final_step)
    finally:
        compile_stats.__exit__(None, None, None)
        progress.close()
        log.close()
    result.summary = run_summary(result, compile_stats, setup_s={
        "process_group_s": t_init - t_start, "data_model_parallelize_s": t_loop - t_init}, world=dims.world)
    if cfg.log.summary and is_main:
        from .checkpoint import atomic_write_text
        Path(cfg.log.summary).parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(Path(cfg.log.summary), json.dumps(result.summary, indent=1))
    return result


def _out_of_time(budget_s: float, t_start: float, last_step_s: float, dims: ParallelDims,
                 device: torch.device) -> bool:
    """True when the next step (`next_step_s` long) would end past the budget. Every
    rank takes rank 0's decision, so all stop before the same step (no rank left in a collective)."""
    late = float(time.perf_counter() - t_start + last_step_s > budget_s)
    if dims.enabled:
        import torch.distributed as dist
        flag = torch.tensor([late], device=device)
        dist.broadcast(flag, src=0)
        late = float(flag.item())
    return late > 0


def run_summary(result: TrainResult, compile_stats: CompileStats, setup_s: dict, world: int) -> dict:
    """Steps run and why the loop ended, setup seconds, and compile time separated from step time:
    compile_s = sum over steps of the time above the steady step time (median of the second half of
    the steps), which catches the first step's compile and any recompile later."""
    times = [r["step_time_s"] for r in result.records]
    steady = sorted(times[len(times) // 2:])[len(times[len(times) // 2:]) // 2] if len(times) > 1 else None
    return {"steps_run": len(result.records), "final_step": result.final_step,
            "resumed_from": result.resumed_from, "stop_reason": result.stop_reason, "world": world,
            "setup_s": {k: round(v, 3) for k, v in setup_s.items()},
            "first_step_s": times[0] if times else None, "steady_step_s": steady,
            "compile_s": sum(max(0.0, t - steady) for t in times) if steady is not None else None,
            "loop_s": sum(times), "compile": compile_stats.summary()}


# ---------------------------------------------------------------------------------------------
# command line


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(
        prog="trex train", description="Train DeepSeek-V4 (CPT or SFT) on the trex-compiled model.",
        epilog="Any config field can be overridden: --optim.lr 3e-4 --train.steps 100 "
               "--model.compile eager (see docs/training.md).")
    parser.add_argument("--config", help="TOML file (configs/*.toml)")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    known, rest = parser.parse_known_args(argv)
    try:
        cfg = load_config(known.config, parse_overrides(rest))
        if known.print_config:
            print(json.dumps(cfg.to_dict(), indent=2))
            return 0
        if not cfg.data.paths:
            raise ConfigError("data.paths is empty; name the corpus files (e.g. --data.paths '[\"corpus.jsonl\"]')")
        check_output_paths(cfg)
        result = train(cfg)
    except (ConfigError, FileNotFoundError) as e:     # a wrong config or path: the message says it all
        print(f"trex train: {e}", file=sys.stderr)
        return 2
    except TrainingStopped as e:
        print(f"trex train: {e}", file=sys.stderr)
        return 1
    last = result.records[-1] if result.records else None
    if last and int(os.environ.get("RANK", "0")) == 0:
        print(f"done: step {result.final_step}, loss {last['loss']:.4f}, {last['tokens_per_s']:.0f} tokens/s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
