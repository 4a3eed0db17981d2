"""Vector instructions: count form against torch, repeat form against the documented addressing."""
import numpy as np
import pytest
import torch

from emulator_reference import ref_repeat

G = torch.Generator().manual_seed(0)
BINARY = {0: torch.add, 1: torch.sub, 2: torch.mul, 3: torch.div, 4: torch.maximum, 5: torch.minimum}


def _randn(n, dtype=torch.float32, scale=3.0):
    return (torch.randn(n, generator=G) * scale).to(dtype)


@pytest.mark.parametrize("n", [1, 64, 333])
@pytest.mark.parametrize("op", list(BINARY), ids=["Add", "Sub", "Mul", "Div", "Max", "Min"])
def test_binary_float_bit_exact(api, op, n):
    a, b = _randn(n), _randn(n)
    if n > 2:
        a[0], b[1] = float("nan"), float("inf")
    out = torch.zeros(n)
    api.launch("vec_binary", 1, a, b, out, n, op)
    torch.testing.assert_close(out, BINARY[op](a, b), rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("op", [0, 2, 3], ids=["Add", "Mul", "Div"])
def test_binary_half_rounds_once_like_torch(api, op):
    n = 200
    a, b = _randn(n, torch.float16), _randn(n, torch.float16)
    out = torch.zeros(n, dtype=torch.float16)
    api.launch("vec_binary_half", 1, a, b, out, n, op)
    assert torch.equal(out, BINARY[op](a, b))


def _np(f):
    """Reference through numpy float32, whose sqrt/divide are correctly rounded (torch's vectorised
    CPU sqrt is not always: it can be 1 ulp off)."""
    return lambda x: torch.from_numpy(f(x.numpy()).astype(np.float32))


UNARY = {
    0: ("Exp", torch.exp, 1e-6), 1: ("Ln", torch.log, 1e-6), 2: ("Abs", torch.abs, 0),
    3: ("Sqrt", _np(np.sqrt), 0), 4: ("Rsqrt", _np(lambda v: np.float32(1.0) / np.sqrt(v)), 0),
    5: ("Reciprocal", _np(lambda v: np.float32(1.0) / v), 0),
    6: ("Relu", torch.relu, 0), 7: ("Adds", lambda x: x + 0.75, 0), 8: ("Muls", lambda x: x * 0.75, 0),
    9: ("Maxs", lambda x: torch.clamp_min(x, 0.75), 0), 10: ("Mins", lambda x: torch.clamp_max(x, 0.75), 0),
    11: ("LeakyRelu", lambda x: torch.where(x >= 0, x, x * 0.75), 0),
    12: ("Duplicate", lambda x: torch.full_like(x, 0.75), 0),
}


@pytest.mark.parametrize("op", list(UNARY), ids=[v[0] for v in UNARY.values()])
def test_unary_and_scalar_ops(api, op):
    name, ref, rtol = UNARY[op]
    n = 150
    x = _randn(n)
    if name in ("Ln", "Sqrt", "Rsqrt"):
        x = x.abs() + 1e-3
    out = torch.zeros(n)
    c = api.launch("vec_unary", 1, x, out, n, op, 0.75)
    torch.testing.assert_close(out, ref(x), rtol=rtol, atol=0)
    assert c["vector_repeats"] == {name: 3}  # ceil(150 * 4 / 256)


@pytest.mark.parametrize("kind,mask,repeat,strides", [
    (0, 64, 4, (1, 1, 1, 8, 8, 8)),        # contiguous
    (0, 20, 3, (2, 1, 0, 16, 8, 0)),       # partial mask, dst block stride 2, src1 broadcast block 0
    (2, 0x8F0F_F0F1, 2, (1, 1, 1, 8, 8, 8)),  # bit mask (kernel passes {mask, 0})
    (1, 40, 3, (1, 2, 0, 8, 16, 0)),       # unary Exp with src block stride 2
])
def test_repeat_form_addressing(api, kind, mask, repeat, strides):
    dst_blk, s0_blk, s1_blk, dst_rep, s0_rep, s1_rep = strides
    span = lambda blk, rep: max(8, repeat * rep * 8 + 8 * blk * 8)
    na, nb, nout = span(s0_blk, s0_rep), span(s1_blk, s1_rep), span(dst_blk, dst_rep)
    a, b = _randn(na, scale=1.0), _randn(nb, scale=1.0)
    out = torch.full((nout,), 42.0)
    mask_bits = mask if kind == 2 else (1 << mask) - 1
    api.launch("vec_repeat", 1, a, b, out, na, nb, nout, kind, mask, repeat, *strides)
    f = (lambda x, y: torch.exp(x)) if kind == 1 else (lambda x, y: x + y)
    want = ref_repeat(a, b, torch.full((nout,), 42.0), mask_bits, repeat, *strides, f)
    torch.testing.assert_close(out, want, rtol=1e-6 if kind == 1 else 0, atol=0)


def test_accumulate_trick_sums_rows_in_order(api):
    rows = 5
    x = _randn(rows * 64)
    out = torch.zeros(64)
    c = api.launch("vec_accumulate", 1, x, out, rows)
    want = torch.zeros(64)
    for r in range(rows):  # repeat r sees repeat r-1's write: a running sum in row order
        want = want + x[r * 64:(r + 1) * 64]
    assert torch.equal(out, want)
    assert c["vector_repeats"]["Add"] == rows


def test_brcb_and_block_broadcast_multiply(api):
    rows = 16
    s, x = _randn(rows), _randn(rows * 8)
    bcast, out = torch.zeros(rows * 8), torch.zeros(rows * 8)
    c = api.launch("vec_brcb", 1, s, x, bcast, out, rows)
    assert torch.equal(bcast, s.repeat_interleave(8))
    assert torch.equal(out, (x.view(rows, 8) * s[:, None]).reshape(-1))
    assert c["vector_repeats"]["Brcb"] == rows // 8


CMP = {0: torch.lt, 1: torch.gt, 2: torch.eq, 3: torch.le, 4: torch.ge, 5: torch.ne}


@pytest.mark.parametrize("mode", list(CMP), ids=["LT", "GT", "EQ", "LE", "GE", "NE"])
@pytest.mark.parametrize("which", [0, 1, 2], ids=["tensor", "scalar", "cmpmask_spr"])
def test_compare_and_select(api, mode, which):
    n = 128
    a = torch.randint(-3, 4, (n,), generator=G).float()
    b = torch.randint(-3, 4, (n,), generator=G).float()
    scalar = 1.0
    out, mask = torch.zeros(n), torch.zeros(n // 8, dtype=torch.uint8)
    api.launch("vec_cmpsel", 1, a, b, out, mask, n, mode, scalar, which)
    cond = CMP[mode](a, scalar) if which == 1 else CMP[mode](a, b)
    want_bits = np.packbits(cond.numpy(), bitorder="little")
    np.testing.assert_array_equal(mask.numpy(), want_bits)
    if which == 0:
        want = torch.where(cond, a, b)
    elif which == 1:
        want = torch.where(cond, a, torch.full_like(a, scalar))
    else:  # the first 64 bits are reused for every repeat
        want = torch.where(cond[torch.arange(n) % 64], a, b)
    assert torch.equal(out, want)


def _misc(api, which):
    a = torch.randn(128, generator=G)
    h = torch.randn(128, generator=G).half()
    out = torch.full((128,), -5.0)
    c = api.launch("misc_forms", 1, a, h, out, which)
    return a, h, out, c


def test_counter_mask_mode(api):
    a, _, out, c = _misc(api, 0)
    assert torch.equal(out[:100], a[:100] + a[:100]) and torch.all(out[100:] == -5.0)
    assert c["vector_repeats"]["Add"] == 2  # the repeat count follows from the counter


def test_normal_mask_register(api):
    a, _, out, _ = _misc(api, 1)
    lanes = torch.tensor([(i % 64) in (0, 1, 2, 3, 8, 9, 10, 11) for i in range(128)])
    assert torch.equal(out[lanes], a[lanes] * 2.0) and torch.all(out[~lanes] == -5.0)


def test_cast_copy_index_and_block_max_repeat_forms(api):
    _, h, out, _ = _misc(api, 2)
    assert torch.equal(out, h.float())
    a, _, out, _ = _misc(api, 3)
    assert torch.equal(out, a)
    _, _, out, _ = _misc(api, 4)
    assert torch.equal(out[:100], torch.arange(100, dtype=torch.float32) + 5.0) and torch.all(out[100:] == -5.0)
    a, _, out, _ = _misc(api, 5)
    assert torch.equal(out[:8], a[:64].view(8, 8).max(-1).values) and torch.all(out[8:] == -5.0)


def test_widening_cast_in_place_upper_half_trick(api):
    _, h, out, c = _misc(api, 6)
    assert torch.equal(out, h.float())
    assert c["mte2_bytes"] == 128 * 4 + 128 * 2 + 128 * 4 + 128 * 2  # three LoadPads, then the upper-half DataCopy


@pytest.mark.parametrize("which", [0, 1, 2], ids=["compare_repeat", "compare_register", "select_repeat"])
def test_compare_select_other_forms(api, which):
    a = torch.randint(-2, 3, (128,), generator=G).float()
    b = torch.randint(-2, 3, (128,), generator=G).float()
    out, mask = torch.full((128,), -9.0), torch.zeros(16, dtype=torch.uint8)
    api.launch("cmpsel_forms", 1, a, b, out, mask, which)
    if which == 0:
        np.testing.assert_array_equal(mask.numpy(), np.packbits((a < b).numpy(), bitorder="little"))
    elif which == 1:  # one repeat into the CMPMASK register: 64 bits, the rest zero
        want = np.packbits((a[:64] > b[:64]).numpy(), bitorder="little")
        np.testing.assert_array_equal(mask.numpy()[:8], want)
        assert not mask[8:].any()
    else:
        assert torch.equal(out, torch.where(a < b, a, b))
