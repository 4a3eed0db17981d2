"""AscendQuant / AscendDequant (adv_quant.h) against torch: quant in half as the implementation (x -> half,
* half(scale), + half(offset), round to nearest even, saturate to int8), per tensor and per channel; dequant
float(int32) * scale[j] per column (or a scalar), rounded to dstT, columns >= calCount untouched; several blocks;
AscendAntiQuant int8 -> half in half steps (half(src) + offset[c], then * scale[c], each rounded to half) in its
tensor / stack / scalar / scale-only (groups by SetShapeInfo or AntiQuantShapeInfo) forms, its host tmp sizes;
too-small tmp and bad params raise naming the API; asc-devkit's quant / dequant / antiquant examples when checked
out."""
import os
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_quant_api.cpp", extra_flags=("-O1",))


def quant_ref(x, scale, offset):
    h = x.half()
    h = (h.float() * scale.half().float()).half()
    h = (h.float() + offset.half().float()).half()
    return torch.round(h.float()).clamp(-128, 127).to(torch.int8)


@pytest.mark.parametrize("tmp", [0, 1024])
def test_quant_per_tensor(lib, tmp):
    n, blocks = 512, 3
    x = torch.randn(blocks * n) * 40
    x[:6] = torch.tensor([0.25, 0.75, -0.25, 1000.0, -1000.0, 63.2])
    y = torch.full((blocks * n,), -7, dtype=torch.int8)
    lib.launch("quant_float", blocks, x, torch.zeros(8), y, n, 8, 0, tmp, 2.0, 0.9)
    assert torch.equal(y, quant_ref(x, torch.tensor(2.0), torch.tensor(0.9)))
    assert y[3] == 127 and y[4] == -128


def test_quant_per_channel(lib):
    n, ch, blocks = 256, 32, 2
    x = torch.randn(blocks * n) * 10
    sc = torch.rand(ch) * 3
    y = torch.full((blocks * n,), -7, dtype=torch.int8)
    lib.launch("quant_float", blocks, x, sc, y, n, ch, 1, 0, 0.0, -1.5)
    want = quant_ref(x, sc.repeat(blocks * n // ch), torch.tensor(-1.5))
    assert torch.equal(y, want)


@pytest.mark.parametrize("kernel, dtype", [("deq_float", torch.float32), ("deq_half", torch.float16)])
@pytest.mark.parametrize("mode, tmp", [(0, 0), (0, 4096), (1, 0)])
def test_dequant(lib, kernel, dtype, mode, tmp):
    m, n, cal, blocks = 4, 40, 33, 2
    blk = 32 // (4 if dtype == torch.float32 else 2)
    an = (n + blk - 1) // blk * blk
    x = torch.randint(-100000, 100000, (blocks, m, n), dtype=torch.int32)
    sc = torch.rand(n) * 0.01
    y = torch.full((blocks, m, an), float("nan"), dtype=dtype)
    lib.launch(kernel, blocks, x, sc, y, m, n, cal, mode, tmp)
    s = sc[:cal] if mode == 0 else torch.tensor(0.5)
    want = (x[:, :, :cal].float() * s).to(dtype)
    assert torch.equal(y[:, :, :cal], want)
    assert torch.isnan(y[:, :, cal:]).all()


@pytest.mark.parametrize("args, message", [
    (("quant_float", 1, 64, 8, 0, 32), r"AscendQuant: sharedTmpBuffer holds 32 B; the implementation needs at least 64 B"),
    (("quant_float", 1, 64, 24, 1, 0), r"AscendQuant: calCount 64 must be a positive multiple of scaleCount 24"),
])
def test_quant_misuse(lib, args, message):
    kernel, blocks, n, ch, mode, tmp = args
    with pytest.raises(EmulatorError, match=message):
        lib.launch(kernel, blocks, torch.ones(n), torch.ones(ch), torch.zeros(n, dtype=torch.int8), n, ch, mode, tmp,
                   1.0, 0.0)


@pytest.mark.parametrize("m, n, cal, tmp, message", [
    (2, 16, 17, 0, r"AscendDequant: params.calCount is 17, which should be in range \(0, params.n 16\]"),
    (2, 64, 64, 256, r"AscendDequant: sharedTmpBuffer holds 256 B; the implementation needs at least 512 B"),
])
def test_dequant_misuse(lib, m, n, cal, tmp, message):
    with pytest.raises(EmulatorError, match=message):
        lib.launch("deq_float", 1, torch.ones(m * n, dtype=torch.int32), torch.ones(n), torch.zeros(m * n), m, n, cal,
                   0, tmp)


def antiquant_ref(x, off, sc, groups=1, with_off=True):
    k = x.shape[-2]
    rows = torch.arange(k) // (k // groups)
    h = x.half()
    if with_off:
        h = (h.float() + off[rows].float()).half()
    return (h.float() * sc[rows].float()).half()


@pytest.mark.parametrize("mode", [0, 1])
def test_antiquant_tensor_offset_scale(lib, mode):
    k, n, blocks = 5, 96, 3
    g = torch.Generator().manual_seed(3)
    x = torch.randint(-128, 128, (blocks, k, n), dtype=torch.int8, generator=g)
    off = (torch.rand(1, n, generator=g) * 20 - 10).half()
    sc = (torch.rand(1, n, generator=g) * 20 - 10).half()
    y = torch.full((blocks, k, n), float("nan"), dtype=torch.float16)
    lib.launch("antiquant_half", blocks, x, off, sc, y, k, n, 1, mode, 0.0, 0.0)
    assert torch.equal(y, antiquant_ref(x, off, sc))


def test_antiquant_scalar(lib):
    k, n, blocks = 3, 64, 2
    x = torch.randint(-128, 128, (blocks, k, n), dtype=torch.int8)
    y = torch.full((blocks, k, n), float("nan"), dtype=torch.float16)
    lib.launch("antiquant_half", blocks, x, torch.zeros(1, n).half(), torch.zeros(1, n).half(), y, k, n, 1, 2, 0.3, -1.7)
    want = ((x.half().float() + torch.tensor(0.3).half().float()).half().float() * torch.tensor(-1.7).half().float()).half()
    assert torch.equal(y, want)


@pytest.mark.parametrize("mode", [3, 4])
def test_antiquant_scale_only_groups(lib, mode):
    k, n, groups, blocks = 6, 32, 3, 2
    x = torch.randint(-128, 128, (blocks, k, n), dtype=torch.int8)
    sc = (torch.rand(groups, n) * 4 - 2).half()
    y = torch.full((blocks, k, n), float("nan"), dtype=torch.float16)
    lib.launch("antiquant_half", blocks, x, torch.zeros(groups, n).half(), sc, y, k, n, groups, mode, 0.0, 0.0)
    assert torch.equal(y, antiquant_ref(x, None, sc, groups, with_off=False))


def test_antiquant_misuse(lib):
    with pytest.raises(EmulatorError, match=r"AscendAntiQuant: the scale's \[groupCount, N\] = \[4, 32\]"):
        lib.launch("antiquant_half", 1, torch.zeros(6, 32, dtype=torch.int8), torch.zeros(4, 32).half(),
                   torch.zeros(4, 32).half(), torch.zeros(6, 32).half(), 6, 32, 4, 4, 0.0, 0.0)


@pytest.mark.parametrize("k, n, scale_n, tr, out, want", [
    (8, 128, 128, 0, 1, (0, 0)),                              # half output: no temporary space
    (8, 128, 128, 0, 27, (128 * 2 * 4 + 64 * 8 * 4,) * 2),   # bf16 per channel
    (8, 128, 128, 1, 27, (80 * 128 * 4,) * 2),               # bf16 transposed per channel
    (8, 128, 1, 0, 27, (8 * 128 * 4, 1024)),                 # bf16 per tensor
])
def test_antiquant_host_sizes(lib, k, n, scale_n, tr, out, want):
    o = torch.zeros(2, dtype=torch.int32)
    lib.launch("antiquant_host", 1, o, k, n, scale_n, tr, out)
    assert tuple(o.tolist()) == want


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
@pytest.mark.parametrize("example", ["quant", "dequant", "antiquant"])
def test_asc_devkit_example_passes(example):
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api/03_quantization" / example)
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
