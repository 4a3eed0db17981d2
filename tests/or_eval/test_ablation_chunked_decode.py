"""The ablation's one-batch decoder (trex.training.or_eval.chunked_decode): prefilling in row chunks
and decoding every row in one batch gives the tokens of generate.greedy_generate_padded (itself
tested against one-by-one decoding), with eos, a deadline and window checks."""
import time

import pytest
import torch

from trex.training.or_eval.chunked_decode import greedy_decode_one_batch, rows_per_prefill_chunk
from trex.training.or_eval.generate import greedy_generate_padded



@pytest.fixture
def sliding_only_model(noised_tiny_model):
    # every layer sliding-window with the window = the sequence (the ablation's WIDE_V4 layout)
    return noised_tiny_model(compress_ratios=[0] * 5, window_size=128)


def _prompts():
    g = torch.Generator().manual_seed(3)
    return [torch.randint(3, 300, (n,), generator=g).tolist() for n in (1, 9, 23, 40, 2)]


def test_chunked_prefill_one_batch_gives_the_padded_decoders_tokens(sliding_only_model):
    model, prompts = sliding_only_model, _prompts()
    expected = greedy_generate_padded(model, prompts, 10, eos_id=None, batch_size=3)
    for prefill_elements in (1, 1e12):                       # one row a chunk; every row in one chunk
        assert greedy_decode_one_batch(model, prompts, 10, eos_id=None,
                                       prefill_elements=prefill_elements) == expected
    eos = expected[2][4]
    with_eos = [r[:r.index(eos) + 1] if eos in r else r for r in expected]
    assert any(len(r) < 10 for r in with_eos) and any(len(r) == 10 for r in with_eos)
    two_rows = 2 * model.args.n_heads * 40 * 40                # chunks of 2 rows at the padded width 40
    assert greedy_decode_one_batch(model, prompts, 10, eos_id=eos, prefill_elements=two_rows) == with_eos


def test_compressed_layers_are_prefilled_in_one_chunk(noised_tiny_model):
    model = noised_tiny_model(index_topk=64)           # the tiny config's compressed layers
    prompts = _prompts()[:3]
    expected = greedy_generate_padded(model, prompts, 5, eos_id=None, batch_size=len(prompts))
    assert greedy_decode_one_batch(model, prompts, 5, eos_id=None, prefill_elements=1) == expected


def test_rows_per_chunk_deadline_and_window(sliding_only_model):
    model = sliding_only_model
    heads = model.args.n_heads
    assert rows_per_prefill_chunk(model, 100, 10, heads * 10 * 10 * 7) == 7
    assert rows_per_prefill_chunk(model, 100, 10, 1) == 1
    assert rows_per_prefill_chunk(model, 5, 10, 1e12) == 5
    prompts = _prompts()
    assert greedy_decode_one_batch(model, prompts, 8, eos_id=None, deadline=time.monotonic() - 1) == [None] * 5
    assert greedy_decode_one_batch(model, prompts, 0, eos_id=None) == [[]] * 5
    with pytest.raises(ValueError, match="window"):
        greedy_decode_one_batch(model, [[1] * 120], 16, eos_id=None)
