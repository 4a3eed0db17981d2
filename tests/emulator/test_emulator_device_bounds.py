"""bounds="device": what the NPU runs without a fault passes and is reported as a finding; what faults or
corrupts memory on the NPU still fails; bounds="strict" (the default) refuses all of it, as CANN's CPU-debug
build does. Multi-block launches over poisoned outputs (tests/emulator/kernels/device_bounds.cpp)."""
import re

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import GM_GUARD_BYTES


@pytest.fixture(scope="module")
def lib(compile_source, kernels_dir):
    return compile_source(kernels_dir / "device_bounds.cpp")


def _launch(lib, n, which, bounds):
    x = torch.arange(n, dtype=torch.float32) - 7.5
    y = torch.full((n,), float("nan"))
    counters = lib.launch("device_bounds", (n + 63) // 64, x, y, n, which, bounds=bounds)
    return x, y, counters


# which -> (n, what strict says, the device-bounds finding)
RUNS_ON_THE_NPU = {
    0: (128, r"UB overflow: .*pipe.InitBuffer\(unused, .*\) asks for 204800 B", r"UB over-allocation: .*"
        r"device_bounds.cpp:\d+ pipe.InitBuffer\(unused\) ends at 205568 B of 196608"),
    2: (128, r"Duplicate: dst accesses UB bytes \[256, 768\) outside its buffer qout\[0\]",
        r"UB access past its buffer: Duplicate dst past qout\[0\]"),
    3: (100, r"DataCopy\(GM->UB\) touches GM bytes .* outside every kernel argument buffer: x=.*overruns it by 64 B",
        r"GM read past the allocation: DataCopy\(GM->UB\) of x"),
}


@pytest.mark.parametrize("which", list(RUNS_ON_THE_NPU))
def test_what_the_npu_runs_passes_with_a_finding(lib, which):
    n, strict, finding = RUNS_ON_THE_NPU[which]
    with pytest.raises(EmulatorError, match=strict):
        _launch(lib, n, which, "strict")
    x, y, counters = _launch(lib, n, which, "device")
    assert torch.equal(y, 2 * x)  # every block's slice written, the poison overwritten
    assert len(counters["findings"]) == 1
    (what, times), = counters["findings"].items()
    assert re.match(finding, what) and times >= 1
    assert counters["blocks_run"] == (n + 63) // 64


def test_a_clean_kernel_has_no_findings(lib):
    _, _, counters = _launch(lib, 128, 3, "device")  # case 3 with whole slices reads nothing past x
    assert counters["findings"] == {}


def test_over_read_bytes_are_poison(lib):
    """The guard after an allocation reads as NaN: a result that used those bytes would be wrong."""
    x = torch.arange(100, dtype=torch.float32)
    y = torch.zeros(128)  # y big enough for block 1's whole-slice write (case 4 writes 64 floats)
    lib.launch("device_bounds", 2, x, y, 128, 4, bounds="device")
    assert torch.equal(y[:100], 2 * x)
    assert torch.equal(y[100:112], torch.zeros(12))  # x's 400 B allocation padded to 448 B (zeros)
    assert torch.isnan(y[112:]).all()  # then the guard's poison
    assert GM_GUARD_BYTES >= 256


FAULTS_ON_THE_NPU = {
    1: (128, r"Muls: dst accesses UB bytes \[196608, 196864\) of its buffer unused = \[768, 205568\), past the end of "
             r"the 196608 B unified buffer, which faults on the NPU"),
    4: (100, r"DataCopy\(UB->GM\) touches GM bytes .* outside every kernel argument buffer: .*y=.*overruns it by 64 B"
             r".*device bounds: a write past an allocation corrupts its neighbour"),
}


@pytest.mark.parametrize("which", list(FAULTS_ON_THE_NPU))
def test_what_faults_on_the_npu_still_fails(lib, which):
    n, message = FAULTS_ON_THE_NPU[which]
    with pytest.raises(EmulatorError, match=message):
        _launch(lib, n, which, "device")
    with pytest.raises(EmulatorError):
        _launch(lib, n, which, "strict")


def test_bad_bounds_mode_is_one_clear_error(lib):
    with pytest.raises(ValueError, match=r"bounds must be one of \('strict', 'device'\), got 'loose'"):
        lib.launch("device_bounds", 1, torch.zeros(64), torch.zeros(64), 64, 0, bounds="loose")


@pytest.mark.parametrize("bounds", ["strict", "device"])
def test_queue_knows_a_tensor_by_its_buffer(lib, bounds):
    x = torch.randn(192)
    y = torch.full((192,), float("nan"))
    counters = lib.launch("queue_by_buffer", 3, x, y, bounds=bounds)
    assert torch.equal(y, x) and counters["blocks_run"] == 3 and counters["findings"] == {}
