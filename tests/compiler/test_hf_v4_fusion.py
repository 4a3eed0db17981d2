"""transformers' DeepseekV4ForCausalLM (a tiny config, CPU) through backend="trex": its graph, which
computes the rotary tables under @torch.no_grad(), is fused (backend.detach_no_grad_regions), with the
loss and every parameter gradient as eager's. Slow (~40 s of compiling); skipped without a transformers
that has DeepSeek-V4."""
from __future__ import annotations

import collections

import pytest
import torch

from trex.compiler import logs

transformers = pytest.importorskip("transformers")
if not hasattr(transformers, "DeepseekV4Config"):
    pytest.skip("this transformers has no DeepSeek-V4 (>= 5.18 has it)", allow_module_level=True)

pytestmark = pytest.mark.slow


def tiny_v4(layers: int = 2):
    cfg = transformers.DeepseekV4Config(
        vocab_size=256, hidden_size=128, moe_intermediate_size=64, num_hidden_layers=layers,
        num_attention_heads=4, num_key_value_heads=1, head_dim=32, q_lora_rank=64,
        num_experts_per_tok=2, n_routed_experts=4, n_shared_experts=1,
        layer_types=(["sliding_attention"] + ["compressed_sparse_attention", "heavily_compressed_attention"]
                     * layers)[:layers],
        mlp_layer_types=["hash_moe"] + ["moe"] * (layers - 1),
        compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 128},
        sliding_window=16, o_groups=2, o_lora_rank=32, index_n_heads=2, index_head_dim=16, index_topk=8,
        num_nextn_predict_layers=0, partial_rotary_factor=0.5, max_position_embeddings=256)
    return transformers.DeepseekV4ForCausalLM(cfg)


def test_transformers_v4_fuses_with_eager_loss_and_gradients():
    torch.manual_seed(0)
    model = tiny_v4()
    ids = torch.randint(0, 256, (2, 32))

    def grads(fn):
        model.zero_grad(set_to_none=True)
        loss = fn(input_ids=ids, labels=ids).loss
        loss.backward()
        return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    with logs.capture() as reports:
        loss, got = grads(torch.compile(model, backend="trex"))
    ref_loss, want = grads(model)
    fused = collections.Counter()
    for r in reports:
        fused.update(r.match_counts())
        assert not r.fallbacks, r.fallbacks
    assert fused["rms_norm"] > 0 and fused["swiglu_limited"] > 0, fused
    assert fused["sink_attention"] == 2, fused     # both layers' eager sink attention: one SDPA call each
    torch.testing.assert_close(loss, ref_loss, rtol=1e-5, atol=1e-5)
    # parameters eager leaves at grad None (the indexer, used only through top-k indices) get zeros
    # under AOTAutograd, as with backend="aot_eager"
    assert set(want) <= set(got) and all(not got[n].any() for n in set(got) - set(want))
    for name, g in want.items():
        # relative, with an absolute floor: the hash-routed MoE's gate gradient is rounding noise (~1e-9)
        assert float((got[name] - g).norm()) <= 1e-4 * float(g.norm()) + 1e-7, name
