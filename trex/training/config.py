"""Training configuration as data.

A run is described by one TOML file whose tables mirror the dataclasses below
(`[model]`, `[data]`, `[optim]`, `[schedule]`, `[train]`, `[checkpoint]`, `[distributed]`, `[log]`).
Every field can be overridden on the command line with its dotted name, e.g.
`trex train --config configs/tiny_cpt.toml --optim.lr 3e-4 --train.steps 20`.
Values on the command line are parsed as TOML literals (`3e-4`, `true`, `[0.9, 0.95]`, `"x"`);
anything that is not a TOML literal is taken as a bare string.

Unknown keys are errors (a typo must not silently train with a default). Loading also checks
what can be checked without building anything: the model name and its ModelArgs overrides, and
that data.tokenizer can be imported; validate_launch checks distributed.ep against the processes
when the run starts. Every such error is a ConfigError naming the key (`trex train` exits 2).
"""
from __future__ import annotations

import dataclasses
import json
import os
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trex.resources import CONFIGS_DIR

from .errors import ConfigError
from .tokenizer import tokenizer_factory


@dataclass
class ModelConfig:
    name: str = "tiny"                                    # trex.training.model.get_config(name)
    overrides: dict[str, Any] = field(default_factory=dict)  # ModelArgs fields to replace
    compile: str = "trex"                                 # eager | inductor | trex | trex_inductor
    mtp_weight: float = 0.3                               # weight of the MTP loss in lm_loss
    # how a compiled model runs the routed experts' sparse dispatch (its per-expert row counts are
    # data): per_expert = the dispatch loop eager, each expert call compiled (dynamic row count);
    # eager = the whole dispatch eager; traced = left to Dynamo (graph break at the counts, then a
    # recompile per new count list until Dynamo's recompile limit, after which it runs eagerly)
    compile_moe_dispatch: str = "per_expert"


@dataclass
class DataConfig:
    kind: str = "cpt"                  # cpt (packed documents) | sft (prompt/response, prompt masked) | sft_packed (pairs packed)
    paths: list[str] = field(default_factory=list)  # files or glob patterns (in a TOML file: relative to it)
    format: str = "auto"               # auto (by suffix) | jsonl | text
    text_field: str = "text"           # JSONL field for CPT documents
    prompt_field: str = "prompt"       # JSONL fields for SFT pairs
    response_field: str = "response"
    tokenizer: str = "byte"            # registry name, or "package.module:factory"
    seq_len: int = 64
    micro_batch: int = 2               # sequences per rank per micro-step
    seed: int = 0                      # seeds the per-epoch sample permutation


@dataclass
class OptimConfig:
    name: str = "adamw"                # adamw (torch AdamW, foreach) | adamw_fused (fused=True) | swap_adamw (host states)
    lr: float = 3e-4
    betas: list[float] = field(default_factory=lambda: [0.9, 0.95])
    eps: float = 1e-8
    weight_decay: float = 0.1
    grad_clip: float = 1.0             # max global grad norm; <= 0 disables clipping
    swap_chunk_mb: float = 64.0        # swap_adamw: bytes of parameters updated per chunk


@dataclass
class ScheduleConfig:
    warmup_steps: int = 10
    min_lr_ratio: float = 0.1          # cosine decays from lr to lr * min_lr_ratio at train.steps


@dataclass
class TrainConfig:
    steps: int = 100
    grad_accum: int = 1
    precision: str = "fp32"            # fp32 | bf16 (autocast to bf16, fp32 master weights)
    device: str = "auto"               # auto | cpu | cuda | npu
    seed: int = 0
    max_bad_steps: int = 5             # consecutive NaN/Inf steps before the run stops
    stop_after: int = 0                # end this invocation after this step (0: run to `steps`);
                                       # the schedule still spans `steps` (time-sliced jobs)
    max_seconds: float = 0.0           # wall-clock budget from the start of train() (setup and
                                       # compile included); the loop ends before a step that would
                                       # cross it (0: no budget). The schedule still spans `steps`.


@dataclass
class CheckpointConfig:
    dir: str = ""                      # empty: no checkpoints
    every: int = 0                     # steps between saves; 0: only at the end
    keep: int = 2                      # newest checkpoints kept on disk
    resume: bool = True                # resume from the newest checkpoint in dir if there is one
    # a resumed run whose settings differ from the checkpoint's (RESUME_KEYS): "given" = this run's
    # values win (the optimizer's lr/betas/eps/weight_decay are re-set after loading), "stored" =
    # the checkpoint's values win, "error" = stop and list the differences. Either way the run says
    # which value it uses for every changed key (docs/training.md, "Resuming").
    resume_settings: str = "given"


@dataclass
class DistributedConfig:
    ep: int = 1                        # expert-parallel degree (divides world size and n_routed_experts)
    backend: str = "auto"              # auto (nccl / hccl / gloo by device) or an explicit backend


@dataclass
class LogConfig:
    jsonl: str = ""                    # per-step JSONL log path; empty: no file
    progress: bool = True              # progress bar (rank 0 only)
    every: int = 1                     # steps between log records
    profile_steps: list[int] = field(default_factory=list)  # [first, count]: torch.profiler window
    profile_dir: str = ""              # where the profiler window writes rank_R.json (+ rank 0 trace)
    profile_trace: bool = True         # rank 0 also exports a Chrome trace of the window (seconds, MBs)
    summary: str = ""                  # JSON path: rank 0 writes the run summary (steps run, why it
                                       # stopped, setup / compile seconds, trex fusion counts)
    phases: bool = False               # every rank prints "[trex train rank R +T s] <phase>" to stderr
                                       # as setup phases end and after the first steps (so a run
                                       # killed by a time limit shows where it was)


@dataclass
class Config:
    model: ModelConfig = field(default_factory=ModelConfig)
    data: DataConfig = field(default_factory=DataConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    log: LogConfig = field(default_factory=LogConfig)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


# Allowed values of the enumerated fields: checked once after loading, so errors name the field.
CHOICES: dict[str, tuple[str, ...]] = {
    "model.compile": ("eager", "inductor", "trex", "trex_inductor"),
    "model.compile_moe_dispatch": ("per_expert", "eager", "traced"),
    "data.kind": ("cpt", "sft", "sft_packed"),
    "data.format": ("auto", "jsonl", "text"),
    "optim.name": ("adamw", "adamw_fused", "swap_adamw"),
    "train.precision": ("fp32", "bf16"),
    "train.device": ("auto", "cpu", "cuda", "npu"),
    "checkpoint.resume_settings": ("given", "stored", "error"),
}

# numpy's seeds are 32-bit unsigned
_SEED_MAX = 2 ** 32 - 1


def _at_least(low):
    return lambda v: v >= low, f">= {low}"


def _above(low):
    return lambda v: v > low, f"> {low}"


def _within(low, high, *, high_open: bool = False):
    if high_open:
        return lambda v: low <= v < high, f"in [{low}, {high})"
    return lambda v: low <= v <= high, f"in [{low}, {high}]"


# Ranges of the numeric fields: key -> (test, the range in words). Checked once after loading
# (the TOML file and the command line alike) and before anything is built; a list's rule applies
# to each element.
RANGES: dict[str, tuple] = {
    "model.mtp_weight": _at_least(0),
    "data.seq_len": _at_least(1),
    "data.micro_batch": _at_least(1),
    "data.seed": _within(0, _SEED_MAX),
    "optim.lr": _above(0),
    "optim.betas": _within(0, 1, high_open=True),
    "optim.eps": _above(0),
    "optim.weight_decay": _at_least(0),
    "optim.swap_chunk_mb": _above(0),
    "schedule.warmup_steps": _at_least(0),
    "schedule.min_lr_ratio": _within(0, 1),
    "train.steps": _at_least(1),
    "train.grad_accum": _at_least(1),
    "train.seed": _within(0, _SEED_MAX),
    "train.max_bad_steps": _at_least(1),
    "train.stop_after": _at_least(0),
    "train.max_seconds": _at_least(0),
    "checkpoint.every": _at_least(0),
    "checkpoint.keep": _at_least(1),
    "distributed.ep": _at_least(1),
    "log.every": _at_least(1),
    "log.profile_steps": _at_least(1),
}
# What 0 means where 0 is allowed, for the message of a value below it
ZERO_MEANS = {"train.stop_after": "run to train.steps", "train.max_seconds": "no budget",
              "checkpoint.every": "save only at the end", "schedule.warmup_steps": "no warmup"}


def _parse_literal(text: str) -> Any:
    """A command-line value as a TOML literal, else the bare string."""
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        return text


def _coerce(value: Any, annotation: Any, key: str) -> Any:
    """Check/convert `value` to the dataclass field type; int -> float is the only widening."""
    hints = {str: str, int: int, float: float, bool: bool}
    origin = typing.get_origin(annotation) or annotation
    if annotation is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if annotation in hints:
        if isinstance(value, annotation) and not (annotation is int and isinstance(value, bool)):
            return value
        raise ConfigError(f"{key}: expected {annotation.__name__}, got {value!r} ({type(value).__name__})")
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(f"{key}: expected a list like [1, 2], got {value!r}")
        (item_type,) = typing.get_args(annotation)
        return [_coerce(v, item_type, f"{key}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{key}: expected a table, got {value!r}")
        return dict(value)
    raise ConfigError(f"{key}: unsupported field type {annotation!r}")


def _section_types(section_cls) -> dict[str, Any]:
    return typing.get_type_hints(section_cls)


def _apply(cfg: Config, key: str, value: Any) -> None:
    parts = key.split(".")
    sections = {f.name: f for f in dataclasses.fields(Config)}
    if parts[0] not in sections or len(parts) < 2:
        raise ConfigError(f"unknown config key {key!r}; sections are {sorted(sections)} "
                          f"(write e.g. --optim.lr 3e-4)")
    section = getattr(cfg, parts[0])
    types = _section_types(type(section))
    name = parts[1]
    if name not in types:
        raise ConfigError(f"unknown config key {key!r}; [{parts[0]}] has {sorted(types)}")
    if len(parts) == 2:
        setattr(section, name, _coerce(value, types[name], key))
        return
    # Dotted keys below a table field: --model.overrides.n_layers 2
    target = getattr(section, name)
    if not isinstance(target, dict):
        raise ConfigError(f"{key}: {parts[0]}.{name} is not a table")
    for p in parts[2:-1]:
        target = target.setdefault(p, {})
    target[parts[-1]] = value


def _flatten(table: dict, prefix: str = "") -> list[tuple[str, Any]]:
    """TOML tables -> (dotted key, value); tables under a dict-typed field stay whole."""
    out = []
    for k, v in table.items():
        key = f"{prefix}{k}"
        depth = key.count(".")
        if isinstance(v, dict) and depth == 0:
            out += _flatten(v, key + ".")
        else:
            out.append((key, v))
    return out


def parse_overrides(argv: list[str]) -> list[tuple[str, Any]]:
    """`--a.b value` or `--a.b=value` pairs -> [(key, literal)]."""
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--"):
            raise ConfigError(f"unexpected argument {arg!r}; overrides look like --optim.lr 3e-4")
        if "=" in arg:
            key, text = arg[2:].split("=", 1)
            i += 1
        else:
            if i + 1 >= len(argv):
                raise ConfigError(f"{arg} needs a value (e.g. {arg} 1)")
            key, text = arg[2:], argv[i + 1]
            i += 2
        out.append((key, _parse_literal(text)))
    return out


def load_config(path: str | Path | None = None, overrides: list[tuple[str, Any]] = ()) -> Config:
    """Defaults <- TOML file <- overrides. ``path`` is a TOML file, or the name of a config installed with
    trex (``tiny_cpt.toml``, also as ``configs/tiny_cpt.toml`` when no such file is in the working
    directory). data.paths written in the TOML file resolve against the
    file's folder; paths given on the command line and output paths (checkpoint.dir, log.jsonl)
    resolve against the working directory."""
    cfg = Config()
    base = Path.cwd()
    if path is not None:
        path = Path(path)
        if not path.is_file() and (CONFIGS_DIR / path.name).is_file() and path.parent in (Path("."), Path("configs")):
            path = CONFIGS_DIR / path.name       # an installed config by name: `--config tiny_cpt.toml`
        if not path.is_file():
            shipped = sorted(p.name for p in CONFIGS_DIR.glob("*.toml"))
            raise ConfigError(f"config file {str(path)!r} not found; pass a TOML path or an installed config: "
                              f"{', '.join(shipped)}")
        try:
            with open(path, "rb") as f:
                table = tomllib.load(f)
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:   # malformed, or not text at all
            raise ConfigError(f"config file {str(path)!r} is not valid TOML ({e}); fix the file or pass "
                              f"another --config (installed: {', '.join(sorted(p.name for p in CONFIGS_DIR.glob('*.toml')))})"
                              ) from None
        except OSError as e:
            raise ConfigError(f"config file {str(path)!r} cannot be read ({e.strerror}); pass a readable "
                              f"TOML file") from None
        base = path.resolve().parent
        for key, value in _flatten(table):
            _apply(cfg, key, value)
        cfg.data.paths = [p if Path(p).is_absolute() else str(base / p) for p in cfg.data.paths]
    for key, value in overrides:
        _apply(cfg, key, value)
    validate(cfg)
    return cfg


def validate(cfg: Config) -> None:
    for key, allowed in CHOICES.items():
        value = _get(cfg, key)
        if value not in allowed:
            raise ConfigError(f"{key} = {value!r}; choose one of {list(allowed)}")
    for key, (ok, words) in RANGES.items():
        value = _get(cfg, key)
        for item in (value if isinstance(value, list) else [value]):
            if not ok(item):
                zero = f" (0: {ZERO_MEANS[key]})" if key in ZERO_MEANS else ""
                raise ConfigError(f"{key} = {value}; must be {words}{zero}: pass e.g. --{key} {_default(key)}")
    if cfg.log.profile_steps and (len(cfg.log.profile_steps) != 2 or not cfg.log.profile_dir):
        raise ConfigError(f"log.profile_steps = {cfg.log.profile_steps}; give [first_step, count] (both >= 1) "
                          f"and log.profile_dir")
    if len(cfg.optim.betas) != 2:
        raise ConfigError(f"optim.betas = {cfg.optim.betas}; give two numbers, e.g. [0.9, 0.95]")
    model_args(cfg)
    tokenizer_factory(cfg.data.tokenizer)   # resolvable now; called (and so loaded) by the run


def _get(cfg: Config, key: str) -> Any:
    section, name = key.split(".")
    return getattr(getattr(cfg, section), name)


def _default(key: str) -> str:
    value = _get(Config(), key)
    return json.dumps(value) if isinstance(value, (list, str)) else str(value)


# integer ModelArgs fields for which 0 means "none" (every other integer field is a size, >= 1;
# float fields are >= 0)
MODEL_FIELDS_ZERO_OK = frozenset({"n_mtp_layers", "n_shared_experts", "n_hash_layers", "window_size",
                                  "beta_slow", "beta_fast"})


def model_args(cfg: Config):
    """The ModelArgs that model.name and model.overrides describe (data.seq_len widens
    max_seq_len, as the run does). A wrong name, an override that is no ModelArgs field, or values
    ModelArgs rejects are ConfigErrors that name the key, raised before any model is built."""
    from .model.args import CONFIGS, ModelArgs
    name = cfg.model.name
    if name not in CONFIGS:
        raise ConfigError(f"model.name = {name!r}; choose one of {sorted(CONFIGS)}")
    fields = sorted(f.name for f in dataclasses.fields(ModelArgs))
    unknown = sorted(set(cfg.model.overrides) - set(fields))
    if unknown:
        raise ConfigError(f"model.overrides.{unknown[0]}: ModelArgs has no field {unknown[0]!r}; "
                          f"override one of {fields}")
    hints = typing.get_type_hints(ModelArgs)
    for key, value in cfg.model.overrides.items():
        want = hints[key]
        scalar = want if want in (int, float, bool, str) else None
        if scalar is not None:
            try:
                value = _coerce(value, scalar, f"model.overrides.{key}")
            except ConfigError as e:
                raise ConfigError(f"{e}; pass e.g. --model.overrides.{key} {getattr(CONFIGS[name](), key)}") from None
            cfg.model.overrides[key] = value
        if scalar in (int, float) and value < (0 if key in MODEL_FIELDS_ZERO_OK or scalar is float else 1):
            low = "0" if key in MODEL_FIELDS_ZERO_OK or scalar is float else "1"
            raise ConfigError(f"model.overrides.{key} = {value}; must be >= {low}: pass e.g. "
                              f"--model.overrides.{key} {getattr(CONFIGS[name](), key)}")
    try:
        args = CONFIGS[name]().replace(**cfg.model.overrides)
    except (TypeError, ValueError) as e:        # ModelArgs.__post_init__ lists what is inconsistent
        raise ConfigError(f"model.overrides = {cfg.model.overrides} on model.name = {name!r}: {e}") from None
    if args.max_seq_len < cfg.data.seq_len:
        args = args.replace(max_seq_len=cfg.data.seq_len)
    if args.n_routed_experts % cfg.distributed.ep:
        raise ConfigError(f"distributed.ep = {cfg.distributed.ep} does not divide the model's "
                          f"{args.n_routed_experts} routed experts; choose a divisor of {args.n_routed_experts}")
    return args


# output paths a run writes: key -> whether the value is a folder (else a file in a folder)
OUTPUT_PATHS = {"checkpoint.dir": True, "log.jsonl": False, "log.summary": False, "log.profile_dir": True}


def check_output_paths(cfg: Config) -> None:
    """Every output path can be written, checked before the run builds anything: its nearest
    existing ancestor folder is a folder the process may write into. Nothing is created here."""
    for key, is_folder in OUTPUT_PATHS.items():
        value = _get(cfg, key)
        if not value:
            continue
        path = Path(value).absolute()
        folder = path if is_folder else path.parent
        existing = folder
        while not existing.exists():
            existing = existing.parent
        if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
            what = "is not a folder" if not existing.is_dir() else "is not writable"
            raise ConfigError(f"{key} = {value!r}: {existing} {what}; pass a writable path for --{key}")


def validate_launch(cfg: Config, world_size: int) -> None:
    """distributed.ep against the number of processes this run was launched with (torchrun's
    WORLD_SIZE; 1 without torchrun). Checked when the run starts, not at load time, so that
    --print-config and launchers can read an expert-parallel config in a single process."""
    ep = cfg.distributed.ep
    if world_size == 1 and ep > 1:
        raise ConfigError(f"distributed.ep = {ep} needs {ep} processes (one per expert-parallel rank), but "
                          f"this is a single process; launch with torchrun --nproc_per_node {ep} -m "
                          f"trex.training.train ... (or a multiple of {ep} processes), or set --distributed.ep 1")
    if world_size % ep:
        raise ConfigError(f"distributed.ep = {ep} does not divide the {world_size} processes; launch with "
                          f"torchrun --nproc_per_node set to a multiple of {ep}, or change distributed.ep")
