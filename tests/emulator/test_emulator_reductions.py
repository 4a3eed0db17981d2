"""Reductions: WholeReduceSum/Max, BlockReduceSum, ReduceSum/ReduceMax/ReduceMin."""
import numpy as np
import pytest
import torch

G = torch.Generator().manual_seed(1)


def tree_sum_f32(values: np.ndarray, width: int) -> np.float32:
    """Binary-tree sum over `width` lanes (adjacent pairs first), each partial rounded to float32."""
    v = np.zeros(width, np.float32)
    v[: len(values)] = values
    while len(v) > 1:
        v = (v[0::2] + v[1::2]).astype(np.float32)
    return v[0]


@pytest.mark.parametrize("rows,d", [(7, 37), (3, 64), (1, 1)])
def test_whole_reduce_sum_per_row_tree(api, rows, d):
    x = torch.randn(rows, d, generator=G)
    out = torch.zeros(rows)
    c = api.launch("vec_reduce_rows", 1, x, out, rows, d, 0)
    want = np.array([tree_sum_f32(r, 64) for r in x.numpy()], np.float32)
    np.testing.assert_array_equal(out.numpy(), want)
    torch.testing.assert_close(out, x.sum(-1), rtol=1e-5, atol=1e-5)
    assert c["vector_repeats"]["WholeReduceSum"] == rows


def test_whole_reduce_max_value_and_first_index(api):
    rows, d = 5, 37
    x = torch.randn(rows, d, generator=G)
    x[2, 10] = x[2, 30] = 9.0  # tie: the smaller index wins
    out = torch.zeros(rows * 2)
    api.launch("vec_reduce_rows", 1, x, out, rows, d, 1)
    pairs = out.view(rows, 2)
    assert torch.equal(pairs[:, 0], x.max(-1).values)
    index = pairs[:, 1].contiguous().view(torch.int32)  # the index is stored as the bits of an integer
    assert torch.equal(index, x.argmax(-1).to(torch.int32))
    assert index[2] == 10

    only = torch.zeros(rows)
    api.launch("vec_reduce_rows", 1, x, only, rows, d, 2)
    assert torch.equal(only, x.max(-1).values)


def test_block_reduce_sum_eight_results_per_repeat(api):
    rows = 3
    x = torch.randn(rows, 64, generator=G)
    out = torch.zeros(rows * 8)
    api.launch("vec_reduce_rows", 1, x, out, rows, 64, 3)
    want = np.array([tree_sum_f32(b, 8) for b in x.numpy().reshape(-1, 8)], np.float32)
    np.testing.assert_array_equal(out.numpy(), want)


def _hierarchical_sum(x: np.ndarray) -> np.float32:
    level = x.astype(np.float32)
    while True:
        groups = [tree_sum_f32(level[i:i + 64], 64) for i in range(0, len(level), 64)]
        level = np.array(groups, np.float32)
        if len(level) == 1:
            return level[0]


@pytest.mark.parametrize("n", [1, 63, 1000, 5000])
def test_reduce_sum_count_form(api, n):
    x = torch.randn(n, generator=G)
    out = torch.zeros(2)
    c = api.launch("vec_reduce_all", 1, x, out, n, 0)
    assert out[0].item() == _hierarchical_sum(x.numpy())
    torch.testing.assert_close(out[0], x.sum(), rtol=1e-5, atol=1e-4)
    assert c["vector_repeats"]["ReduceSum"] == -(-n * 4 // 256)  # count-form repeats


def test_reduce_max_with_index_and_min(api):
    n = 777
    x = torch.randn(n, generator=G)
    out = torch.zeros(2)
    api.launch("vec_reduce_all", 1, x, out, n, 1)
    assert out[0] == x.max()
    assert out[1:].view(torch.int32).item() == int(x.argmax())
    api.launch("vec_reduce_all", 1, x, out, n, 2)
    assert out[0] == x.min()
