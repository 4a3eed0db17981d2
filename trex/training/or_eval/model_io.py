"""Checkpoints of the training loop -> (model, tokenizer) for evaluation, and weight-only warm starts.

The training loop (trex/training/train.py, trex/training/checkpoint.py) writes ``checkpoint.dir/step_N/
rank_00000.pt`` holding ``{"model": state_dict, "config": Config.to_dict(), ...}`` and a ``latest``
pointer. The OR runs also save ``tokenizer.json`` in ``checkpoint.dir`` (the tokenizer travels
with the model). ``load_for_eval`` accepts either ``checkpoint.dir`` or one ``step_N`` folder.
"""
from __future__ import annotations

import importlib
import json
import os
from pathlib import Path

import torch

from trex.training.or_tokenizer import TOKENIZER_FILENAME, ORTokenizer

LATEST = "latest"
META = "meta.json"


def resolve_step_dir(path: str | os.PathLike) -> Path:
    """``checkpoint.dir`` (use its ``latest``) or a ``step_N`` folder -> the step folder."""
    p = Path(path)
    if (p / META).is_file():
        return p
    pointer = p / LATEST
    if pointer.is_file():
        step = p / pointer.read_text().strip()
        if (step / META).is_file():
            return step
    complete = sorted(s for s in p.glob("step_*") if (s / META).is_file())
    if complete:
        return complete[-1]
    raise FileNotFoundError(f"no complete checkpoint under {p} (want {LATEST} or step_*/{META}); pass the "
                            f"checkpoint.dir of a finished `trex train` run")


def load_state(path: str | os.PathLike) -> tuple[dict, Path]:
    step_dir = resolve_step_dir(path)
    meta = json.loads((step_dir / META).read_text())
    if meta.get("world", 1) != 1:
        raise ValueError(f"{step_dir} was written by {meta['world']} ranks; evaluation loads single-rank "
                         f"checkpoints (train the OR models with one process)")
    # Written by this project's own training loop (trex/training/checkpoint.py pickles): load only ours.
    state = torch.load(step_dir / "rank_00000.pt", map_location="cpu", weights_only=False)
    return state, step_dir


def model_args_from_config(config: dict, model_module: str = "trex.training.model"):
    lib = importlib.import_module(model_module)
    args = lib.get_config(config["model"]["name"])
    if config["model"].get("overrides"):
        args = args.replace(**config["model"]["overrides"])
    seq_len = config["data"]["seq_len"]
    if args.max_seq_len < seq_len:   # as trex.training.train.build_model does
        args = args.replace(max_seq_len=seq_len)
    return lib, args


def find_tokenizer(step_dir: Path, config: dict):
    for folder in (step_dir, step_dir.parent):
        if (folder / TOKENIZER_FILENAME).is_file():
            return ORTokenizer.load(folder)
    from trex.training.tokenizer import load_tokenizer   # the run used a registry tokenizer (e.g. "byte")
    spec = config["data"]["tokenizer"]
    if spec.endswith(":from_env"):
        raise FileNotFoundError(f"{step_dir} was trained with {spec} but no {TOKENIZER_FILENAME} is saved "
                                f"next to it; copy the run's tokenizer.json into {step_dir.parent}")
    return load_tokenizer(spec)


def resolve_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def load_for_eval(path: str | os.PathLike, device: str = "auto"):
    """(model in eval mode, tokenizer, info dict) from a training-loop checkpoint."""
    state, step_dir = load_state(path)
    config = state["config"]
    lib, args = model_args_from_config(config)
    model = lib.Transformer(args)
    model.load_state_dict(state["model"])
    model.to(resolve_device(device)).eval()
    tokenizer = find_tokenizer(step_dir, config)
    info = {"step_dir": str(step_dir), "step": state.get("step"), "model_name": config["model"]["name"],
            "model_overrides": config["model"].get("overrides", {}), "max_seq_len": args.max_seq_len,
            "data_kind": config["data"]["kind"]}
    return model, tokenizer, info
