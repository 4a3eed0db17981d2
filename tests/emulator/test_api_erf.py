"""Erf / Erfc (adv API, asc-devkit 高阶API/数学计算/Erf接口, Erfc接口): the emulator follows the A2/A3
implementation step by step (a Pade approximation for Erf, exp(-x^2)*R/S for Erfc), so float Erf is
bit-exact against the same float32 steps in torch, and both are within the approximation's error of the
true function. Kernel launch, framework launch (op project with the host tmp-size helper and tiling
keys) and ICPU_RUN_KF; outputs poisoned, several blocks, odd lengths; misuse raises."""
import subprocess
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, RoundMode, compile_kernel
from trex.codegen_ascendc.emulator.op_project import OpProject
from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

KERNELS = Path(__file__).parent / "kernels"
ERF_TMP, ERF_NO_TMP, ERFC_TMP, ERFC_NO_TMP, ERF_SMALL_TMP, ERF_IN_PLACE, ERF_TMP_OVERLAP = range(7)


def erf_steps(x):
    """asc-devkit erf_common_impl.h in float32: clip to +-3.92, x*P(x^2)/Q(x^2), one rounding per op."""
    x = x.float().clamp(-3.92, 3.92)
    x2 = x * x
    p = x2 * 0.053443748819
    for c in (0.75517016694e1, 0.10162808918e3, 0.13938061484e4, 0.50637915060e4):
        p = x2 * (p + c)
    p = x * (p + 0.29639384698e5)
    q = x2 + 0.31212858877e2
    for c in (0.39856963806e3, 0.30231248150e4, 0.13243365831e5):
        q = x2 * q + c
    q = x2 * q + 0.26267224157e5
    return p / q


def erfc_steps(x):
    """asc-devkit erfc_common_impl.h in float32 (Exp is torch's here, the host libm's in the emulator)."""
    c = x.float().clamp(-10, 10)
    a = c.abs() + 2.168404344971009e-19
    s = c / a
    r = a * 0.1735313680e-7
    for k in (-0.9856738394e-6, 0.2517003236e-4, -0.3848015171e-3, 0.5681528564e0, 0.5245623129e1, 0.2107740710e2,
              0.4212761755e2):
        r = a * (r + k)
    r = r + 0.4380524149e2
    sp = a + 0.9349684299e1
    for k in (0.3756930664e2, 0.8058268949e2, 0.9155653738e2, 0.4380524152e2):
        sp = a * sp + k
    e = torch.exp(-(a * a)) * (r / sp)
    return e * s + (s * -1.0 + 1.0)


@pytest.fixture(scope="module")
def lib():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return compile_kernel(KERNELS / "erf_fill_api.cpp", extra_flags=("-O1",))


def inputs(n, dtype):
    x = torch.linspace(-6, 6, n)
    x[::7] = torch.randn(len(x[::7])) * 0.5
    return x.to(dtype)


@pytest.mark.parametrize("mode", [ERF_TMP, ERF_NO_TMP])
@pytest.mark.parametrize("n, per, blocks", [(999, 336, 3), (4096, 1024, 4), (37, 64, 1)])
def test_float_erf_is_the_npu_sequence_bit_for_bit(lib, mode, n, per, blocks):
    x = inputs(n, torch.float32)
    y = torch.full((n,), float("nan"))
    counters = lib.launch("erf_float", blocks, x, y, n, per, mode)
    assert torch.equal(y, erf_steps(x))
    assert (y.double() - torch.special.erf(x.double())).abs().max() < 4e-7  # the approximation's error
    assert counters["vector_calls"]["Erf"] == blocks


def test_half_erf_rounds_the_float_result_with_cast_round(lib, rt):
    n = 1000
    x = inputs(n, torch.float16)
    y = torch.full((n,), float("nan"), dtype=torch.float16)
    lib.launch("erf_half", 4, x, y, n, 256, ERF_TMP)
    assert torch.equal(y, rt.convert(erf_steps(x), "half", RoundMode.CAST_ROUND))
    assert (y.double() - torch.special.erf(x.double())).abs().max() <= 2 ** -11  # one half ulp near 1


@pytest.mark.parametrize("dtype, kernel", [(torch.float32, "erf_float"), (torch.float16, "erf_half")])
@pytest.mark.parametrize("mode", [ERFC_TMP, ERFC_NO_TMP])
def test_erfc_follows_the_npu_sequence(lib, rt, dtype, kernel, mode):
    n = 777
    x = torch.cat([inputs(n - 4, dtype), torch.tensor([0.0, -12.0, 12.0, 9.5], dtype=dtype)])
    y = torch.full((n,), float("nan"), dtype=dtype)
    lib.launch(kernel, 3, x, y, n, 272, mode)
    steps = erfc_steps(x)
    if dtype == torch.float32:
        torch.testing.assert_close(y, steps, rtol=1e-6, atol=1e-38)  # Exp: host libm vs torch
        truth = torch.special.erfc(x.double())
        big = truth > 1e-30
        assert ((y.double() - truth).abs() / truth)[big].max() < 5e-6
    else:
        assert (y.float() - rt.convert(steps, "half", RoundMode.CAST_ROUND).float()).abs().max() <= 2 ** -10


def test_nan_propagates_and_infinities_saturate(lib):
    x = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0] * 8)
    y = torch.zeros(32)
    lib.launch("erf_float", 1, x, y, 32, 32, ERF_TMP)
    assert torch.isnan(y[0]) and y[1] == erf_steps(torch.tensor(3.92)) and y[3] == 0
    lib.launch("erf_float", 1, x, y, 32, 32, ERFC_TMP)
    assert torch.isnan(y[0]) and y[1] < 1e-40 and y[2] == 2.0 and y[3] == 1.0


@pytest.mark.parametrize("mode, message", [
    (ERF_SMALL_TMP, r"Erf: sharedTmpBuffer holds 256 B; the implementation needs at least 384 B for float"),
    (ERF_IN_PLACE, r"Erf: dst UB bytes \[\d+, \d+\) overlap src .*must not overlap"),
    (ERF_TMP_OVERLAP, r"Erf: sharedTmpBuffer UB bytes .* overlap src or dst"),
])
def test_misuse_raises(lib, mode, message):
    x = torch.ones(64)
    with pytest.raises(EmulatorError, match=message):  # perBlock 256: src's queue buffer (1 KiB) is a big enough tmp
        lib.launch("erf_float", 1, x, torch.empty_like(x), 64, 256, mode)


def test_ub_bounds_still_checked(lib):
    with pytest.raises(EmulatorError, match=r"UB overflow"):
        lib.launch("erf_float", 1, torch.ones(64), torch.ones(64), 64, 40000, ERF_TMP)


@pytest.fixture(scope="module")
def project():
    if not compiler_available():
        pytest.skip("no C++ compiler")
    return OpProject(KERNELS / "erf_project" / "op_kernel" / "erf_custom.cpp", opt="-O1")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("complement", [False, True])
def test_framework_launch_with_host_tmp_size(project, rt, dtype, complement):
    n = 1001
    x = inputs(n, dtype)
    y = torch.full((n,), float("nan"), dtype=dtype)
    run = project.run([x], [y], attrs={"complement": complement})
    assert run.block_dim == 3 and run.tiling_key == (2 if complement else 1)
    steps = (erfc_steps if complement else erf_steps)(x)
    if dtype == torch.float32 and not complement:
        assert torch.equal(y, steps)
    elif dtype == torch.float32:
        torch.testing.assert_close(y, steps, rtol=1e-6, atol=1e-38)
    else:
        assert (y.float() - rt.convert(steps, "half", RoundMode.CAST_ROUND).float()).abs().max() <= (
            2 ** -10 if complement else 0)
    # the host helper's minimum (asc-devkit erf(c)_tiling_impl.cpp: k * 256 B) is what the kernel got
    k = {(False, 4): 3, (False, 2): 8, (True, 4): 7, (True, 2): 16}[(complement, x.element_size())]
    tiling_tmp_bytes = int.from_bytes(run.tiling.tiling[12:16], "little")
    assert tiling_tmp_bytes == k * 256


def test_icpu_run_kf(tmp_path):
    cxx = find_compiler()
    if cxx is None:
        pytest.skip("no C++ compiler (g++ or $CXX) found")
    exe = tmp_path / "erf_fill_icpu"
    subprocess.run([cxx, "-O0", "-std=c++17", f"-I{INCLUDE_DIR}", f"-I{KERNELS}", str(KERNELS / "erf_fill_icpu_main.cpp"),
                    "-o", str(exe)], check=True, capture_output=True, text=True)
    ok = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "mismatches=0 blocks=6" in ok.stdout, ok.stdout + ok.stderr
    bad = subprocess.run([str(exe), "erf_overlap"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "erf_float (block 0 of 3): Erf: dst UB bytes" in bad.stderr, bad.stderr
    bad = subprocess.run([str(exe), "fill_after_initbuffer"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "Fill: called after TPipe::InitBuffer" in bad.stderr, bad.stderr
