"""mHC math (spec §1): Sinkhorn, pre-projection ranges, the transpose in hc_post, hc_head."""
import torch

from trex.training.model.mhc import hc_head, hc_post, mhc_pre, sinkhorn


def test_sinkhorn_columns_sum_to_one_and_rows_approach_one():
    torch.manual_seed(0)
    logits = torch.randn(64, 4, 4) * 2
    row_errors = []
    for iters in (1, 5, 20, 100):
        m = sinkhorn(logits, iters=iters, eps=1e-6)
        assert (m > 0).all()
        # the last pass is a column pass: column sums are s / (s + eps), 1 up to the eps guard
        torch.testing.assert_close(m.sum(-2), torch.ones(64, 4), atol=1e-4, rtol=0)
        exact = sinkhorn(logits.double(), iters=iters, eps=0.0)
        torch.testing.assert_close(exact.sum(-2), torch.ones(64, 4, dtype=torch.float64), atol=1e-12, rtol=0)
        row_errors.append(float((m.sum(-1) - 1).abs().max()))
    # rows approach 1 as the iterations grow (20 is the V4 setting)
    assert row_errors == sorted(row_errors, reverse=True)
    assert row_errors[2] < 0.05 and row_errors[3] < 5e-3


def test_sinkhorn_of_uniform_logits_is_uniform():
    m = sinkhorn(torch.zeros(4, 4), iters=20, eps=0.0)
    torch.testing.assert_close(m, torch.full((4, 4), 0.25))


def _site_params(n, d, scale=1.0):
    torch.manual_seed(1)
    fn = torch.randn((2 + n) * n, n * d) * 0.05 * scale
    base = torch.randn((2 + n) * n) * 0.1
    gains = torch.tensor([1.0, 1.0, 1.0])
    return fn, gains, base


def test_mhc_pre_ranges_and_collapse():
    n, d = 4, 32
    x = torch.randn(2, 5, n, d)
    fn, gains, base = _site_params(n, d)
    layer_input, post, comb = mhc_pre(x, fn, gains, base, iters=20, hc_eps=1e-6, rms_eps=1e-6)
    assert layer_input.shape == (2, 5, d) and post.shape == (2, 5, n) and comb.shape == (2, 5, n, n)
    assert ((post > 0) & (post < 2)).all()
    torch.testing.assert_close(comb.sum(-2), torch.ones(2, 5, n), atol=1e-5, rtol=0)
    # recompute pre by hand: sigmoid(scale0 * rmsnorm(x) @ fn[:n]^T + base[:n]) + eps, then collapse
    xf = x.flatten(-2)
    z = (xf / xf.pow(2).mean(-1, keepdim=True).add(1e-6).sqrt()) @ fn.t()
    pre = torch.sigmoid(z[..., :n] + base[:n]) + 1e-6
    torch.testing.assert_close(layer_input, (pre[..., None] * x).sum(-2))


def test_mhc_pre_with_zero_fn_is_static_and_input_independent():
    n, d = 4, 8
    fn = torch.zeros((2 + n) * n, n * d)
    base = torch.zeros((2 + n) * n)
    x = torch.randn(3, n, d)
    layer_input, post, comb = mhc_pre(x, fn, torch.ones(3), base, iters=20, hc_eps=1e-6, rms_eps=1e-6)
    torch.testing.assert_close(post, torch.ones(3, n))                 # 2 * sigmoid(0)
    torch.testing.assert_close(comb, torch.full((3, n, n), 0.25), atol=1e-5, rtol=0)
    torch.testing.assert_close(layer_input, (0.5 + 1e-6) * x.sum(-2))  # pre = sigmoid(0) + eps


def test_hc_post_uses_the_transpose_of_comb():
    n, d = 4, 3
    residual = torch.arange(n * d, dtype=torch.float32).view(1, n, d)
    perm = torch.tensor([2, 0, 3, 1])
    comb = torch.zeros(1, n, n)
    comb[0, perm, torch.arange(n)] = 1.0             # comb[j, k] = 1 iff input j feeds output k
    y = torch.ones(1, d)
    post = torch.full((1, n), 0.5)
    out = hc_post(y, residual, post, comb)
    for k in range(n):
        torch.testing.assert_close(out[0, k], residual[0, perm[k]] + 0.5)


def test_hc_head_weights_streams_by_sigmoid():
    n, d = 4, 6
    x = torch.randn(2, n, d)
    fn = torch.zeros(n, n * d)
    base = torch.tensor([0.0, 1.0, -1.0, 2.0])
    out = hc_head(x, fn, torch.ones(1), base, hc_eps=1e-6, rms_eps=1e-6)
    weights = torch.sigmoid(base) + 1e-6
    torch.testing.assert_close(out, (weights[:, None] * x).sum(-2))


from hypothesis import given, settings
from hypothesis import strategies as st


@settings(max_examples=40)
@given(n=st.integers(2, 6), scale=st.floats(0.0, 4.0), iters=st.integers(1, 30), seed=st.integers(0, 2 ** 16))
def test_sinkhorn_property(n, scale, iters, seed):
    """Any logits: positive entries, exact columns (eps = 0, fp64), rows no worse than after one pass."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(8, n, n, generator=g, dtype=torch.float64) * scale
    m = sinkhorn(logits, iters=iters, eps=0.0)
    assert (m > 0).all()
    torch.testing.assert_close(m.sum(-2), torch.ones(8, n, dtype=torch.float64), atol=1e-12, rtol=0)
    first = (sinkhorn(logits, iters=1, eps=0.0).sum(-1) - 1).abs().max()
    assert (m.sum(-1) - 1).abs().max() <= first + 1e-12
