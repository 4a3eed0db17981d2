"""trex.training.model.decode: the KV-cached incremental decoding of a Transformer gives the full forward's
logits at every position (and logits_at the full forward's at chosen positions), on parameters
with noise on every one of them."""
import pytest
import torch

import trex.training.model.attention as attention
from trex.training.model.decode import decode_step, logits_at, prefill


def _first_k_among_ties(index_scores: torch.Tensor, topk: int) -> torch.Tensor:
    """topk_selection with a fixed order among exactly tied scores (the lowest entry first).

    The indexer's scores tie exactly when relu zeroes every head (common in a random tiny model),
    and torch.topk's choice among ties depends on the row's length: the full forward and the cache
    see different lengths. With this order both pick the same entries, so the comparison below
    checks the cache and not topk's tie order."""
    k = min(topk, index_scores.shape[-1])
    order = index_scores.sort(dim=-1, descending=True, stable=True).indices[..., :k]
    return torch.zeros_like(index_scores, dtype=torch.bool).scatter(-1, order, True)


def test_cached_steps_match_the_full_forward_at_every_position(monkeypatch, noised_tiny_model):
    # the tiny config's own index_topk (4): the CSA top-k chooses among the compressed entries
    model = noised_tiny_model()
    assert model.args.index_topk < 70 // 4 and sorted(set(model.args.compress_ratios)) == [0, 4, 16]
    monkeypatch.setattr(attention, "topk_selection", _first_k_among_ties)
    seq = torch.randint(3, 300, (4, 70), generator=torch.Generator().manual_seed(5))
    # right-padded prompts of lengths below, at and past a window (16) and compress boundaries (4, 16)
    prompt_lengths = [1, 7, 16, 33]
    with torch.no_grad():
        full = model(seq)[0]
        padded = seq[:, :max(prompt_lengths)].clone()
        for r, n in enumerate(prompt_lengths):
            padded[r, n:] = 0
        logits, cache = prefill(model, padded, torch.tensor(prompt_lengths) - 1, capacity=70)
        assert torch.allclose(logits, full[torch.arange(4), torch.tensor(prompt_lengths) - 1], atol=1e-4)
        position = list(prompt_lengths)
        rows = [0, 1, 2, 3]
        while rows:
            logits = decode_step(model, cache, rows, [int(seq[r, position[r]]) for r in rows],
                                 [position[r] for r in rows])
            expected = full[torch.tensor(rows), torch.tensor([position[r] for r in rows])]
            assert torch.allclose(logits, expected, atol=1e-4), (rows, [position[r] for r in rows])
            for r in rows:
                position[r] += 1
            # rows leave at different positions, as finished rows leave the decoding batch
            rows = [r for r in rows if position[r] < 70 - 3 * r]


def test_logits_at_match_the_full_forward_at_the_chosen_positions(noised_tiny_model):
    model = noised_tiny_model(index_topk=64)
    tokens = torch.randint(0, 300, (3, 50), generator=torch.Generator().manual_seed(1))
    last = torch.tensor([10, 49, 3])
    with torch.no_grad():
        full = model(tokens)[0][torch.arange(3), last]
        assert torch.allclose(logits_at(model, tokens, last), full, atol=1e-5)


def test_decode_step_names_the_fix_for_a_position_past_the_capacity(noised_tiny_model):
    model = noised_tiny_model()
    with torch.no_grad():
        _, cache = prefill(model, torch.tensor([[1, 2, 3]]), torch.tensor([2]), capacity=4)
        decode_step(model, cache, [0], [7], [3])
        with pytest.raises(ValueError, match="larger capacity"):
            decode_step(model, cache, [0], [7], [4])
        with pytest.raises(ValueError, match="different model"):
            decode_step(noised_tiny_model(), cache, [0], [7], [3])
