"""Elementwise math advanced APIs (adv_math.h: Ceil, Floor, Trunc, Frac, ClampMin/Max, Fmod, Axpy with a
sharedTmpBuffer, Power, Xor, Log/Log2/Log10, Acosh/Asinh/Atanh, Sigmoid's no-count forms) against torch, computed as asc-devkit's
impl/adv_api/detail/math/* do (float steps; half through float, rounded to nearest even). Outputs poisoned,
several blocks, odd tails; a too-small sharedTmpBuffer is an error naming the API; the host GetXxxMaxMinTmpSize
helpers give impl/adv_api/tiling/math's sizes; asc-devkit's own example programs run when the corpus is here."""
import os
import subprocess
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

KERNELS = Path(__file__).parent / "kernels"
(CEIL, FLOOR, TRUNC, FRAC, CLAMPMIN, CLAMPMAX, FMOD, AXPY, POW_TT, POW_TS, POW_ST, LOG, LOG2, LOG10, SIGMOID, XOR,
 TMP_OVERLAP, ACOSH, ASINH, ATANH, ACOSH_WHOLE) = range(21)


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_math_api.cpp", extra_flags=("-O1",))


def run(lib, kernel, a, b, op, tmp, per=256, blocks=None):
    n = a.numel()
    blocks = blocks or (n + per - 1) // per
    y = torch.full_like(a, float("nan")) if a.is_floating_point() else torch.full_like(a, -7)
    counters = lib.launch(kernel, blocks, a, b, y, n, per, op, tmp)
    return y, counters


def f32(t):
    return t.float()


CASES = {  # op: (torch reference on float32 operands, a generator)
    CEIL: (lambda a, b: torch.ceil(a), None),
    FLOOR: (lambda a, b: torch.floor(a), None),
    TRUNC: (lambda a, b: torch.trunc(a), None),
    FRAC: (lambda a, b: a - torch.trunc(a), None),
    CLAMPMIN: (lambda a, b: torch.clamp(a, min=0.5), None),
    CLAMPMAX: (lambda a, b: torch.clamp(a, max=0.5), None),
    FMOD: (lambda a, b: a - torch.trunc(a / b) * b, None),
    AXPY: (lambda a, b: b + a * 2.0, None),
}


def operands(n, dtype, positive=False):
    g = torch.Generator().manual_seed(n)
    a = torch.randn(n, generator=g) * 7
    b = torch.rand(n, generator=g) * 3 + 0.25
    if positive:
        a = a.abs() + 0.01
    return a.to(dtype), b.to(dtype)


@pytest.mark.parametrize("op", list(CASES))
@pytest.mark.parametrize("dtype, kernel, tmp", [(torch.float32, "adv_float", 4096), (torch.float32, "adv_float", 0),
                                                (torch.float16, "adv_half", 4096)])
def test_elementwise_matches_torch_over_blocks(lib, op, dtype, kernel, tmp):
    if op in (CLAMPMIN, CLAMPMAX, AXPY) and tmp == 0:
        tmp = 1024  # these forms always take a sharedTmpBuffer
    a, b = operands(1001, dtype)
    y, counters = run(lib, kernel, a, b, op, tmp)  # 4 blocks, the last one 233 elements
    want = CASES[op][0](f32(a), f32(b)).to(dtype)
    assert not torch.isnan(y).any()
    assert torch.equal(y, want), (y - want).abs().max()


def test_rounding_and_frac_of_specials(lib):
    a = torch.tensor([2.5, -2.5, -0.0, float("inf"), -float("inf"), float("nan"), 1e30, -1.5] * 4)
    b = torch.ones_like(a)
    ceil = run(lib, "adv_float", a, b, CEIL, 1024)[0][:8]
    torch.testing.assert_close(ceil, torch.tensor([3.0, -2.0, -0.0, float("inf"), -float("inf"), float("nan"), 1e30,
                                                   -1.0]), equal_nan=True, rtol=0, atol=0)
    assert torch.signbit(ceil[2])
    fr = run(lib, "adv_float", a, b, FRAC, 1024)[0][:8]
    assert fr[0] == 0.5 and fr[1] == -0.5 and fr[6] == 0 and fr[7] == -0.5
    assert torch.isnan(fr[3]) and torch.isnan(fr[5])  # inf - trunc(inf)


def test_axpy_mixed_float_accumulator_half_source(lib):
    n = 512
    a = (torch.randn(n) * 3).half()
    b = torch.randn(n)
    y = torch.full((n,), float("nan"))
    lib.launch("adv_axpy_mixed", 1, a, b, y, n, 2048)
    assert torch.equal(y, b + a.float() * 2.0)


@pytest.mark.parametrize("dtype, kernel", [(torch.float32, "adv_float"), (torch.float16, "adv_half")])
@pytest.mark.parametrize("op", [POW_TT, POW_TS, POW_ST])
def test_power_forms(lib, dtype, kernel, op):
    a, b = operands(777, dtype, positive=True)
    y, _ = run(lib, kernel, a, b, op, 8192, per=272)
    base = f32(a) if op != POW_ST else torch.full((777,), 2.0)
    exp = f32(b) if op != POW_TS else torch.full((777,), 2.5)
    want = torch.pow(base.double(), exp.double())
    rtol = 2e-6 if dtype == torch.float32 else 1e-3
    torch.testing.assert_close(y.double(), want.to(dtype).double(), rtol=rtol, atol=0)


@pytest.mark.parametrize("dtype, kernel", [(torch.float32, "adv_float"), (torch.float16, "adv_half")])
def test_logs_and_sigmoid(lib, dtype, kernel):
    a, b = operands(700, dtype, positive=True)
    for op, fn in [(LOG, torch.log), (LOG2, torch.log2), (LOG10, torch.log10)]:
        y, _ = run(lib, kernel, a, b, op, 4096, per=256)
        tol = 2e-6 if dtype == torch.float32 else 1e-3
        torch.testing.assert_close(y.double(), fn(a.double()).to(dtype).double(), rtol=tol, atol=tol)
    y, _ = run(lib, kernel, a, b, SIGMOID, 4096, per=700, blocks=1)  # Sigmoid(dst, src, tmp): the whole tensor
    torch.testing.assert_close(y.double(), torch.sigmoid(a.double()).to(dtype).double(), rtol=1e-3, atol=1e-6)


@pytest.mark.parametrize("dtype, kernel", [(torch.int16, "adv_int16"), (torch.uint16, "adv_uint16")])
@pytest.mark.parametrize("tmp", [0, 256])
def test_xor(lib, dtype, kernel, tmp):
    g = torch.Generator().manual_seed(3)
    lo, hi = (-32768, 32767) if dtype == torch.int16 else (0, 65535)
    a = torch.randint(lo, hi, (999,), generator=g, dtype=torch.int32).to(dtype)
    b = torch.randint(lo, hi, (999,), generator=g, dtype=torch.int32).to(dtype)
    y, _ = run(lib, kernel, a, b, XOR, tmp, per=320)
    assert torch.equal(y.int(), (a.int() ^ b.int()).to(dtype).int())


def arc_reference(op, a):
    """The impl's float steps (acosh/asinh/atanh_common_impl.h) in float32, each op rounded."""
    one = torch.ones_like(a)
    if op in (ACOSH, ACOSH_WHOLE):
        t = torch.sqrt(a * a + (-one)) + a
        return torch.log(t * (t / t))
    if op == ASINH:
        m = torch.abs(a)
        s = a * 4611686018427387904.0
        return torch.log(torch.sqrt(m * m + one) + m) * (s / (torch.abs(s) + 2.168404344971009e-19))
    return torch.log((a + one) / (a * -1.0 + one)) * 0.5


ARC_INPUTS = {
    ACOSH: lambda g, n: torch.cat([torch.rand(n - 8, generator=g) * 60 + 1, torch.tensor([1.0, 0.5, -3.0, 1e20, 1.5,
                                                                                          float("inf"), 0.0, 2.0])]),
    ASINH: lambda g, n: torch.cat([torch.randn(n - 4, generator=g) * 20, torch.tensor([0.0, -0.0, 1e-30, -1e5])]),
    ATANH: lambda g, n: torch.cat([torch.rand(n - 4, generator=g) * 1.98 - 0.99, torch.tensor([1.0, -1.0, 0.0, 2.0])]),
}


@pytest.mark.parametrize("op", [ACOSH, ASINH, ATANH])
@pytest.mark.parametrize("dtype, kernel, tmp", [(torch.float32, "adv_float", 4096), (torch.float32, "adv_float", 0),
                                                (torch.float16, "adv_half", 2048), (torch.float16, "adv_half", 0)])
def test_inverse_hyperbolic_over_blocks(lib, op, dtype, kernel, tmp):
    g = torch.Generator().manual_seed(op)
    a = ARC_INPUTS[op](g, 1001).to(dtype)
    y, counters = run(lib, kernel, a, a.clone(), op, tmp, per=256)  # 4 blocks, the last 233 (the specials there)
    steps = arc_reference(op, a.float()).to(dtype)
    # NaN exactly where the impl's steps give NaN (poisoned outputs would be NaN everywhere)
    assert torch.equal(torch.isnan(y), torch.isnan(steps))
    tol = 2e-6 if dtype == torch.float32 else 1e-3
    torch.testing.assert_close(y.double(), steps.double(), rtol=tol, atol=tol, equal_nan=True)
    ref = {ACOSH: torch.acosh, ASINH: torch.asinh, ATANH: torch.atanh}[op](a.double())
    ok = torch.isfinite(ref) & (a.double().abs() < 1e10)
    torch.testing.assert_close(y.double()[ok], ref.to(dtype).double()[ok], rtol=tol * 4, atol=tol)


def test_inverse_hyperbolic_impl_quirks(lib):
    a = torch.tensor([1e20, -1e20, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0] * 4)
    y = run(lib, "adv_float", a, a, ACOSH, 1024)[0][:8]
    assert torch.isnan(y[:3]).all()  # x*x overflows: inf / inf in the impl's Div(t, t) gives NaN; x < 1: NaN
    assert y[3] == 0 and abs(float(y[4]) - 1.3169579) < 1e-6
    z = run(lib, "adv_float", torch.tensor([0.0, -0.0, -2.0, 2.0] * 8), a, ASINH, 1024)[0][:4]
    assert z[0] == 0 and z[1] == 0 and float(z[2]) == -float(z[3]) and abs(float(z[3]) - 1.4436355) < 1e-6
    w = run(lib, "adv_float", torch.tensor([1.0, -1.0, 0.5, 2.0] * 8), a, ATANH, 1024)[0][:4]
    assert w[0] == float("inf") and w[1] == -float("inf") and torch.isnan(w[3])


@pytest.mark.parametrize("tmp", [0, 1024])
def test_acosh_whole_tensor_forms(lib, tmp):
    a = torch.rand(96) * 10 + 1
    y = run(lib, "adv_float", a, a, ACOSH_WHOLE, tmp, per=96, blocks=1)[0]
    torch.testing.assert_close(y.double(), torch.acosh(a.double()).float().double(), rtol=2e-6, atol=0)


@pytest.mark.parametrize("kernel, op, tmp, message", [
    ("adv_half", CEIL, 96, r"Ceil: sharedTmpBuffer holds 96 B; the implementation needs at least 128 B"),
    ("adv_float", FRAC, 64, r"Frac: sharedTmpBuffer holds 64 B; the implementation needs at least 128 B"),
    ("adv_half", FMOD, 480, r"Fmod: sharedTmpBuffer holds 480 B; the implementation needs at least 512 B"),
    ("adv_half", AXPY, 224, r"Axpy: sharedTmpBuffer holds 224 B; the implementation needs at least 256 B"),
    ("adv_float", POW_TT, 256, r"Power: sharedTmpBuffer holds 256 B; the implementation keeps 256 B"),
    ("adv_float", POW_TT, 512, r"Power: sharedTmpBuffer holds 512 B; the implementation needs at least 768 B"),
    ("adv_uint16", XOR, 32, r"Xor: sharedTmpBuffer holds 32 B; the implementation needs at least 64 B"),
    ("adv_float", TMP_OVERLAP, 0, r"Ceil: sharedTmpBuffer UB bytes .* overlap an operand"),
    ("adv_half", ACOSH, 192, r"Acosh: sharedTmpBuffer holds 192 B; the implementation needs at least 256 B"),
    ("adv_float", ASINH, 352, r"Asinh: sharedTmpBuffer holds 352 B; the implementation needs at least 384 B"),
    ("adv_half", ATANH, 224, r"Atanh: sharedTmpBuffer holds 224 B; the implementation needs at least 256 B"),
])
def test_too_small_or_overlapping_tmp_raises(lib, kernel, op, tmp, message):
    dtype = {"adv_half": torch.float16, "adv_float": torch.float32, "adv_uint16": torch.uint16}[kernel]
    a = torch.ones(64, dtype=dtype)
    with pytest.raises(EmulatorError, match=message):
        run(lib, kernel, a, a.clone(), op, tmp, per=64)


HOST_SNIPPET = r'''
#include <cstdio>
#include "tiling/tiling_api.h"
int main() {
  AscendC::TensorShape s{{1000}}, one{{1}};
  uint32_t mx = 0, mn = 0;
#define P(CALL) CALL; std::printf("%u %u\n", mx, mn);
  P(AscendC::GetCeilMaxMinTmpSize(s, 2, false, mx, mn))
  P(AscendC::GetFracMaxMinTmpSize(s, 2, false, mx, mn))
  P(AscendC::GetFracMaxMinTmpSize(s, 4, false, mx, mn))
  P(AscendC::GetClampMaxMinTmpSize(s, 4, false, mx, mn))
  P(AscendC::GetFmodMaxMinTmpSize(s, 2, false, mx, mn))
  P(AscendC::GetAxpyMaxMinTmpSize(s, 2, false, mx, mn))
  P(AscendC::GetXorMaxMinTmpSize(s, 2, false, mx, mn))
  P(AscendC::GetExpMaxMinTmpSize(s, 4, false, mx, mn))
  P(AscendC::GetPowerMaxMinTmpSize(s, s, false, 4, false, mx, mn))
  P(AscendC::GetPowerMaxMinTmpSize(s, one, false, 2, false, mx, mn))
  P(AscendC::GetAcoshMaxMinTmpSize(s, 4, false, mx, mn))
  P(AscendC::GetAcoshMaxMinTmpSize(s, 2, false, mx, mn))
  P(AscendC::GetAsinhMaxMinTmpSize(s, 2, false, mx, mn))
  P(AscendC::GetAtanhMaxMinTmpSize(s, 4, false, mx, mn))
  P(AscendC::GetAtanhMaxMinTmpSize(s, 2, false, mx, mn))
  P(AscendC::GetAtanhTmpBufferFactorSize(2, mx, mn))
  return 0;
}
'''


@pytest.mark.skipif(not compiler_available(), reason="no C++ compiler")
@pytest.mark.parametrize("host_side", [False, True])
def test_host_tmp_sizes_are_the_tiling_impl_formulas(tmp_path, host_side):
    src = tmp_path / "h.cpp"
    src.write_text(HOST_SNIPPET)
    host = INCLUDE_DIR.parent / "include_host"
    incs = [host, INCLUDE_DIR] if host_side else [INCLUDE_DIR, host]  # op_host order / kernel-launch program order
    subprocess.run([find_compiler(), "-std=c++17", *[f"-I{d}" for d in incs], str(src), "-o", str(tmp_path / "h")],
                   check=True)
    out = subprocess.run([str(tmp_path / "h")], capture_output=True, text=True, check=True).stdout.split("\n")
    got = [tuple(map(int, line.split())) for line in out if line]
    assert got == [
        (2 * 2000, 2 * 256),                 # Ceil half: fac 2 * max(n * 2, 256)
        (4 * 2000, 4 * 256),                 # Frac half: fac 4
        (0, 0),                              # Frac float: fac 0
        (1000, 64),                          # Clamp float: max(n, 64)
        (8 * 2000, 8 * 256),                 # Fmod half: Trunc's 2 + 6
        (4 * 2000, 4 * 256),                 # Axpy half: 4 * n * 2
        (2000, 256),                         # Xor
        (3 * 4000, 3 * 256),                 # Exp float: 3 float buffers
        (4 * 4000 + 256, 4 * 256 + 256),     # Power float tensor-tensor
        (14 * 2000 + 256, 14 * 256 // 2 + 256),  # Power half tensor-scalar
        (1000 * 4, 256),                     # Acosh float: max(1 * n, 256) * 4; min 1 * 256 (not * typeSize)
        (2000 * 2, 512),                     # Acosh half: max(2 * n, 256) * 2; min 2 * 256
        (3 * 2000, 3 * 256),                 # Asinh half: 3 * max(n * 2, 256)
        (4000, 256),                         # Atanh float: 1 * max(n * 4, 256)
        (4 * 2000, 4 * 256),                 # Atanh half: 4 * max(n * 2, 256)
        (4, 0),                              # Atanh half factor: maxLiveNodeCount 4, extraBuf 0
    ]


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"
EXAMPLES = ["10_math/ceil", "10_math/clampmin", "10_math/fmod", "10_math/frac", "10_math/power", "10_math/xor",
            "10_math/axpy_half_float", "10_math/log", "10_math/acosh", "10_math/exp", "10_math/erf", "01_activation/sigmoid"]


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
@pytest.mark.parametrize("example", EXAMPLES)
def test_asc_devkit_example_passes(example):
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api" / example)
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
