"""trex::sink_attention_cudnn's outputs have the layout its fakes declare, whatever layout cuDNN hands back.

cuDNN lays its attention output out like the query (and its gradients like their inputs); trex's own model
passes a transposed query view, and a compiled graph asserts the fake's strides on the real output:
session 18's H200 train_step stopped on that (`assert_size_stride`). Here cuDNN's two calls are replaced by
a math stand-in that returns cuDNN's layouts, so the check runs on the CPU, through Inductor's own stride
assertion (the CUDA test in tests/gpu/test_sink_attention_cuda.py runs the real cuDNN)."""
from __future__ import annotations

import pytest
import torch

from trex.passes.sink_attention import cuda


class _CudnnLayouts:
    """aten's two cuDNN attention calls on the CPU: plain attention in fp32, outputs in cuDNN's layouts (the
    output like the query; the gradients like a [B, S, H, D] buffer transposed, i.e. not contiguous)."""

    @staticmethod
    def _scaled_dot_product_cudnn_attention(q, k, v, mask, compute_lse, dropout, causal, debug, scale):
        s = (q.float() @ k.float().transpose(-1, -2)) * scale + mask.float()
        lse = torch.logsumexp(s, -1)
        out = torch.empty_like(q)                       # the query's layout
        out.copy_(torch.softmax(s, -1) @ v.float())
        return out, lse

    @staticmethod
    def _scaled_dot_product_cudnn_attention_backward(d_out, q, k, v, out, lse, *rest, scale):
        def transposed_like(x):
            b, h, n, d = x.shape
            return torch.zeros(b, n, h, d, dtype=x.dtype).transpose(1, 2)
        return transposed_like(q), transposed_like(k), transposed_like(v)


@pytest.fixture
def cudnn_layouts(monkeypatch):
    monkeypatch.setattr(cuda, "aten", _CudnnLayouts)
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _inputs():
    g = torch.Generator().manual_seed(0)
    b, h, t, s, d = 2, 4, 8, 16, 32
    q = torch.randn(b, t, h, d, generator=g).bfloat16().transpose(1, 2)      # trex's model's query view
    k = torch.randn(b, 1, s, d, generator=g).bfloat16().expand(b, h, s, d)
    mask = torch.zeros(b, h, t, s).bfloat16()
    sinks = torch.randn(h, generator=g)
    return q, k, mask, sinks


def test_forward_output_is_contiguous_and_the_sink_scaled_attention(cudnn_layouts):
    q, k, mask, sinks = _inputs()
    out, lse = torch.ops.trex.sink_attention_cudnn(q, k, k, mask, sinks, 0.125)
    assert out.is_contiguous() and lse.is_contiguous()
    o, l = _CudnnLayouts._scaled_dot_product_cudnn_attention(q, k, k, mask, True, 0.0, False, False, 0.125)
    a = torch.sigmoid(l.unsqueeze(-1) - sinks.reshape(1, -1, 1, 1))
    assert torch.equal(out, (o.float() * a).to(q.dtype))


def test_backward_gradients_are_contiguous(cudnn_layouts):
    q, k, mask, sinks = _inputs()
    out, lse = torch.ops.trex.sink_attention_cudnn(q, k, k, mask, sinks, 0.125)
    grads = torch.ops.trex.sink_attention_cudnn_bwd(torch.ones_like(out), q, k, k, mask, sinks, out, lse, 0.125)
    assert all(g.is_contiguous() for g in grads)


def test_inductors_stride_assertion_accepts_the_outputs(cudnn_layouts):
    """The check that failed on the H200: Inductor compares the real outputs' strides with the fake's."""
    q, k, mask, sinks = _inputs()
    q, k, sinks = (x.detach().requires_grad_() for x in (q, k, sinks))
    f = torch.compile(lambda *a: torch.ops.trex.sink_attention_cudnn(*a, 0.125)[0], backend="inductor")
    f(q, k, k, mask, sinks).float().sum().backward()
    assert q.grad.shape == q.shape and sinks.grad.shape == sinks.shape
