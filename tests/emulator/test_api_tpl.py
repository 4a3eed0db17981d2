"""ASCENDC_TPL_* template kernels (asc-devkit Utils-API/Tiling模板编程): the host encodes its template
arguments into the tiling key with ASCENDC_TPL_SEL_PARAM, the kernel is instantiated for every combination
ASCENDC_TPL_SEL lists and the launch runs the one for the key. Framework launch (OpProject), direct launch
with a chosen key, and ICPU_RUN_KF of one instantiation; outputs poisoned, several blocks, odd lengths;
the GM bounds and race checks still fire inside template instances."""
import ctypes
import subprocess
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError, compile_kernel
from trex.codegen_ascendc.emulator.op_project import OpProject, OpProjectError
from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

KERNELS = Path(__file__).parent / "kernels"
PROJECT = KERNELS / "tpl_project"
SCALES = (1, 2, 3, 7)  # ASCENDC_TPL_UI_MIX, 1 range {1..3}, then 7: the index is what the key holds
GE = {torch.float16: 1, torch.float32: 0}


def tpl_key(dtype, scale, use_pad):
    """The key layout of asc-devkit's EncodeTilingKey: D_T 8 bits (ge value), SCALE 4 bits (index), USE_PAD 1 bit."""
    return GE[dtype] | SCALES.index(scale) << 8 | int(use_pad) << 12


class Tiling(ctypes.Structure):
    _fields_ = [("totalLength", ctypes.c_uint32), ("blockLength", ctypes.c_uint32), ("tileLength", ctypes.c_uint32)]


@pytest.fixture(scope="module")
def project():
    if not compiler_available():
        pytest.skip("no C++ compiler (g++ or $CXX) found: the AscendC emulator needs one")
    return OpProject(PROJECT / "op_kernel" / "tpl_scale.cpp", opt="-O0")


@pytest.mark.parametrize("dtype, scale, n", [(torch.float16, 3, 1000), (torch.float16, 1, 4096), (torch.float16, 2, 77),
                                             (torch.float32, 7, 999), (torch.float32, 2, 37)])
def test_framework_launch_runs_the_instance_the_host_key_names(project, dtype, scale, n):
    x = (torch.arange(n) % 97 * 0.25 - 8).to(dtype)
    y = torch.full((n,), float("nan"), dtype=dtype)
    run = project.run([x], [y], attrs={"scale": scale}, ub_fill=0xFF)
    align = 32 // x.element_size()
    assert run.tiling_key == tpl_key(dtype, scale, n % align != 0)
    per_block = -(-(-(-n // 4)) // align) * align  # the host's split: ceil(n / 4) rounded up to 32 B
    assert run.block_dim == -(-n // per_block)
    assert torch.equal(y, x * scale)  # exact: x * small int is exact in half and float here
    assert run.counters["vector_calls"]["Muls"] > 0


def test_host_rejects_a_combination_no_args_sel_covers(project):
    x = torch.ones(64, dtype=torch.float32)
    with pytest.raises(OpProjectError, match=r"GET_TPL_TILING_KEY\(0, 1, 0\): no ASCENDC_TPL_ARGS_SEL of ASCENDC_TPL_SEL "
                                             r"covers this combination"):
        project.run([x], [torch.empty_like(x)], attrs={"scale": 1})


def test_host_rejects_a_value_the_decl_lacks(project):
    x = torch.ones(64, dtype=torch.float16)
    with pytest.raises(OpProjectError, match=r"value 5 of template parameter SCALE is not among its ASCENDC_TPL_\*_DECL values"):
        project.run([x], [torch.empty_like(x)], attrs={"scale": 5})


@pytest.fixture(scope="module")
def lib(project):
    return project.library([torch.ones(1, dtype=torch.float16)], [torch.ones(1, dtype=torch.float16)])


@pytest.mark.parametrize("dtype, scale, use_pad, blocks", [(torch.float16, 2, False, 3), (torch.float16, 3, True, 5),
                                                           (torch.float32, 7, True, 2)])
def test_direct_launch_with_a_chosen_key(lib, dtype, scale, use_pad, blocks):
    per = 64 if use_pad else 128
    n = per * (blocks - 1) + (45 if use_pad else 128)
    x = torch.randn(n).to(dtype)
    y = torch.full((n,), float("nan"), dtype=dtype)
    lib.launch("tpl_scale", blocks, x, y, None, Tiling(n, per, 64), tiling_key=tpl_key(dtype, scale, use_pad))
    assert torch.equal(y, x * scale)


def test_without_pad_the_tail_is_truncated_like_datacopy(lib):
    n = 100  # half: 200 B; DataCopy moves 192 B per tile
    x = torch.randn(n).half()
    y = torch.full((n,), float("nan"), dtype=torch.float16)
    lib.launch("tpl_scale", 1, x, y, None, Tiling(n, n, 64), tiling_key=tpl_key(torch.float16, 2, False))
    assert torch.equal(y[:96], x[:96] * 2) and torch.isnan(y[96:]).all()


def test_a_key_no_instance_has_is_an_error(lib):
    x = torch.ones(64)
    with pytest.raises(EmulatorError, match=r"tpl_scale: tiling key 0 is none of the 8 template instances ASCENDC_TPL_SEL "
                                            r"declares \(keys 1, 257, 513, 4097, 4353, 4609, 4352, 4864\)"):
        lib.launch("tpl_scale", 1, x, torch.empty_like(x), None, Tiling(64, 64, 64), tiling_key=0)


def test_checks_fire_inside_a_template_instance(lib):
    x = torch.ones(256, dtype=torch.float16)
    key = tpl_key(torch.float16, 2, True)
    with pytest.raises(EmulatorError, match=r"DataCopyPad\(GM->UB\).*outside every kernel argument buffer.*x=.*overruns"):
        lib.launch("tpl_scale", 2, x, torch.empty_like(x), None, Tiling(512, 256, 64), tiling_key=key)
    # a tile too large for UB: 2 + 2 buffers of 80000 B
    with pytest.raises(EmulatorError, match=r"tpl_scale \(block 0 of 1\): UB overflow: .*tpl_scale.cpp:\d+: "
                                            r"pipe.InitBuffer\(outQ_, 2, tile_ \* sizeof\(D_T\)\)"):
        lib.launch("tpl_scale", 1, x, torch.empty_like(x), None, Tiling(256, 256, 40000), tiling_key=key)


def test_a_template_kernel_without_tpl_declarations_cannot_be_launched():
    if not compiler_available():
        pytest.skip("no C++ compiler")
    src = ('#include "kernel_operator.h"\n'
           'template <typename T> __global__ __aicore__ void plain(GM_ADDR x) {}\n')
    lib = compile_kernel(src, extra_flags=("-O0",))
    with pytest.raises(EmulatorError, match=r"plain is a template kernel without ASCENDC_TPL_ARGS_DECL"):
        lib.launch("plain", 1, torch.ones(8))


def test_icpu_run_kf_of_one_instance(tmp_path):
    cxx = find_compiler()
    if cxx is None:
        pytest.skip("no C++ compiler (g++ or $CXX) found")
    exe = tmp_path / "tpl_icpu"
    subprocess.run([cxx, "-O0", "-std=c++17", f"-I{INCLUDE_DIR}", f"-I{KERNELS}", f"-I{PROJECT / 'op_kernel'}",
                    str(KERNELS / "tpl_icpu_main.cpp"), "-o", str(exe)], check=True, capture_output=True, text=True)
    ok = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "mismatches=0 blocks=3" in ok.stdout, ok.stdout + ok.stderr
    bad = subprocess.run([str(exe), "overrun"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "kernel (block 2 of 3)" in bad.stderr and "outside every kernel argument buffer" in bad.stderr
