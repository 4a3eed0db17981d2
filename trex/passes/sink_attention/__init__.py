"""Attention with a per-head learned sink (gpt-oss, DeepSeek-V4 in transformers): the eager chain becomes ONE
``scaled_dot_product_attention`` call over augmented keys (pattern.py). No fused op of trex's own: attention
is a tensor-core (cube) kernel, not a row program of the Kernel IR, and the platform's fused attention
(PyTorch's SDPA kernels on CUDA, torch_npu's on Ascend) is the kernel to lower to."""
from . import pattern  # noqa: F401
