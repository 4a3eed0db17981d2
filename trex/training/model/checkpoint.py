"""Safetensors checkpoints with the official DeepSeek-V4 tensor names and layout.

Layout (as the Hugging Face release): ``model-00001-of-0000N.safetensors`` shards plus
``model.safetensors.index.json`` (``{"metadata": {"total_size": bytes}, "weight_map": {name:
shard}}``); a directory with a single ``model.safetensors`` is read as well. Checkpoints written
here add ``metadata.shards`` = ``{shard: {"bytes": n, "sha256": hex}}`` to the index; the loader
checks every shard against it (and every index entry against its shard's header) before it copies
any tensor into the model, so a damaged shard or a wrong index entry leaves the model untouched.

Names: the model's module tree mirrors the official ``inference/model.py`` (``embed.weight``,
``layers.{i}.attn.wq_a.weight``, ``layers.{i}.hc_attn_fn``, ``layers.{i}.ffn.experts.{j}.w1.weight``,
``mtp.0.e_proj.weight``, ``hc_head_fn``, ...), so ``state_dict()`` keys are written as they are.
Dtypes as the release stores them (spec §0): mHC parameters, attention sinks, compressor ``ape``
and router biases FP32; ``tid2eid`` int64; everything else BF16. The release stores most linear
weights in FP8 (e4m3 + ue8m0 block scales) and routed experts in FP4; dequantising those is not
implemented, so such tensors are rejected with ``QuantizedCheckpointError``.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

import torch
from safetensors import safe_open
from safetensors.torch import save_file
from torch import nn

from ..checkpoint import file_sha256
from .args import ModelArgs

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
CONFIG_FILE = "config.json"

# official config.json key -> ModelArgs field (the keys of the release's config, spec §7)
CONFIG_KEYS = {
    "vocab_size": "vocab_size", "hidden_size": "dim", "num_hidden_layers": "n_layers",
    "num_nextn_predict_layers": "n_mtp_layers", "num_attention_heads": "n_heads", "head_dim": "head_dim",
    "qk_rope_head_dim": "rope_head_dim", "q_lora_rank": "q_lora_rank", "o_groups": "o_groups",
    "o_lora_rank": "o_lora_rank", "sliding_window": "window_size", "compress_ratios": "compress_ratios",
    "index_n_heads": "index_n_heads", "index_head_dim": "index_head_dim", "index_topk": "index_topk",
    "n_routed_experts": "n_routed_experts", "num_experts_per_tok": "n_activated_experts",
    "n_shared_experts": "n_shared_experts", "moe_intermediate_size": "moe_inter_dim",
    "num_hash_layers": "n_hash_layers", "scoring_func": "score_func", "routed_scaling_factor": "route_scale",
    "swiglu_limit": "swiglu_limit", "hc_mult": "hc_mult", "hc_sinkhorn_iters": "hc_sinkhorn_iters",
    "hc_eps": "hc_eps", "rms_norm_eps": "norm_eps", "rope_theta": "rope_theta",
    "compress_rope_theta": "compress_rope_theta",
}
ROPE_SCALING_KEYS = {"factor": "rope_factor", "original_max_position_embeddings": "original_seq_len",
                     "beta_fast": "beta_fast", "beta_slow": "beta_slow"}
# config values this implementation supports only in one setting: key -> required value
FIXED_CONFIG_VALUES = {"num_key_value_heads": 1, "tie_word_embeddings": False, "hidden_act": "silu",
                       "topk_method": "noaux_tc", "norm_topk_prob": True}

# official storage dtype by tensor name; first match wins, default bf16
_DTYPE_RULES: tuple[tuple[re.Pattern, torch.dtype], ...] = (
    (re.compile(r"(^|\.)hc_(attn|ffn|head)_(fn|base|scale)$"), torch.float32),
    (re.compile(r"(^|\.)attn_sink$"), torch.float32),
    (re.compile(r"(^|\.)compressor\.ape$"), torch.float32),
    (re.compile(r"(^|\.)gate\.bias$"), torch.float32),
    (re.compile(r"(^|\.)gate\.tid2eid$"), torch.int64),
)
# safetensors dtype strings of the release's quantised formats (and the int8/uint8 packings of FP4)
_QUANTIZED_DTYPES = {"F8_E4M3", "F8_E5M2", "F8_E8M0", "F4", "I8", "U8"}
_SCALE_SUFFIX = ".scale"


class CheckpointMismatchError(ValueError):
    """The checkpoint's tensors do not match the model: lists missing, unexpected, wrongly shaped."""

    def __init__(self, missing: list[str], unexpected: list[str],
                 wrong_shape: list[tuple[str, tuple, tuple]], limit: int = 20):
        self.missing, self.unexpected, self.wrong_shape = missing, unexpected, wrong_shape
        lines = ["checkpoint does not match the model (is it the same config?):"]
        for title, items in (("missing", missing), ("unexpected", unexpected)):
            if items:
                lines.append(f"  {len(items)} {title}: " + ", ".join(items[:limit])
                             + (" ..." if len(items) > limit else ""))
        if wrong_shape:
            lines.append(f"  {len(wrong_shape)} wrong shape: " + ", ".join(
                f"{n} (checkpoint {list(got)}, model {list(want)})" for n, got, want in wrong_shape[:limit])
                + (" ..." if len(wrong_shape) > limit else ""))
        super().__init__("\n".join(lines))


class CheckpointShardError(ValueError):
    """A shard that does not match its index (size, sha256, the tensors the index puts in it) or
    cannot be read; the message names the shard."""


class QuantizedCheckpointError(ValueError):
    """The checkpoint holds FP8/FP4 tensors (the official release format), which are not supported."""


def args_from_config(config: dict) -> ModelArgs:
    """``ModelArgs`` from an official ``config.json`` dict (unknown keys such as
    ``quantization_config`` are ignored; missing or unsupported values raise ValueError)."""
    missing = [k for k in CONFIG_KEYS if k not in config]
    scaling = config.get("rope_scaling") or {}
    missing += [f"rope_scaling.{k}" for k in ROPE_SCALING_KEYS if k not in scaling]
    if missing:
        raise ValueError(f"config.json lacks {', '.join(missing)} (needed to build the DeepSeek-V4 model)")
    unsupported = [f"{k}={config[k]!r} (supported: {v!r})" for k, v in FIXED_CONFIG_VALUES.items()
                   if k in config and config[k] != v]
    if unsupported:
        raise ValueError("config.json has settings this model does not implement: " + "; ".join(unsupported))
    fields = {field: config[key] for key, field in CONFIG_KEYS.items()}
    fields.update({field: scaling[key] for key, field in ROPE_SCALING_KEYS.items()})
    ratios = list(fields["compress_ratios"])
    if len(ratios) == fields["n_layers"]:            # some configs omit the MTP entries (SWA-only)
        ratios += [0] * fields["n_mtp_layers"]
    fields["compress_ratios"] = tuple(ratios)
    return ModelArgs(**fields)


def config_from_args(args: ModelArgs) -> dict:
    """The official ``config.json`` keys for ``args`` (inverse of ``args_from_config``)."""
    config = {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4", "torch_dtype": "bfloat16"}
    config.update({key: getattr(args, field) for key, field in CONFIG_KEYS.items()})
    config["compress_ratios"] = list(args.compress_ratios)
    config["rope_scaling"] = {"type": "yarn", **{key: getattr(args, field) for key, field in ROPE_SCALING_KEYS.items()}}
    config.update(FIXED_CONFIG_VALUES)
    return config


def official_dtype(name: str) -> torch.dtype:
    for pattern, dtype in _DTYPE_RULES:
        if pattern.search(name):
            return dtype
    return torch.bfloat16


def official_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The model's tensors under their official names, in the release's storage dtypes (CPU)."""
    return {name: t.detach().to(device="cpu", dtype=official_dtype(name)).contiguous()
            for name, t in model.state_dict().items()}


def _atomic_save(tensors: dict[str, torch.Tensor], path: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        save_file(tensors, tmp, metadata={"format": "pt"})
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _atomic_write_text(text: str, path: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def save_checkpoint(model: nn.Module, directory: str | os.PathLike,
                    max_shard_bytes: int = 5 * 2 ** 30) -> list[Path]:
    """Write the model as sharded safetensors + index json (+ ``config.json`` with the official keys
    when the model carries ``ModelArgs``); returns the shard paths.

    Tensors are split into shards of at most ``max_shard_bytes`` (a larger single tensor gets a
    shard of its own). Each file is written to a temporary name and renamed; the index is written
    last, so a directory with an index is complete."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    tensors = official_state_dict(model)
    groups: list[list[str]] = [[]]
    size = 0
    for name, t in tensors.items():
        nbytes = t.numel() * t.element_size()
        if groups[-1] and size + nbytes > max_shard_bytes:
            groups.append([])
            size = 0
        groups[-1].append(name)
        size += nbytes
    n = len(groups)
    weight_map, paths, shards = {}, [], {}
    for i, names in enumerate(groups, start=1):
        path = directory / f"model-{i:05d}-of-{n:05d}.safetensors"
        _atomic_save({name: tensors[name] for name in names}, path)
        weight_map.update({name: path.name for name in names})
        shards[path.name] = {"bytes": path.stat().st_size, "sha256": file_sha256(path)}
        paths.append(path)
    total = sum(t.numel() * t.element_size() for t in tensors.values())
    index = {"metadata": {"total_size": total, "shards": shards}, "weight_map": weight_map}
    args = getattr(model, "args", None)
    if isinstance(args, ModelArgs):
        _atomic_write_text(json.dumps(config_from_args(args), indent=2), directory / CONFIG_FILE)
    _atomic_write_text(json.dumps(index, indent=2), directory / INDEX_FILE)
    return paths


def _read_index(directory: Path) -> dict:
    """The index json ({"metadata": ..., "weight_map": ...}), or one made up for a single
    ``model.safetensors`` (no recorded checksums)."""
    index_path = directory / INDEX_FILE
    if index_path.exists():
        try:
            index = json.loads(index_path.read_text())
            if not isinstance(index.get("weight_map"), dict):
                raise ValueError("no weight_map table")
        except (OSError, ValueError, AttributeError) as e:
            raise CheckpointShardError(f"{index_path}: unreadable index ({e}); write it again with "
                                       f"save_checkpoint") from None
        return index
    single = directory / SINGLE_FILE
    if single.exists():
        return {"metadata": {}, "weight_map": {name: SINGLE_FILE for name in _shard_header(directory, SINGLE_FILE)}}
    raise FileNotFoundError(f"{directory} has neither {INDEX_FILE} nor {SINGLE_FILE}")


def checkpoint_weight_map(directory: str | os.PathLike) -> dict[str, str]:
    """tensor name -> shard file name, from the index json or a single ``model.safetensors``."""
    return _read_index(Path(directory))["weight_map"]


def _shard_header(directory: Path, shard: str) -> dict[str, tuple[tuple, str]]:
    path = directory / shard
    try:
        with safe_open(str(path), framework="pt") as f:
            header = {}
            for name in f.keys():
                view = f.get_slice(name)
                header[name] = (tuple(view.get_shape()), view.get_dtype())
            return header
    except Exception as e:        # safetensors raises its own SafetensorError, OSError, ...
        raise CheckpointShardError(f"shard {path}: cannot be read ({type(e).__name__}: {e})") from None


def verify_shards(directory: str | os.PathLike, index: dict | None = None) -> dict[str, tuple[tuple, str]]:
    """Check every shard against the index: present, its size and sha256 as recorded (where the
    index records them), and holding each tensor the index puts in it. Returns name -> (shape,
    safetensors dtype) from the headers. CheckpointShardError names the shard."""
    directory = Path(directory)
    index = _read_index(directory) if index is None else index
    weight_map, recorded = index["weight_map"], index.get("metadata", {}).get("shards", {})
    headers: dict[str, tuple[tuple, str]] = {}
    for shard in sorted(set(weight_map.values())):
        path = directory / shard
        if not path.is_file():
            raise CheckpointShardError(f"shard {path}: missing (the index names it)")
        want = recorded.get(shard)
        if want is not None:
            if path.stat().st_size != want["bytes"]:
                raise CheckpointShardError(f"shard {path}: {path.stat().st_size} bytes, the index recorded "
                                           f"{want['bytes']} (truncated or replaced)")
            if file_sha256(path) != want["sha256"]:
                raise CheckpointShardError(f"shard {path}: sha256 differs from the index's (damaged data)")
        header = _shard_header(directory, shard)
        misplaced = sorted(n for n, s in weight_map.items() if s == shard and n not in header)
        if misplaced:
            raise CheckpointShardError(f"shard {path}: the index puts {len(misplaced)} tensors in it that it does "
                                       f"not hold, e.g. {misplaced[:3]}; the index does not match its shards")
        headers.update(header)
    return headers


def load_checkpoint(model: nn.Module, directory: str | os.PathLike, strict: bool = True) -> None:
    """Load an official-layout checkpoint into ``model`` (in place, cast to each tensor's dtype).

    Checks everything before copying anything: each shard against the index (verify_shards:
    size, sha256, the tensors it holds; CheckpointShardError names the shard), FP8/FP4 tensors or ``*.scale`` companions raise
    ``QuantizedCheckpointError``; missing / unexpected / wrongly shaped tensors raise
    ``CheckpointMismatchError`` (with ``strict=False`` only wrong shapes do). The model must be
    materialised (``model.to_empty(device=...)`` first for a meta-built model)."""
    directory = Path(directory)
    index = _read_index(directory)
    weight_map = index["weight_map"]
    headers = verify_shards(directory, index)

    quantized = [f"{n} ({dtype})" for n, (_, dtype) in headers.items() if dtype in _QUANTIZED_DTYPES]
    quantized += [f"{n} (block scale)" for n in headers if n.endswith(_SCALE_SUFFIX)]
    if quantized:
        raise QuantizedCheckpointError(
            f"{directory} holds {len(quantized)} quantised tensors, e.g. {', '.join(sorted(quantized)[:5])}. "
            "The official DeepSeek-V4 release stores linear weights in FP8 (e4m3 with ue8m0 block scales) "
            "and routed experts in FP4; this loader reads BF16/FP32 checkpoints only. Dequantise to BF16 "
            "first (weight x per-block scale) and save without the *.scale tensors.")

    targets = dict(model.state_dict(keep_vars=True))
    missing = sorted(set(targets) - set(headers))
    unexpected = sorted(set(headers) - set(targets))
    wrong_shape = sorted((n, headers[n][0], tuple(targets[n].shape)) for n in set(targets) & set(headers)
                         if headers[n][0] != tuple(targets[n].shape))
    if wrong_shape or (strict and (missing or unexpected)):
        raise CheckpointMismatchError(missing, unexpected, wrong_shape)
    meta = [n for n, t in targets.items() if t.is_meta]
    if meta:
        raise ValueError(f"model has {len(meta)} tensors on the meta device (e.g. {meta[0]}); "
                         "call model.to_empty(device=...) before load_checkpoint")

    by_shard: dict[str, list[str]] = {}
    for name, shard in weight_map.items():
        if name in targets:
            by_shard.setdefault(shard, []).append(name)
    with torch.no_grad():
        for shard, names in sorted(by_shard.items()):
            try:
                with safe_open(str(directory / shard), framework="pt") as f:
                    for name in names:
                        targets[name].copy_(f.get_tensor(name))
            except CheckpointShardError:
                raise
            except Exception as e:   # verified above; a shard changed while loading
                raise CheckpointShardError(f"shard {directory / shard}: reading {name!r} failed "
                                           f"({type(e).__name__}: {e})") from None


def load_pretrained(directory: str | os.PathLike, device: str | torch.device = "cpu",
                    dtype: torch.dtype | None = None, **overrides) -> nn.Module:
    """Build ``Transformer`` from ``directory/config.json`` (on the meta device, then materialised on
    ``device``) and load its weights; ``overrides`` replace ModelArgs fields (e.g. training options)."""
    from .model import Transformer

    directory = Path(directory)
    config_path = directory / CONFIG_FILE
    if not config_path.exists():
        raise FileNotFoundError(f"{config_path} not found; build the model with get_config(...) and call "
                                "load_checkpoint(model, directory) instead")
    args = args_from_config(json.loads(config_path.read_text()))
    if overrides:
        args = args.replace(**overrides)
    with torch.device("meta"):
        model = Transformer(args)
    model.to_empty(device=device)
    for moe in model.moe_layers():          # the one non-persistent buffer: balancing counts
        moe.expert_load.zero_()
    load_checkpoint(model, directory)
    return model.to(dtype) if dtype is not None else model
