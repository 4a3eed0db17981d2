"""Partial interleaved RoPE (spec §3): inverse, pair layout, relative positions, YaRN."""
import math

import torch

from trex.training.model.functional import apply_rope, rope_frequencies, rope_table


def _table(rope_dim=16, seq_len=40, yarn=False):
    inv = rope_frequencies(rope_dim, 160000.0 if yarn else 10000.0, yarn=yarn, factor=16.0,
                           original_seq_len=65536, beta_fast=32, beta_slow=1)
    return rope_table(inv, seq_len)


def test_inverse_rope_undoes_rope():
    torch.manual_seed(0)
    freqs = _table()
    x = torch.randn(2, 40, 3, 64)
    y = apply_rope(x, freqs.unsqueeze(-2))
    assert not torch.allclose(y, x)
    torch.testing.assert_close(apply_rope(y, freqs.unsqueeze(-2), inverse=True), x, atol=1e-5, rtol=1e-5)


def test_only_the_last_rope_dims_rotate_as_interleaved_pairs():
    freqs = _table(rope_dim=4, seq_len=3)
    x = torch.zeros(3, 8)
    x[:, :4] = 7.0
    x[:, 4] = 1.0          # pair (4, 5) = 1 + 0i, frequency index 0
    x[:, 6] = 1.0          # pair (6, 7) = 1 + 0i, frequency index 1
    y = apply_rope(x, freqs)
    torch.testing.assert_close(y[:, :4], x[:, :4])
    inv = rope_frequencies(4, 10000.0, yarn=False)
    pos = torch.arange(3.0)
    torch.testing.assert_close(y[:, 4], torch.cos(pos * inv[0]))
    torch.testing.assert_close(y[:, 5], torch.sin(pos * inv[0]))
    torch.testing.assert_close(y[:, 6], torch.cos(pos * inv[1]))
    torch.testing.assert_close(y[:, 7], torch.sin(pos * inv[1]))


def test_scores_depend_only_on_relative_position():
    torch.manual_seed(0)
    freqs = _table(seq_len=40)
    q, k = torch.randn(16), torch.randn(16)
    def score(tq, tk):
        return (apply_rope(q, freqs[tq]) * apply_rope(k, freqs[tk])).sum()
    torch.testing.assert_close(score(10, 3), score(30, 23), atol=1e-4, rtol=1e-4)


def test_rope_keeps_bf16_dtype_and_backward_is_inverse_rotation():
    freqs = _table()
    x = torch.randn(40, 32, requires_grad=True)
    y = apply_rope(x, freqs)
    g = torch.randn_like(y)
    y.backward(g)
    torch.testing.assert_close(x.grad, apply_rope(g, freqs, inverse=True), atol=1e-5, rtol=1e-5)
    assert apply_rope(x.detach().bfloat16(), freqs).dtype == torch.bfloat16


def test_yarn_interpolates_low_frequencies_only():
    base = rope_frequencies(64, 160000.0, yarn=False)
    yarn = rope_frequencies(64, 160000.0, yarn=True, factor=16.0, original_seq_len=65536,
                            beta_fast=32, beta_slow=1)
    torch.testing.assert_close(yarn[0], base[0])                  # highest frequency untouched
    torch.testing.assert_close(yarn[-1], base[-1] / 16.0)         # lowest divided by the factor
    assert (yarn <= base + 1e-12).all()
    # unit magnitude: no mscale (spec §3)
    torch.testing.assert_close(rope_table(yarn, 8).abs(), torch.ones(8, 32))
    assert math.isclose(float(base[1] / base[0]), 160000.0 ** (-2 / 64), rel_tol=1e-5)


from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=40)
@given(rope_pairs=st.integers(1, 8), nope=st.integers(0, 12), heads=st.integers(1, 3),
       seq_len=st.integers(1, 9), dtype=st.sampled_from([torch.float32, torch.bfloat16]),
       yarn=st.booleans(), seed=st.integers(0, 2 ** 16))
def test_rope_inverse_property(rope_pairs, nope, heads, seq_len, dtype, yarn, seed):
    """For any head layout, dtype and table: inverse(rope(x)) == x (up to dtype rounding) and the
    non-rope channels pass through bit-exactly."""
    g = torch.Generator().manual_seed(seed)
    rope_dim = 2 * rope_pairs
    inv = rope_frequencies(rope_dim, 160000.0, yarn=yarn, factor=16.0, original_seq_len=65536,
                           beta_fast=32, beta_slow=1)
    freqs = rope_table(inv, seq_len).unsqueeze(-2)
    x = torch.randn(2, seq_len, heads, nope + rope_dim, generator=g).to(dtype)
    y = apply_rope(x, freqs)
    assert y.dtype == dtype and y.shape == x.shape
    assert torch.equal(y[..., :nope], x[..., :nope])
    back = apply_rope(y, freqs, inverse=True)
    tol = 1e-5 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(back.float(), x.float(), atol=tol * 4, rtol=tol)
