"""Sink attention (trex/passes/sink_attention): transformers' eager spellings (DeepSeek-V4's shared KV, gpt-oss's
grouped heads, one KV head per query head) become one scaled_dot_product_attention call, with outputs and
gradients (q, k/v, the sinks) within the DESIGN.md rule of an fp64 reference; odd sizes; what is refused."""
from __future__ import annotations

import types

import pytest
import torch
import torch.nn.functional as F

from trex.compiler import logs
from trex.compiler.testing import assert_close_to_reference
from trex.passes.sink_attention.pattern import sink_attention, sink_attention_shared_kv_chain


def _mask(batch, t, s, window, dtype):
    """transformers' sliding-window causal mask (0 / finfo.min), then s - t compressed slots with -inf where
    a random 'indexer' leaves them out (DeepSeek-V4's block bias)."""
    g = torch.Generator().manual_seed(5)
    i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
    m = torch.where((j <= i) & (j > i - window), 0.0, torch.finfo(dtype).min).expand(batch, 1, t, t)
    if s > t:
        extra = torch.where(torch.rand(batch, 1, t, s - t, generator=g) < 0.5, 0.0, float("-inf"))
        m = torch.cat([m, extra], dim=-1)
    return m.to(dtype).contiguous()


def _transformers_eager(module, query, key, value, mask, scaling):
    """transformers 5.x's eager_attention_forward of gpt-oss / DeepSeek-V4 (sinks on the module)."""
    def repeat_kv(x, n_rep):
        b, kvh, s, d = x.shape
        return x if n_rep == 1 else x[:, :, None, :, :].expand(b, kvh, n_rep, s, d).reshape(b, kvh * n_rep, s, d)
    key_states, value_states = repeat_kv(key, module.num_key_value_groups), repeat_kv(value, module.num_key_value_groups)
    attn_weights = torch.matmul(query, key_states.transpose(2, 3)) * scaling + mask
    sinks = module.sinks.reshape(1, -1, 1, 1).expand(query.shape[0], -1, query.shape[-2], -1)
    combined = torch.cat([attn_weights, sinks], dim=-1)
    combined = combined - combined.max(dim=-1, keepdim=True).values
    probs = F.softmax(combined, dim=-1, dtype=combined.dtype)[..., :-1].to(value_states.dtype)
    return torch.matmul(probs, value_states).transpose(1, 2).contiguous()


CASES = {   # name -> (query heads, key/value heads, shared kv, expected pattern)
    "deepseek_v4_shared_kv": (4, 1, True, "sink_attention"),
    "gpt_oss_grouped": (4, 2, False, "sink_attention_gqa"),
    "one_kv_head_per_query_head": (2, 2, False, "sink_attention_mha"),
}


def _inputs(case, dtype, b=2, t=19, s=27, d=24):
    h, kvh, shared, _ = CASES[case]
    g = torch.Generator().manual_seed(3)
    q = torch.randn(b, h, t, d, generator=g).to(dtype)
    k = torch.randn(b, kvh, s, d, generator=g).to(dtype)
    v = k if shared else torch.randn(b, kvh, s, d, generator=g).to(dtype)
    sinks = torch.randn(h, generator=g)              # fp32, as transformers keeps them
    return q, k, v, _mask(b, t, s, 8, dtype), sinks


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("case", sorted(CASES))
def test_transformers_eager_sink_attention_is_one_sdpa_call(case, dtype):
    """Forward and backward within the rule; one match per call; the compiled graph has no softmax over
    the [B, H, T, S + 1] logits left (the SDPA call is the only attention)."""
    q, k, v, mask, sinks = _inputs(case, dtype)
    h, kvh, shared, pattern = CASES[case]
    scaling = q.shape[-1] ** -0.5

    def run(qq, kk, vv, mm, ss, fn):
        module = types.SimpleNamespace(num_key_value_groups=h // kvh, sinks=ss)
        return fn(module, qq, kk, kk if shared else vv, mm, scaling)

    def leaves(cast):
        out = [cast(x).detach().requires_grad_() for x in (q, k, v, sinks)]
        return out

    torch._dynamo.reset()
    compiled = torch.compile(lambda *a: run(*a, _transformers_eager), backend="trex")
    got_in = leaves(lambda x: x)
    grad = torch.randn(q.shape[0], q.shape[2], h, q.shape[3], generator=torch.Generator().manual_seed(9))
    with logs.capture() as reports:
        out = compiled(got_in[0], got_in[1], got_in[2], mask, got_in[3])
        out.backward(grad.to(out.dtype))
    counts = sum((r.match_counts() for r in reports), start=__import__("collections").Counter())
    assert counts[pattern] == 1, counts
    eager_in = leaves(lambda x: x)
    eager = run(eager_in[0], eager_in[1], eager_in[2], mask, eager_in[3], _transformers_eager)
    eager.backward(grad.to(eager.dtype))
    ref_in = leaves(lambda x: x.double())
    ref = run(ref_in[0], ref_in[1], ref_in[2], mask.double(), ref_in[3], _transformers_eager)
    ref.backward(grad.double())
    assert_close_to_reference(out, eager, ref, compute_dtype=dtype)
    names = ("dq", "dk", "dv", "dsinks")
    for i, name in enumerate(names):
        if shared and name == "dv":
            continue
        assert_close_to_reference(got_in[i].grad, eager_in[i].grad, ref_in[i].grad, compute_dtype=dtype, name=name)


@pytest.mark.parametrize("t,s,d", [(1, 1, 8), (5, 17, 20), (16, 33, 7)])
def test_the_replacement_is_the_chain_in_fp64(t, s, d):
    """The augmented-key SDPA form against the chain, fp64 on the CPU: a single query and key, key counts
    that need padding keys (17, 33), head dims that need padding channels (20, 7)."""
    g = torch.Generator().manual_seed(t * 100 + s)
    q = torch.randn(2, 3, t, d, generator=g, dtype=torch.float64)
    kv = torch.randn(2, 1, s, d, generator=g, dtype=torch.float64)
    sinks = torch.randn(3, generator=g, dtype=torch.float64) * 3
    mask = torch.where(torch.rand(2, 1, t, s, generator=g) < 0.3, float("-inf"), 0.0).double()
    mask[..., 0] = 0.0                                  # every query sees a key
    want = sink_attention_shared_kv_chain(q, kv, mask, sinks, scaling=0.37)
    got = sink_attention(q, kv, kv, mask, sinks, 0.37)
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_a_sink_per_batch_is_refused_with_the_reason():
    """sinks of shape [B] broadcast where the heads are: structurally the chain, but not one logit per head."""
    q, k, _, mask, _ = _inputs("deepseek_v4_shared_kv", torch.float32, b=4)
    wrong = torch.randn(4, 1, 1, 1)

    def chain(q_, k_, m_, s_):
        kk = k_[:, :, None].expand(4, 1, 4, k_.shape[2], k_.shape[3]).reshape(4, 4, k_.shape[2], k_.shape[3])
        logits = torch.matmul(q_, kk.transpose(2, 3)) * 0.2 + m_
        combined = torch.cat([logits, s_.expand(4, 4, q_.shape[2], 1)], dim=-1)
        combined = combined - combined.max(dim=-1, keepdim=True).values
        return torch.matmul(F.softmax(combined, dim=-1)[..., :-1], kk)

    torch._dynamo.reset()
    with logs.capture() as reports:
        out = torch.compile(chain, backend="trex")(q, k, mask, wrong)
    assert not any(r.match_counts() for r in reports)
    reasons = [nm.reason for r in reports for nm in r.near_misses if nm.pattern == "sink_attention"]
    assert any("broadcasts dims" in reason for reason in reasons), reasons     # the near-miss says why
    torch.testing.assert_close(out, chain(q, k, mask, wrong))


def test_attention_without_a_sink_is_left_to_inductor():
    """Plain softmax attention (no sink column) is not this pattern: nothing is rewritten."""
    q, k, _, mask, _ = _inputs("deepseek_v4_shared_kv", torch.float32)

    def plain(q_, k_, m_):
        kk = k_.expand(q_.shape[0], q_.shape[1], k_.shape[2], k_.shape[3])
        return torch.matmul(F.softmax(torch.matmul(q_, kk.transpose(2, 3)) * 0.2 + m_, dim=-1), kk)

    torch._dynamo.reset()
    with logs.capture() as reports:
        torch.compile(plain, backend="trex")(q, k, mask)
    assert not any(r.match_counts() for r in reports)
    # and no near-miss noise: every 4-D matmul shares the chain's first nodes (Pattern.near_miss_depth)
    assert not [nm for r in reports for nm in r.near_misses if nm.pattern.startswith("sink_attention")]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_trex_models_own_spelling_is_fused(dtype):
    """trex/training/model/attention.py's sink_attention (einsum, bool visibility, no max subtraction): one
    match (pattern sink_attention_bool_mask), output and gradients within the rule."""
    from trex.training.model.attention import sink_attention as own
    g = torch.Generator().manual_seed(2)
    q, kv, sink = torch.randn(2, 16, 4, 32, generator=g), torch.randn(2, 20, 32, generator=g), torch.randn(4, generator=g)
    visible = torch.rand(2, 16, 20, generator=g) < 0.6
    visible[..., 0] = True                         # every query sees a key (the model's contract)

    def leaves(cast):
        return [cast(x).detach().requires_grad_() for x in (q, kv)] + [sink.detach().clone().requires_grad_()]

    def run(args, fn):
        out = fn(args[0], args[1], visible, args[2], 0.2)
        out.float().sum().backward()
        return [out] + [a.grad for a in args]

    torch._dynamo.reset()
    got_in = leaves(lambda x: x.to(dtype))
    with logs.capture() as reports:
        got = run(got_in, torch.compile(own, backend="trex"))
    assert sum(r.match_counts()["sink_attention_bool_mask"] for r in reports) == 1
    eager = run(leaves(lambda x: x.to(dtype)), own)
    ref = run(leaves(lambda x: x.double()), own)
    for name, a, e, r in zip(("out", "dq", "dkv", "dsinks"), got, eager, ref):
        assert_close_to_reference(a, e, r, compute_dtype=dtype, name=name)
