"""Pad / UnPad (adv_pad.h) as asc-devkit's impl computes them on Atlas A2/A3 (pad_v220_impl.h, pad_base_impl.h):
the unaligned-width left/right pad to 32 B, the aligned width's redundant-column fill, UnPad's GatherMask form; the
tiling from the host helpers (adv_pad_tiling_host.h, pad_tiling_impl.cpp's formulas). Outputs poisoned, several
blocks, odd widths, int and float types; misuse is an EmulatorError naming the API; asc-devkit's pad and unpad
examples run when the corpus is here."""
import os
import subprocess
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

KERNELS = Path(__file__).parent / "kernels"
DT = {torch.float32: 0, torch.float16: 1, torch.int16: 2, torch.int32: 3}
MAXTMP = 0xFFFFFFFF


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_pad_api.cpp", extra_flags=("-O1",))


def poison(shape, dtype):
    if dtype.is_floating_point:
        return torch.full(shape, float("nan"), dtype=dtype)
    return torch.full(shape, -77, dtype=dtype)


def source(blocks, h, w, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(blocks, h, w, generator=g) * 2000 - 1000).to(dtype)


def run_pad(lib, x, ori_w, l, r, pad_value, tmp=MAXTMP, tiling_tmp=MAXTMP, tiling_ts=0, **kw):
    blocks, h, w = x.shape
    aligned = w * x.element_size() % 32 == 0
    out_w = w if aligned else l + w + r
    if tmp == MAXTMP:  # GetPadMaxMinTmpSize's max for the sharedTmpBuffer
        tmp = ((h * w - 1) // 16 + 1) * 16 * (32 // x.element_size()) * 2 * x.element_size()
    y = poison((blocks, h, out_w), x.dtype)
    lib.launch("pad_k", blocks, x, y, DT[x.dtype], h, w, ori_w, l, r, pad_value, tmp, tiling_tmp, tiling_ts, **kw)
    return y


def pad_value_as(v, dtype):
    return torch.tensor(float(v)).to(dtype) if dtype.is_floating_point else torch.tensor(v).to(dtype)


@pytest.mark.parametrize("dtype, h, w, l, r", [
    (torch.float32, 16, 31, 0, 1),   # the example's shape
    (torch.float32, 5, 29, 2, 1),    # left and right pad, odd height
    (torch.float16, 7, 13, 1, 2),
    (torch.float16, 3, 200, 3, 5),   # 200 -> 208
    (torch.int16, 9, 21, 0, 11),
    (torch.int32, 4, 45, 3, 0),      # left pad only
])
@pytest.mark.parametrize("tmp", [MAXTMP, 0])
def test_pad_unaligned_width(lib, dtype, h, w, l, r, tmp):
    x = source(3, h, w, dtype)
    y = run_pad(lib, x, w, l, r, 321, tmp=tmp)
    pv = pad_value_as(321, dtype)
    want = torch.empty(3, h, l + w + r, dtype=dtype)
    want[:, :, :l] = pv
    want[:, :, l:l + w] = x
    want[:, :, l + w:] = pv
    assert torch.equal(y, want)


def test_pad_unaligned_with_the_minimum_tmp(lib):
    # GetPadMaxMinTmpSize's min (1024 B): one 16-column unit per pass, so a 100-wide row takes 7 passes
    x = source(2, 6, 100, torch.float32, seed=3)
    y = run_pad(lib, x, 100, 1, 3, -5, tmp=1024, tiling_tmp=1024)
    want = torch.full((2, 6, 104), -5.0)
    want[:, :, 1:101] = x
    assert torch.equal(y, want)


@pytest.mark.parametrize("dtype, w, ori_w, r", [
    (torch.float32, 32, 30, 2),
    (torch.float32, 16, 13, 1),     # only the first redundant column filled
    (torch.float16, 48, 33, 15),
    (torch.int16, 16, 15, 1),
])
def test_pad_aligned_width_fills_redundant_columns(lib, dtype, w, ori_w, r):
    x = source(2, 5, w, dtype, seed=1)
    y = run_pad(lib, x, ori_w, 0, r, 7, tmp=0, tiling_tmp=0)
    want = x.clone()
    want[:, :, ori_w:ori_w + r] = pad_value_as(7, dtype)
    assert torch.equal(y, want)


@pytest.mark.parametrize("args, kw, message", [
    ((torch.float32, 8, 30, 30, 0, 1), {}, r"Pad: \(srcWidth 30 \+ leftPad 0 \+ rightPad 1\) \* sizeof\(T\) must be a multiple of 32 B"),
    ((torch.float32, 8, 30, 30, 5, 5), {}, r"Pad: srcWidth \+ leftPad \+ rightPad is 40; it must be srcWidth rounded up to 32 B, 32"),
    ((torch.float32, 8, 23, 23, 8, 1), {}, r"Pad: padParams.leftPad \* sizeof\(T\) is 32 B; it must be less than 32"),
    ((torch.float32, 8, 31, 31, 0, 1), {"tiling_ts": 2}, r"Pad: the PadTiling is not the one PadTilingFunc makes"),
    ((torch.float32, 8, 31, 31, 0, 1), {"tmp": 1024}, r"Pad: sharedTmpBuffer holds 1024 B; the tiling's split \(tmpBuffer1BlockNum 16\) uses 16384 B"),
    ((torch.float32, 8, 31, 31, 0, 1), {"tiling_tmp": 0}, r"Pad: the PadTiling has no tmp split"),
    ((torch.float32, 16, 31, 31, 0, 1), {"tmp": 0, "ub_bytes": 16384}, r"Pad: the stack buffer \(the UB the TPipe left\) holds"),
    ((torch.float32, 4, 32, 30, 1, 1), {}, r"Pad: padParams.leftPad is 1; a 32 B-aligned width takes only a right pad"),
    ((torch.float32, 4, 32, 32, 0, 1), {}, r"Pad: tiling.srcWidth is 32 and tiling.srcOriWidth is 32; they can not be equal"),
    ((torch.float32, 4, 32, 30, 0, 3), {}, r"Pad: srcOriWidth \+ rightPad = 33 exceeds srcWidth 32"),
    ((torch.float32, 4, 32, 20, 0, 3), {}, r"Pad: srcOriWidth 20 must lie in the last 32 B block of srcWidth 32"),
])
def test_pad_misuse_raises(lib, args, kw, message):
    dtype, h, w, ori_w, l, r = args
    x = source(1, h, w, dtype)
    with pytest.raises(EmulatorError, match=message):
        run_pad(lib, x, ori_w, l, r, 1, **kw)


def run_unpad(lib, x, l, r, with_tmp=0):
    blocks, h, w = x.shape
    y = poison((blocks, h, max(w - r, 1)), x.dtype)
    lib.launch("unpad_k", blocks, x, y, DT[x.dtype], h, w, l, r, with_tmp)
    return y


@pytest.mark.parametrize("dtype, h, w, r", [
    (torch.float32, 8, 8, 1),      # the example's shape
    (torch.float32, 5, 24, 7),
    (torch.float16, 11, 32, 15),
    (torch.int16, 3, 48, 5),
    (torch.int32, 255, 8, 3),
])
@pytest.mark.parametrize("with_tmp", [0, 1])
def test_unpad_drops_right_columns(lib, dtype, h, w, r, with_tmp):
    x = source(2, h, w, dtype, seed=2)
    y = run_unpad(lib, x, 0, r, with_tmp)
    assert torch.equal(y, x[:, :, :w - r])


def test_unpad_left_pad_is_not_applied(lib, capfd):
    x = source(1, 4, 16, torch.float32)
    y = run_unpad(lib, x, 2, 1)
    assert torch.equal(y, x[:, :, :15])
    assert "The unPadParams.leftPad is 2, may not be effective" in capfd.readouterr().err


@pytest.mark.parametrize("h, w, r, message", [
    (4, 16, 0, r"UnPad: unPadParams.rightPad is 0; it must be greater than 0"),
    (4, 12, 1, r"UnPad: tiling.srcWidth \* sizeof\(T\) is 48 B; it must be a multiple of 32"),
    (4, 16, 8, r"UnPad: unPadParams.rightPad \* sizeof\(T\) is 32 B; it must be less than 32"),
    (256, 8, 1, r"UnPad: tiling.srcHeight is 256; it must be in \[1, 255\]"),
])
def test_unpad_misuse_raises(lib, h, w, r, message):
    x = source(1, h, w, torch.float32)
    with pytest.raises(EmulatorError, match=message):
        run_unpad(lib, x, 0, r)


HOST_SNIPPET = r'''
#include <cstdio>
#include "kernel_operator.h"
#include "tiling/tiling_api.h"
int main() {
  using AscendC::TensorShape;
  uint32_t mx = 7, mn = 7;
  AscendC::GetPadMaxMinTmpSize(TensorShape(std::vector<int64_t>{16, 31}), 4, mx, mn);
  std::printf("%u %u\n", mx, mn);
  AscendC::GetPadMaxMinTmpSize(TensorShape(std::vector<int64_t>{7, 13}), 2, mx, mn);
  std::printf("%u %u\n", mx, mn);
  optiling::PadTiling t;
  AscendC::PadTilingFunc(TensorShape(std::vector<int64_t>{16, 31}), TensorShape(std::vector<int64_t>{16, 31}), 31744u,
                         4u, t);
  const uint32_t* f = reinterpret_cast<const uint32_t*>(&t);
  for (size_t i = 0; i < sizeof(t) / 4; ++i) std::printf("%u ", f[i]);
  std::printf("\n");
  AscendC::tiling::UnPadTiling u;
  AscendC::UnPadTilingFunc(TensorShape(std::vector<int64_t>{8, 40}), 2048u, 4u, u);
  f = reinterpret_cast<const uint32_t*>(&u);
  for (size_t i = 0; i < sizeof(u) / 4; ++i) std::printf("%u ", f[i]);
  std::printf("\n");
  mx = mn = 7;
  AscendC::GetPadMaxMinTmpSize(TensorShape(std::vector<int64_t>{31}), 4, mx, mn);
  std::printf("%u %u\n", mx, mn);
  return 0;
}
'''


@pytest.mark.skipif(not compiler_available(), reason="no C++ compiler")
def test_host_tiling_is_the_impl_formulas(tmp_path):
    src = tmp_path / "h.cpp"
    src.write_text(HOST_SNIPPET)
    host = INCLUDE_DIR.parent / "include_host"
    subprocess.run([find_compiler(), "-std=c++17", f"-I{INCLUDE_DIR}", f"-I{host}", str(src), "-o", str(tmp_path / "h")],
                   check=True)
    p = subprocess.run([str(tmp_path / "h")], capture_output=True, text=True, check=True)
    lines = p.stdout.split("\n")
    assert lines[0] == "31744 1024"      # ceil(496 / 16) * 16 * 8 * 2 * 4 B; 16 * 8 * 2 * 4 B
    assert lines[1] == f"{6 * 16 * 16 * 2 * 2} 1024"
    # srcHeight srcWidth srcOriWidth widthWithoutLastBlock blocksPerRow heightTiling heightFractal heightFractalTail
    # mainLoopOffset tailBlockOffset | tmpBuffer1BlockNum tmpBuffer1RowNum tmpBuffer2Offset widthTiling widthFractal
    # widthFractalTail widthFractalTailAlingned brcbTiling brcbFractal brcbFractalTail maxRepeatTimes
    # brcbTilingRepeatTimes(Tail) brcbFractalTailRepeatTimes(Tail) reserved
    assert list(map(int, lines[2].split())) == [16, 31, 31, 23, 3, 255, 0, 16, 255 * 31, 23,
                                                31, 496, 31 * 128, 496, 0, 31, 32, 496, 1, 0, 254, 0, 62, 0, 0, 0]
    assert list(map(int, lines[3].split())) == [8, 40, 2, 32, 256, 32, 2, 8]
    assert lines[4] == "7 7" and "The dims of srcShape is 1, should be 2." in p.stderr


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
@pytest.mark.parametrize("example", ["pad", "unpad"])
def test_asc_devkit_pad_examples_pass(example):
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api" / "08_transpose" / example)
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
