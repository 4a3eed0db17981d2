"""Optimizers for the train loop: torch's AdamW, or SwapAdamW with host-resident states."""
from __future__ import annotations

import torch

from .swap_adamw import SwapAdamW
from .streams import DeviceStreams

__all__ = ["SwapAdamW", "DeviceStreams", "build_optimizer"]


def _adamw(params, cfg):
    return torch.optim.AdamW(params, lr=cfg.lr, betas=tuple(cfg.betas), eps=cfg.eps,
                             weight_decay=cfg.weight_decay)


def _swap_adamw(params, cfg):
    return SwapAdamW(params, lr=cfg.lr, betas=tuple(cfg.betas), eps=cfg.eps,
                     weight_decay=cfg.weight_decay, chunk_bytes=int(cfg.swap_chunk_mb * (1 << 20)))


OPTIMIZERS = {"adamw": _adamw, "swap_adamw": _swap_adamw}


def build_optimizer(params, cfg) -> torch.optim.Optimizer:
    """cfg: training.config.OptimConfig. Weight decay skips 1-d parameters (norm gains, biases)."""
    params = [p for p in params if p.requires_grad]
    decay = [p for p in params if p.ndim >= 2]
    no_decay = [p for p in params if p.ndim < 2]
    groups = [{"params": decay}, {"params": no_decay, "weight_decay": 0.0}]
    return OPTIMIZERS[cfg.name]([g for g in groups if g["params"]], cfg)
