"""DropOut (adv_dropout.h) against torch in its four shape-inferred modes (byte dense / byte padded rows / bit dense /
bit padded rows): kept elements times T(1/keepProb), dropped ones 0; several blocks; poisoned output (the mask
buffer beyond the used bytes holds garbage); too-small tmp and keepProb outside (0, 1) raise naming DropOut;
asc-devkit's dropout example runs when checked out."""
import os
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_dropout_api.cpp", extra_flags=("-O1",))


def keep_mask(mask, rows, sl, ml, bit):
    m = mask.view(-1, rows, ml)
    if not bit:
        return m[:, :, :sl] != 0
    bits = ((m[:, :, :, None].int() >> torch.arange(8)) & 1).reshape(m.shape[0], rows, ml * 8)
    return bits[:, :, :sl] != 0


@pytest.mark.parametrize("kernel, dtype", [("do_float", torch.float32), ("do_half", torch.float16)])
@pytest.mark.parametrize("sl, ml, bit", [(64, 64, False), (64, 96, False), (256, 32, True), (128, 32, True)])
def test_dropout_modes(lib, kernel, dtype, sl, ml, bit):
    rows, blocks, keep = 4, 2, 0.7
    x = (torch.randn(blocks, rows, sl) * 10).to(dtype)
    if bit:
        mask = torch.randint(0, 256, (blocks, rows, ml), dtype=torch.int32).to(torch.uint8)
    else:
        mask = torch.randint(0, 2, (blocks, rows, ml), dtype=torch.int32).to(torch.uint8)
        mask[:, :, sl:] = 7  # padding: ignored
    y = torch.full_like(x, float("nan"))
    lib.launch(kernel, blocks, x, mask, y, rows, sl, ml, keep, 1024)
    k = keep_mask(mask, rows, sl, ml, bit)
    scale = torch.tensor(1 / keep, dtype=torch.float32).to(dtype).float()
    want = (torch.where(k, x.float(), torch.zeros(())) * scale).to(dtype)
    assert torch.equal(y, want)


@pytest.mark.parametrize("kernel, sl, ml, tmp, keep, message", [
    ("do_float", 64, 64, 160, 0.5, r"DropOut: sharedTmpBuffer holds 160 B; the implementation needs at least 192 B"),
    ("do_half", 128, 16, 224, 0.5, r"DropOut: sharedTmpBuffer holds 224 B; the implementation needs at least 256 B"),
    ("do_float", 64, 64, 1024, 1.0, r"DropOut: keepProb = 1 must lie in \(0, 1\)"),
])
def test_misuse(lib, kernel, sl, ml, tmp, keep, message):
    dtype = torch.float32 if kernel == "do_float" else torch.float16
    x = torch.ones(2, sl, dtype=dtype)
    with pytest.raises(EmulatorError, match=message):
        lib.launch(kernel, 1, x, torch.ones(2 * ml, dtype=torch.uint8), torch.zeros_like(x), 2, sl, ml, keep, tmp)


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
def test_asc_devkit_dropout_example_passes():
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api/07_filter/dropout")
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
