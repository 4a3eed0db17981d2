"""Activation advanced APIs (adv_activation.h: Gelu, FasterGelu, FasterGeluV2, Silu, Swish, GeGLU, SwiGLU) against
torch: the implementation's op sequence (asc-devkit impl/adv_api/detail/activation/*) replayed in torch with each
step rounded to the compute type (half steps in half; GeGLU/SwiGLU half and Gelu<half, highPrecision> in float), and
the mathematical function (torch's gelu(tanh), silu) within the approximation. Poisoned outputs, several blocks, odd
tails; too-small sharedTmpBuffer and in-place use are errors naming the API; asc-devkit's example programs run when
the corpus is checked out."""
import os
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"
GELU, GELU_HP, GELU_PERF, FGELU, FGELU2, SILU, SWISH, GEGLU, SWIGLU, IN_PLACE = range(10)


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_activation_api.cpp", extra_flags=("-O1",))


def run(lib, dtype, a, b, op, tmp, per=256, beta=1.0):
    n = a.numel()
    y = torch.full_like(a, float("nan"))
    lib.launch("act_float" if dtype == torch.float32 else "act_half", (n + per - 1) // per, a, b, y, n, per, op, tmp,
               beta)
    return y


def stepper(ct):
    """r(v): one vector op's result in the compute type ct, as float32."""
    return lambda v: v.to(ct).float()


def gelu_ref(x, ct, perf=False):
    r = stepper(ct)
    x = x.float()
    a = r(x * x)
    b = r(x * a)
    a = r(b * r(torch.tensor(0.044715)))
    b = r(x + a)
    a = r(b * r(torch.tensor(1.5957691216057308)))
    b = r(torch.exp(torch.clamp(a, max=0)))
    a = r(torch.exp(r(-a.abs())))
    a = r(a + 1)
    a = r(x * r(1 / a)) if perf else r(x / a)
    return r(a * b)


def faster_gelu_ref(x, ct):
    r = stepper(ct)
    x = x.float()
    s = r(torch.exp(r(x * r(torch.tensor(-1.702)))))
    return r(x / r(s + 1))


def swish_ref(x, beta, ct):
    r = stepper(ct)
    x = x.float()
    d = r(torch.exp(r(x * r(torch.tensor(-beta)))))
    return r(x / r(d + 1))


def geglu_ref(a, b, ct):
    r = stepper(ct)
    a, b = a.float(), b.float()
    d = r(r(b * b) + r(torch.tensor(22.363860002236)))
    d = r(r(d * b) * r(torch.tensor(-0.0713548162726)))
    d = r(b / r(r(torch.exp(d)) + 1))
    return r(a * d)


def swiglu_ref(a, b, beta):
    a, b = a.float(), b.float()
    return a * (b / (torch.exp(b * -beta) + 1))


def data(n, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(n, generator=g) * 3
    a[:4] = torch.tensor([0.0, -9.0, 9.0, 20.0])
    b = torch.randn(n, generator=g) * 3
    return a.to(dtype), b.to(dtype)


def close(y, want, dtype):
    # float: the same float32 steps, Exp host libm vs torch (1 ulp); half: one half ulp where a rounding flips
    if dtype == torch.float32:
        torch.testing.assert_close(y, want, rtol=2e-6, atol=1e-30)
    else:
        torch.testing.assert_close(y.float(), want.half().float(), rtol=2 ** -10, atol=2 ** -14)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("tmp", [0, 4096])
def test_gelu_is_the_implementations_sequence(lib, dtype, tmp):
    a, b = data(1001, dtype)
    y = run(lib, dtype, a, b, GELU, tmp)
    close(y, gelu_ref(a, dtype), dtype)
    tol = 2e-3 if dtype == torch.float32 else 2e-2
    torch.testing.assert_close(y.float(), F.gelu(a.float(), approximate="tanh"), rtol=tol, atol=tol)


def test_gelu_high_precision_half_computes_in_float(lib):
    a, b = data(777, torch.float16, 1)
    y = run(lib, torch.float16, a, b, GELU_HP, 4096, per=272)
    close(y, gelu_ref(a, torch.float32), torch.float16)
    assert (y.float() - gelu_ref(a, torch.float32).half().float()).abs().max() <= \
        (y.float() - gelu_ref(a, torch.float16)).abs().max() + 1e-3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_gelu_high_performance_and_faster_gelu(lib, dtype):
    a, b = data(640, dtype, 2)
    close(run(lib, dtype, a, b, GELU_PERF, 4096), gelu_ref(a, dtype, perf=True), dtype)
    close(run(lib, dtype, a, b, FGELU, 4096), faster_gelu_ref(a, dtype), dtype)
    close(run(lib, dtype, a, b, FGELU, 0), faster_gelu_ref(a, dtype), dtype)
    y = run(lib, dtype, a, b, FGELU2, 4096)
    # x / |x + 1e-12|: in half the 1e-12 rounds to 0, so x = 0 gives 0 / 0 (the implementation adds the T scalar)
    assert torch.isnan(y[0]) == (dtype == torch.float16) and not torch.isnan(y[1:]).any()
    torch.testing.assert_close(y[1:].float(), F.gelu(a[1:].float()), rtol=0, atol=3e-2)  # the V2 polynomial's error


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("beta", [1.0, 1.7])
def test_silu_and_swish(lib, dtype, beta):
    a, b = data(999, dtype, 3)
    if beta == 1.0:
        y = run(lib, dtype, a, b, SILU, 0)
        close(y, swish_ref(a, 1.0, dtype), dtype)
        torch.testing.assert_close(y.float(), F.silu(a.float()), rtol=2e-3 if dtype == torch.float16 else 1e-6,
                                   atol=2e-3 if dtype == torch.float16 else 1e-6)
    close(run(lib, dtype, a, b, SWISH, 0, beta=beta), swish_ref(a, beta, dtype), dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("tmp", [0, 2048])
def test_geglu_and_swiglu(lib, dtype, tmp):
    a, b = data(1000, dtype, 4)
    ct = torch.float32  # half computes in float for both
    y = run(lib, dtype, a, b, GEGLU, tmp)
    close(y, geglu_ref(a, b, dtype if dtype == torch.float32 else ct), dtype)
    torch.testing.assert_close(y.float(), a.float() * F.gelu(b.float(), approximate="tanh"), rtol=2e-3, atol=2e-2)
    y = run(lib, dtype, a, b, SWIGLU, tmp, beta=1.3)
    close(y, swiglu_ref(a, b, 1.3), dtype)


@pytest.mark.parametrize("dtype, op, tmp, message", [
    (torch.float32, GELU, 128, r"Gelu: sharedTmpBuffer holds 128 B; the implementation needs at least 256 B"),
    (torch.float16, GELU_HP, 320, r"Gelu: sharedTmpBuffer holds 320 B; the implementation needs at least 384 B"),
    (torch.float16, GEGLU, 96, r"GeGLU: sharedTmpBuffer holds 96 B; half needs 2 float scratch values"),
    (torch.float16, SWIGLU, 160, r"SwiGLU: sharedTmpBuffer holds 160 B; half needs 3 float scratch tensors"),
    (torch.float32, IN_PLACE, 0, r"Silu: dst overlaps a source"),
])
def test_misuse_raises(lib, dtype, op, tmp, message):
    a = torch.ones(64, dtype=dtype)
    with pytest.raises(EmulatorError, match=message):
        run(lib, dtype, a, a.clone(), op, tmp, per=64)


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
@pytest.mark.parametrize("example", ["gelu", "geglu", "swiglu", "swish"])
def test_asc_devkit_example_passes(example):
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api/01_activation" / example)
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
