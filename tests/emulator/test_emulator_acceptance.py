"""Acceptance: hand-written kernels in the documented AscendC style compile against the emulator
unchanged and compute the right result on torch tensors, over several blocks."""
import subprocess

import pytest
import torch

from trex.codegen_ascendc.emulator import INCLUDE_DIR, compile_kernel, find_compiler


@pytest.fixture(scope="module")
def add_lib(kernels_dir):
    if find_compiler() is None:
        pytest.skip("no C++ compiler (g++ or $CXX) found")
    return compile_kernel(kernels_dir / "add_custom.cpp")


@pytest.fixture(scope="module")
def rms_lib(kernels_dir):
    if find_compiler() is None:
        pytest.skip("no C++ compiler (g++ or $CXX) found")
    return compile_kernel(kernels_dir / "rms_norm_bf16.cpp")


@pytest.mark.parametrize("block_dim,tile_num,per_block", [(8, 8, 2048), (4, 2, 4096), (1, 1, 256)])
def test_double_buffered_add(add_lib, block_dim, tile_num, per_block):
    total = block_dim * per_block
    g = torch.Generator().manual_seed(block_dim)
    x = torch.randn(total, generator=g).half()
    y = torch.randn(total, generator=g).half()
    z = torch.zeros(total, dtype=torch.half)
    c = add_lib.launch("add_custom", block_dim, x, y, z, total, tile_num, check_sync=True)
    assert torch.equal(z, x + y)
    tile_bytes = per_block // tile_num // 2 * 2
    assert c["mte2_bytes"] == 2 * total * 2 and c["mte3_bytes"] == total * 2
    assert c["mte2_transfers"] == 2 * block_dim * tile_num * 2
    assert c["vector_repeats"]["Add"] == block_dim * tile_num * 2 * -(-tile_bytes // 256)
    assert c["ub_peak_bytes"] == 3 * 2 * tile_bytes


@pytest.mark.parametrize("rows,d,block_dim", [(37, 100, 8), (5, 7168, 3), (3, 33, 8)])
def test_rms_norm_bf16(rms_lib, rows, d, block_dim):
    g = torch.Generator().manual_seed(rows * d)
    x = (torch.randn(rows, d, generator=g) * 2).bfloat16()
    gamma = (torch.rand(d, generator=g) + 0.5).bfloat16()
    y = torch.zeros(rows, d, dtype=torch.bfloat16)
    rstd = torch.zeros(rows)
    eps = 1e-6
    c = rms_lib.launch("rms_norm_bf16", block_dim, x, gamma, y, rstd, rows, d, eps, check_sync=True)
    xf = x.float()
    want_rstd = torch.rsqrt(xf.pow(2).mean(-1) + eps)
    torch.testing.assert_close(rstd, want_rstd, rtol=2e-6, atol=0)
    # Given the kernel's rstd, the vector path is fp32 Muls, Mul, then CAST_RINT: bit-exact with torch.
    assert torch.equal(y, ((xf * rstd[:, None]) * gamma.float()).bfloat16())
    # And against the plain reference within one bf16 rounding.
    torch.testing.assert_close(y.float(), (xf * want_rstd[:, None] * gamma.float()), rtol=8e-3, atol=1e-6)
    rows_per_block = -(-rows // block_dim)
    used_blocks = -(-rows // rows_per_block)  # blocks with rows load gamma once each
    assert c["mte2_bytes"] == rows * d * 2 + used_blocks * d * 2
    assert c["mte3_bytes"] == rows * d * 2


def test_icpu_run_kf_host_program(kernels_dir, tmp_path):
    cxx = find_compiler()
    if cxx is None:
        pytest.skip("no C++ compiler (g++ or $CXX) found")
    exe = tmp_path / "icpu_main"
    subprocess.run([cxx, "-O1", "-std=c++17", f"-I{INCLUDE_DIR}", f"-I{kernels_dir}",
                    str(kernels_dir / "icpu_main.cpp"), "-o", str(exe)], check=True, capture_output=True, text=True)
    ok = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "mismatches=0" in ok.stdout, ok.stdout + ok.stderr
    bad = subprocess.run([str(exe), "overflow"], capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0
    assert "overflow_kernel (block 0 of 1): UB overflow" in bad.stderr and "'tooBig'" in bad.stderr


def test_run_kernel_and_module_entry(add_lib, kernels_dir, capsys):
    from trex.codegen_ascendc.emulator import run_kernel
    from trex.codegen_ascendc.emulator.__main__ import main

    x = torch.ones(512, dtype=torch.half)
    z = torch.zeros(512, dtype=torch.half)
    counters = run_kernel(kernels_dir / "add_custom.cpp", "add_custom", 2, x, x, z, 512, 1)
    assert torch.all(z == 2) and counters["blocks_run"] == 2
    assert main([str(kernels_dir / "add_custom.cpp")]) == 0
    out = capsys.readouterr().out
    assert "add_custom(GM_ADDR x, GM_ADDR y, GM_ADDR z, uint32_t totalLength, uint32_t tileNum)" in out
