"""The respelling suite: each of the four patterns as real codebases write it, and chains that look like
it but compute other mathematics.

* SPELLINGS: for each pattern, one compiled function holds every spelling (one compile per pattern);
  each spelling must become exactly one fused op in the forward graph and its fused backward in the
  backward graph, with outputs and gradients within DESIGN.md's numerics rule against eager and an fp64
  reference of the fused op's function.
* NEAR_MISSES: for each pattern, chains that compute different mathematics; one compiled function per
  pattern holds them all and must contain no op of that pattern (forward or backward), with outputs and
  gradients equal to eager's.

Each case names the code it is written from (repository and file); where that code rotates the leading
channels or takes a packed projection, the case keeps its arithmetic and uses V4's layout (the rotated
slice is the trailing one). Helper functions below stand in for library calls the CPU test environment
does not have (einops' ``rearrange``/``repeat`` are written as the views they trace to).
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from trex.compiler import logs, registry
from trex.compiler.testing import assert_close_to_reference, make_input, trex_op_counts
from trex.passes.mhc_pre.op import N_STREAMS, mhc_pre_reference

EPS, L, RD, N = 1e-6, 7.0, 8, N_STREAMS
ref_rms = registry.fused_ops()["rms_norm"].reference
ref_swiglu = registry.fused_ops()["swiglu_limited"].reference
ref_rope = registry.fused_ops()["rope"].reference


# ============================================================================================ RMSNorm
# each: (x, w) -> y; `weighted` says whether the fp64 reference takes w
def rms_llama(x, w):
    # transformers models/llama/modeling_llama.py LlamaRMSNorm (Qwen2/Qwen3/Mistral copy it verbatim)
    input_dtype = x.dtype
    h = x.to(torch.float32)
    variance = h.pow(2).mean(-1, keepdim=True)
    h = h * torch.rsqrt(variance + EPS)
    return w * h.to(input_dtype)


def rms_t5(x, w):
    # transformers models/t5/modeling_t5.py T5LayerNorm: the variance in fp32, x itself left in its dtype
    # (bf16 x fp32 promotes inside the product), then cast to the weight's dtype
    variance = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
    h = x * torch.rsqrt(variance + EPS)
    if w.dtype in (torch.float16, torch.bfloat16):
        h = h.to(w.dtype)
    return w * h


def rms_gemma(x, w):
    # transformers models/gemma/modeling_gemma.py GemmaRMSNorm: the weight is (1 + w), applied in fp32
    def _norm(t):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + EPS)
    output = _norm(x.float())
    output = output * (1.0 + w.float())
    return output.type_as(x)


def rms_official_v4(x, w):
    # deepseek-ai/DeepSeek-V4 inference/model.py RMSNorm.forward
    dtype = x.dtype
    x = x.float()
    var = x.square().mean(-1, keepdim=True)
    x = x * torch.rsqrt(var + EPS)
    return (w * x).to(dtype)


def rms_official_v3_functional(x, w):
    # deepseek-ai/DeepSeek-V3 inference/model.py RMSNorm.forward: PyTorch's own op
    return F.rms_norm(x, (x.shape[-1],), w, EPS)


_TORCH_RMS = torch.nn.RMSNorm(40, eps=EPS, elementwise_affine=False)


def rms_megatron_torch_norm(x, w):
    # NVIDIA/Megatron-LM megatron/core/transformer/torch_norm.py WrappedTorchNorm -> torch.nn.RMSNorm
    return _TORCH_RMS(x) * w


def rms_vllm_forward_native(x, w):
    # vllm-project/vllm vllm/model_executor/layers/layernorm.py RMSNorm.forward_native: down-cast, then weight
    orig_dtype = x.dtype
    x = x.to(torch.float32)
    variance = x.pow(2).mean(dim=-1, keepdim=True)
    x = x * torch.rsqrt(variance + EPS)
    x = x.to(orig_dtype)
    return x * w


def rms_sglang_forward_native(x, w):
    # sgl-project/sglang python/sglang/srt/layers/layernorm.py RMSNorm.forward_native: weight in fp32
    orig_dtype = x.dtype
    x = x.to(torch.float32)
    variance = x.pow(2).mean(dim=-1, keepdim=True)
    x = x * torch.rsqrt(variance + EPS)
    return (x * w).to(orig_dtype)


def rms_liger_test_base(x, w):
    # linkedin/Liger-Kernel test/transformers/test_rms_norm.py BaseRMSNorm: no up-cast at all
    input_dtype = x.dtype
    variance = x.pow(2).mean(-1, keepdim=True)
    h = x * torch.rsqrt(variance + EPS)
    return w * h.to(input_dtype)


def rms_flash_attn_ref(x, w):
    # Dao-AILab/flash-attention flash_attn/ops/triton/layer_norm.py rms_norm_ref: 1 / sqrt, x * rstd * w
    dtype = x.dtype
    x = x.float()
    rstd = 1 / torch.sqrt((x.square()).mean(dim=-1, keepdim=True) + EPS)
    return (x * rstd * w.float()).to(dtype)


def rms_meta_llama(x, w):
    # meta-llama/llama model.py RMSNorm (and Megatron-LM megatron/legacy/model/rms_norm.py)
    def _norm(t):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + EPS)
    return _norm(x.float()).type_as(x) * w


def rms_hf_v4_unweighted(x, w):
    # transformers models/deepseek_v4/modeling_deepseek_v4.py DeepseekV4UnweightedRMSNorm (q_b_norm)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).type_as(x)


def rms_sum_over_n(x, w):
    # the variance as a sum over the width (T5X / Flax-style ports)
    xf = x.float()
    var = (xf * xf).sum(-1, keepdim=True) / x.shape[-1]
    return (xf * (1 / torch.sqrt(var + EPS)) * w.float()).to(x.dtype)


def rms_weight_first_pow_half(x, w):
    # weight first, `(var + eps) ** -0.5`, the mean without keepdim and re-expanded (OLMo-style ports)
    xf = x.float()
    var = xf.pow(2).mean(-1)[..., None]
    return (w * xf * (var + EPS) ** -0.5).to(x.dtype)


def rms_method_chain_positive_dim(x, w):
    # method-chained, the reduction dim given as a positive index
    xf = x.float()
    return (w * (xf / xf.pow(2).mean(dim=2, keepdim=True).add(EPS).sqrt())).to(x.dtype)


# (fn, weighted)
RMS_SPELLINGS = [
    (rms_llama, True), (rms_t5, True), (rms_gemma, "1+w"), (rms_official_v4, True),
    (rms_official_v3_functional, True), (rms_megatron_torch_norm, True), (rms_vllm_forward_native, True),
    (rms_sglang_forward_native, True), (rms_liger_test_base, True), (rms_flash_attn_ref, True),
    (rms_meta_llama, True), (rms_hf_v4_unweighted, False), (rms_sum_over_n, True),
    (rms_weight_first_pow_half, True), (rms_method_chain_positive_dim, True),
]


# ------------------------------------------------------------------------------- RMSNorm near-misses
def rms_eps_outside_root(x):
    xf = x.float()
    return (xf / (torch.sqrt(xf.pow(2).mean(-1, keepdim=True)) + EPS)).to(x.dtype)


def rms_mean_over_wrong_dim(x):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-2, keepdim=True) + EPS)).to(x.dtype)


def rms_missing_eps(x):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True))).to(x.dtype)


def rms_sum_not_mean(x):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).sum(-1, keepdim=True) + EPS)).to(x.dtype)


def rms_lucidrains_normalize(x):
    # lucidrains/x-transformers x_transformers/x_transformers.py RMSNorm: F.normalize(x) * sqrt(d); eps
    # clamps the norm from below (max(||x||, eps)), it is not added under the root
    return (F.normalize(x.float(), dim=-1) * x.shape[-1] ** 0.5).to(x.dtype)


def rms_sqrt_not_rsqrt(x):
    xf = x.float()
    return (xf * torch.sqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)).to(x.dtype)


def rms_centred_variance(x):
    # LayerNorm's variance (about the mean) scaling the uncentred x
    xf = x.float()
    var = (xf - xf.mean(-1, keepdim=True)).pow(2).mean(-1, keepdim=True)
    return (xf * torch.rsqrt(var + EPS)).to(x.dtype)


def rms_mean_of_abs(x):
    xf = x.float()
    return (xf * torch.rsqrt(xf.abs().mean(-1, keepdim=True) + EPS)).to(x.dtype)


def rms_eps_outside_rsqrt(x):
    xf = x.float()
    return (xf * (torch.rsqrt(xf.pow(2).mean(-1, keepdim=True)) + EPS)).to(x.dtype)


def rms_mean_over_two_dims(x):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean((-2, -1), keepdim=True) + EPS)).to(x.dtype)


RMS_NEAR_MISSES = [rms_eps_outside_root, rms_mean_over_wrong_dim, rms_missing_eps, rms_sum_not_mean,
                   rms_lucidrains_normalize, rms_sqrt_not_rsqrt, rms_centred_variance, rms_mean_of_abs,
                   rms_eps_outside_rsqrt, rms_mean_over_two_dims]


# ============================================================================================ SwiGLU
# each: (g, u, r) -> h; `routed` says whether the fp64 reference takes r
def swiglu_official_v4_expert(g, u, r):
    # deepseek-ai/DeepSeek-V4 inference/model.py Expert.forward: fp32, up clamped first, weights * x
    dtype = g.dtype
    gate, up = g.float(), u.float()
    up = torch.clamp(up, min=-L, max=L)
    gate = torch.clamp(gate, max=L)
    x = F.silu(gate) * up
    x = r * x
    return x.to(dtype)


def swiglu_hf_v4_mlp(g, u, r):
    # transformers models/deepseek_v4/modeling_deepseek_v4.py DeepseekV4MLP: no casts, clamp keywords
    return F.silu(g.clamp(max=L)) * u.clamp(min=-L, max=L)


def swiglu_hf_v4_experts_chunk(g, u, r):
    # transformers DeepseekV4Experts._apply_gate on the packed gate_up projection
    gate, up = torch.cat([g, u], dim=-1).chunk(2, dim=-1)
    return (F.silu(gate.float().clamp(max=L)) * up.float().clamp(min=-L, max=L)).to(g.dtype)


def swiglu_vllm_packed_slices(g, u, r):
    # vllm-project/vllm vllm/model_executor/layers/activation.py SiluAndMul.forward_native (d = width // 2
    # slices of the packed projection), with V4's limits
    x = torch.cat([g, u], dim=-1)
    d = x.shape[-1] // 2
    return F.silu(x[..., :d].clamp(max=L)) * x[..., d:].clamp(-L, L)


def swiglu_megatron_chunk(g, u, r):
    # NVIDIA/Megatron-LM megatron/core/fusions/fused_bias_swiglu.py swiglu: torch.chunk(y, 2, -1), with
    # V4's limits
    y_1, y_2 = torch.chunk(torch.cat([g, u], -1), 2, -1)
    return F.silu(y_1.clamp(max=L)) * y_2.clamp(-L, L)


def swiglu_reference_doc(g, u, r):
    # shared/reference/deepseek_v4.md limited_swiglu_expert (route weight before w2)
    h = F.silu(g.float().clamp(max=L)) * u.float().clamp(-L, L)
    return (r * h).to(g.dtype)


def swiglu_sigmoid_product(g, u, r):
    # silu spelt g * sigmoid(g) (Liger's LigerSiLUMulFunction reference: a * sigmoid(a) * b)
    gf = g.float().clamp_max(L)
    return ((gf * torch.sigmoid(gf)) * u.float().clamp(min=-L, max=L) * r).to(g.dtype)


def swiglu_exp_form(g, u, r):
    # silu spelt g / (1 + exp(-g)) (the textbook form)
    gf = g.float().clamp(max=L)
    return (gf / (1 + torch.exp(-gf)) * u.float().clamp(-L, L)).to(g.dtype)


def swiglu_clamp_min_then_max_late_route(g, u, r):
    # clamp_min().clamp_max() on up, the routing weight after the down-cast
    gf = g.to(torch.float32).clamp_max(L)
    uf = u.to(torch.float32).clamp_min(-L).clamp_max(L)
    return (F.silu(gf) * uf).to(g.dtype) * r.to(g.dtype)


_SILU = torch.nn.SiLU()


def swiglu_act_module_up_first(g, u, r):
    # transformers' ACT2FN["silu"] (nn.SiLU) module, up written first in the product
    return u.float().clamp(-L, L) * _SILU(g.float().clamp(max=L))


def swiglu_torch_clamp_positional(g, u, r):
    # torch.clamp(g, None, L) / torch.clamp(u, -L, L) positional, torch.mul
    return torch.mul(F.silu(torch.clamp(g, None, L)), torch.clamp(u, -L, L))


def swiglu_route_fp32_after_product(g, u, r):
    # SGLang-style routed expert: the weight multiplied after the product, in fp32, then down-cast
    h = F.silu(g.float().clamp(max=L)) * u.float().clamp(-L, L)
    return (h * r.float()).to(g.dtype)


SWIGLU_SPELLINGS = [
    (swiglu_official_v4_expert, True), (swiglu_hf_v4_mlp, False), (swiglu_hf_v4_experts_chunk, False),
    (swiglu_vllm_packed_slices, False), (swiglu_megatron_chunk, False), (swiglu_reference_doc, True),
    (swiglu_sigmoid_product, True), (swiglu_exp_form, False), (swiglu_clamp_min_then_max_late_route, True),
    (swiglu_act_module_up_first, False), (swiglu_torch_clamp_positional, False),
    (swiglu_route_fp32_after_product, True),
]


# ------------------------------------------------------------------ plain SwiGLU (the op with limit = inf)
# each: (g, u, r) -> h
def swiglu_plain_llama_mlp(g, u, r):
    # transformers models/llama/modeling_llama.py LlamaMLP: act_fn(gate_proj(x)) * up_proj(x), ACT2FN["silu"]
    return _SILU(g) * u


def swiglu_plain_vllm_silu_and_mul(g, u, r):
    # vllm-project/vllm vllm/model_executor/layers/activation.py SiluAndMul.forward_native
    x = torch.cat([g, u], dim=-1)
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def swiglu_plain_megatron(g, u, r):
    # NVIDIA/Megatron-LM megatron/core/fusions/fused_bias_swiglu.py swiglu: chunk(2, -1), F.silu(y_1) * y_2
    y_1, y_2 = torch.chunk(torch.cat([g, u], -1), 2, -1)
    return F.silu(y_1) * y_2


def swiglu_plain_liger_reference(g, u, r):
    # linkedin/Liger-Kernel ops/swiglu.py: silu(a) = a * sigmoid(a) in fp32, times b, cast back
    a = g.to(torch.float32)
    return (a * torch.sigmoid(a) * u.float()).to(g.dtype)


def swiglu_plain_routed_official(g, u, r):
    # deepseek-ai/DeepSeek-V4 inference/model.py Expert.forward with swiglu_limit = 0 (no clamp)
    x = F.silu(g.float()) * u.float()
    return (r * x).to(g.dtype)


PLAIN_SWIGLU_SPELLINGS = [(swiglu_plain_llama_mlp, False), (swiglu_plain_vllm_silu_and_mul, False),
                          (swiglu_plain_megatron, False), (swiglu_plain_liger_reference, False),
                          (swiglu_plain_routed_official, True)]


# -------------------------------------------------------------------------------- SwiGLU near-misses
def swiglu_clamp_on_wrong_operand(g, u):
    return (F.silu(g.float().clamp(-L, L)) * u.float().clamp(max=L)).to(g.dtype)


def swiglu_minimum_against_constant(g, u):
    # other gradients at a tie than clamp (see trex.compiler.canonical): not the fused op's function
    return (F.silu(torch.minimum(g.float(), torch.tensor(L))) * u.float().clamp(-L, L)).to(g.dtype)


def swiglu_gpt_oss(g, u):
    # openai/gpt-oss gpt_oss/torch/model.py swiglu (TransformerEngine's clamped SwiGLU): alpha = 1.702 in
    # the sigmoid and (up + 1)
    gf, uf = g.float().clamp(max=L), u.float().clamp(-L, L)
    return (gf * torch.sigmoid(1.702 * gf) * (uf + 1)).to(g.dtype)


def swiglu_gate_clamped_both_sides(g, u):
    return (F.silu(g.float().clamp(-L, L)) * u.float().clamp(-L, L)).to(g.dtype)


def swiglu_up_clamped_above_only(g, u):
    return (F.silu(g.float().clamp(max=L)) * u.float().clamp(max=L)).to(g.dtype)


def swiglu_two_limits(g, u):
    return (F.silu(g.float().clamp(max=L)) * u.float().clamp(-L / 2, L / 2)).to(g.dtype)


def swiglu_sigmoid_glu(g, u):
    # GLU (sigmoid gate), not SwiGLU
    return (torch.sigmoid(g.float().clamp(max=L)) * u.float().clamp(-L, L)).to(g.dtype)


def swiglu_gelu_gate(g, u):
    # GeGLU
    return (F.gelu(g.float().clamp(max=L)) * u.float().clamp(-L, L)).to(g.dtype)


def swiglu_silu_of_up(g, u):
    # the activation on the up branch
    return (g.float().clamp(max=L) * F.silu(u.float().clamp(-L, L))).to(g.dtype)


SWIGLU_NEAR_MISSES = [swiglu_clamp_on_wrong_operand, swiglu_minimum_against_constant, swiglu_gpt_oss,
                      swiglu_gate_clamped_both_sides, swiglu_up_clamped_above_only, swiglu_two_limits,
                      swiglu_sigmoid_glu, swiglu_gelu_gate, swiglu_silu_of_up]


# ============================================================================================== RoPE
# each: (x, freqs, cos, sin) -> y; x [B, S, H, 24], the trailing RD = 8 channels rotated; tables [S, 1, RD/2]
def _complex(x, freqs):
    return torch.view_as_real(torch.view_as_complex(x.float().unflatten(-1, (-1, 2))) * freqs).flatten(-2).to(x.dtype)


def rope_hf_v4_rotate_half(x, freqs, cos, sin):
    # transformers models/deepseek_v4/modeling_deepseek_v4.py apply_rotary_pos_emb: repeat_interleave'd
    # tables, interleaved rotate_half, cat of the untouched prefix
    c, s = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
    nope, rope = x[..., :-RD], x[..., -RD:]
    x1, x2 = rope[..., 0::2], rope[..., 1::2]
    rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)
    return torch.cat([nope, ((rope.float() * c) + (rotated.float() * s)).to(x.dtype)], dim=-1)


def rope_hf_v4_rotate_half_inverse(x, freqs, cos, sin):
    # the same function called with -sin for the attention output's inverse rotation
    return rope_hf_v4_rotate_half(x, freqs, cos, -sin)


def rope_official_v4_inplace_conj(x, freqs, cos, sin):
    # deepseek-ai/DeepSeek-V4 inference/model.py apply_rotary_emb(inverse=True): complex, freqs.conj().view
    # and the in-place write-back into the last rope_dim channels
    y = x.clone()
    part = y[..., -RD:]
    xc = torch.view_as_complex(part.float().unflatten(-1, (-1, 2)))
    f = freqs.conj().view(1, xc.size(1), 1, xc.size(-1))
    part.copy_(torch.view_as_real(xc * f).flatten(-2))
    return y


def rope_official_v3_complex(x, freqs, cos, sin):
    # deepseek-ai/DeepSeek-V3 inference/model.py apply_rotary_emb: view(*shape[:-1], -1, 2), flatten(3)
    dtype, t = x.dtype, x[..., -RD:]
    tc = torch.view_as_complex(t.float().view(*t.shape[:-1], -1, 2))
    f = freqs.view(1, tc.size(1), 1, tc.size(-1))
    return torch.view_as_real(tc * f).flatten(3).to(dtype)


def rope_meta_llama_complex(x, freqs, cos, sin):
    # meta-llama/llama llama/model.py apply_rotary_emb: reshape(..., -1, 2), reshape_for_broadcast,
    # freqs first in the product, type_as
    t = x[..., -RD:]
    tc = torch.view_as_complex(t.float().reshape(*t.shape[:-1], -1, 2))
    shape = [d if i in (1, tc.ndim - 1) else 1 for i, d in enumerate(tc.shape)]
    return torch.view_as_real(freqs.view(*shape) * tc).flatten(3).type_as(t)


def rope_complex_inverse_cat(x, freqs, cos, sin):
    # the official code's inverse returned instead of written back: cat([nope, rotated])
    return torch.cat([x[..., :-RD], _complex(x[..., -RD:], freqs.conj())], dim=-1)


def rope_complex_resolve_conj(x, freqs, cos, sin):
    # torch.conj(...) materialised with resolve_conj() before the product
    return torch.cat([x[..., :-RD], _complex(x[..., -RD:], torch.conj(freqs).resolve_conj())], dim=-1)


def rope_vllm_gptj(x, freqs, cos, sin):
    # vllm-project/vllm vllm/model_executor/layers/rotary_embedding/common.py apply_rotary_emb_torch, the
    # GPT-J branch (is_neox_style=False): tables cast to x's dtype, o2 = x2 * cos + x1 * sin
    t = x[..., -RD:]
    c, s = cos.to(t.dtype), sin.to(t.dtype)
    x1, x2 = t[..., ::2], t[..., 1::2]
    o1 = x1 * c - x2 * s
    o2 = x2 * c + x1 * s
    return torch.cat([x[..., :-RD], torch.stack((o1, o2), dim=-1).flatten(-2)], dim=-1)


def rope_lucidrains_interleaved(x, freqs, cos, sin):
    # lucidrains/rotary-embedding-torch rotary_embedding_torch.py rotate_half (rearrange '... (d r) ->
    # ... d r', unbind, stack((-x2, x1)), '... d r -> ... (d r)') and apply_rotary_emb's
    # t * cos + rotate_half(t) * sin with repeat(freqs, '... n -> ... (n r)', r=2) tables
    t_left, t = x[..., :-RD], x[..., -RD:]
    pairs = t.unflatten(-1, (-1, 2))
    x1, x2 = pairs.unbind(dim=-1)
    rotated = torch.stack((-x2, x1), dim=-1).flatten(-2)
    c = cos[..., None].expand(*cos.shape, 2).reshape(*cos.shape[:-1], -1)
    s = sin[..., None].expand(*sin.shape, 2).reshape(*sin.shape[:-1], -1)
    out = (t.float() * c) + (rotated.float() * s)
    return torch.cat((t_left, out.type_as(t)), dim=-1)


def rope_real_pairs_inplace(x, freqs, cos, sin):
    # the official rotation in real arithmetic, written back in place (setitem on a clone)
    y = x.clone()
    a, b = y[..., -RD:][..., 0::2].float(), y[..., -RD:][..., 1::2].float()
    y[..., -RD:] = torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2).to(x.dtype)
    return y


def rope_real_unflatten_negated_sin(x, freqs, cos, sin):
    # unflatten + select of the pair, the inverse by a negated table
    pairs = x[..., -RD:].float().unflatten(-1, (-1, 2))
    a, b = pairs[..., 0], pairs[..., 1]
    s = -sin
    rot = torch.stack([a * cos - b * s, b * cos + a * s], -1).flatten(-2).type_as(x)
    return torch.cat([x[..., :-RD], rot], -1)


def rope_megatron_interleaved(x, freqs, cos, sin):
    # NVIDIA/Megatron-LM megatron/core/models/common/embeddings/rope_utils.py _rotate_half(interleaved)
    # (stack((-x2, x1)).view(..., -1)) and _apply_rotary_pos_emb_bshd's t * cos_ + rotate_half(t) * sin_
    t_pass, t = x[..., :-RD], x[..., -RD:]
    x1, x2 = t[..., ::2], t[..., 1::2]
    x_new = torch.stack((-x2, x1), dim=-1)
    rotated = x_new.view(*x_new.shape[:-2], -1)
    c, s = cos.repeat_interleave(2, dim=-1), sin.repeat_interleave(2, dim=-1)
    out = (t.float() * c) + (rotated.float() * s)
    return torch.cat((t_pass, out.to(t.dtype)), dim=-1)


# (fn, inverse, partial)
ROPE_SPELLINGS = [
    (rope_hf_v4_rotate_half, False, True), (rope_hf_v4_rotate_half_inverse, True, True),
    (rope_official_v4_inplace_conj, True, True), (rope_official_v3_complex, False, False),
    (rope_meta_llama_complex, False, False), (rope_complex_inverse_cat, True, True),
    (rope_complex_resolve_conj, True, True), (rope_vllm_gptj, False, True),
    (rope_lucidrains_interleaved, False, True), (rope_real_pairs_inplace, False, True),
    (rope_real_unflatten_negated_sin, True, True), (rope_megatron_interleaved, False, True),
]


# ---------------------------------------------------------------------------------- RoPE near-misses
# each: (x, cos, sin) on x [B, S, RD] with tables [S, RD/2]
def rope_half_split_claimed_interleaved(x, cos, sin):
    # NeoX's half split (transformers' Llama rotate_half on chunk(2)) with interleaved (half) tables
    x1, x2 = x[..., : x.shape[-1] // 2].float(), x[..., x.shape[-1] // 2:].float()
    return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1).to(x.dtype)


def rope_pairs_swapped(x, cos, sin):
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack([a * sin + b * cos, a * cos - b * sin], dim=-1).flatten(-2).to(x.dtype)


def rope_sign_on_wrong_term(x, cos, sin):
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack([a * cos + b * sin, a * sin + b * cos], dim=-1).flatten(-2).to(x.dtype)


def rope_cos_for_both(x, cos, sin):
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack([a * cos - b * cos, a * sin + b * cos], dim=-1).flatten(-2).to(x.dtype)


def rope_rotate_half_tables_tiled(x, cos, sin):
    # rotate_half on interleaved pairs with tables tiled (cat([c, c])) instead of repeat_interleave'd:
    # the pair (2i, 2i+1) is rotated by two different angles
    c, s = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    rotated = torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)
    return ((x.float() * c) + (rotated.float() * s)).to(x.dtype)


def rope_rotate_half_unrotated_sign(x, cos, sin):
    # stack((x2, -x1)): the rotation by -90 degrees, a reflection with the cos term
    c, s = cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)
    rotated = torch.stack((x[..., 1::2], -x[..., 0::2]), dim=-1).flatten(-2)
    return ((x.float() * c) + (rotated.float() * s)).to(x.dtype)


def rope_complex_times_conj_input(x, cos, sin):
    # the input conjugated instead of the table
    xc = torch.view_as_complex(x.float().unflatten(-1, (-1, 2))).conj()
    f = torch.complex(cos, sin)
    return torch.view_as_real((xc * f).resolve_conj()).flatten(-2).to(x.dtype)


def rope_pairs_strided_wrong(x, cos, sin):
    # pairs (i, i + RD/2) selected with a stride but put back interleaved
    h = x.shape[-1] // 2
    a, b = x[..., :h].float(), x[..., h:].float()
    return torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2).to(x.dtype)


def rope_odd_channel_not_rotated(x, cos, sin):
    # the odd channel only scaled by cos (its a * sin term missing)
    a, b = x[..., 0::2].float(), x[..., 1::2].float()
    return torch.stack([a * cos - b * sin, b * cos], dim=-1).flatten(-2).to(x.dtype)


ROPE_NEAR_MISSES = [rope_half_split_claimed_interleaved, rope_pairs_swapped, rope_sign_on_wrong_term,
                    rope_cos_for_both, rope_rotate_half_tables_tiled, rope_rotate_half_unrotated_sign,
                    rope_complex_times_conj_input, rope_pairs_strided_wrong, rope_odd_channel_not_rotated]


# ============================================================================================== mHC
# each: (x [B, S, n, d], fn [(2+n)n, nd], scale [3], base [(2+n)n]) -> (layer_input, post, comb)
ITERS = 3


def _sinkhorn(comb, iters=ITERS, eps=EPS, dim_row=-1, dim_col=-2):
    comb = comb / (comb.sum(dim_col, keepdim=True) + eps)
    for _ in range(iters - 1):
        comb = comb / (comb.sum(dim_row, keepdim=True) + eps)
        comb = comb / (comb.sum(dim_col, keepdim=True) + eps)
    return comb


def mhc_reference_doc(x, fn, scale, base):
    # shared/reference/deepseek_v4.md mhc_coeffs + collapse (the projection scaled by 1/rms after the mm)
    n = x.shape[-2]
    xf = x.flatten(-2).float()
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)
    z = (xf @ fn.t()) * r
    zp, zq, zc = z[..., :n], z[..., n:2 * n], z[..., 2 * n:].unflatten(-1, (n, n))
    pre = torch.sigmoid(scale[0] * zp + base[:n]) + EPS
    post = 2.0 * torch.sigmoid(scale[1] * zq + base[n:2 * n])
    comb = _sinkhorn(torch.softmax(scale[2] * zc + base[2 * n:].view(n, n), dim=-1) + EPS)
    return (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype), post, comb


def mhc_official_v4(x, fn, scale, base):
    # deepseek-ai/DeepSeek-V4 inference/model.py hc_pre + hc_split_sinkhorn: F.linear(x, fn) * rsqrt,
    # split([n, n, n*n]), pre * scale[0] + base[:n], torch.sum(pre.unsqueeze(-1) * x.view(shape), dim=2)
    shape, dtype, n = x.size(), x.dtype, x.shape[-2]
    x = x.flatten(2).float()
    rsqrt = torch.rsqrt(x.square().mean(-1, keepdim=True) + EPS)
    mixes = F.linear(x, fn) * rsqrt
    pre, post, comb = mixes.split([n, n, n * n], dim=-1)
    pre = torch.sigmoid(pre * scale[0] + base[:n]) + EPS
    post = 2 * torch.sigmoid(post * scale[1] + base[n:2 * n])
    comb = comb.unflatten(-1, (n, n)) * scale[2] + base[2 * n:].view(n, n)
    comb = _sinkhorn(comb.softmax(-1) + EPS)
    y = torch.sum(pre.unsqueeze(-1) * x.view(shape), dim=2)
    return y.to(dtype), post, comb


def mhc_official_v4_einsum_collapse(x, fn, scale, base):
    # the official projection with the collapse as an einsum over the streams (einsum "bsn,bsnd->bsd",
    # the contraction form of deepseek_v4.md's hc_post einsum)
    shape, dtype, n = x.size(), x.dtype, x.shape[-2]
    xf = x.flatten(2).float()
    mixes = F.linear(xf, fn) * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)
    pre, post, comb = mixes.split([n, n, n * n], dim=-1)
    pre = torch.sigmoid(pre * scale[0] + base[:n]) + EPS
    post = 2 * torch.sigmoid(post * scale[1] + base[n:2 * n])
    comb = _sinkhorn((comb.unflatten(-1, (n, n)) * scale[2] + base[2 * n:].view(n, n)).softmax(-1) + EPS)
    y = torch.einsum("bsn,bsnd->bsd", pre, xf.view(shape))
    return y.to(dtype), post, comb


def mhc_method_chained(x, fn, scale, base):
    # the official arithmetic in method form: .add(eps), .mul(2), .div(...) Sinkhorn passes
    dtype, n = x.dtype, x.shape[-2]
    xf = x.flatten(2).float()
    mixes = F.linear(xf, fn).mul(xf.square().mean(-1, keepdim=True).add(EPS).rsqrt())
    pre, post, comb = mixes.split([n, n, n * n], dim=-1)
    pre = pre.mul(scale[0]).add(base[:n]).sigmoid().add(EPS)
    post = post.mul(scale[1]).add(base[n:2 * n]).sigmoid().mul(2)
    comb = comb.unflatten(-1, (n, n)).mul(scale[2]).add(base[2 * n:].view(n, n)).softmax(-1).add(EPS)
    comb = comb.div(comb.sum(-2, keepdim=True).add(EPS))
    for _ in range(ITERS - 1):
        comb = comb.div(comb.sum(-1, keepdim=True).add(EPS))
        comb = comb.div(comb.sum(-2, keepdim=True).add(EPS))
    return pre.unsqueeze(-1).mul(xf.view(x.shape)).sum(2).to(dtype), post, comb


def mhc_hf_v4_hyper_connection(x, fn, scale, base):
    # transformers models/deepseek_v4/modeling_deepseek_v4.py DeepseekV4HyperConnection.forward:
    # view(B, S, -1).float(), the unweighted RMSNorm module, F.linear(x, fn.float()), split + unbind, the
    # comb weights and bias viewed n x n before the gain; the collapse (DeepseekV4DecoderLayer) on the
    # streams in their own dtype
    b, s, n, d = x.shape
    flat = x.view(b, s, -1).float()
    normed = flat * torch.rsqrt(flat.pow(2).mean(-1, keepdim=True) + EPS)
    mix = F.linear(normed, fn.float())
    pre_w, post_w, comb_w = mix.split([n, n, n * n], dim=-1)
    pre_b, post_b, comb_b = base.split([n, n, n * n])
    pre_scale, post_scale, comb_scale = scale.unbind(0)
    comb_w = comb_w.view(*comb_w.shape[:-1], n, n)
    comb_b = comb_b.view(n, n)
    pre = torch.sigmoid(pre_w * pre_scale + pre_b) + EPS
    post = 2 * torch.sigmoid(post_w * post_scale + post_b)
    comb = _sinkhorn(torch.softmax(comb_w * comb_scale + comb_b, dim=-1) + EPS)
    return (pre.unsqueeze(-1) * x).sum(dim=2).to(x.dtype), post, comb


def mhc_flat_logits(x, fn, scale, base):
    # bench/gpu_patterns.py / the anchor script: the comb logits biased before the n x n view
    n = x.shape[-2]
    xf = x.flatten(-2).float()
    z = (xf @ fn.t()) * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)
    pre = torch.sigmoid(scale[0] * z[..., :n] + base[:n]) + EPS
    post = 2.0 * torch.sigmoid(scale[1] * z[..., n:2 * n] + base[n:2 * n])
    comb = _sinkhorn(torch.softmax((scale[2] * z[..., 2 * n:] + base[2 * n:]).unflatten(-1, (n, n)), dim=-1) + EPS)
    return (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype), post, comb


def mhc_matmul_transposed(x, fn, scale, base):
    # torch.matmul(xf, fn.T), 1 / sqrt for the rms, the mean as a sum over n*d
    n = x.shape[-2]
    xf = x.flatten(-2).float()
    r = 1 / torch.sqrt((xf * xf).sum(-1, keepdim=True) / xf.shape[-1] + EPS)
    z = torch.matmul(xf, fn.T) * r
    pre = torch.sigmoid(scale[0] * z[..., :n] + base[:n]) + EPS
    post = 2.0 * torch.sigmoid(scale[1] * z[..., n:2 * n] + base[n:2 * n])
    comb = _sinkhorn(torch.softmax(scale[2] * z[..., 2 * n:].unflatten(-1, (n, n)) + base[2 * n:].view(n, n), dim=-1) + EPS)
    return (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype), post, comb


def mhc_narrow_pieces(x, fn, scale, base):
    # x @ fn.T, the pieces by narrow, the comb logits viewed with view(*shape[:-1], n, n)
    n = x.shape[-2]
    xf = x.flatten(-2).float()
    z = (xf @ fn.T) * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS)
    zp, zq = z.narrow(-1, 0, n), z.narrow(-1, n, n)
    zc = z.narrow(-1, 2 * n, n * n)
    zc = zc.view(*zc.shape[:-1], n, n)
    pre = torch.sigmoid(scale[0] * zp + base[:n]) + EPS
    post = 2.0 * torch.sigmoid(scale[1] * zq + base[n:2 * n])
    comb = _sinkhorn(torch.softmax(scale[2] * zc + base[2 * n:].view(n, n), dim=-1) + EPS)
    return (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype), post, comb


def mhc_positive_dims(x, fn, scale, base):
    # every reduction and softmax dim given as a positive index (rank-4 comb: rows 3, columns 2)
    n = x.shape[-2]
    xf = x.flatten(2).float()
    z = (xf @ fn.t()) * torch.rsqrt(xf.square().mean(2, keepdim=True) + EPS)
    pre = torch.sigmoid(scale[0] * z[..., :n] + base[:n]) + EPS
    post = 2.0 * torch.sigmoid(scale[1] * z[..., n:2 * n] + base[n:2 * n])
    comb = torch.softmax(scale[2] * z[..., 2 * n:].unflatten(-1, (n, n)) + base[2 * n:].view(n, n), dim=3) + EPS
    comb = _sinkhorn(comb, dim_row=3, dim_col=2)
    return (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(2).to(x.dtype), post, comb


def mhc_sinkhorn_one_pass(x, fn, scale, base):
    # hc_sinkhorn_iters = 1 (a single column pass after the softmax)
    n = x.shape[-2]
    xf = x.flatten(-2).float()
    z = (xf @ fn.t()) * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)
    pre = torch.sigmoid(scale[0] * z[..., :n] + base[:n]) + EPS
    post = 2.0 * torch.sigmoid(scale[1] * z[..., n:2 * n] + base[n:2 * n])
    comb = _sinkhorn(torch.softmax(scale[2] * z[..., 2 * n:].unflatten(-1, (n, n)) + base[2 * n:].view(n, n), -1) + EPS, 1)
    return (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype), post, comb


def mhc_sinkhorn_twenty_passes(x, fn, scale, base):
    # V4's shipped hc_sinkhorn_iters = 20 (config.json), written with the official split
    n = x.shape[-2]
    xf = x.flatten(-2).float()
    mixes = F.linear(xf, fn) * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)
    pre, post, comb = mixes.split([n, n, n * n], dim=-1)
    pre = torch.sigmoid(pre * scale[0] + base[:n]) + EPS
    post = 2 * torch.sigmoid(post * scale[1] + base[n:2 * n])
    comb = _sinkhorn((comb.unflatten(-1, (n, n)) * scale[2] + base[2 * n:].view(n, n)).softmax(-1) + EPS, 20)
    return (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype), post, comb


def mhc_post_scaled_after(x, fn, scale, base):
    # sigmoid(...) * 2 and the gains after the logits (z * scale[i]), the bias first in the sums
    n = x.shape[-2]
    xf = x.flatten(-2).float()
    z = (xf @ fn.t()) * torch.rsqrt(xf.square().mean(-1, keepdim=True) + EPS)
    pre = EPS + torch.sigmoid(base[:n] + z[..., :n] * scale[0])
    post = torch.sigmoid(base[n:2 * n] + z[..., n:2 * n] * scale[1]) * 2
    comb = _sinkhorn(EPS + torch.softmax(base[2 * n:].view(n, n) + z[..., 2 * n:].unflatten(-1, (n, n)) * scale[2], -1))
    return (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype), post, comb


def mhc_unbind_scale_keepdim_free_rms(x, fn, scale, base):
    # the gains unbound, the mean of squares without keepdim and re-expanded
    n = x.shape[-2]
    s_pre, s_post, s_comb = scale.unbind(0)
    xf = x.flatten(-2).float()
    z = (xf @ fn.t()) * torch.rsqrt(xf.square().mean(-1)[..., None] + EPS)
    pre = torch.sigmoid(s_pre * z[..., :n] + base[:n]) + EPS
    post = 2.0 * torch.sigmoid(s_post * z[..., n:2 * n] + base[n:2 * n])
    comb = _sinkhorn(torch.softmax(s_comb * z[..., 2 * n:].unflatten(-1, (n, n)) + base[2 * n:].view(n, n), -1) + EPS)
    return (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype), post, comb


# (fn, iters)
MHC_SPELLINGS = [
    (mhc_reference_doc, ITERS), (mhc_official_v4, ITERS), (mhc_official_v4_einsum_collapse, ITERS), (mhc_method_chained, ITERS),
    (mhc_hf_v4_hyper_connection, ITERS), (mhc_flat_logits, ITERS), (mhc_matmul_transposed, ITERS),
    (mhc_narrow_pieces, ITERS), (mhc_positive_dims, ITERS), (mhc_sinkhorn_one_pass, 1),
    (mhc_sinkhorn_twenty_passes, 20), (mhc_post_scaled_after, ITERS), (mhc_unbind_scale_keepdim_free_rms, ITERS),
]


# --------------------------------------------------------------------------------- mHC near-misses
def _mhc(x, fn, scale, base, *, softmax_over_all=False, pre_eps=EPS, rms_eps=EPS, post_gain=2.0,
         softmax_dim=-1, row_first=False, col_eps=EPS, gains=(0, 1, 2), pre_base=(0, 1)):
    n = x.shape[-2]
    xf = x.flatten(-2).float()
    r = torch.rsqrt(xf.square().mean(-1, keepdim=True) + rms_eps) if rms_eps else torch.rsqrt(
        xf.square().mean(-1, keepdim=True))
    z = (xf @ fn.t()) * r
    lo, hi = pre_base[0] * n, pre_base[1] * n
    pre = torch.sigmoid(scale[gains[0]] * z[..., :n] + base[lo:hi]) + pre_eps if pre_eps else torch.sigmoid(
        scale[gains[0]] * z[..., :n] + base[lo:hi])
    post = post_gain * torch.sigmoid(scale[gains[1]] * z[..., n:2 * n] + base[n:2 * n])
    logits = scale[gains[2]] * z[..., 2 * n:] + base[2 * n:]
    if softmax_over_all:     # one softmax over all n*n entries instead of per row
        comb = torch.softmax(logits, dim=-1).unflatten(-1, (n, n)) + EPS
    else:
        comb = torch.softmax(logits.unflatten(-1, (n, n)), dim=softmax_dim) + EPS
    first = -1 if row_first else -2
    comb = comb / (comb.sum(first, keepdim=True) + col_eps) if col_eps else comb / comb.sum(first, keepdim=True)
    for _ in range(ITERS - 1):
        comb = comb / (comb.sum(-1, keepdim=True) + EPS)
        comb = comb / (comb.sum(-2, keepdim=True) + EPS)
    return (pre[..., None] * xf.unflatten(-1, (n, -1))).sum(-2).to(x.dtype), post, comb


def mhc_softmax_over_all_entries(x, fn, scale, base):
    return _mhc(x, fn, scale, base, softmax_over_all=True)


def mhc_pre_without_eps(x, fn, scale, base):
    return _mhc(x, fn, scale, base, pre_eps=0.0)


def mhc_rms_without_eps(x, fn, scale, base):
    return _mhc(x, fn, scale, base, rms_eps=0.0)


def mhc_post_without_gain_two(x, fn, scale, base):
    # the mHC paper's post = sigmoid(...) without V4's factor 2
    return _mhc(x, fn, scale, base, post_gain=1.0)


def mhc_softmax_over_columns(x, fn, scale, base):
    return _mhc(x, fn, scale, base, softmax_dim=-2)


def mhc_row_pass_first(x, fn, scale, base):
    # Sinkhorn starting with a row pass (the paper's order) instead of V4's column pass
    return _mhc(x, fn, scale, base, row_first=True)


def mhc_first_pass_without_eps(x, fn, scale, base):
    return _mhc(x, fn, scale, base, col_eps=0.0)


def mhc_gains_swapped(x, fn, scale, base):
    return _mhc(x, fn, scale, base, gains=(1, 0, 2))


def mhc_pre_takes_post_bias(x, fn, scale, base):
    return _mhc(x, fn, scale, base, pre_base=(1, 2))


MHC_NEAR_MISSES = [mhc_softmax_over_all_entries, mhc_pre_without_eps, mhc_rms_without_eps,
                   mhc_post_without_gain_two, mhc_softmax_over_columns, mhc_row_pass_first,
                   mhc_first_pass_without_eps, mhc_gains_swapped, mhc_pre_takes_post_bias]


# ============================================================================================ running
def _fp64(t):
    return t.detach().to(torch.complex128 if t.is_complex() else torch.float64).requires_grad_(t.requires_grad)


def _loss(outs):
    if isinstance(outs, torch.Tensor):
        return outs.float().pow(2).sum()
    return sum(_loss(o) for o in outs)


def _compile_and_run(fn, inputs):
    with logs.capture() as reports:
        outs = torch.compile(fn, backend="trex")(*inputs)
        _loss(outs).backward()
    (report,) = reports
    return outs, report


def _check_fused(report, family, fwd_op, bwd_op, n):
    fw, bw = report.compiled_graphs["forward"], report.compiled_graphs["backward"]
    assert report.fallbacks == [], report.format()
    assert report.match_counts()[family] == n, report.format()
    assert trex_op_counts(fw)[fwd_op] == n, report.format()
    assert trex_op_counts(bw)[bwd_op] == n, report.format()


def _eager(fn, leaves, *consts):
    copies = [t.detach().clone().requires_grad_() for t in leaves]
    out = fn(*copies, *consts)
    outs = out if isinstance(out, tuple) else (out,)
    _loss(outs).backward()
    return outs, [c.grad for c in copies]


def test_rms_norm_spellings():
    dtype = torch.bfloat16
    n = len(RMS_SPELLINGS)
    xs = [make_input((3, 5, 40), dtype, seed=i, requires_grad=True) for i in range(n)]
    ws = [make_input((40,), dtype, seed=99 + i, requires_grad=True) for i in range(n)]

    def all_spellings(*xw):
        return tuple(fn(x, w) for (fn, _), x, w in zip(RMS_SPELLINGS, xw[:n], xw[n:]))

    outs, report = _compile_and_run(all_spellings, [*xs, *ws])
    _check_fused(report, "rms_norm", "rms_norm", "rms_norm_bwd", n)
    for (fn, weighted), x, w, out in zip(RMS_SPELLINGS, xs, ws, outs):
        (eager,), (dx_e, dw_e) = _eager(fn, [x, w])
        x_r, w_r = _fp64(x), _fp64(w)
        weight = {True: w_r, False: None, "1+w": 1 + w_r}[weighted]
        ref = ref_rms(x_r, weight, EPS, None)[0]
        ref.pow(2).sum().backward()
        assert_close_to_reference(out, eager, ref, name=fn.__name__)
        assert_close_to_reference(x.grad, dx_e, x_r.grad, name=f"{fn.__name__} dx")
        if weighted:
            assert_close_to_reference(w.grad, dw_e, w_r.grad, name=f"{fn.__name__} dw")


def _swiglu_inputs(n, dtype, seed=0):
    gs = [make_input((4, 6, 24), dtype, scale=5, seed=seed + i, requires_grad=True) for i in range(n)]
    us = [make_input((4, 6, 24), dtype, scale=5, seed=seed + 50 + i, requires_grad=True) for i in range(n)]
    with torch.no_grad():
        for g, u in zip(gs, us):     # exact ties at the limits
            g[0, 0, :3] = L
            u[0, 0, :3] = -L
            u[0, 1, :3] = L
    return gs, us


def test_swiglu_limited_spellings():
    dtype = torch.bfloat16
    n = len(SWIGLU_SPELLINGS)
    gs, us = _swiglu_inputs(n, dtype)
    rs = [torch.rand(4, 6, 1, generator=torch.Generator().manual_seed(i)).requires_grad_() for i in range(n)]

    def all_spellings(*gur):
        return tuple(fn(g, u, r) for (fn, _), g, u, r in zip(SWIGLU_SPELLINGS, gur[:n], gur[n:2 * n], gur[2 * n:]))

    outs, report = _compile_and_run(all_spellings, [*gs, *us, *rs])
    _check_fused(report, "swiglu_limited", "swiglu_limited", "swiglu_limited_bwd", n)
    for (fn, routed), g, u, r, out in zip(SWIGLU_SPELLINGS, gs, us, rs, outs):
        (eager,), (dg_e, du_e, dr_e) = _eager(fn, [g, u, r])
        g_r, u_r, r_r = _fp64(g), _fp64(u), _fp64(r)
        ref = ref_swiglu(g_r, u_r, L, r_r if routed else None, None)
        ref.pow(2).sum().backward()
        assert_close_to_reference(out, eager, ref, name=fn.__name__)
        assert_close_to_reference(g.grad, dg_e, g_r.grad, name=f"{fn.__name__} dgate")
        assert_close_to_reference(u.grad, du_e, u_r.grad, name=f"{fn.__name__} dup")
        if routed:
            assert_close_to_reference(r.grad, dr_e, r_r.grad, name=f"{fn.__name__} droute")


def test_plain_swiglu_spellings_fuse_as_the_op_without_limit():
    dtype = torch.bfloat16
    n = len(PLAIN_SWIGLU_SPELLINGS)
    gs, us = _swiglu_inputs(n, dtype, seed=300)
    rs = [torch.rand(4, 6, 1, generator=torch.Generator().manual_seed(i)).requires_grad_() for i in range(n)]

    def all_spellings(*gur):
        return tuple(fn(g, u, r) for (fn, _), g, u, r in zip(PLAIN_SWIGLU_SPELLINGS, gur[:n], gur[n:2 * n], gur[2 * n:]))

    outs, report = _compile_and_run(all_spellings, [*gs, *us, *rs])
    _check_fused(report, "swiglu_limited", "swiglu_limited", "swiglu_limited_bwd", n)
    limits = [node.args[2] for node in report.compiled_graphs["forward"].graph.nodes
              if "swiglu_limited" in str(node.target)]
    assert limits == [float("inf")] * n
    for (fn, routed), g, u, r, out in zip(PLAIN_SWIGLU_SPELLINGS, gs, us, rs, outs):
        (eager,), (dg_e, du_e, dr_e) = _eager(fn, [g, u, r])
        g_r, u_r, r_r = _fp64(g), _fp64(u), _fp64(r)
        ref = ref_swiglu(g_r, u_r, float("inf"), r_r if routed else None, None)
        ref.pow(2).sum().backward()
        assert_close_to_reference(out, eager, ref, name=fn.__name__)
        assert_close_to_reference(g.grad, dg_e, g_r.grad, name=f"{fn.__name__} dgate")
        assert_close_to_reference(u.grad, du_e, u_r.grad, name=f"{fn.__name__} dup")
        if routed:
            assert_close_to_reference(r.grad, dr_e, r_r.grad, name=f"{fn.__name__} droute")


@pytest.mark.parametrize("routed", [False, True])
def test_plain_swiglu_kernel_program_and_reference_equal_eager_at_special_values(routed):
    """limit = inf has no clamp and no clamp mask: the reference and the kernel program (run by the
    reference interpreter) give eager's values and gradients at inf/nan inputs too (a clamp's mask
    would zero a nan's gradient)."""
    special = torch.tensor([-float("inf"), -30., -1., -0., 0., 0.5, 3., 30., float("inf"), float("nan")])
    g = special.repeat(2, 1).requires_grad_()
    u = special.flip(0).repeat(2, 1).requires_grad_()
    r = torch.tensor([[0.5], [2.0]], requires_grad=True) if routed else None
    eager = F.silu(g) * u * (r if routed else 1)
    dh = torch.linspace(-1, 1, eager.numel()).view_as(eager)
    eager_grads = torch.autograd.grad(eager, [g, u] + ([r] if routed else []), dh)
    spec = registry.kernel_spec("swiglu_limited")
    bwd_spec = registry.kernel_spec("swiglu_limited_bwd")
    args = (g.detach(), u.detach(), float("inf"), r.detach() if routed else None, None)
    for name, h in (("reference", ref_swiglu(*args)), ("program", spec.run(args))):
        torch.testing.assert_close(h, eager.detach(), equal_nan=True, msg=name)
    bwd_ref = registry.fused_ops()["swiglu_limited_bwd"].reference
    bwd_args = (dh, g.detach(), u.detach(), float("inf"), r.detach() if routed else None)
    for name, grads in (("reference", bwd_ref(*bwd_args)), ("program", bwd_spec.run(bwd_args))):
        for got, want in zip(grads, eager_grads):
            torch.testing.assert_close(got, want, equal_nan=True, msg=name)


def _rope_tables():
    ang = torch.randn(5, 1, RD // 2, generator=torch.Generator().manual_seed(7))
    return torch.polar(torch.ones_like(ang), ang), ang.cos(), ang.sin()


def test_rope_spellings():
    dtype = torch.bfloat16
    n = len(ROPE_SPELLINGS)
    xs = [make_input((2, 5, 3, 24), dtype, seed=i, requires_grad=True) for i in range(n)]
    freqs, cos, sin = _rope_tables()

    def all_spellings(freqs, cos, sin, *xs):
        return tuple(fn(x, freqs, cos, sin) for (fn, _, _), x in zip(ROPE_SPELLINGS, xs))

    outs, report = _compile_and_run(all_spellings, [freqs, cos, sin, *xs])
    _check_fused(report, "rope", "rope", "rope", n)
    cats = sum(1 for node in report.compiled_graphs["forward"].graph.nodes if "cat" in str(node.target))
    assert cats == 0, "a partial rotation was not absorbed into one op"
    for (fn, inverse, partial), x, out in zip(ROPE_SPELLINGS, xs, outs):
        (eager,), (dx_e,) = _eager(fn, [x], freqs, cos, sin)
        x_r = _fp64(x)
        ref = ref_rope(x_r if partial else x_r[..., -RD:], cos.double(), sin.double(), RD, inverse)
        ref.pow(2).sum().backward()
        assert_close_to_reference(out, eager, ref, name=fn.__name__)
        assert_close_to_reference(x.grad, dx_e, x_r.grad, name=f"{fn.__name__} dx")


def _mhc_inputs(seed, dtype=torch.bfloat16, d=8):
    g = torch.Generator().manual_seed(seed)
    x = make_input((2, 3, N, d), dtype, seed=seed, requires_grad=True)
    fn = (torch.randn((2 + N) * N, N * d, generator=g) * 0.2).requires_grad_()
    scale = (torch.rand(3, generator=g) + 0.5).requires_grad_()
    base = (torch.randn((2 + N) * N, generator=g) * 0.1).requires_grad_()
    return [x, fn, scale, base]


def test_mhc_pre_spellings():
    n = len(MHC_SPELLINGS)
    inputs = [_mhc_inputs(seed) for seed in range(n)]

    def all_spellings(*flat):
        return tuple(fn(*flat[4 * i:4 * i + 4]) for i, (fn, _) in enumerate(MHC_SPELLINGS))

    outs, report = _compile_and_run(all_spellings, [t for site in inputs for t in site])
    _check_fused(report, "mhc_pre", "mhc_pre", "mhc_pre_bwd", n)
    iters = sorted(node.args[4] for node in report.compiled_graphs["forward"].graph.nodes
                   if "mhc_pre" in str(node.target))
    assert iters == sorted(it for _, it in MHC_SPELLINGS)
    for (fn, it), site, out in zip(MHC_SPELLINGS, inputs, outs):
        eager, eager_grads = _eager(fn, site)
        site_r = [_fp64(t) for t in site]
        ref = mhc_pre_reference(*site_r, it, EPS, EPS)
        _loss(ref).backward()
        for i, (a, e, r) in enumerate(zip(out, eager, ref)):
            assert_close_to_reference(a, e, r.to(e.dtype) if e.dtype != a.dtype else r, name=f"{fn.__name__}[{i}]")
        for name, t, ge, tr in zip(("dx", "dfn", "dscale", "dbase"), site, eager_grads, site_r):
            assert_close_to_reference(t.grad, ge, tr.grad, name=f"{fn.__name__} {name}", compute_dtype=torch.bfloat16)


# --------------------------------------------------------------------------------------- near-misses
def _near_miss_inputs(family, count):
    if family == "rms_norm":
        return [[make_input((3, 5, 16), torch.float32, seed=i, requires_grad=True)] for i in range(count)]
    if family == "swiglu_limited":
        gs, us = _swiglu_inputs(count, torch.float32, seed=200)
        return [[g, u] for g, u in zip(gs, us)]
    if family == "rope":
        ang = torch.randn(5, RD // 2, generator=torch.Generator().manual_seed(3))
        return [[make_input((2, 5, RD), torch.float32, seed=i, requires_grad=True), ang.cos(), ang.sin()]
                for i in range(count)]
    return [_mhc_inputs(100 + i, torch.float32) for i in range(count)]


NEAR_MISS_TABLE = {"rms_norm": RMS_NEAR_MISSES, "swiglu_limited": SWIGLU_NEAR_MISSES, "rope": ROPE_NEAR_MISSES,
                   "mhc_pre": MHC_NEAR_MISSES}


@pytest.mark.parametrize("family", list(NEAR_MISS_TABLE))
def test_near_misses_are_not_fused_and_match_eager(family):
    cases = NEAR_MISS_TABLE[family]
    inputs = _near_miss_inputs(family, len(cases))
    sizes = [len(site) for site in inputs]

    def all_near_misses(*flat):
        outs, k = [], 0
        for fn, size in zip(cases, sizes):
            out = fn(*flat[k:k + size])
            outs.extend(out if isinstance(out, tuple) else (out,))
            k += size
        return tuple(outs)

    with logs.capture() as reports:
        outs = torch.compile(all_near_misses, backend="trex")(*[t for site in inputs for t in site])
        _loss(outs).backward()
    fused_ops = set(registry.patterns()[family].fused_ops)
    for report in reports:
        assert report.match_counts()[family] == 0, report.format()
        for stage in report.compiled_graphs.values():
            assert not fused_ops & set(trex_op_counts(stage)), report.format()
    k = 0
    for fn, site in zip(cases, inputs):
        leaves = [t for t in site if t.requires_grad]
        eager, eager_grads = _eager(fn, leaves, *[t for t in site if not t.requires_grad])
        for e in eager:
            torch.testing.assert_close(outs[k], e, rtol=1e-5, atol=1e-6, msg=lambda m: f"{fn.__name__}: {m}")
            k += 1
        for t, ge in zip(leaves, eager_grads):
            torch.testing.assert_close(t.grad, ge, rtol=1e-5, atol=1e-6, msg=lambda m: f"{fn.__name__} grad: {m}")


def test_suite_sizes():
    """The issue's floor: at least 12 spellings and 8 near-misses per pattern."""
    assert {k: len(v) >= 12 for k, v in {"rms_norm": RMS_SPELLINGS, "swiglu_limited": SWIGLU_SPELLINGS,
                                         "rope": ROPE_SPELLINGS, "mhc_pre": MHC_SPELLINGS}.items()} == dict.fromkeys(
        NEAR_MISS_TABLE, True)
    assert all(len(v) >= 8 for v in NEAR_MISS_TABLE.values())
