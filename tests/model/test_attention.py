"""Attention (spec §5): visibility rules, compressor windows, causality of each layer kind,
the sink, top-k selection, the grouped output projection."""
import pytest
import torch

from trex.training.model import get_config
from trex.training.model.attention import (Attention, Compressor, compressed_visibility, sink_attention,
                                      topk_selection, window_visibility)
from trex.training.model.model import Transformer, rope_tables


def test_compressed_entries_are_causal_by_hand():
    vis = compressed_visibility(10, 4)
    assert vis.shape == (10, 2)
    # entry 0 covers tokens 0..3, entry 1 tokens 4..7: visible from t = 3 and t = 7 on
    assert vis[:, 0].tolist() == [False] * 3 + [True] * 7
    assert vis[:, 1].tolist() == [False] * 7 + [True] * 3
    for t in range(10):
        for w in range(2):
            window_end = (w + 1) * 4 - 1
            assert bool(vis[t, w]) == (window_end <= t)


def test_window_visibility_by_hand():
    vis = window_visibility(6, 3)
    assert vis[5].tolist() == [False, False, False, True, True, True]
    assert vis[0].tolist() == [True] + [False] * 5


@pytest.mark.parametrize("ratio,reach", [(4, 2), (16, 1)])
def test_compressor_entry_reads_only_its_windows(ratio, reach):
    """CSA (ratio 4, overlapping) entry i pools windows i-1 and i; HCA pools window i only."""
    torch.manual_seed(0)
    dim, head_dim, seq_len = 16, 32, 4 * ratio    # tiny rope_head_dim is 16
    comp = Compressor(dim, head_dim, ratio, eps=1e-6)
    for p in comp.parameters():
        torch.nn.init.normal_(p, std=0.3)
    freqs = rope_tables(get_config("tiny"), seq_len, None)["compressed"]
    x = torch.randn(1, seq_len, dim, requires_grad=True)
    entries = comp(x, freqs)
    assert entries.shape == (1, seq_len // ratio, head_dim)
    for i in range(seq_len // ratio):
        (grad,) = torch.autograd.grad(entries[0, i].sum(), x, retain_graph=True)
        touched = grad[0].abs().sum(-1) > 0
        first = max(0, (i - reach + 1) * ratio)
        expected = torch.zeros(seq_len, dtype=torch.bool)
        expected[first:(i + 1) * ratio] = True
        assert torch.equal(touched, expected), f"entry {i}"


@pytest.mark.parametrize("layer_id", [0, 1, 2])
def test_each_attention_kind_is_causal(layer_id, tiny_args):
    """Changing tokens after t never changes the layer output at positions <= t."""
    torch.manual_seed(0)
    model = Transformer(tiny_args)
    attn = model.layers[layer_id].attn
    assert attn.kind == {0: "swa", 1: "csa", 2: "hca"}[layer_id]
    seq_len = 64
    freqs = rope_tables(tiny_args, seq_len, None)["compressed" if attn.ratio else "window"]
    x = torch.randn(2, seq_len, tiny_args.dim)
    with torch.no_grad():
        base = attn(x, freqs)
        for t in (5, 17, 40):
            x2 = x.clone()
            x2[:, t + 1:] = torch.randn_like(x2[:, t + 1:])
            out = attn(x2, freqs)
            torch.testing.assert_close(out[:, :t + 1], base[:, :t + 1], atol=1e-5, rtol=1e-5)
            assert not torch.allclose(out[:, t + 1:], base[:, t + 1:])


def test_swa_layer_ignores_tokens_outside_the_window(tiny_args):
    torch.manual_seed(0)
    attn = Transformer(tiny_args).layers[0].attn          # SWA-only, window 16
    freqs = rope_tables(tiny_args, 64, None)["window"]
    x = torch.randn(1, 64, tiny_args.dim)
    with torch.no_grad():
        base = attn(x, freqs)
        x2 = x.clone()
        x2[:, :20] = torch.randn_like(x2[:, :20])         # tokens 0..19 are out of reach of t >= 35
        out = attn(x2, freqs)
    torch.testing.assert_close(out[:, 35:], base[:, 35:], atol=1e-5, rtol=1e-5)


def test_sink_adds_to_the_denominator_only():
    torch.manual_seed(0)
    q, kv = torch.randn(1, 5, 2, 8), torch.randn(1, 5, 8)
    vis = window_visibility(5, 5)
    no_sink = sink_attention(q, kv, vis, torch.full((2,), -1e9), 0.5)
    scores = torch.einsum("bthd,bsd->bhts", q, kv) * 0.5
    probs = scores.masked_fill(~vis, float("-inf")).softmax(-1)
    torch.testing.assert_close(no_sink, torch.einsum("bhts,bsd->bthd", probs, kv), atol=1e-6, rtol=1e-6)
    sink = torch.tensor([0.0, 2.0])
    with_sink = sink_attention(q, kv, vis, sink, 0.5)
    # output = softmax part scaled by sum(exp) / (sum(exp) + exp(sink))
    denom = torch.exp(scores.masked_fill(~vis, float("-inf"))).sum(-1)       # [1, H, T]
    factor = (denom / (denom + torch.exp(sink)[None, :, None])).permute(0, 2, 1)[..., None]
    torch.testing.assert_close(with_sink, no_sink * factor, atol=1e-6, rtol=1e-5)


def test_topk_selection_picks_the_highest_visible_scores():
    scores = torch.tensor([[0.1, 0.9, float("-inf"), 0.5], [0.3, 0.2, 0.1, 0.0]])
    sel = topk_selection(scores, 2)
    assert sel.tolist() == [[False, True, False, True], [True, True, False, False]]
    assert topk_selection(scores, 10).all()                 # k clipped to the number of entries


def test_csa_selection_changes_the_output(tiny_args):
    """With index_topk below the visible count the indexer really drops entries."""
    torch.manual_seed(0)
    model = Transformer(tiny_args)
    attn = model.layers[1].attn
    freqs = rope_tables(tiny_args, 64, None)["compressed"]
    x = torch.randn(1, 64, tiny_args.dim)
    with torch.no_grad():
        sparse = attn(x, freqs)
        attn.index_topk = 16                                   # every entry (64 // 4)
        dense = attn(x, freqs)
    # queries with at most 4 visible entries ((t + 1) // 4 <= 4, t <= 18) select everything either way
    torch.testing.assert_close(sparse[:, :19], dense[:, :19])
    assert not torch.allclose(sparse[:, 19:], dense[:, 19:])


def test_indexer_gets_no_lm_gradient(tiny_model):
    tokens = torch.randint(0, 4096, (1, 64))
    logits, mtp = tiny_model(tokens)
    (logits.float().square().mean() + mtp.float().square().mean()).backward()
    for name, p in tiny_model.named_parameters():
        if ".indexer." in name:
            assert p.grad is None, name
        else:
            assert p.grad is not None, name


def test_grouped_output_projection_is_block_diagonal():
    args = get_config("tiny")
    torch.manual_seed(0)
    attn = Attention(args, 0)
    torch.nn.init.normal_(attn.wo_a.weight)
    torch.nn.init.normal_(attn.wo_b.weight)
    o = torch.randn(1, 3, args.n_heads, args.head_dim)
    out = attn.output_projection(o)
    g, r = args.o_groups, args.o_lora_rank
    per_group = args.n_heads * args.head_dim // g
    flat = o.flatten(2)
    parts = [flat[..., i * per_group:(i + 1) * per_group] @ attn.wo_a.weight[i * r:(i + 1) * r].t()
             for i in range(g)]
    torch.testing.assert_close(out, torch.cat(parts, -1) @ attn.wo_b.weight.t(), atol=1e-4, rtol=1e-4)


def test_indexer_kl_by_hand():
    from trex.training.model.attention import indexer_kl

    index = torch.tensor([[[0.0, 0.0, 5.0], [1.0, 2.0, float("-inf")]]])       # [B=1, T=2, W=3]
    selected = torch.tensor([[[False, False, False], [True, True, False]]])   # query 0 has no entries
    probs = torch.zeros(1, 2, 2, 3)                                            # [B, H, T, W]
    probs[0, 0, 1, 0], probs[0, 1, 1, 1] = 0.3, 0.1                            # target (0.75, 0.25)
    kl = indexer_kl(index, probs, selected)
    q = torch.softmax(torch.tensor([1.0, 2.0]), 0)
    p = torch.tensor([0.75, 0.25])
    torch.testing.assert_close(kl, (p * (p / q).log()).sum())
    index = index.clone().requires_grad_(True)
    indexer_kl(index, probs, selected).backward()
    assert torch.isfinite(index.grad).all() and (index.grad[0, 0] == 0).all()


def test_indexer_loss_trains_the_indexer_without_changing_outputs(tiny_args):
    tokens = torch.randint(0, 4096, (1, 64))
    outputs = []
    for weight in (0.0, 1.0):
        torch.manual_seed(0)
        model = Transformer(tiny_args.replace(indexer_loss_weight=weight))
        logits, mtp = model(tokens)
        outputs.append(logits.detach())
        (logits.float().square().mean() + mtp.float().square().mean()).backward()
        indexer_grads = [p.grad for n, p in model.named_parameters() if ".indexer." in n]
        if weight == 0:
            assert all(g is None for g in indexer_grads)
        else:
            assert all(g is not None and torch.isfinite(g).all() for g in indexer_grads)
            assert any(g.abs().sum() > 0 for g in indexer_grads)
    torch.testing.assert_close(outputs[0], outputs[1])


def test_indexer_kl_decreases_when_training_the_indexer(tiny_args):
    from trex.training.model.attention import compressed_visibility, indexer_kl, sink_attention, topk_selection

    torch.manual_seed(0)
    attn = Transformer(tiny_args.replace(index_topk=16)).layers[1].attn    # select all: a fixed target
    freqs = rope_tables(tiny_args, 64, None)["compressed"]
    x = torch.randn(2, 64, tiny_args.dim)
    opt = torch.optim.Adam(attn.indexer.parameters(), lr=1e-2)

    def kl_now():
        with torch.no_grad():
            q_latent = attn.q_norm(attn.wq_a(x))
        visible = compressed_visibility(64, 4).expand(2, 64, 16)
        index = attn.indexer(x, q_latent, freqs, visible)
        with torch.no_grad():       # main attention probabilities on the compressed entries
            q = attn.wq_b(q_latent).unflatten(-1, (attn.n_heads, attn.head_dim))
            q = torch.nn.functional.rms_norm(q, (attn.head_dim,), eps=1e-6)
            entries = attn.compressor(x, freqs)
            probs = torch.einsum("bthd,bsd->bhts", q, entries).softmax(-1)
        return indexer_kl(index, probs, visible & topk_selection(index, 16))

    first = kl_now().item()
    for _ in range(30):
        loss = kl_now()
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert kl_now().item() < 0.7 * first
