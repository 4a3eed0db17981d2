"""Property test: repeat-form addressing (masks, block and repeat strides) against the documented formula."""
import torch
from hypothesis import given, strategies as st

from emulator_reference import ref_repeat


@st.composite
def repeat_cases(draw):
    kind = draw(st.sampled_from([0, 2]))  # 0: continuous mask, 2: bit mask (low 32 bits)
    mask = draw(st.integers(1, 64)) if kind == 0 else draw(st.integers(1, 2 ** 32 - 1))
    repeat = draw(st.integers(1, 8))
    dst_blk = draw(st.integers(1, 4))   # dstBlkStride must not be 0 (asc-devkit 高维切分)
    s0_blk, s1_blk = draw(st.integers(0, 4)), draw(st.integers(0, 4))
    reps = [draw(st.integers(0, 16)) for _ in range(3)]
    return kind, mask, repeat, (dst_blk, s0_blk, s1_blk, *reps)


@given(case=repeat_cases(), seed=st.integers(0, 2 ** 16))
def test_repeat_form_matches_reference(api, case, seed):
    kind, mask, repeat, strides = case
    dst_blk, s0_blk, s1_blk, dst_rep, s0_rep, s1_rep = strides
    span = lambda blk, rep: max(8, (repeat - 1) * rep * 8 + 8 * blk * 8 + 8)
    na, nb, nout = span(s0_blk, s0_rep), span(s1_blk, s1_rep), span(dst_blk, dst_rep)
    g = torch.Generator().manual_seed(seed)
    a, b = torch.randn(na, generator=g), torch.randn(nb, generator=g)
    out = torch.full((nout,), 42.0)
    c = api.launch("vec_repeat", 1, a, b, out, na, nb, nout, kind, mask, repeat, *strides)
    mask_bits = mask if kind == 2 else (1 << mask) - 1
    want = ref_repeat(a, b, torch.full((nout,), 42.0), mask_bits, repeat, *strides, lambda x, y: x + y)
    assert torch.equal(out, want)
    assert c["vector_repeats"] == {"Add": repeat}
