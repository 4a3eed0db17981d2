"""CANN op-project kernels run unchanged: the op_host tiling function (OpDef, TilingContext,
BEGIN_TILING_DATA_DEF) on torch tensors, DTYPE_*, GET_TILING_DATA, TILING_KEY_IS; CPU-debug
conventions (ASSERT, global PIPE_*/EVENT_ID*, printf/DumpTensor, GetSystemCycle); device-padded GM
bounds; the one-line message for an API the emulator lacks. Kernels are trex's own (tests/emulator/kernels)."""
import struct
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorCompileError, EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.op_project import OpProject, OpProjectError, run_kernel_with_tiling
from trex.codegen_ascendc.emulator.runner import device_allocation_bytes, summarize_compile_errors

from trex.codegen_ascendc.emulator.runner import compiler_available

KERNELS = Path(__file__).parent / "kernels"
PROJECT = KERNELS / "scale_add_project"


def _require_compiler() -> None:
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")


@pytest.fixture(scope="module")
def scale_add():
    _require_compiler()
    return OpProject(PROJECT / "op_kernel" / "scale_add.cpp", opt="-O0")


def test_op_definition_is_read_from_op_host(scale_add):
    info = scale_add.info
    assert info.name == "ScaleAdd" and info.kernel_name == "scale_add"
    assert [p.name for p in info.inputs] == ["x", "bias"] and [p.name for p in info.outputs] == ["y"]
    assert [(a.name, a.kind, a.default) for a in info.attrs] == [("alpha", "float", 2.0)]
    assert scale_add.struct == "optiling::ScaleAddTilingData"
    assert info.socs == ("ascend910b",) and info.ub_bytes == 192 * 1024  # UB sized by the AddConfig SoC


@pytest.mark.parametrize("dtype, key", [(torch.float32, 1), (torch.float16, 2)])
@pytest.mark.parametrize("shape, cores, blocks", [((8, 256), 8, 8), ((3, 333), 8, 8), ((3, 333), 1, 1), ((5, 7), 4, 3)])
def test_framework_launch_tiles_on_host_and_runs_every_block(scale_add, dtype, key, shape, cores, blocks):
    x = torch.randn(shape).to(dtype)
    bias = torch.randn(shape).to(dtype)
    y = torch.full(shape, float("nan"), dtype=dtype)  # poisoned: every element must be written
    run = scale_add.run([x, bias], [y], {"alpha": 0.5}, cores=cores)
    assert (run.block_dim, run.tiling_key) == (blocks, key)
    assert run.counters["blocks_run"] == blocks
    assert run.tiling.workspace_bytes == 64
    ref = (x.float() * 0.5 + bias.float()).to(dtype) if dtype == torch.float32 else (x * torch.tensor(0.5, dtype=dtype) + bias)
    torch.testing.assert_close(y, ref, rtol=1e-3, atol=1e-3)


def test_attribute_default_and_unknown_attribute(scale_add):
    x, bias = torch.ones(64), torch.zeros(64)
    y = torch.full((64,), float("nan"))
    scale_add.run([x, bias], [y])
    assert torch.equal(y, torch.full((64,), 2.0))
    with pytest.raises(OpProjectError, match=r"has no attribute\(s\) \['beta'\]; its attributes are \['alpha'\]"):
        scale_add.run([x, bias], [y], {"beta": 1.0})
    with pytest.raises(OpProjectError, match=r"takes inputs \(x, bias\) and outputs \(y\); got 1 inputs"):
        scale_add.run([x], [y])


def test_tail_read_past_an_unaligned_end_stays_inside_the_device_allocation(scale_add):
    # (3, 333) floats: the last block's 32-byte-rounded DataCopy reads 4 B past the end of x and bias.
    assert device_allocation_bytes(999 * 4) == 4032
    x, bias = torch.randn(3, 333), torch.randn(3, 333)
    y = torch.full((3, 333), float("nan"))
    lib = scale_add.library([x, bias], [y])
    tiling = scale_add.tile([x, bias], [y], {"alpha": 1.0})
    ws = torch.zeros(64, dtype=torch.uint8)
    with pytest.raises(EmulatorError, match=r"DataCopy\(GM->UB\) touches GM bytes .* outside every kernel argument "
                                            r"buffer: x=.*overruns it by 4 B"):
        lib.launch("scale_add", tiling.block_dim, x, bias, y, ws, bytearray(tiling.tiling), tiling_key=1,
                   gm_padding=False)
    lib.launch("scale_add", tiling.block_dim, x, bias, y, ws, bytearray(tiling.tiling), tiling_key=1)
    torch.testing.assert_close(y, x + bias)


def test_unknown_tiling_key_runs_no_branch_and_leaves_the_output(scale_add):
    x, bias = torch.ones(64), torch.ones(64)
    y = torch.full((64,), float("nan"))
    lib = scale_add.library([x, bias], [y])
    tiling = scale_add.tile([x, bias], [y])
    lib.launch("scale_add", tiling.block_dim, x, bias, y, torch.zeros(64, dtype=torch.uint8), bytearray(tiling.tiling),
               tiling_key=7)
    assert torch.isnan(y).all()


@pytest.fixture(scope="module")
def conventions():
    _require_compiler()
    return compile_kernel(KERNELS / "cann_conventions.cpp", extra_flags=("-O0",))


def test_cpu_debug_conventions(conventions, capfd):
    x = torch.arange(64, dtype=torch.float32)
    y = torch.full((64,), float("nan"))
    cycles = torch.zeros(1, dtype=torch.int64)
    conventions.launch("conventions", 8, x, y, cycles, struct.pack("<II", 64, 99))
    assert torch.equal(y, x + torch.arange(8).repeat_interleave(8))
    assert cycles.item() == 1
    out = capfd.readouterr().out
    assert "conventions: block 0 of 8" in out and "DumpTensor: desc=7, count=2: 0 1" in out


def test_assert_names_the_condition_and_block(conventions):
    with pytest.raises(EmulatorError, match=r"conventions \(block 3 of 8\): ASSERT\(GetBlockIdx\(\) != t.assertWhen "
                                            r"&& \"block asked to fail\"\) failed at .*cann_conventions.cpp:\d+"):
        conventions.launch("conventions", 8, torch.zeros(64), torch.zeros(64), torch.zeros(1, dtype=torch.int64),
                           struct.pack("<II", 64, 3))


@pytest.mark.parametrize("mode, expected", [(1, [-128, -2, -2, 0, 2, 2, 127]), (5, [-128, -2, -1, 0, 1, 2, 127])])
def test_cast_half_to_int8_saturates(conventions, mode, expected):
    x = torch.tensor([-300.0, -2.5, -1.5, 0.25, 1.5, 2.5, 1000.0] + [0.0] * 25, dtype=torch.float16)
    y = torch.full((32,), 0x5A, dtype=torch.int8)
    conventions.launch("cast_half_int8", 1, x, y, 32, mode)
    assert y[:7].tolist() == expected


@pytest.mark.parametrize("key, dtype, expected", [(10, "float32", 3.0), (20, "float16", 4.0)])
def test_framework_kernel_without_host_code(key, dtype, expected):
    _require_compiler()
    tdt = getattr(torch, dtype)
    x = torch.ones(4 * 64, dtype=tdt)
    y = torch.full_like(x, float("nan"))
    counters = run_kernel_with_tiling(KERNELS / "keyed_kernel.cpp", 4, x, y, None, struct.pack("<If", 64, 3.0),
                                      tiling_key=key, dtypes={"x": dtype},
                                      tiling_header=KERNELS / "keyed_kernel_tiling.h", opt="-O0")
    assert counters["blocks_run"] == 4
    assert torch.equal(y, torch.full_like(x, expected))


def test_arch_macros_follow_the_first_known_soc():
    from trex.codegen_ascendc.emulator.op_project import arch_defines
    assert arch_defines() == arch_defines(("ascend910b",)) == ["-D__CCE_AICORE__=220", "-D__NPU_ARCH__=2201"]
    assert arch_defines(("nosuch", "ascend310p", "ascend910b")) == ["-D__CCE_AICORE__=200", "-D__NPU_ARCH__=2002"]
    assert arch_defines(("ascend910",)) == ["-D__CCE_AICORE__=100", "-D__NPU_ARCH__=1001"]


def test_unsupported_api_is_one_named_line():
    _require_compiler()
    src = ('#include "kernel_operator.h"\nusing namespace AscendC;\n'
           'extern "C" __global__ __aicore__ void k(GM_ADDR x) {\n'
           '  LocalTensor<float> a; SoftMaxFlashV9(a, a, a, 8);\n}\n')
    with pytest.raises(EmulatorCompileError) as info:
        compile_kernel(src, extra_flags=("-O0",))
    first = str(info.value).splitlines()[0]
    assert "the kernel uses `SoftMaxFlashV9`, which the trex AscendC emulator does not provide" in first
    assert len(str(info.value).splitlines()) < 12 and info.value.log


def test_compile_error_summary_keeps_only_the_first_error():
    log = ("k.cpp: In function 'void k()':\nk.cpp:3:5: error: 'Foo' was not declared in this scope\n  3 | Foo();\n"
           "k.cpp:4:5: error: 'Bar' was not declared in this scope\n" + "note: candidate\n" * 200)
    text = summarize_compile_errors(log)
    assert text.splitlines()[0].startswith("k.cpp:3:5: the kernel uses `Foo`")
    assert "Bar" not in text.splitlines()[1] and "and 1 more error(s)" in text and len(text.splitlines()) < 8


def test_a_tensor_passed_as_input_and_output_is_one_allocation(scale_add):
    # CANN "ref" tensors: the same buffer behind two kernel arguments (in place: x = x * alpha + bias)
    x, bias = torch.randn(3, 333), torch.randn(3, 333)
    expected = x * 0.5 + bias
    scale_add.run([x, bias], [x], {"alpha": 0.5})
    torch.testing.assert_close(x, expected)


def test_ascendc_assert_and_scalar_min_max(conventions):
    y = torch.zeros(2, dtype=torch.int32)
    conventions.launch("assert_minmax", 1, y, 7, -3)
    assert y.tolist() == [-3, 7]
    with pytest.raises(EmulatorError, match=r"ASSERT\(a != 99\) failed at .*cann_conventions.cpp"):
        conventions.launch("assert_minmax", 1, y, 99, 0)


@pytest.mark.parametrize("bounds", ["strict", "device"])
def test_framework_launch_takes_the_bounds_mode(scale_add, bounds):
    """bounds= reaches the launch; a kernel inside its buffers has no device-bounds finding either way."""
    x, bias = torch.randn(3, 333), torch.randn(3, 333)
    y = torch.full((3, 333), float("nan"))
    run = scale_add.run([x, bias], [y], {"alpha": 0.5}, cores=8, bounds=bounds)
    assert run.counters["blocks_run"] == 8 and run.counters["findings"] == {}
    torch.testing.assert_close(y, x * 0.5 + bias)
