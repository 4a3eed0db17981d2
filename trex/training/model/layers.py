"""Parameter-holding building blocks shared by attention, MoE and the model.

``Linear`` and ``RMSNorm`` allocate their parameters with ``torch.empty`` (no per-module init),
so that Flash/Pro build on the meta device in seconds; ``Transformer.init_weights`` initialises
everything in one pass.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .functional import rms_norm


class Linear(nn.Module):
    """Bias-free linear layer, weight ``[out_features, in_features]`` (the official layout)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        self.weight = nn.Parameter(torch.empty(out_features, in_features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.linear(x, self.weight)

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}"


class RMSNorm(nn.Module):
    """Weighted RMSNorm over the last dim (spec §4)."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.empty(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return rms_norm(x, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"

