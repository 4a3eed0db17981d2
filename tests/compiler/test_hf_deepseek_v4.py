"""transformers' ``DeepseekV4ForCausalLM`` (the V4 most users run) under ``backend="trex"``: every site
of the four families the config implies is fused, forward and backward, and loss and gradients stay
within DESIGN.md's numerics rule (trex.compiler.testing) against an fp64 run of the same weights.

Tiny config on CPU; transformers is pinned in pyproject's ``test`` extra (skipped without it)."""
from __future__ import annotations

import copy

import pytest
import torch

transformers = pytest.importorskip("transformers")
modeling = pytest.importorskip("transformers.models.deepseek_v4.modeling_deepseek_v4")

from trex.compiler import logs  # noqa: E402
from trex.compiler.testing import assert_close_to_reference, trex_op_counts  # noqa: E402


def tiny_config(layers: int):
    config = transformers.DeepseekV4Config(
        vocab_size=64, hidden_size=32, intermediate_size=24, moe_intermediate_size=24, num_hidden_layers=layers,
        num_attention_heads=2, num_key_value_heads=1, head_dim=16, qk_rope_head_dim=8, q_lora_rank=16,
        o_lora_rank=8, o_groups=2, num_local_experts=2, num_experts_per_tok=1, hc_mult=4, hc_sinkhorn_iters=3,
        layer_types=["sliding_attention"] * layers, mlp_layer_types=["moe"] * layers, sliding_window=16,
        max_position_embeddings=64, swiglu_limit=7.0)
    config._attn_implementation = "eager"
    return config


def expected_sites(config) -> dict[str, int]:
    """Fused ops per forward graph, counted from the config (sliding-attention layers only)."""
    assert set(config.layer_types) == {"sliding_attention"}, "compressor layers add rope/norm sites"
    layers = config.num_hidden_layers
    return {
        # attn_hc and ffn_hc per layer (the final hc_head is a plain sigmoid collapse, not mHC pre)
        "mhc_pre": 2 * layers,
        # q_a_norm, q_b_norm (weight-free), kv_norm, input_layernorm, post_attention_layernorm per layer;
        # the model's final norm and hc_head's weight-free input norm
        "rms_norm": 5 * layers + 2,
        # q, the shared K=V head, and the inverse rotation (-sin) of the attention output per layer
        "rope": 3 * layers,
        # the shared expert's MLP and the routed experts' _apply_gate (one batched call) per layer
        "swiglu_limited": 2 * layers,
        # the eager sink attention per layer: one SDPA call (a library lowering, no trex op in the graph)
        "sink_attention": layers,
    }


BACKWARD = {"mhc_pre": "mhc_pre_bwd", "rms_norm": "rms_norm_bwd", "rope": "rope", "swiglu_limited": "swiglu_limited_bwd"}


def _loss_and_grads(model, ids):
    model.zero_grad(set_to_none=True)
    loss = model(ids, labels=ids).loss
    loss.backward()
    return loss.detach(), {n.removeprefix("_orig_mod."): p.grad.detach().clone()
                           for n, p in model.named_parameters() if p.grad is not None}


CASES = [
    pytest.param(torch.float32, False, 1, id="fp32-static"),
    pytest.param(torch.bfloat16, True, 1, id="bf16-dynamic"),
    pytest.param(torch.bfloat16, False, 2, id="bf16-static-2layers", marks=pytest.mark.slow),
    pytest.param(torch.float32, True, 2, id="fp32-dynamic-2layers", marks=pytest.mark.slow),
]


@pytest.mark.parametrize("dtype,dynamic,layers", CASES)
def test_every_site_fused_forward_and_backward(dtype, dynamic, layers):
    torch.manual_seed(0)
    config = tiny_config(layers)
    model = transformers.DeepseekV4ForCausalLM(config).to(dtype)
    reference = copy.deepcopy(model).to(torch.float64)
    reference.config._experts_implementation = "eager"    # grouped_mm has no fp64 kernel
    ids = torch.randint(0, config.vocab_size, (2, 8))
    eager_loss, eager_grads = _loss_and_grads(model, ids)
    ref_loss, ref_grads = _loss_and_grads(reference, ids)

    torch._dynamo.reset()
    with logs.capture() as reports:
        compiled = torch.compile(model, backend="trex", dynamic=dynamic)
        loss, grads = _loss_and_grads(compiled, ids)
    (report,) = reports
    assert report.fallbacks == []
    want = expected_sites(config)
    assert report.match_counts() == want, report.format()
    forward, backward = report.compiled_graphs["forward"], report.compiled_graphs["backward"]
    want_ops = {family: want[family] for family in BACKWARD}     # the families that are trex fused ops
    assert {k: v for k, v in trex_op_counts(forward).items() if k in want_ops} == want_ops
    backward_counts = trex_op_counts(backward)
    for family, op in BACKWARD.items():
        assert backward_counts[op] == want[family], (family, dict(backward_counts))
    assert_close_to_reference(loss, eager_loss, ref_loss, name="loss", compute_dtype=dtype)
    assert grads.keys() == eager_grads.keys()
    for name in grads:
        assert_close_to_reference(grads[name], eager_grads[name], ref_grads[name], name=f"d{name}",
                                  compute_dtype=dtype)


def _half_split_rotate_half(x):
    """Llama's rotate_half (halves, not interleaved pairs): other mathematics than V4's rotation."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def _one_layer_report_equal_to_eager():
    """A one-layer tiny V4 compiled with backend="trex" (no grad): its logits equal eager's; returns
    the config and the one graph's match report."""
    torch.manual_seed(0)
    config = tiny_config(1)
    model = transformers.DeepseekV4ForCausalLM(config)
    ids = torch.randint(0, config.vocab_size, (2, 8))
    torch._dynamo.reset()
    with logs.capture() as reports, torch.no_grad():
        out = torch.compile(model, backend="trex")(ids).logits
    torch.testing.assert_close(out, model(ids).logits, rtol=1e-4, atol=1e-4)
    (report,) = reports
    return config, report


def test_near_miss_lines_name_the_source_and_the_first_differing_op(monkeypatch):
    """A half-split rotate_half patched into V4 must not fuse as interleaved RoPE, and each unfused site
    is explained in one line: the closest pattern, the user's file:line, the first op that differs
    (with its file:line), and no FX node names."""
    import re

    monkeypatch.setattr(modeling, "rotate_half", _half_split_rotate_half)
    config, report = _one_layer_report_equal_to_eager()
    assert report.match_counts()["rope"] == 0
    lines = [line.strip() for line in report.format().splitlines() if line.strip().startswith("near-miss rope")]
    assert len(lines) == 3 * config.num_hidden_layers, report.format()      # q, kv, inverse per layer
    line_re = re.compile(r"near-miss rope at modeling_deepseek_v4\.py:\d+ \(called at modeling_deepseek_v4\.py:\d+\): "
                         r".+ at modeling_deepseek_v4\.py:\d+")
    for line in lines:
        assert line_re.match(line), line
        assert not re.search(r"\b[a-z_]+_\d+\b", line), f"an FX node name in {line!r}"


def _hyper_connection_softmax_over_all_entries(self, hidden_streams):
    """transformers' DeepseekV4HyperConnection.forward with one change: the comb softmax runs over all
    n*n entries before the view to [n, n] (not per row): other mathematics, never mHC."""
    batch_size, seq_len = hidden_streams.shape[:2]
    hc = self.hc_mult
    flattened = self.input_norm(hidden_streams.view(batch_size, seq_len, -1).float())
    flattened = torch.nn.functional.linear(flattened, self.fn.float())
    pre_w, post_w, comb_w = flattened.split([hc, hc, hc * hc], dim=-1)
    pre_b, post_b, comb_b = self.base.split([hc, hc, hc * hc])
    pre_scale, post_scale, comb_scale = self.scale.unbind(0)
    pre = torch.sigmoid(pre_w * pre_scale + pre_b) + self.hc_eps
    post = 2 * torch.sigmoid(post_w * post_scale + post_b)
    comb = torch.softmax(comb_w * comb_scale + comb_b, dim=-1) + self.hc_eps
    comb = comb.view(*comb.shape[:-1], hc, hc)
    comb = comb / (comb.sum(dim=-2, keepdim=True) + self.hc_eps)
    for _ in range(self.hc_sinkhorn_iters - 1):
        comb = comb / (comb.sum(dim=-1, keepdim=True) + self.hc_eps)
        comb = comb / (comb.sum(dim=-2, keepdim=True) + self.hc_eps)
    collapsed = (pre.unsqueeze(-1) * hidden_streams).sum(dim=2).to(hidden_streams.dtype)
    return post, comb, collapsed


def test_unfused_mhc_sites_are_explained_with_their_source_lines(monkeypatch):
    """An mHC whose comb softmax spans all n*n entries must not fuse, and each of its sites (attention
    and MLP per layer) gets one near-miss line naming the user's file:line and the first differing op."""
    import re

    monkeypatch.setattr(modeling.DeepseekV4HyperConnection, "forward", _hyper_connection_softmax_over_all_entries)
    config, report = _one_layer_report_equal_to_eager()
    assert report.match_counts()["mhc_pre"] == 0
    here = re.escape(__file__.rsplit("/", 1)[-1])
    line_re = re.compile(rf"near-miss mhc_pre at {here}:\d+ \(called at modeling_deepseek_v4\.py:\d+\): .+ at {here}:\d+")
    lines = [line.strip() for line in report.format().splitlines() if line.strip().startswith("near-miss mhc_pre")]
    sites = [line for line in lines if line_re.match(line)]
    assert len(sites) == 2 * config.num_hidden_layers, report.format()       # attention and MLP per layer
    for line in sites:
        assert not re.search(r"\b[a-z_]+_\d+\b", line), f"an FX node name in {line!r}"
