"""Acceptance: a DeepSeek-V4-style block in two spellings, compiled with trex.

Every chain is replaced in the forward and the backward graph (trex ops counted per pattern, no eager
residue), outputs and all gradients meet the DESIGN.md numerics rule against an fp64 reference, for
bf16 and fp32, static and dynamic shapes, contiguous and non-contiguous streams; under dynamic shapes a
second sequence length runs without recompiling.
"""
from __future__ import annotations

import pytest
import torch

from trex.compiler import logs
from trex.compiler.examples import (EXPECTED_BACKWARD, EXPECTED_FORWARD, RESIDUE_BACKWARD, RESIDUE_FORWARD,
                                    SPELLINGS, Config, make_streams, rope_table)
from trex.compiler.testing import aten_op_counts, assert_close_to_reference, trex_op_counts

# The default run covers both spellings, both dtypes, static and dynamic, contiguous and strided in
# two compiles; the complementary combinations run in the slow profile (each compile takes ~15-30 s
# on two shared cores).
CASES = [
    # spelling, dtype, dynamic shapes, non-contiguous streams
    pytest.param("reference", torch.float32, False, False, id="reference-float32-static"),
    pytest.param("alternate", torch.bfloat16, True, True, id="alternate-bfloat16-dynamic-noncontig"),
    pytest.param("reference", torch.bfloat16, True, True, id="reference-bfloat16-dynamic-noncontig",
                 marks=pytest.mark.slow),
    pytest.param("alternate", torch.float32, False, False, id="alternate-float32-static", marks=pytest.mark.slow),
]


def _loss(out: torch.Tensor) -> torch.Tensor:
    g = torch.Generator().manual_seed(7)
    proj = torch.randn(out.shape[-1], generator=g, dtype=torch.float64).to(out.device)
    return (out.to(torch.float64) * proj).sum()


def _run(model, x, freqs):
    x = x.detach().clone().requires_grad_() if not x.requires_grad else x
    out = model(x, freqs)
    _loss(out).backward()
    grads = [x.grad] + [p.grad for p in model.parameters()]
    return out, grads


def _fresh(cls, dtype):
    model = cls(Config()).cast(dtype)
    model.zero_grad(set_to_none=True)
    return model


def _leaf(x):
    # keep the strides of a non-contiguous view while making it a leaf
    return x.detach().requires_grad_()


@pytest.mark.parametrize("spelling,dtype,dynamic,noncontiguous", CASES)
def test_block_fused_forward_backward_and_numerics(spelling, dtype, dynamic, noncontiguous):
    cls = SPELLINGS[spelling]
    cfg = Config()
    batch, seq = 2, 5
    x = _leaf(make_streams(batch, seq, cfg, dtype, noncontiguous=noncontiguous))
    assert x.is_contiguous() is not noncontiguous
    freqs = rope_table(seq, cfg.rope_dim)

    model = _fresh(cls, dtype)
    compiled = torch.compile(model, backend="trex", dynamic=False if not dynamic else None)
    if dynamic:
        torch._dynamo.mark_dynamic(x, 0)
        torch._dynamo.mark_dynamic(x, 1)
        torch._dynamo.mark_dynamic(freqs, 0)
    with logs.capture() as reports:
        out, grads = _run(compiled, x, freqs)
    assert len(reports) == 1, [r.format() for r in reports]
    report = reports[0]
    assert report.fallbacks == []
    fw, bw = report.compiled_graphs["forward"], report.compiled_graphs["backward"]
    assert dict(trex_op_counts(fw)) == EXPECTED_FORWARD, report.format()
    assert dict(trex_op_counts(bw)) == EXPECTED_BACKWARD, report.format()
    assert RESIDUE_FORWARD.isdisjoint(aten_op_counts(fw)), sorted(RESIDUE_FORWARD & set(aten_op_counts(fw)))
    assert RESIDUE_BACKWARD.isdisjoint(aten_op_counts(bw)), sorted(RESIDUE_BACKWARD & set(aten_op_counts(bw)))
    # per pattern, per site: each match replaced one chain
    assert report.match_counts() == {"mhc_pre": 2, "rms_norm": 4, "rope": 3, "swiglu_limited": 1}

    eager_model = _fresh(cls, dtype)
    eager_out, eager_grads = _run(eager_model, _leaf(x), freqs)
    ref_model = cls(cfg).to_reference()
    ref_x = x.detach().to(torch.float64).requires_grad_()
    ref_out, ref_grads = _run(ref_model, ref_x, freqs.to(torch.complex128))
    assert_close_to_reference(out, eager_out, ref_out, compute_dtype=dtype, name="block output")
    names = ["x"] + [n for n, _ in model.named_parameters()]
    for name, g, ge, gr in zip(names, grads, eager_grads, ref_grads):
        assert_close_to_reference(g, ge, gr, compute_dtype=dtype, name=f"grad {name}")

    if dynamic:
        seq2 = 7
        x2 = _leaf(make_streams(batch + 1, seq2, cfg, dtype, noncontiguous=noncontiguous, seed=3))
        freqs2 = rope_table(seq2, cfg.rope_dim)
        frames_before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        with logs.capture() as second:
            out2, _ = _run(compiled, x2, freqs2)
        assert second == [], "a new batch/sequence length recompiled"
        assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == frames_before
        eager2, _ = _run(_fresh(cls, dtype), _leaf(x2), freqs2)
        ref2, _ = _run(cls(cfg).to_reference(), x2.detach().to(torch.float64), freqs2.to(torch.complex128))
        assert_close_to_reference(out2, eager2, ref2, compute_dtype=dtype, name="block output, second shape")


def test_inference_graph_is_fused_under_no_grad():
    cls = SPELLINGS["reference"]
    cfg = Config()
    model = _fresh(cls, torch.float32)
    x = make_streams(1, 3, cfg, torch.float32)
    freqs = rope_table(3, cfg.rope_dim)
    with torch.no_grad(), logs.capture() as reports:
        out = torch.compile(model, backend="trex")(x, freqs)
        eager = model(x, freqs)
    (report,) = reports
    assert dict(trex_op_counts(report.compiled_graphs["inference"])) == EXPECTED_FORWARD
    assert "backward" not in report.compiled_graphs
    torch.testing.assert_close(out, eager, rtol=1e-5, atol=1e-5)
