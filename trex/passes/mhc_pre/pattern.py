"""The eager mHC pre-projection chains the backend replaces by ``trex::mhc_pre`` (the op is in op.py).

Matching: the chain below is written with the first column pass only; ``_refine`` then follows the
graph through further (row, column) passes and counts them, so any iteration count matches without
tracing hundreds of unrolled nodes. The chain is traced with n = 4 (the slices z[..., :n] are
constants of the traced graph), the V4 stream count.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from trex.compiler.graph import aten, same_size, users, val
from trex.compiler.pattern import Pattern
from trex.compiler.registry import register_pattern

from .op import N_STREAMS


def mhc_pre_chain(x, fn, scale, base, *, hc_eps, rms_eps):
    n = x.shape[-2]
    xf = x.flatten(-2).float()
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + rms_eps)
    z = (xf @ fn.t()) * r
    zp, zq, zc = z[..., :n], z[..., n:2 * n], z[..., 2 * n:].unflatten(-1, (n, n))
    pre = torch.sigmoid(scale[0] * zp + base[:n]) + hc_eps
    post = 2.0 * torch.sigmoid(scale[1] * zq + base[n:2 * n])
    comb = torch.softmax(scale[2] * zc + base[2 * n:].view(n, n), dim=-1) + hc_eps
    comb = comb / (comb.sum(-2, keepdim=True) + hc_eps)
    layer_input = (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype)
    return layer_input, post, comb


def mhc_pre_chain_flat_logits(x, fn, scale, base, *, hc_eps, rms_eps):
    """The same math with the comb logits biased before they are viewed n x n (the anchor script's
    and bench/gpu_patterns.py's spelling)."""
    n = x.shape[-2]
    xf = x.flatten(-2).float()
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + rms_eps)
    z = (xf @ fn.t()) * r
    pre = torch.sigmoid(scale[0] * z[..., :n] + base[:n]) + hc_eps
    post = 2.0 * torch.sigmoid(scale[1] * z[..., n:2 * n] + base[n:2 * n])
    comb = torch.softmax((scale[2] * z[..., 2 * n:] + base[2 * n:]).unflatten(-1, (n, n)), dim=-1) + hc_eps
    comb = comb / (comb.sum(-2, keepdim=True) + hc_eps)
    layer_input = (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype)
    return layer_input, post, comb


def mhc_pre_chain_norm_first(x, fn, scale, base, *, hc_eps, rms_eps):
    """transformers' DeepseekV4HyperConnection: the streams normed before the projection
    (``F.linear(norm(x), fn)``, equal to scaling the projection by the same 1/rms), the weight
    coefficients split off (``split``/``unbind`` canonicalise to these slices and selects), and the
    collapse taken on the streams in their own dtype (bf16 x fp32 promotes inside the product)."""
    n = x.shape[-2]
    xf = x.flatten(-2).float()
    xf = xf * torch.rsqrt(xf.square().mean(-1, keepdim=True) + rms_eps)
    z = F.linear(xf, fn.float())
    pre = torch.sigmoid(z[..., :n] * scale[0] + base[:n]) + hc_eps
    post = 2 * torch.sigmoid(z[..., n:2 * n] * scale[1] + base[n:2 * n])
    comb = torch.softmax(z[..., 2 * n:].unflatten(-1, (n, n)) * scale[2] + base[2 * n:].view(n, n), dim=-1) + hc_eps
    comb = comb / (comb.sum(-2, keepdim=True) + hc_eps)
    layer_input = (pre.unsqueeze(-1) * x).sum(-2).to(x.dtype)
    return layer_input, post, comb


def _replace(x, fn, scale, base, *, hc_eps, rms_eps, out_dtypes, iters=1):
    layer_input, post, comb = torch.ops.trex.mhc_pre(x, fn, scale, base, iters, rms_eps=rms_eps, hc_eps=hc_eps)
    # a down-cast the model applies to post/comb (transformers' post.to(dtype)) is taken into the match
    # (pattern.Matcher._extend_output_casts): the fp32 coefficients are rounded once, as in eager
    return layer_input, post.to(out_dtypes[1]), comb.to(out_dtypes[2])


def _is_call(n, target) -> bool:
    return isinstance(n, torch.fx.Node) and n.op == "call_function" and n.target == target


def _norm_pass(m: torch.fx.Node, dim: int, hc_eps: float) -> tuple[torch.fx.Node, list] | None:
    """If ``m`` feeds exactly ``m / (m.sum(dim, keepdim=True) + hc_eps)``, return (result, nodes)."""
    consumers = users(m)
    if len(consumers) != 2:
        return None
    sums = [u for u in consumers if _is_call(u, aten.sum.dim_IntList)]
    divs = [u for u in consumers if _is_call(u, aten.div.Tensor)]
    if len(sums) != 1 or len(divs) != 1:
        return None
    s, div = sums[0], divs[0]
    rank = val(m).dim()
    dims = [k - rank if k >= 0 else k for k in s.args[1]]
    keepdim = s.args[2] if len(s.args) > 2 else False
    if dims != [dim] or not keepdim or len(users(s)) != 1:
        return None
    add = users(s)[0]
    if not _is_call(add, aten.add.Tensor) or add.args[0] is not s or add.args[1] != hc_eps or len(users(add)) != 1:
        return None
    if div.args[0] is not m or div.args[1] is not add:
        return None
    return div, [s, add, div]


def _refine(match) -> str | None:
    """Count the Sinkhorn (row, column) passes that follow the matched first column pass."""
    hc_eps = match.scalars["hc_eps"]
    comb = match.outputs[2]
    iters = 1
    while True:
        row = _norm_pass(comb, -1, hc_eps)
        if row is None:
            break
        col = _norm_pass(row[0], -2, hc_eps)
        if col is None:
            break
        match.nodes.update(row[1] + col[1])
        comb = col[0]
        iters += 1
    match.outputs[2] = comb
    match.consts["iters"] = iters
    return None


def _extra_check(match) -> str | None:
    x, fn = match.input_val("x"), match.input_val("fn")
    scale, base = match.input_val("scale"), match.input_val("base")
    if x.dtype not in (torch.float32, torch.bfloat16, torch.float16):
        return f"x has dtype {x.dtype}; the fused op takes bf16/fp16/fp32 streams"
    n, d = x.shape[-2], x.shape[-1]
    m = (2 + n) * n
    if fn.dim() != 2 or not (same_size(fn.shape[0], m) and same_size(fn.shape[1], n * d)):
        return f"fn has shape {tuple(fn.shape)}, expected [(2+n)*n, n*d] = [{m}, {n * d}]"
    if tuple(scale.shape) != (3,) or base.dim() != 1 or not same_size(base.shape[0], m):
        return f"scale {tuple(scale.shape)} / base {tuple(base.shape)} are not [3] / [{m}]"
    return None


def _examples(dtype):
    n, d = N_STREAMS, 8
    return {"x": torch.randn(2, 3, n, d, dtype=dtype), "fn": torch.randn((2 + n) * n, n * d),
            "scale": torch.rand(3), "base": torch.randn((2 + n) * n)}


register_pattern(Pattern(
    name="mhc_pre",
    chains=[mhc_pre_chain, mhc_pre_chain_flat_logits, mhc_pre_chain_norm_first],
    replacement=_replace,
    example_inputs=_examples,
    extra_check=_extra_check,
    refine=_refine,
    fused_ops=("mhc_pre", "mhc_pre_bwd"),
    priority=10,   # before rms_norm: its RMS over n*d must not be taken by the plain RMSNorm pattern
    description="mHC pre-projection: RMS, coefficient projection, sigmoids, Sinkhorn, collapse",
))
