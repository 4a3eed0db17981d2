"""Weight-only warm start of a training-loop run (SFT after CPT).

CPT -> SFT needs the SFT run to begin from the CPT weights with a fresh optimizer, schedule and
data position; the training loop's own resume restores all of those, so it does not fit. The
loop builds its model in ``trex.training.train.build_model(cfg, vocab_needed)``; ``init_from(path)``
wraps that function for the duration of one in-process run so that the freshly built model gets
the weights of the checkpoint at ``path`` (a checkpoint.dir or step folder) before it is moved,
parallelised and compiled. Everything else is the training loop's own.

(A ``checkpoint.init_from`` option in the training loop would make this wrapper unnecessary.)
"""
from __future__ import annotations

import contextlib
import os


def load_weights(model, path: str | os.PathLike) -> None:
    from trex.training.or_eval.model_io import load_state
    state, step_dir = load_state(path)
    try:
        model.load_state_dict(state["model"])
    except RuntimeError as exc:
        raise ValueError(f"warm start from {path}: weights in {step_dir} do not fit this model ({exc}); "
                         f"warm-start with the same model config and tokenizer") from exc


@contextlib.contextmanager
def init_from(path: str | os.PathLike | None):
    """Within this block, trex.training.train.train() starts from the weights at ``path`` (None: fresh)."""
    if path is None:
        yield
        return
    import trex.training.train as loop
    original = loop.build_model

    def build_model(*args, **kwargs):
        lib, model_args, model = original(*args, **kwargs)
        load_weights(model, path)
        return lib, model_args, model

    loop.build_model = build_model
    try:
        yield
    finally:
        loop.build_model = original
