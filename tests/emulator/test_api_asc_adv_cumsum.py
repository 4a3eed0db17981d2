"""CumSum (adv_cumsum.h) against torch.cumsum: line by line in float (half up and back once), along the last and
the first axis, the last row output; several blocks; poisoned outputs; a sharedTmpBuffer below the implementation's
need is an error naming CumSum; asc-devkit's cumsum example runs when checked out."""
import os
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_cumsum_api.cpp", extra_flags=("-O1",))


def seq_cumsum(x, dim):
    """float32, one add per step in order (torch.cumsum on CPU is sequential too, but make it explicit)."""
    x = x.float().clone()
    for i in range(1, x.shape[dim]):
        if dim == 2:
            x[:, :, i] = x[:, :, i - 1] + x[:, :, i]
        else:
            x[:, i, :] = x[:, i - 1, :] + x[:, i, :]
    return x


@pytest.mark.parametrize("kernel, dtype", [("cs_float", torch.float32), ("cs_half", torch.float16)])
@pytest.mark.parametrize("last_axis", [0, 1])
def test_cumsum(lib, kernel, dtype, last_axis):
    o, inner, blocks = 12, 64, 2
    x = torch.randn(blocks, o, inner).to(dtype)
    y = torch.full_like(x, float("nan"))
    last = torch.full((blocks, inner), float("nan"), dtype=dtype)
    tmp = o * inner * 4 if not last_axis else inner * 16 * 2 + 16 * inner * x.element_size() * 2
    lib.launch(kernel, blocks, x, y, last, o, inner, last_axis, tmp)
    want = seq_cumsum(x, 2 if last_axis else 1).to(dtype)
    assert torch.equal(y, want)
    torch.testing.assert_close(y.float(), x.double().cumsum(2 if last_axis else 1).float(),
                               rtol=1e-5 if dtype == torch.float32 else 2e-3, atol=1e-5 if dtype == torch.float32 else 1e-2)
    assert torch.equal(last, y[:, -1, :])


@pytest.mark.parametrize("kernel, last_axis, tmp, message", [
    ("cs_half", 0, 128, r"CumSum: sharedTmpBuffer holds 128 B; the implementation needs 192 B"),
    ("cs_float", 1, 1024, r"CumSum: sharedTmpBuffer holds 1024 B; the implementation needs 2048 B"),
])
def test_small_tmp_raises(lib, kernel, last_axis, tmp, message):
    dtype = torch.float16 if kernel == "cs_half" else torch.float32
    o, inner = 3, 16
    x = torch.ones(o, inner, dtype=dtype)
    with pytest.raises(EmulatorError, match=message):
        lib.launch(kernel, 1, x, torch.zeros_like(x), torch.zeros(inner, dtype=dtype), o, inner, last_axis, tmp)


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
def test_asc_devkit_cumsum_example_passes():
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api/10_math/cumsum")
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
