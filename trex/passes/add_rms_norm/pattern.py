"""The eager residual add + RMSNorm chain the backend replaces by ``trex::add_rms_norm`` (the op is in op.py).

Opt-in (``options={"patterns": [..., "add_rms_norm"]}``): it overlaps the plain RMSNorm pattern, and
DeepSeek-V4 blocks have no residual add in front of their norms (mHC replaces it).
"""
from __future__ import annotations

import torch

from trex.compiler.pattern import Pattern
from trex.compiler.registry import register_pattern


# 4. the eager chain, as model code writes it; the two outputs are the normed value and the residual
def add_rms_norm_chain(x, residual, weight, *, eps):
    h = x + residual
    hf = h.float()
    return weight * (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + eps)).to(h.dtype), h


# 5. the replacement: what the chain becomes (returns one value per chain output)
def _replace(x, residual, weight, *, eps, out_dtypes):
    y, h, _rstd = torch.ops.trex.add_rms_norm(x, residual, weight, eps, out_dtypes[0])
    return y, h


# 6. extra checks: what the structure alone does not guarantee
def _extra_check(match) -> str | None:
    x, residual, w = match.input_val("x"), match.input_val("residual"), match.input_val("weight")
    if x.dtype != residual.dtype or tuple(x.shape) != tuple(residual.shape):
        return f"x {tuple(x.shape)}/{x.dtype} and residual {tuple(residual.shape)}/{residual.dtype} differ"
    h_dtype = match.outputs[1].meta["val"].dtype
    if h_dtype != x.dtype:   # e.g. h = x.float() + residual.float(): the fused op returns h in x's dtype
        return f"the sum h is {h_dtype} but x is {x.dtype} (inputs up-cast before the add)"
    if w.dim() != 1 or w.shape[0] != x.shape[-1]:
        return f"the multiplier has shape {tuple(w.shape)}, not a weight of shape ({x.shape[-1]},)"
    return None


def _examples(dtype):
    return {"x": torch.randn(2, 3, 16, dtype=dtype), "residual": torch.randn(2, 3, 16, dtype=dtype),
            "weight": torch.randn(16, dtype=dtype)}


register_pattern(Pattern(
    name="add_rms_norm",
    chains=[add_rms_norm_chain],
    replacement=_replace,
    example_inputs=_examples,
    extra_check=_extra_check,
    fused_ops=("add_rms_norm", "rms_norm_bwd"),
    enabled_by_default=False,
    priority=5,                # before rms_norm, which would otherwise take the norm alone
    description="residual add + RMSNorm (guide example, opt-in)",
))
