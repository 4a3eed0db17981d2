"""DeepSeek-V4 (reference/deepseek_v4.md) as a trainable PyTorch model; API in docs/contracts.md."""
from .args import ModelArgs, get_config
from .flops import ParameterCount, count_parameters, flops_breakdown, flops_per_token
from .model import Block, MTPBlock, Transformer, lm_loss
from .moe import MoE, dense_dispatch, sparse_dispatch, update_router_biases

__all__ = ["ModelArgs", "get_config", "Transformer", "Block", "MTPBlock", "lm_loss", "MoE",
           "sparse_dispatch", "dense_dispatch", "ParameterCount", "count_parameters",
           "flops_breakdown", "flops_per_token", "update_router_biases"]
