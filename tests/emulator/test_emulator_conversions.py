"""Bit-exact float <-> half/bf16/int32 conversions for every RoundMode.

Reference: an independent brute-force rounding over all 65536 bit patterns of the target format
(float64 holds every value involved exactly), plus torch for the round-to-nearest-even case.
"""
import numpy as np
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, RoundMode

DIRECTED = [RoundMode.CAST_RINT, RoundMode.CAST_FLOOR, RoundMode.CAST_CEIL, RoundMode.CAST_ROUND,
            RoundMode.CAST_TRUNC, RoundMode.CAST_ODD, RoundMode.CAST_NONE]
FORMATS = {"bfloat16": (torch.bfloat16, 0x7F80), "half": (torch.float16, 0x7C00)}


def _positive_grid(fmt: str) -> np.ndarray:
    bits = np.arange(0x8000, dtype=np.uint32)  # sign bit clear: +0 .. +NaN, ascending in value
    if fmt == "half":
        vals = bits.astype(np.uint16).view(np.float16).astype(np.float64)
    else:
        with np.errstate(invalid="ignore"):  # the NaN patterns are dropped below
            vals = (bits << 16).view(np.float32).astype(np.float64)
    return vals[np.isfinite(vals)]  # +0 .. max finite; index == bit pattern


def reference_round(x: np.ndarray, fmt: str, mode: RoundMode) -> np.ndarray:
    """Bits of x (float32 array, no NaN) rounded to `fmt` in `mode`."""
    grid = _positive_grid(fmt)
    inf_bits = FORMATS[fmt][1]
    top = grid[-1] + (grid[-1] - grid[-2])  # IEEE overflow threshold behaves like a next grid point
    ext = np.append(grid, top)
    xd = x.astype(np.float64)
    neg = np.signbit(xd)
    a = np.abs(xd)
    lo = np.clip(np.searchsorted(ext, a, side="right") - 1, 0, len(grid) - 1)
    hi = lo + 1
    lo_v, hi_v = ext[lo], ext[np.minimum(hi, len(ext) - 1)]
    exact = a == lo_v
    d_lo, d_hi = a - lo_v, hi_v - a
    tie = d_lo == d_hi
    if mode in (RoundMode.CAST_RINT, RoundMode.CAST_NONE):
        pick_hi = (d_hi < d_lo) | (tie & (lo % 2 == 1))
    elif mode == RoundMode.CAST_ROUND:
        pick_hi = (d_hi < d_lo) | tie
    elif mode == RoundMode.CAST_TRUNC:
        pick_hi = np.zeros_like(exact)
    elif mode == RoundMode.CAST_FLOOR:
        pick_hi = neg & ~exact
    elif mode == RoundMode.CAST_CEIL:
        pick_hi = ~neg & ~exact
    elif mode == RoundMode.CAST_ODD:
        pick_hi = ~exact & (lo % 2 == 0)
    else:
        raise ValueError(mode)
    pick_hi &= ~exact
    idx = np.where(pick_hi, hi, lo)
    bits = np.where(idx >= len(grid), inf_bits, idx).astype(np.uint32)
    bits = np.where(np.isinf(xd), inf_bits, bits)
    return (bits | (neg.astype(np.uint32) << 15)).astype(np.uint16)


def _test_inputs() -> np.ndarray:
    rng = np.random.default_rng(1234)
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1.0, -1.0, 1.00390625, 1.01171875, -1.00390625,
                        65504.0, 65519.0, 65520.0, 65535.0, 65536.0, 1e10, -1e10, 2.0 ** -24, 2.0 ** -25,
                        3 * 2.0 ** -25, 2.0 ** -14, 2.0 ** -15 * 1.5, 1e-45, -1e-45, 1.17549435e-38,
                        3.4028235e38, -3.4028235e38, 3.3961776e38, 3.3961778e38],
                       dtype=np.float32)
    random_bits = rng.integers(0, 2 ** 32, size=40000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    random_bits = random_bits[~np.isnan(random_bits)]
    # exact ties for bf16 (low 16 bits 0x8000) and for half (values k + 0.5 ulp around 1..2048)
    ties_bf16 = ((rng.integers(0, 2 ** 15, 2000).astype(np.uint32) << 16) | 0x8000).view(np.float32)
    ties_bf16 = ties_bf16[np.isfinite(ties_bf16)]
    ties_half = (rng.integers(1, 2 ** 11, 2000) + 0.5).astype(np.float32) * np.float32(2.0 ** -3)
    scaled = (rng.standard_normal(4000) * 10.0 ** rng.integers(-8, 8, 4000)).astype(np.float32)
    return np.concatenate([special, random_bits, ties_bf16, ties_half, -ties_half, scaled])


INPUTS = _test_inputs()


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("mode", DIRECTED, ids=lambda m: m.name)
def test_float_to_16bit_matches_bruteforce_reference(rt, fmt, mode):
    x = torch.from_numpy(INPUTS.copy())
    got = rt.convert(x, fmt, mode).view(torch.int16).numpy().view(np.uint16)
    want = reference_round(INPUTS, fmt, mode)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, (f"{fmt} {mode.name}: {bad.size} mismatches, e.g. x={INPUTS[bad[:5]]!r} "
                           f"got={[hex(v) for v in got[bad[:5]]]} want={[hex(v) for v in want[bad[:5]]]}")


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_rint_equals_torch_including_nan(rt, fmt):
    x = torch.from_numpy(np.concatenate([INPUTS, np.array([np.nan, -np.nan], np.float32)]))
    dtype = FORMATS[fmt][0]
    got = rt.convert(x, fmt, RoundMode.CAST_RINT)
    want = x.to(dtype)
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan)
    assert torch.equal(got[~nan].view(torch.int16), want[~nan].view(torch.int16))


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_16bit_to_float_is_exact_for_all_bit_patterns(rt, fmt):
    dtype = FORMATS[fmt][0]
    every = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype)
    got = rt.convert(every, "float", RoundMode.CAST_NONE)
    want = every.float()
    nan = torch.isnan(want)
    assert torch.equal(torch.isnan(got), nan)
    assert torch.equal(got[~nan].view(torch.int32), want[~nan].view(torch.int32))


@pytest.mark.parametrize("mode,ref", [
    (RoundMode.CAST_RINT, np.rint), (RoundMode.CAST_FLOOR, np.floor), (RoundMode.CAST_CEIL, np.ceil),
    (RoundMode.CAST_TRUNC, np.trunc), (RoundMode.CAST_ROUND, lambda v: np.sign(v) * np.floor(np.abs(v) + 0.5)),
], ids=lambda p: getattr(p, "name", ""))
def test_float_to_int32_modes(rt, mode, ref):
    rng = np.random.default_rng(7)
    x = np.concatenate([rng.uniform(-1e6, 1e6, 5000), np.arange(-20, 20) + 0.5, [-0.5, 0.5, 2.5, -2.5]]).astype(np.float32)
    got = rt.convert(torch.from_numpy(x), "int32", mode).numpy()
    np.testing.assert_array_equal(got, ref(x.astype(np.float64)).astype(np.int32))


def test_int32_to_float_rounds_to_nearest_even(rt):
    x = torch.tensor([16777217, 16777219, -16777217, 2 ** 31 - 1, -(2 ** 31), 123456789], dtype=torch.int32)
    got = rt.convert(x, "float", RoundMode.CAST_RINT)
    assert torch.equal(got, x.float())


@pytest.mark.parametrize("which,src_dtype,dst_dtype,mode", [
    (0, torch.float32, torch.bfloat16, RoundMode.CAST_RINT),
    (0, torch.float32, torch.bfloat16, RoundMode.CAST_FLOOR),
    (1, torch.bfloat16, torch.float32, RoundMode.CAST_NONE),
    (2, torch.float32, torch.float16, RoundMode.CAST_ODD),
    (3, torch.float16, torch.float32, RoundMode.CAST_NONE),
    (4, torch.float32, torch.int32, RoundMode.CAST_ROUND),
], ids=lambda p: getattr(p, "name", str(p)))
def test_cast_instruction_in_a_kernel_matches_the_conversion(api, rt, which, src_dtype, dst_dtype, mode):
    n = 333  # not a multiple of a repeat: exercises the count form's tail
    src = (torch.randn(n, generator=torch.Generator().manual_seed(which)) * 300).to(src_dtype)
    dst = torch.zeros(n, dtype=dst_dtype)
    counters = api.launch("vec_cast", 1, src, dst, n, int(mode), which)
    assert torch.equal(dst, rt.convert(src, {torch.float32: "float", torch.bfloat16: "bfloat16",
                                             torch.float16: "half", torch.int32: "int32"}[dst_dtype], mode))
    wider = max(src.element_size(), dst.element_size())
    assert counters["vector_repeats"]["Cast"] == -(-n * wider // 256)


def test_cast_float_to_bf16_with_cast_none_is_rejected(api):
    x = torch.zeros(64)
    with pytest.raises(EmulatorError, match=r"Cast float -> bfloat16_t with RoundMode::CAST_NONE is not supported"):
        api.launch("misuse", 1, x, 7)
