"""Sum (adv_sum.h) against torch: RepeatReduceSum's adjacent-pair tree per 256-byte repeat, then over the repeat
sums, every partial rounded to T (replayed here), and within rounding of the float64 sum; several blocks, odd n,
padding left untouched; a sharedTmpBuffer below GetSumMaxMinTmpSize's size and bad SumParams are errors naming Sum;
asc-devkit's sum example runs when the corpus is checked out."""
import os
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_sum_api.cpp", extra_flags=("-O1",))


def tree(vals, per, dtype):
    level = list(vals)
    while True:
        nxt = []
        for g in range(0, len(level), per):
            v = level[g:g + per] + [torch.zeros((), dtype=dtype)] * (per - len(level[g:g + per]))
            while len(v) > 1:
                v = [(v[2 * i].float() + v[2 * i + 1].float()).to(dtype) for i in range(len(v) // 2)]
            nxt.append(v[0])
        level = nxt
        if len(level) == 1:
            return level[0]


@pytest.mark.parametrize("dtype, kernel", [(torch.float32, "sum_float"), (torch.float16, "sum_half")])
@pytest.mark.parametrize("n", [5, 64, 200, 1000])
def test_sum_rows(lib, dtype, kernel, n):
    outter, blocks = 3, 2
    es = 4 if dtype == torch.float32 else 2
    inner = (n * es + 31) // 32 * 32 // es
    out_pad = (outter * es + 31) // 32 * 32 // es
    x = (torch.rand(blocks, outter, inner) * 2 - 1).to(dtype)
    y = torch.full((blocks, out_pad), float("nan"), dtype=dtype)
    per = 256 // es
    repeats = (n + per - 1) // per
    tmp = 0 if repeats == 1 else ((repeats + 32 // es - 1) // (32 // es)) * 32
    lib.launch(kernel, blocks, x, y, outter, inner, n, max(tmp, 32) if n % 2 else tmp)
    for b in range(blocks):
        for r in range(outter):
            want = tree([x[b, r, i] for i in range(n)], per, dtype)
            assert y[b, r] == want, (b, r, y[b, r], want)
            assert abs(float(y[b, r]) - x[b, r, :n].double().sum().item()) < (1e-4 if es == 4 else 0.5)
    assert torch.isnan(y[:, outter:]).all()


@pytest.mark.parametrize("outter, inner, n, tmp, message", [
    (2, 1024, 1000, 32, r"Sum: sharedTmpBuffer holds 32 B; the implementation needs 64 B for n = 1000"),
    (2, 100, 90, 64, r"Sum: SumParams.inner = 100 elements is 400 B, not a multiple of 32 B"),
    (2, 64, 65, 64, r"Sum: SumParams.n = 65 must be in \[1, inner = 64\]"),
])
def test_misuse(lib, outter, inner, n, tmp, message):
    x = torch.ones(outter * inner)
    with pytest.raises(EmulatorError, match=message):
        lib.launch("sum_float", 1, x, torch.zeros(8), outter, inner, n, tmp)


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
def test_asc_devkit_sum_example_passes():
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api/04_reduce/sum")
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
