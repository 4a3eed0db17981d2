"""Sink attention on CUDA as ONE cuDNN attention call at the model's own head dim, the sink applied through
the call's logsumexp: ``trex::sink_attention_cudnn`` and its backward ``trex::sink_attention_cudnn_bwd``.

Why not the augmented keys of pattern.py here: two sink channels take head dim 128 to 136, and cuDNN's
kernels then run their 192-wide tiles: on the H200 (bench/NOTES_gpu.md, session 14) the backward cost 2.2 ms a
call at B 4, 8 heads, T 2048, S 2560 against 0.77 ms at head dim 128.

With o, lse = attention without the sink (lse: the natural-log sum of exp over the real keys) and
a = sigmoid(lse - s_h) (the real keys' share of the softmax once the sink joins it):

    out = a * o
    backward, upstream G:  dO = a * G;  dq, dk, dv = attention backward(dO, out=a * o, lse)
                           dsink_h = -sum over (b, t) of (1 - a) * (G . out)

The attention backward uses its ``out`` argument only for Delta = rowsum(dO * out); the sink adds
dL/dlse = (1 - a) * (dO . o) to every row of dS = P * (dP - Delta + dL/dlse), i.e. Delta becomes
a * (dO . o) = dO . (a * o): passing the sink-scaled output as ``out`` is the exact gradient."""
from __future__ import annotations

import torch
import torch.nn.functional as F

aten = torch.ops.aten


def cudnn_attention_available(query: torch.Tensor) -> bool:
    """Whether PyTorch's cuDNN attention can run this query: a CUDA device of compute capability >= 8.0
    with cuDNN attention enabled, bf16/fp16, a head dim that is a multiple of 8 and at most 128 (the
    kernels measured here; larger heads take pattern.py's path, where PyTorch picks the kernel)."""
    if not (query.is_cuda and query.dtype in (torch.bfloat16, torch.float16) and query.shape[-1] % 8 == 0
            and query.shape[-1] <= 128 and torch.backends.cudnn.is_available()
            and torch.backends.cuda.cudnn_sdp_enabled()
            and hasattr(aten, "_scaled_dot_product_cudnn_attention_backward")):
        return False
    index = query.device.index if query.device.index is not None else torch.cuda.current_device()
    return torch.cuda.get_device_capability(index) >= (8, 0)


@torch.library.custom_op("trex::sink_attention_cudnn", mutates_args=())
def sink_attention_cudnn(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor, mask: torch.Tensor,
                         sinks: torch.Tensor, scale: float) -> tuple[torch.Tensor, torch.Tensor]:
    """query [B, H, T, D], key / value [B, H, S, D] (may be expanded), mask [B, H, T, S] in query's dtype,
    sinks [H] -> (out [B, H, T, D] in query's dtype, lse [B, H, T, 1] fp32)."""
    b, h, t, _ = query.shape
    out, lse = aten._scaled_dot_product_cudnn_attention(query, key, value, mask, True, 0.0, False, False,
                                                         scale=scale)[:2]
    lse = lse.reshape(b, h, t, 1)
    a = torch.sigmoid(lse - sinks.float().reshape(1, h, 1, 1))
    # written into the contiguous tensor the fake declares: cuDNN lays `out` out like the query (a transposed
    # view [B, T, H, D] in trex's own model), and an elementwise result keeps that layout, which Inductor's
    # stride assertion refused (session 18's train_step)
    res = query.new_empty(b, h, t, value.shape[-1])
    torch.mul(out, a, out=res)          # in fp32 (the common dtype), rounded once into query's dtype
    return res, lse.clone(memory_format=torch.contiguous_format)


@sink_attention_cudnn.register_fake
def _fake(query, key, value, mask, sinks, scale):
    b, h, t, _ = query.shape
    return query.new_empty(b, h, t, value.shape[-1]), query.new_empty(b, h, t, 1, dtype=torch.float32)


@torch.library.custom_op("trex::sink_attention_cudnn_bwd", mutates_args=())
def sink_attention_cudnn_bwd(grad: torch.Tensor, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                             mask: torch.Tensor, sinks: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
                             scale: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """The gradients (dq, dk, dv, dsinks) of sink_attention_cudnn's out (module docstring)."""
    b, h, t, _ = query.shape
    a = torch.sigmoid(lse - sinks.float().reshape(1, h, 1, 1))
    g = grad.float()
    d_out = (g * a).to(query.dtype)
    # None: undefined tensors, as the forward returns them without dropout (philox seed/offset) and for
    # dense, non-nested inputs (cum_seq_q/k; a defined one would mean nested)
    dq, dk, dv = aten._scaled_dot_product_cudnn_attention_backward(
        d_out, query, key, value, out, lse, None, None, mask, None, None, t, key.shape[2], 0.0, False, scale=scale)
    dsinks = -((1 - a) * (g * out.float()).sum(-1, keepdim=True)).sum(dim=(0, 2, 3))
    # contiguous, as the fake declares (cuDNN's gradients follow their inputs' layouts, which may be views)
    return dq.contiguous(), dk.contiguous(), dv.contiguous(), dsinks.to(sinks.dtype)


@sink_attention_cudnn_bwd.register_fake
def _bwd_fake(grad, query, key, value, mask, sinks, out, lse, scale):
    return (query.new_empty(query.shape), key.new_empty(key.shape), value.new_empty(value.shape),
            sinks.new_empty(sinks.shape))


def _setup_context(ctx, inputs, output):
    query, key, value, mask, sinks, scale = inputs
    out, lse = output
    ctx.save_for_backward(query, key, value, mask, sinks, out, lse)
    ctx.scale = scale


def _backward(ctx, grad, _grad_lse):
    query, key, value, mask, sinks, out, lse = ctx.saved_tensors
    dq, dk, dv, dsinks = torch.ops.trex.sink_attention_cudnn_bwd(grad, query, key, value, mask, sinks, out, lse,
                                                                ctx.scale)
    return dq, dk, dv, None, dsinks, None


sink_attention_cudnn.register_autograd(_backward, setup_context=_setup_context)


def sink_attention_cuda(query, key, value, mask, sinks, scaling):
    """pattern.sink_attention's function on cuDNN: key/value [B, KVH, S, D] expanded over the query heads,
    the mask expanded to [B, H, T, S] in query's dtype."""
    b, h, t, _ = query.shape
    kvh, s = key.shape[1], key.shape[2]
    n_rep = h // kvh
    m = mask.to(query.dtype).expand(b, mask.shape[1], t, s)
    if s % 16:   # the key count padded to a multiple of 16 (the bias rows' alignment): zero keys masked -inf
        pad = 16 - s % 16
        key, value = F.pad(key, (0, 0, 0, pad)), F.pad(value, (0, 0, 0, pad))
        m = torch.cat([m, m.new_full((b, m.shape[1], t, pad), float("-inf"))], dim=-1)
        s += pad

    def heads(x):
        return x if n_rep == 1 else x[:, :, None].expand(b, kvh, n_rep, s, x.shape[-1]).reshape(b, h, s, x.shape[-1])
    return sink_attention_cudnn(query, heads(key), heads(value), m.expand(b, h, t, s), sinks, scaling)[0]
