"""Whole model: shapes, official names and shapes, dtypes, checkpointing, lm_loss, training."""
import time

import pytest
import torch

from trex.training.model import Transformer, get_config, lm_loss


def test_forward_shapes(tiny_model, tiny_args):
    tokens = torch.randint(0, tiny_args.vocab_size, (2, 64))
    logits, mtp = tiny_model(tokens)
    assert logits.shape == mtp.shape == (2, 64, tiny_args.vocab_size)
    assert torch.isfinite(logits).all() and torch.isfinite(mtp).all()


def test_without_mtp_returns_none():
    args = get_config("tiny", n_mtp_layers=0, compress_ratios=(0, 4, 16, 4))
    logits, mtp = Transformer(args)(torch.randint(0, args.vocab_size, (1, 32)))
    assert mtp is None and logits.shape == (1, 32, args.vocab_size)


def test_short_sequences_without_complete_windows(tiny_model):
    logits, _ = tiny_model(torch.randint(0, 4096, (1, 3)))      # shorter than every compress ratio
    assert torch.isfinite(logits).all()


def test_official_tensor_names(tiny_model):
    names = set(tiny_model.state_dict())
    for name in ["embed.weight", "head.weight", "norm.weight", "hc_head_fn", "hc_head_base", "hc_head_scale",
                 "layers.0.hc_attn_fn", "layers.0.hc_ffn_scale", "layers.0.attn_norm.weight",
                 "layers.0.attn.wq_a.weight", "layers.0.attn.q_norm.weight", "layers.0.attn.wq_b.weight",
                 "layers.0.attn.wkv.weight", "layers.0.attn.kv_norm.weight", "layers.0.attn.wo_a.weight",
                 "layers.0.attn.wo_b.weight", "layers.0.attn.attn_sink", "layers.0.ffn.gate.tid2eid",
                 "layers.1.ffn.gate.bias", "layers.1.attn.compressor.ape",
                 "layers.1.attn.indexer.wq_b.weight", "layers.1.attn.indexer.weights_proj.weight",
                 "layers.1.attn.indexer.compressor.norm.weight", "layers.2.attn.compressor.wgate.weight",
                 "layers.3.ffn.experts.7.w2.weight", "layers.3.ffn.shared_experts.w3.weight",
                 "mtp.0.e_proj.weight", "mtp.0.h_proj.weight", "mtp.0.enorm.weight", "mtp.0.hnorm.weight",
                 "mtp.0.norm.weight", "mtp.0.hc_head_fn", "mtp.0.ffn.gate.bias", "mtp.0.attn.attn_sink"]:
        assert name in names, name
    # per layer kind: compressor on every compressed layer, indexer only on ratio 4, no router bias on hash layers
    assert not any(n.startswith("layers.0.attn.compressor") for n in names)
    assert not any(n.startswith("layers.2.attn.indexer") for n in names)
    assert "layers.0.ffn.gate.bias" not in names and "mtp.0.ffn.gate.tid2eid" not in names


def test_flash_shapes_match_the_release():
    """Shapes quoted from the Flash tensor list (spec §1, §5, §7) on the meta-built model."""
    with torch.device("meta"):
        model = Transformer(get_config("flash"))
    shapes = {n: tuple(t.shape) for n, t in model.state_dict().items()}
    expected = {
        "layers.0.hc_attn_fn": (24, 16384), "layers.0.hc_attn_base": (24,), "layers.0.hc_attn_scale": (3,),
        "hc_head_fn": (4, 16384), "hc_head_base": (4,), "hc_head_scale": (1,),
        "layers.0.attn.attn_sink": (64,), "layers.0.attn.wo_a.weight": (8192, 4096),
        "layers.0.attn.wo_b.weight": (4096, 8192), "layers.0.attn.wkv.weight": (512, 4096),
        "layers.0.attn.wq_b.weight": (32768, 1024),
        "layers.2.attn.compressor.ape": (4, 1024), "layers.2.attn.compressor.wkv.weight": (1024, 4096),
        "layers.2.attn.indexer.compressor.ape": (4, 256), "layers.3.attn.compressor.ape": (128, 512),
        "layers.3.ffn.gate.bias": (256,), "layers.0.ffn.gate.tid2eid": (129280, 6),
        "layers.5.ffn.experts.255.w1.weight": (2048, 4096), "mtp.0.hc_head_fn": (4, 16384),
        "embed.weight": (129280, 4096), "head.weight": (129280, 4096),
    }
    for name, shape in expected.items():
        assert shapes[name] == shape, name
    assert sum(n.endswith("attn.compressor.wkv.weight") and n.startswith("layers.") for n in shapes) == 41
    assert sum(n.endswith("attn.indexer.wq_b.weight") for n in shapes) == 21


def test_bf16_forward_backward(tiny_args):
    torch.manual_seed(0)
    model = Transformer(tiny_args).to(torch.bfloat16)
    tokens = torch.randint(0, tiny_args.vocab_size, (2, 64))
    logits, mtp = model(tokens)
    assert logits.dtype == torch.bfloat16
    loss, _ = lm_loss(logits, mtp, torch.roll(tokens, -1, 1))
    loss.backward()
    assert torch.isfinite(loss)
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_activation_checkpointing_gives_the_same_gradients(tiny_args):
    tokens = torch.randint(0, tiny_args.vocab_size, (1, 48))
    grads = []
    for ckpt in (False, True):
        torch.manual_seed(0)
        model = Transformer(tiny_args.replace(activation_checkpointing=ckpt))
        logits, mtp = model(tokens)
        lm_loss(logits, mtp, torch.roll(tokens, -1, 1))[0].backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], atol=1e-6, rtol=1e-5)


def test_lm_loss_positions_and_masks():
    vocab = 5
    labels = torch.tensor([[1, 2, 3, 4]])
    logits = torch.zeros(1, 4, vocab)
    mtp_logits = torch.zeros(1, 4, vocab)
    # make the LM right at every position and the MTP right only where it is scored (t -> labels[t+1])
    logits[0, torch.arange(4), labels[0]] = 50.0
    mtp_logits[0, torch.arange(3), labels[0, 1:]] = 50.0
    mtp_logits[0, 3, 0] = 50.0                      # last MTP position is never scored
    loss, parts = lm_loss(logits, mtp_logits, labels)
    assert parts["lm"] < 1e-6 and parts["mtp"] < 1e-6
    # a mask that drops position 1 removes LM position 1 and MTP position 0 (its target is labels[1])
    logits[0, 1] = 0.0
    mtp_logits[0, 0] = 0.0
    mask = torch.tensor([[1, 0, 1, 1]])
    loss, parts = lm_loss(logits, mtp_logits, labels, loss_mask=mask, mtp_weight=0.5)
    assert parts["lm"] < 1e-6 and parts["mtp"] < 1e-6
    ignore = labels.clone()
    ignore[0, 1] = -100
    loss, parts = lm_loss(logits, mtp_logits, ignore)
    assert parts["lm"] < 1e-6 and parts["mtp"] < 1e-6
    unmasked, parts = lm_loss(logits, None, labels)
    torch.testing.assert_close(unmasked, torch.log(torch.tensor(5.0)) / 4, atol=1e-4, rtol=1e-4)


def _successor_batches(vocab, batch, seq_len, steps, seed=0):
    """Synthetic task: every sequence follows a fixed random successor permutation of 64 tokens."""
    g = torch.Generator().manual_seed(seed)
    successor = torch.randperm(64, generator=g)
    for _ in range(steps):
        toks = [torch.randint(0, 64, (batch,), generator=g)]
        for _ in range(seq_len):
            toks.append(successor[toks[-1]])
        seq = torch.stack(toks, 1)
        yield seq[:, :-1], seq[:, 1:]


def test_tiny_loss_decreases_over_50_steps(tiny_args):
    torch.manual_seed(0)
    model = Transformer(tiny_args)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses, start = [], time.perf_counter()
    for tokens, labels in _successor_batches(tiny_args.vocab_size, 2, 64, 50):
        logits, mtp = model(tokens)
        loss, _ = lm_loss(logits, mtp, labels)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
    elapsed = time.perf_counter() - start
    first, last = sum(losses[:5]) / 5, sum(losses[-5:]) / 5
    assert first > 9.0                    # ~ (1 + 0.3) * ln(4096) at init
    assert last < 0.25 * first, (first, last, elapsed)
