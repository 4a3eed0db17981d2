"""greedy_generate_padded's KV-cached decoding of a trex.training.model.Transformer (trex.training.model.decode;
its logits against the full forward: tests/model/test_decode_cache.py) gives the tokens of one-by-one
decoding, and falls back to the cache-free path when the cache fails."""
import pytest
import torch

from trex.training.or_eval.generate import greedy_generate, greedy_generate_padded



def test_cached_decoding_gives_the_tokens_of_one_by_one_decoding(noised_tiny_model):
    # index_topk above the number of compressed entries: no exact tie for torch.topk to order
    model = noised_tiny_model(index_topk=64)
    g = torch.Generator().manual_seed(2)
    prompts = [torch.randint(3, 300, (n,), generator=g).tolist() for n in (1, 15, 16, 31, 60)]
    one_by_one = [greedy_generate(model, p, 20, eos_id=None) for p in prompts]
    assert greedy_generate_padded(model, prompts, 20, eos_id=None, batch_size=4) == one_by_one
    # with an eos, each greedy response is the one above cut after its first eos; rows finishing
    # early leave the batch while the others go on
    eos = one_by_one[1][5]
    with_eos = [r[:r.index(eos) + 1] if eos in r else r for r in one_by_one]
    assert any(len(r) < 20 for r in with_eos) and any(len(r) == 20 for r in with_eos)
    assert greedy_generate_padded(model, prompts, 20, eos_id=eos) == with_eos


def test_a_failing_cache_falls_back_to_the_same_tokens_with_a_warning(monkeypatch, noised_tiny_model):
    """A cache that raises (a device or dtype it was never run on) costs a warning, not the
    evaluation: the batch and every later one decode without it, to the same tokens."""
    import trex.training.or_eval.generate as generate
    model = noised_tiny_model(index_topk=64)
    prompts = [[1, 5, 9, 11], [1, 2], [7, 3, 3]]
    expected = [greedy_generate(model, p, 5, eos_id=None) for p in prompts]

    def broken(*args, **kwargs):
        raise RuntimeError("planted cache failure")

    monkeypatch.setattr(generate, "_decode_cached", broken)
    with pytest.warns(RuntimeWarning, match="planted cache failure"):
        got = greedy_generate_padded(model, prompts, 5, eos_id=None, batch_size=2)
    assert got == expected


class _CompiledStandIn(torch.nn.Module):
    """What torch.compile returns, as far as decoding can tell (the module under ``_orig_mod``);
    calling it fails, so a decoding that runs the wrapper (and would recompile per shape) fails."""

    def __init__(self, module):
        super().__init__()
        self._orig_mod = module

    def forward(self, *args, **kwargs):
        raise AssertionError("decoding called the compiled wrapper instead of the eager module")


def test_decoding_runs_the_eager_module_under_a_compiled_wrapper(noised_tiny_model):
    model = noised_tiny_model(index_topk=64)
    prompts = [[1, 5, 9, 11], [1, 2]]
    expected = [greedy_generate(model, p, 6, eos_id=None) for p in prompts]
    assert greedy_generate_padded(_CompiledStandIn(model), prompts, 6, eos_id=None) == expected


def test_rows_too_long_for_the_cache_take_the_sliding_window_path(noised_tiny_model):
    model = noised_tiny_model(index_topk=64, max_seq_len=40)
    g = torch.Generator().manual_seed(3)
    # 30 + 12 - 1 > 40: that row slides its window; 10 + 12 - 1 fits and is cached
    prompts = [torch.randint(3, 300, (n,), generator=g).tolist() for n in (10, 30)]
    one_by_one = [greedy_generate(model, p, 12, eos_id=None) for p in prompts]
    assert greedy_generate_padded(model, prompts, 12, eos_id=None) == one_by_one


@pytest.mark.parametrize("max_new", [0, 1])
def test_cached_decoding_of_zero_or_one_token(max_new, noised_tiny_model):
    model = noised_tiny_model(index_topk=64)
    prompts = [[1, 4, 4, 8], [1]]
    assert greedy_generate_padded(model, prompts, max_new, eos_id=None) == \
        [greedy_generate(model, p, max_new, eos_id=None) for p in prompts]
