"""Reference implementations shared by the emulator tests."""


def ref_repeat(a, b, out, mask_bits, repeat, dst_blk, s0_blk, s1_blk, dst_rep, s0_rep, s1_rep, f):
    """Documented addressing: element i of repeat r sits at r*rep*8 + (i//8)*blk*8 + i%8 (float)."""
    out = out.clone()
    at = lambda rep, blk, r, i: r * rep * 8 + (i // 8) * blk * 8 + i % 8
    for r in range(repeat):
        lanes = [i for i in range(64) if (mask_bits >> i) & 1]
        vals = [f(a[at(s0_rep, s0_blk, r, i)], b[at(s1_rep, s1_blk, r, i)]) for i in lanes]
        for i, v in zip(lanes, vals):
            out[at(dst_rep, dst_blk, r, i)] = v
    return out
