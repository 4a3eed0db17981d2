"""TransData (adv_transdata.h) as asc-devkit's impl moves the data on Atlas A2/A3 (transdata_impl.h): NCDHW <->
FRACTAL_Z_3D and NCDHW <-> NDC1HWC0 for half / int16 / bfloat16, N and C padded with zeros, the NCDHW side's padHw
tails (ignored as input; zeros from FRACTAL_Z_3D); the Layout / MakeShape / MakeStride / MakeLayout forms the
examples use; the tmp size from GetTransDataMaxMinTmpSize (transdata_tiling.cpp's formulas). Outputs poisoned,
several blocks, odd n / c / h*w; misuse is an EmulatorError naming TransData; asc-devkit's transdata example (all
four scenarios) runs when the corpus is here."""
import os
import subprocess
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

KERNELS = Path(__file__).parent / "kernels"
DT = {torch.float16: 0, torch.int16: 1, torch.bfloat16: 2}
TO_FZ, FROM_FZ, TO_6HD, FROM_6HD = 1, 2, 3, 4


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_transdata_api.cpp", extra_flags=("-O1",))


def dims(n, c, d, h, w):
    hw = h * w
    return hw, (hw + 15) // 16 * 16, (c + 15) // 16, (n + 15) // 16


def rand(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.int16:
        return torch.randint(-30000, 30000, shape, generator=g, dtype=torch.int16)
    return (torch.rand(shape, generator=g) * 200 - 100).to(dtype)


def poison(shape, dtype):
    return torch.full(shape, -77, dtype=dtype) if dtype == torch.int16 else torch.full(shape, float("nan"), dtype=dtype)


def run(lib, mode, x, shape, blocks, tmp_mode=1, bad=0, **kw):
    n, c, d, h, w = shape
    hw, pad, c1, n1 = dims(*shape)
    sizes = {"nc": n * c * d * pad, "fz": d * c1 * hw * n1 * 256, "6hd": n * d * c1 * hw * 16}
    dst = {TO_FZ: "fz", FROM_FZ: "nc", TO_6HD: "6hd", FROM_6HD: "nc"}[mode]
    y = poison((blocks, sizes[dst]), x.dtype)
    lib.launch("td_k", blocks, x, y, DT[x.dtype], mode, n, c, d, h, w, tmp_mode, bad, **kw)
    return y


def ncdhw_input(shape, blocks, dtype, seed=0):
    n, c, d, h, w = shape
    _, pad, _, _ = dims(*shape)
    return rand((blocks, n, c, d, pad), dtype, seed)  # the padHw tail holds values TransData must ignore


def fz_reference(x, shape):  # [n, c, d, padHw] -> [d, c1, hw, N, 16]
    n, c, d, h, w = shape
    hw, _, c1, n1 = dims(*shape)
    z = torch.zeros(n1 * 16, c1 * 16, d, hw, dtype=x.dtype)
    z[:n, :c] = x[..., :hw]
    return z.view(n1 * 16, c1, 16, d, hw).permute(3, 1, 4, 0, 2).contiguous()


def hd6_reference(x, shape):  # [n, c, d, padHw] -> [n, d, c1, hw, 16]
    n, c, d, h, w = shape
    hw, _, c1, _ = dims(*shape)
    z = torch.zeros(n, c1 * 16, d, hw, dtype=x.dtype)
    z[:, :c] = x[..., :hw]
    return z.view(n, c1, 16, d, hw).permute(0, 3, 1, 4, 2).contiguous()


SHAPES = [(16, 16, 1, 3, 5), (18, 19, 1, 3, 3), (5, 33, 1, 2, 7), (33, 7, 2, 4, 4)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype, tmp_mode", [(torch.float16, 1), (torch.int16, 0), (torch.bfloat16, 1)])
def test_ncdhw_to_fractal_z_3d_and_back(lib, shape, dtype, tmp_mode):
    blocks = 2
    n, c, d, h, w = shape
    hw, pad, c1, n1 = dims(*shape)
    x = ncdhw_input(shape, blocks, dtype)
    y = run(lib, TO_FZ, x.reshape(blocks, -1), shape, blocks, tmp_mode)
    want = torch.stack([fz_reference(x[b], shape) for b in range(blocks)])
    assert torch.equal(y.view_as(want), want)
    back = run(lib, FROM_FZ, y, shape, blocks, tmp_mode).view(blocks, n, c, d, pad)
    assert torch.equal(back[..., :hw], x[..., :hw])
    assert (back[..., hw:] == 0).all()  # the padHw tail: zeros from the impl's zero-filled staging


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype, tmp_mode", [(torch.float16, 1), (torch.int16, 0)])
def test_fractal_z_3d_to_ncdhw_of_random_data(lib, shape, dtype, tmp_mode):
    # a FRACTAL_Z_3D tensor with non-zero padding: N / C padding rows are dropped
    n, c, d, h, w = shape
    hw, pad, c1, n1 = dims(*shape)
    src = rand((3, d, c1, hw, n1 * 16, 16), dtype, seed=4)
    y = run(lib, FROM_FZ, src.reshape(3, -1), shape, 3, tmp_mode).view(3, n, c, d, pad)
    want = src.permute(0, 4, 2, 5, 1, 3).reshape(3, n1 * 16, c1 * 16, d, hw)[:, :n, :c]
    assert torch.equal(y[..., :hw], want) and (y[..., hw:] == 0).all()


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype, tmp_mode", [(torch.float16, 1), (torch.int16, 0), (torch.bfloat16, 0)])
def test_ncdhw_to_ndc1hwc0_and_back(lib, shape, dtype, tmp_mode):
    blocks = 3
    n, c, d, h, w = shape
    hw, pad, c1, _ = dims(*shape)
    x = ncdhw_input(shape, blocks, dtype, seed=1)
    y = run(lib, TO_6HD, x.reshape(blocks, -1), shape, blocks, tmp_mode)
    want = torch.stack([hd6_reference(x[b], shape) for b in range(blocks)])
    assert torch.equal(y.view_as(want), want)
    back = run(lib, FROM_6HD, y, shape, blocks, tmp_mode).view(blocks, n, c, d, pad)
    assert torch.equal(back[..., :hw], x[..., :hw])  # the padHw tail: what the tmp staging held


@pytest.mark.parametrize("mode, tmp_mode, bad, message", [
    (TO_FZ, 2, 0, r"TransData: sharedTmpBuffer holds \d+ B; \d+ B are needed \(GetTransDataMaxMinTmpSize\)"),
    (FROM_6HD, 2, 0, r"TransData: sharedTmpBuffer holds 992 B; 1024 B are needed"),
    (TO_FZ, 1, 1, r"TransData: FRACTAL_Z_3D c1 is 2; c1 = \(c \+ c0 - 1\) / c0 = 1 for c = 16"),
    (FROM_FZ, 1, 2, r"TransData: the layouts' d, h, w differ: \(1, 3, 5\) / \(2, 3, 5\)"),
    (TO_6HD, 1, 1, r"TransData: NDC1HWC0 c1 is 2; c1 = \(c \+ c0 - 1\) / c0 = 1 for c = 16"),
    (FROM_6HD, 1, 2, r"TransData: the layouts' n, d, h, w differ"),
])
def test_misuse_raises(lib, mode, tmp_mode, bad, message):
    shape = (16, 16, 1, 3, 5)
    n, c, d, h, w = shape
    hw, pad, c1, n1 = dims(*shape)
    size = {TO_FZ: n * c * d * pad, FROM_FZ: d * c1 * hw * n1 * 256, TO_6HD: n * c * d * pad,
            FROM_6HD: n * d * c1 * hw * 16}[mode]
    x = rand((1, size), torch.float16, 0)
    with pytest.raises(EmulatorError, match=message):
        run(lib, mode, x, shape, 1, tmp_mode, bad)


def test_repeat_limit_and_stack_size_raise(lib):
    shape = (1, 1, 1, 1, 4097)  # padHw 4112: 4112 / 16 = 257 TransDataTo5HD repeats
    x = ncdhw_input(shape, 1, torch.float16).reshape(1, -1)
    with pytest.raises(EmulatorError, match=r"TransData: this shape needs a TransDataTo5HD of 257 repeats"):
        run(lib, TO_6HD, x, shape, 1, 0)
    shape = (16, 16, 1, 3, 5)
    x = ncdhw_input(shape, 1, torch.float16).reshape(1, -1)
    with pytest.raises(EmulatorError, match=r"TransData: the stack buffer \(the UB the TPipe left\) holds 448 B; 544 B are needed"):
        run(lib, TO_6HD, x, shape, 1, 0, ub_bytes=16384)


HOST_SNIPPET = r'''
#include <cstdio>
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
// (ge::DT_* are spelled by value: kernel_operator.h's DT_* macros are back after tiling_api.h)
int main() {
  using namespace AscendC;
  auto* plat = platform_ascendc::PlatformAscendCManager::GetInstance();
  const TransDataConfig cfgs[4] = {{DataFormat::NCDHW, DataFormat::FRACTAL_Z_3D}, {DataFormat::FRACTAL_Z_3D, DataFormat::NCDHW},
                                   {DataFormat::NCDHW, DataFormat::NDC1HWC0}, {DataFormat::NDC1HWC0, DataFormat::NCDHW}};
  const TensorShape nc(std::vector<int64_t>{18, 19, 2, 3, 3});
  const TensorShape fz(std::vector<int64_t>{2, 2, 3, 3, 2, 16, 16});
  const TensorShape h6(std::vector<int64_t>{18, 2, 2, 3, 3, 16});
  uint32_t mx = 7, mn = 7;
  bool ok = GetTransDataMaxMinTmpSize(*plat, nc, fz, ge::DataType(1), cfgs[0], mx, mn); std::printf("%d %u %u\n", ok, mx, mn);
  ok = GetTransDataMaxMinTmpSize(*plat, fz, nc, ge::DataType(6), cfgs[1], mx, mn); std::printf("%d %u %u\n", ok, mx, mn);
  ok = GetTransDataMaxMinTmpSize(*plat, nc, h6, ge::DataType(27), cfgs[2], mx, mn); std::printf("%d %u %u\n", ok, mx, mn);
  ok = GetTransDataMaxMinTmpSize(*plat, h6, nc, ge::DataType(7), cfgs[3], mx, mn); std::printf("%d %u %u\n", ok, mx, mn);
  mx = mn = 7;
  ok = GetTransDataMaxMinTmpSize(*plat, nc, fz, ge::DataType(0), cfgs[0], mx, mn); std::printf("%d %u %u\n", ok, mx, mn);
  ok = GetTransDataMaxMinTmpSize(*plat, nc, h6, ge::DataType(1), cfgs[0], mx, mn); std::printf("%d %u %u\n", ok, mx, mn);
  return 0;
}
'''


@pytest.mark.skipif(not compiler_available(), reason="no C++ compiler")
def test_host_tmp_size_is_the_tiling_impl_formula(tmp_path):
    src = tmp_path / "h.cpp"
    src.write_text(HOST_SNIPPET)
    host = INCLUDE_DIR.parent / "include_host"
    subprocess.run([find_compiler(), "-std=c++17", f"-I{INCLUDE_DIR}", f"-I{host}", str(src), "-o", str(tmp_path / "h")],
                   check=True)
    p = subprocess.run([str(tmp_path / "h")], capture_output=True, text=True, check=True)
    d, pad, c1, N = 2, 16, 2, 32
    to_fz = max(19 * d * pad * 2, d * 9 * N * 2) + N * d * c1 * 16 * pad * 2
    assert p.stdout.split("\n")[:6] == [
        f"1 {to_fz} {to_fz}",
        f"1 {N * c1 * 16 * d * pad * 2 * 2} {N * c1 * 16 * d * pad * 2 * 2}",  # n, c not multiples of 16: twice
        f"1 {d * pad * 2 + d * c1 * 16 * pad * 2} {d * pad * 2 + d * c1 * 16 * pad * 2}",
        f"1 {d * c1 * 16 * pad * 2 + 512} {d * c1 * 16 * pad * 2 + 512}",
        "0 7 7", "0 7 7"]
    assert "it only supports DT_FLOAT16/DT_BF16/DT_UINT16/DT_INT16 data type" in p.stderr
    assert "input shapes are not matched with DataFormat." in p.stderr


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
@pytest.mark.parametrize("scenario", ["1", "2", "3", "4"])
def test_asc_devkit_transdata_example_passes(scenario):
    from trex.codegen_ascendc.emulator import asc_program
    r = asc_program.run_example(CORPUS / "04_advanced_api" / "08_transpose" / "transdata", scenario=scenario)
    assert r.result == "pass", (r.scenario, r.result, r.detail)
