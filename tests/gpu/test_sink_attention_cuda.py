"""Sink attention on CUDA (trex/passes/sink_attention/cuda.py): one cuDNN call at the model's head dim with
the sink through the logsumexp, forward and backward within the DESIGN.md rule of an fp64 reference, a key
count that needs padding, and transformers' spelling through backend="trex" with and without CUDA graphs
(skipped without CUDA; bench/attn_sink_probe.py times it)."""
from __future__ import annotations

import pytest
import torch

from gpu_cases import requires_cuda

pytestmark = [pytest.mark.cuda, requires_cuda]


def _inputs(s, dtype=torch.bfloat16, b=2, h=4, t=40, d=64):
    g = torch.Generator().manual_seed(s)
    q = torch.randn(b, h, t, d, generator=g)
    kv = torch.randn(b, 1, s, d, generator=g)
    mask = torch.where(torch.rand(b, 1, t, s, generator=g) < 0.4, float("-inf"), 0.0)
    mask[..., 0] = 0.0
    sinks = torch.randn(h, generator=g) * 2
    return q.cuda().to(dtype), kv.cuda().to(dtype), mask.cuda().to(dtype), sinks.cuda()


@pytest.mark.parametrize("s", [48, 37])
def test_cudnn_sink_attention_matches_the_chain(s):
    from trex.compiler.testing import assert_close_to_reference
    from trex.passes.sink_attention.cuda import cudnn_attention_available
    from trex.passes.sink_attention.pattern import sink_attention, sink_attention_shared_kv_chain
    q, kv, mask, sinks = _inputs(s)
    if not cudnn_attention_available(q):
        pytest.skip("no cuDNN attention on this device")
    grad = torch.randn(q.shape, device="cuda", generator=torch.Generator("cuda").manual_seed(1))
    results = []
    for fn, cast in ((lambda *a: sink_attention(a[0], a[1], a[1], a[2], a[3], 0.125), lambda x: x),
                     (lambda *a: sink_attention_shared_kv_chain(*a, scaling=0.125), lambda x: x),
                     (lambda *a: sink_attention_shared_kv_chain(*a, scaling=0.125), lambda x: x.double())):
        leaves = [cast(x).detach().requires_grad_() for x in (q, kv, sinks)]
        out = fn(leaves[0], leaves[1], cast(mask), leaves[2])
        out.backward(grad.to(out.dtype))
        results.append([out] + [x.grad for x in leaves])
    for i, name in enumerate(("out", "dq", "dkv", "dsinks")):
        assert_close_to_reference(results[0][i], results[1][i], results[2][i], compute_dtype=torch.bfloat16, name=name)


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_the_pattern_runs_cudnn_through_backend_trex(mode):
    import trex.compiler.backend  # noqa: F401
    from trex.compiler import logs
    from trex.passes.sink_attention.pattern import sink_attention_shared_kv_chain
    q, kv, mask, sinks = _inputs(64)
    torch._dynamo.reset()
    f = torch.compile(lambda *a: sink_attention_shared_kv_chain(*a, scaling=0.125), backend="trex", mode=mode)
    with logs.capture() as reports:
        for _ in range(2):   # CUDA graphs record on a later call
            leaves = [x.detach().requires_grad_() for x in (q, kv, sinks)]
            out = f(leaves[0], leaves[1], mask, leaves[2])
            out.float().sum().backward()
    assert sum(r.match_counts()["sink_attention"] for r in reports) == 1
    ref = [x.detach().double().requires_grad_() for x in (q, kv, sinks)]
    want = sink_attention_shared_kv_chain(ref[0], ref[1], mask.double(), ref[2], scaling=0.125)
    want.sum().backward()
    for got, exp in zip([out] + [x.grad for x in leaves], [want] + [x.grad for x in ref]):
        err = float((got.double() - exp).norm() / exp.norm())
        assert err < 2e-2, err


def test_cudnn_ops_return_the_layout_their_fakes_declare():
    """trex's own model hands the op a transposed query view ([B, T, H, D] -> [B, H, T, D]); cuDNN lays its
    output out like the query, and a compiled graph asserts the fake's (contiguous) strides on the real
    output: session 18's train_step stopped on exactly that. opcheck compares real and fake outputs
    (strides included), forward and backward, for contiguous and transposed queries and expanded keys."""
    from trex.passes.sink_attention.cuda import cudnn_attention_available
    q, kv, mask, sinks = _inputs(48)
    if not cudnn_attention_available(q):
        pytest.skip("no cuDNN attention on this device")
    b, h, t, d = q.shape
    q_t = q.transpose(1, 2).contiguous().transpose(1, 2)          # the model's layout
    k = kv.expand(b, h, kv.shape[2], d)
    m = mask.expand(b, h, t, kv.shape[2])
    for query in (q, q_t):
        args = (query.detach().requires_grad_(), k.detach().requires_grad_(), k.detach().requires_grad_(), m,
                sinks.detach().requires_grad_(), 0.125)
        torch.library.opcheck(torch.ops.trex.sink_attention_cudnn.default, args)
        out, lse = torch.ops.trex.sink_attention_cudnn(*[a.detach() if torch.is_tensor(a) else a for a in args])
        assert out.is_contiguous() and lse.is_contiguous()
        grad = torch.randn_like(out)
        bwd_args = (grad, query, k, k, m, sinks, out, lse, 0.125)
        torch.library.opcheck(torch.ops.trex.sink_attention_cudnn_bwd.default, bwd_args,
                              test_utils=("test_schema", "test_faketensor"))
        assert all(g.is_contiguous() for g in torch.ops.trex.sink_attention_cudnn_bwd(*bwd_args)[:3])
