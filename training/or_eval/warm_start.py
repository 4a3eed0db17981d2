"""A model module for ``training.train.train(cfg, model_module=...)`` that starts from trained weights.

CPT -> SFT needs the SFT run to begin from the CPT weights with a fresh optimizer, schedule and
data position. The training loop builds its model through ``model_module`` (``get_config``,
``Transformer``, ``lm_loss``, ``flops_per_token``); this module re-exports training.model and makes
``Transformer(args)`` load the weights of the checkpoint named by ``$TREX_OR_INIT_FROM`` (a
checkpoint.dir or step folder) when it is set. Everything else (optimizer, schedule, data) is the
training loop's own, so the SFT stage is an ordinary run of it.
"""
from __future__ import annotations

import contextlib
import os

from training.model import ModelArgs, get_config, lm_loss  # noqa: F401  (the model-module interface)
from training.model import Transformer as _Transformer
from training.model import flops_per_token  # noqa: F401

INIT_ENV = "TREX_OR_INIT_FROM"


def Transformer(args: ModelArgs):  # noqa: N802 (the name the training loop calls)
    model = _Transformer(args)
    path = os.environ.get(INIT_ENV)
    if path:
        from training.or_eval.model_io import load_state
        state, step_dir = load_state(path)
        try:
            model.load_state_dict(state["model"])
        except RuntimeError as exc:
            raise ValueError(f"${INIT_ENV}={path}: weights in {step_dir} do not fit this model ({exc}); "
                             f"warm-start with the same model config and tokenizer") from exc
    return model


@contextlib.contextmanager
def init_from(path: str | os.PathLike | None):
    """Set ``$TREX_OR_INIT_FROM`` for the duration of one training stage (None: fresh weights)."""
    old = os.environ.pop(INIT_ENV, None)
    if path is not None:
        os.environ[INIT_ENV] = str(path)
    try:
        yield
    finally:
        os.environ.pop(INIT_ENV, None)
        if old is not None:
            os.environ[INIT_ENV] = old
