"""DataCopy truncation and DataCopyPad layouts (GM->UB padding/strides, UB->GM strides)."""
import numpy as np
import pytest
import torch


@pytest.mark.parametrize("count,moved", [(37, 32), (40, 40), (7, 0), (64, 64)])
def test_datacopy_rounds_bytes_down_to_32(api, count, moved):
    src = torch.arange(1, count + 1, dtype=torch.float32)
    dst = torch.full((count,), -7.0)
    c = api.launch("copy_truncation", 1, src, dst, count)
    assert torch.equal(dst[:moved], src[:moved])
    assert torch.all(dst[moved:] == -7.0)  # the truncated tail never reaches GM
    assert c["mte2_bytes"] == c["mte3_bytes"] == moved * 4
    assert c["mte2_transfers"] == c["mte3_transfers"] == 1
    assert c["datacopy_truncations"] == (0 if moved == count else 2)


def _pad_in(api, rows, cols, src_gap_bytes, dst_gap_blocks, left, right, is_pad, pad_value, dump_elems):
    src = torch.arange(100, 100 + rows * (cols + src_gap_bytes // 4) + 8, dtype=torch.float32)
    dump = torch.zeros(dump_elems)
    c = api.launch("copy_pad_in", 1, src, dump, rows, cols, src_gap_bytes, dst_gap_blocks, left, right, is_pad,
                   pad_value, dump_elems)
    return src, dump, c


def test_pad_in_without_padding_fills_dummy_with_first_element_and_honours_strides(api):
    rows, cols = 3, 5
    src, dump, c = _pad_in(api, rows, cols, src_gap_bytes=8, dst_gap_blocks=1, left=0, right=0, is_pad=0,
                           pad_value=0.0, dump_elems=48)
    for r in range(rows):
        row = dump[16 * r: 16 * r + 8]  # 20 B of data padded to one 32 B block, then a 1-block gap
        first = src[r * 7]              # GM rows are 5 floats + 8 bytes of gap apart
        assert torch.equal(row[:5], src[r * 7: r * 7 + 5])
        assert torch.all(row[5:] == first), "dummy elements repeat the block's first element"
        assert torch.all(torch.isnan(dump[16 * r + 8: 16 * r + 16])), "the dst gap is not written"
    assert c["mte2_bytes"] == rows * cols * 4 and c["mte2_transfers"] == 1


def test_pad_in_with_padding_value(api):
    rows, cols = 2, 5
    src, dump, _ = _pad_in(api, rows, cols, 0, 0, left=2, right=3, is_pad=1, pad_value=-1.5, dump_elems=32)
    for r in range(rows):
        row = dump[16 * r: 16 * (r + 1)]  # 2 + 5 + 3 = 10 floats -> 64 B per block
        assert torch.all(row[:2] == -1.5)
        assert torch.equal(row[2:7], src[5 * r: 5 * r + 5])
        assert torch.all(row[7:] == -1.5), "right padding and dummy take paddingValue when isPad"


def test_pad_in_padding_without_is_pad_is_undefined_and_poisoned(api):
    _, dump, _ = _pad_in(api, 1, 5, 0, 0, left=1, right=0, is_pad=0, pad_value=9.0, dump_elems=8)
    assert torch.isnan(dump[0]) and torch.all(torch.isnan(dump[6:]))


def test_pad_out_drops_dummy_and_honours_strides(api):
    rows, cols = 3, 5
    ub = torch.arange(48, dtype=torch.float32)  # UB image: rows of 8 floats + 1 gap block (8 floats)
    dst = torch.full((rows * 7,), -1.0)
    c = api.launch("copy_pad_out", 1, ub, dst, 48, rows, cols, 1, 8)
    for r in range(rows):
        assert torch.equal(dst[7 * r: 7 * r + 5], ub[16 * r: 16 * r + 5])
        assert torch.all(dst[7 * r + 5: 7 * r + 7] == -1.0), "GM gap bytes are not written"
    assert c["mte3_bytes"] == rows * cols * 4 and c["mte3_transfers"] == 1


def test_pad_in_uses_set_pad_value_when_is_pad_is_false(api):
    src = torch.arange(1, 11, dtype=torch.float32)
    dump = torch.zeros(16)
    api.launch("copy_pad_register", 1, src, dump, 7.5)
    for r in range(2):  # 1 + 5 + 2 = 8 floats per block
        row = dump[8 * r: 8 * r + 8]
        assert row[0] == 7.5 and torch.equal(row[1:6], src[5 * r: 5 * r + 5]) and torch.all(row[6:] == 7.5)
