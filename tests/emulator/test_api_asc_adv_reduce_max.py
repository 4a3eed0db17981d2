"""ReduceMax / ReduceMin with Pattern::Reduce::AR / RA (adv_reduce_max.h) against torch amax / amin over padded rows
(srcInnerPad: the padding, poisoned with +-inf, is not read); several blocks; output beyond the result untouched; a
tmp below GetReduceMaxMaxMinTmpSize's size is an error naming ReduceMax; asc-devkit's reducemax example when checked
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
    return compile_source(KERNELS / "adv_reduce_max_api.cpp", extra_flags=("-O1",))


@pytest.mark.parametrize("kernel, dtype", [("rm_float", torch.float32), ("rm_half", torch.float16)])
@pytest.mark.parametrize("op", [0, 1, 2, 3])
def test_reduce_patterns(lib, kernel, dtype, op):
    first, last, blocks = 12, 37, 2
    blk = 32 // (4 if dtype == torch.float32 else 2)
    stride = (last + blk - 1) // blk * blk
    x = torch.randn(blocks, first, stride).to(dtype)
    x[:, :, last:] = float("inf") if op in (0, 1) else -float("inf")  # padding must not be read
    y = torch.full((blocks, 64), float("nan"), dtype=dtype)
    lib.launch(kernel, blocks, x, y, first, last, op, 8192)
    v = x[:, :, :last]
    want = {0: v.amax(2), 1: v.amax(1), 2: v.amin(2), 3: v.amin(1)}[op]
    out = first if op in (0, 2) else last
    assert torch.equal(y[:, :out], want)
    assert torch.isnan(y[:, out:]).all()


def test_small_tmp_raises(lib):
    # AR float, last = 37 (< one repeat of 64): first * 8 floats = 12 * 32 B = 384 B
    x = torch.ones(12, 40)
    with pytest.raises(EmulatorError, match=r"ReduceMax: sharedTmpBuffer holds 256 B; the implementation needs 384 B"):
        lib.launch("rm_float", 1, x, torch.zeros(64), 12, 37, 0, 256)


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
def test_asc_devkit_reducemax_example_passes():
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api/04_reduce/reducemax")
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
