"""RmsNorm (adv_rmsnorm.h) against torch: y = x * exp(ln(mean(x[:oriH]^2) + eps) * -0.5) * gamma per row, in float
steps (half through float, rounded once), all h columns written; tilings from the host GetRmsNormTilingInfo with
several rounds and an odd tail, the sharedTmpBuffer and PopStackBuffer forms, the basic-block form; several blocks;
outputs poisoned. Host GetRmsNormMaxMinTmpSize / GetRmsNormTilingInfo against rmsnorm_tiling_impl.cpp's formulas;
too small a tmp buffer raises naming the API; asc-devkit's rmsnorm example when checked out."""
import os
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"
BLOCKS = 3


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_rmsnorm_api.cpp", extra_flags=("-O1",))


def ref(x, g, ori_h, eps):
    xf = x.float()
    q = (xf[..., :ori_h] * xf[..., :ori_h]).double().sum(-1, keepdim=True).float()
    m = q * torch.tensor(1.0 / ori_h, dtype=torch.float32) + torch.tensor(eps, dtype=x.dtype).float()
    r = torch.exp(torch.log(m) * -0.5)
    return ((xf * r) * g.float()).to(x.dtype)


def run(lib, kernel, dtype, rows, h, ori_h, tmp, eps=1e-5, tiling_tmp=0, seed=0):
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(BLOCKS, rows, h, generator=gen) * 3).to(dtype)
    x[..., ori_h:] = 0
    g = (torch.rand(h, generator=gen) + 0.5).to(dtype)
    y = torch.full((BLOCKS, rows, h), float("nan"), dtype=dtype)
    lib.launch(kernel, BLOCKS, x, g, y, rows, h, ori_h, tmp, eps, tiling_tmp)
    return x, g, y


@pytest.mark.parametrize("rows, h, ori_h, tmp", [
    (13, 64, 64, 0),        # stack form: one round
    (13, 64, 64, 4 * (3 * 64 + 8)),  # 3 rows a round: 4 rounds + 1-row tail
    (7, 96, 90, 2048),      # h padded beyond originalHLength
    (5, 200, 200, 4096),    # rows of more than 64 floats: two reduce levels
])
def test_rmsnorm_float(lib, rows, h, ori_h, tmp):
    x, g, y = run(lib, "rms_float", torch.float32, rows, h, ori_h, tmp)
    torch.testing.assert_close(y, ref(x, g, ori_h, 1e-5), rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("rows, h, ori_h, tmp", [(9, 32, 32, 0), (11, 48, 40, 4 * (2 * 48 * 2 + 8))])
def test_rmsnorm_half(lib, rows, h, ori_h, tmp):
    x, g, y = run(lib, "rms_half", torch.float16, rows, h, ori_h, tmp, eps=1e-3)
    want = ref(x, g, ori_h, 1e-3)
    assert not torch.isnan(y).any()
    assert ((y.float() - want.float()).abs() <= want.float().abs() * 2 ** -10 + 1e-6).all()


def test_rmsnorm_basic_block(lib):
    x, g, y = run(lib, "rms_float_basic", torch.float32, 16, 128, 128, 4 * (8 * 128 + 8))
    torch.testing.assert_close(y, ref(x, g, 128, 1e-5), rtol=2e-6, atol=1e-6)


def host(lib, b, s, h, ori_h, type_size, stack, basic=0):
    out = torch.zeros(16, dtype=torch.int32)
    lib.launch("rms_host", 1, out, b, s, h, ori_h, type_size, stack, basic)
    return [int(v) & 0xFFFFFFFF for v in out]


def tiling_ref(b, s, h, ori_h, ts, stack, basic=False):
    total, coeff, bs = stack // 4, 1 if ts == 4 else 2, 1
    while total >= (bs + 1) * h * coeff + (bs + 1 + 7) // 8 * 8:
        bs += 1
    one = min(bs * h, b * s * h)
    bs = one // h
    bs = (bs if bs < 8 else bs // 8 * 8) if basic else min(bs, 255)
    one = bs * h
    tail = b * s * h % one
    return [b, s, h, ori_h, one, bs, (bs + 7) // 8 * 8, b * s * h // one, b * s * h - tail, tail, tail // h]


@pytest.mark.parametrize("b, s, h, ori_h, ts, stack", [(2, 7, 64, 60, 4, 3000), (1, 3, 48, 48, 2, 1024),
                                                        (4, 8, 64, 64, 4, 200000)])
def test_host_tiling(lib, b, s, h, ori_h, ts, stack):
    v = host(lib, b, s, h, ori_h, ts, stack)
    bs_align = (b * s + 32 // ts - 1) // (32 // ts) * (32 // ts)
    assert v[0] == (b * s * h * (2 if ts == 2 else 1) + bs_align) * 4
    assert v[1] == (h * (2 if ts == 2 else 1) + 8) * 4
    assert v[2] == 1 and v[3] == 1
    assert v[4:15] == tiling_ref(b, s, h, ori_h, ts, stack)


def test_host_refusals(lib):
    assert host(lib, 1, 3, 60, 60, 4, 4096)[3] == 0          # h not 32-byte aligned
    assert host(lib, 1, 3, 64, 64, 4, 64)[3] == 0            # stack below the minimum
    assert host(lib, 1, 3, 64, 64, 4, 4096, basic=1)[2] == 0  # basic block needs b*s % 8 == 0


def test_tmp_too_small_raises(lib):
    with pytest.raises(EmulatorError, match=r"RmsNorm: sharedTmpBuffer holds 512 B; the tiling \(3 rows of 64\) "
                                             r"needs 800 B"):
        run(lib, "rms_float", torch.float32, 6, 64, 64, 512, tiling_tmp=4 * (3 * 64 + 8))


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
def test_asc_devkit_example_passes():
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api/02_normalization/rmsnorm")
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
