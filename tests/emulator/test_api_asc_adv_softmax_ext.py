"""SoftmaxFlashV2 (isUpdate false / true), SoftmaxGrad, SoftmaxGradFront, LogSoftMax and AdjustSoftMaxRes
(adv_softmax_ext.h) against torch, as asc-devkit's API pages define them (LogSoftMax: log10 of the softmax, the
implementation's Ln * 0.4342944819); stats one 32-byte block a row; several blocks; poisoned outputs. The
GetSoftMaxGradMinTmpSize / GetSelectMaxMinTmpSize host formulas. SoftmaxFlashV3 (half in, float stats) against the
API page's PASA pseudo code in float32 (block sums pairwise as BlockReduceSum), isUpdate false / true, tmp and
stack forms, outputs aliasing the inputs, several splits and a tail; its host tiling; its shape errors.
asc-devkit's example programs when checked out."""
import os
import subprocess
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

KERNELS = Path(__file__).parent / "kernels"
FLASH, FLASH_UPDATE, GRAD, GRAD_FRONT, LOGSM, ADJUST = range(6)
BLOCKS, ROWS, K = 3, 8, 200


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_softmax_ext_api.cpp", extra_flags=("-O1",))


def launch(lib, op, x, g=None, s_in=None, m_in=None, frm=0):
    M = BLOCKS * ROWS
    g = torch.zeros(M, K) if g is None else g
    y = torch.full((M, K), float("nan"))
    s = torch.full((M, 8), float("nan")) if s_in is None else s_in.clone()
    m = torch.full((M, 8), float("nan")) if m_in is None else m_in.clone()
    e = torch.full((M, 8), float("nan"))
    lib.launch("sm_ext", BLOCKS, x, g, y, s, m, e, ROWS, K, op, frm)
    return y, s, m, e


def rows():
    g = torch.Generator().manual_seed(5)
    return torch.randn(BLOCKS * ROWS, K, generator=g) * 4


def test_flash_v2_first_step_is_unnormalised_softmax(lib):
    x = rows()
    y, s, m, _ = launch(lib, FLASH, x)
    mx = x.max(-1, keepdim=True).values
    torch.testing.assert_close(y, torch.exp(x - mx), rtol=1e-6, atol=0)
    assert torch.equal(m, mx.expand(-1, 8))
    torch.testing.assert_close(s, torch.exp(x - mx).sum(-1, keepdim=True).expand(-1, 8), rtol=1e-6, atol=0)


def test_flash_v2_update_rescales_the_running_sum(lib):
    x = rows()
    in_max = torch.randn(BLOCKS * ROWS, 1) * 6
    in_sum = torch.rand(BLOCKS * ROWS, 1) * 10 + 1
    y, s, m, e = launch(lib, FLASH_UPDATE, x, s_in=in_sum.expand(-1, 8).contiguous(),
                        m_in=in_max.expand(-1, 8).contiguous())
    new_max = torch.maximum(in_max, x.max(-1, keepdim=True).values)
    em = torch.exp(in_max - new_max)
    torch.testing.assert_close(y, torch.exp(x - new_max), rtol=1e-6, atol=0)
    torch.testing.assert_close(m, new_max.expand(-1, 8), rtol=0, atol=0)
    torch.testing.assert_close(e, em.expand(-1, 8), rtol=1e-6, atol=0)
    want = em * in_sum + torch.exp(x - new_max).sum(-1, keepdim=True)
    torch.testing.assert_close(s, want.expand(-1, 8), rtol=2e-6, atol=0)
    # two steps of FlashV2 over [x1 | x2] give the softmax of the whole row
    full = torch.cat([x, x * 0.5], -1)
    _, s1, m1, _ = launch(lib, FLASH, x)
    _, s2, m2, _ = launch(lib, FLASH_UPDATE, x * 0.5, s_in=s1, m_in=m1)
    torch.testing.assert_close(m2[:, :1], full.max(-1, keepdim=True).values, rtol=0, atol=0)
    torch.testing.assert_close(s2[:, :1], torch.exp(full - m2[:, :1]).sum(-1, keepdim=True), rtol=1e-5, atol=0)


@pytest.mark.parametrize("op", [GRAD, GRAD_FRONT])
def test_softmax_grad(lib, op):
    x = torch.softmax(rows(), -1)
    g = torch.randn(BLOCKS * ROWS, K)
    y, *_ = launch(lib, op, x, g=g)
    s = (g.double() * x.double()).sum(-1, keepdim=True)
    if op == GRAD_FRONT:
        # dst is [rows, 8]: each block's first rows * 8 floats; the rest of its buffer is not written
        per_block = y.view(BLOCKS, ROWS * K)
        front = per_block[:, :ROWS * 8].reshape(BLOCKS * ROWS, 8)
        torch.testing.assert_close(front.double(), s.expand(-1, 8), rtol=1e-5, atol=1e-6)
        assert torch.isnan(per_block[:, ROWS * 8:]).all()
    else:
        torch.testing.assert_close(y.double(), (g.double() - s) * x.double(), rtol=1e-5, atol=1e-6)


def test_log_softmax_is_log10(lib):
    x = rows()
    y, s, m, _ = launch(lib, LOGSM, x)
    torch.testing.assert_close(y.double(), torch.log_softmax(x.double(), -1) / torch.log(torch.tensor(10.0)).double(),
                               rtol=1e-5, atol=1e-5)
    assert torch.equal(m, x.max(-1, keepdim=True).values.expand(-1, 8))


def test_adjust_softmax_res_replaces_flagged_rows(lib):
    x = rows()
    mx = torch.zeros(BLOCKS * ROWS, 8)
    mx[[1, 9, 17], 0] = torch.tensor(0xFF7FFFFF - 2 ** 32, dtype=torch.int32).view(torch.float32)
    y, _, _, e = launch(lib, ADJUST, x, m_in=mx, frm=0xFF7FFFFF)
    want = x.clone()
    want[[1, 9, 17]] = -5.0
    assert torch.equal(y, want) and e[0, 0] == 1.0 and e[8, 0] == 1.0
    y, _, _, e = launch(lib, ADJUST, x, m_in=torch.zeros(BLOCKS * ROWS, 8), frm=0xFF7FFFFF)
    assert torch.equal(y, x) and e[0, 0] == 0.0


SNIPPET = r'''
#include <cstdio>
#include "tiling/tiling_api.h"
int main() {
  AscendC::TensorShape s({16, 960}), m({16, 960}), scalar({1});
  std::printf("%u %u %u\n", AscendC::GetSoftMaxGradMinTmpSize(s, 4, false, false),
              AscendC::GetSoftMaxGradMinTmpSize(s, 4, true, false), AscendC::GetSoftMaxGradMinTmpSize(s, 2, false, false));
  uint32_t mx = 0, mn = 0;
  AscendC::GetSelectMaxMinTmpSize(s, scalar, 4, m, 1, false, mx, mn);
  std::printf("%u %u\n", mx, mn);
  return 0;
}
'''


@pytest.mark.skipif(not compiler_available(), reason="no C++ compiler")
def test_host_sizes(tmp_path):
    (tmp_path / "h.cpp").write_text(SNIPPET)
    host = INCLUDE_DIR.parent / "include_host"
    subprocess.run([find_compiler(), "-std=c++17", f"-I{INCLUDE_DIR}", f"-I{host}", str(tmp_path / "h.cpp"), "-o",
                    str(tmp_path / "h")], check=True)
    out = subprocess.run([str(tmp_path / "h")], capture_output=True, text=True, check=True).stdout.split()
    assert list(map(int, out)) == [(16 + 960 + 64) * 4, (8 + 960 + 64) * 4, (16 * 2 + 3 * 960 + 64) * 4,
                                   16 * 960 * 2 + 512, 4096 * 2 + 512]


def tree8(v):
    # BlockReduceSum: pairwise over the 8 floats of each block
    while v.shape[-1] > 1:
        v = v[..., 0::2] + v[..., 1::2]
    return v[..., 0]


def flash_v3_ref(x, in_mean, in_sum, in_max, update, loop_cnt, alpha, alias=False):
    f32 = torch.float32
    x = x.float()
    m, k = x.shape[-2:]
    a = torch.tensor(alpha, dtype=f32) / (1 - torch.tensor(alpha, dtype=f32))
    lane = tree8(x[..., :512].reshape(*x.shape[:-1], 64, 8))
    for c in range(512, k, 64):
        lane = x[..., c:c + 64] + lane
    base_k = k // 8
    local = tree8(lane.reshape(*lane.shape[:-1], 8, 8)) * torch.tensor(1.0 / base_k, dtype=f32)
    g = tree8(local.clone()) * torch.tensor(1.0 / 8, dtype=f32)
    shift = (g[..., None] - local) * a
    x = x - shift.repeat_interleave(base_k, dim=-1)
    mean = g[..., None].expand(*g.shape, 8)
    if update:
        mean = (in_mean * torch.tensor(loop_cnt - 1.0, dtype=f32) + mean) * torch.tensor(1.0 / loop_cnt, dtype=f32)
    cur = (g[..., None] - mean) * a
    mx = x.max(-1, keepdim=True).values + cur
    em = None
    if update:
        # alias: inMean / inMax are the output tensors, read after mean / max were written into them (the
        # implementation's order): shiftPrev is 0 and the running max the current one
        prev = (mean - mean) * a if alias else (in_mean - mean) * a
        in_max = mx if alias else in_max
        mx = torch.maximum(mx, in_max + prev)
        em = torch.exp(prev + (in_max - mx))
    y = torch.exp(x - (mx - cur).repeat(1, 1, k // 8))
    s = y.double().sum(-1, keepdim=True).float().expand(*y.shape[:-1], 8)
    if update:
        s = em * in_sum + s
    return y.half(), mean, s, mx, em


@pytest.mark.parametrize("update, m, k, work, tmp, alias", [
    (False, 8, 512, 1 << 30, 0, 0),          # stack form, one split
    (True, 12, 1024, 4 * 3 * (40 + 2 * 1024 + 64), 40000, 0),  # 3-row splits: 4 of them
    (True, 9, 640, 4 * 8 * (40 + 2 * 640 + 64), 60000, 1),     # 8-row split + 1-row tail, outputs alias inputs
])
def test_flash_v3(lib, update, m, k, work, tmp, alias):
    blocks, alpha, loop_cnt = 2, 0.9375, 3
    g = torch.Generator().manual_seed(11)
    x = (torch.rand(blocks, m, k, generator=g) * 10).half()
    in_mean = (torch.rand(blocks, m, 1, generator=g) * 2 + 4).expand(blocks, m, 8).contiguous()
    in_sum = (torch.rand(blocks, m, 1, generator=g) * 100).expand(blocks, m, 8).contiguous()
    in_max = (torch.rand(blocks, m, 1, generator=g) * 12).expand(blocks, m, 8).contiguous()
    y = torch.full((blocks, m, k), float("nan"), dtype=torch.float16)
    em = torch.full((blocks, m, 16), float("nan"), dtype=torch.float16)
    outs = [torch.full((blocks, m, 8), float("nan")) for _ in range(3)]
    ins = [in_mean.clone(), in_sum.clone(), in_max.clone()]
    lib.launch("flash_v3", blocks, x, *ins, y, *outs, em, m, k, work, tmp, alias, int(update), loop_cnt, alpha)
    got_mean, got_sum, got_max = outs
    want_y, mean, s, mx, e = flash_v3_ref(x, in_mean, in_sum, in_max, update, loop_cnt, alpha, bool(alias))
    torch.testing.assert_close(y.float(), want_y.float(), rtol=2e-3, atol=1e-3)
    torch.testing.assert_close(got_mean, mean, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(got_max, mx, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got_sum, s, rtol=1e-4, atol=1e-4)
    if update:
        torch.testing.assert_close(em.float(), e.repeat_interleave(2, dim=-1).half().float(), rtol=2e-3, atol=1e-4)
    else:
        assert torch.isnan(em.float()).all()


@pytest.mark.parametrize("m, k, work, message", [
    (8, 256, 1 << 30, r"SoftmaxFlashV3: Failed to check shape in SoftmaxFlashV3, the last axis \(256\) should be at least 512"),
    (8, 512, 1 << 30, r"SoftmaxFlashV3: the temporary buffer holds 4096 B; a split of 8 rows of 512 needs"),
])
def test_flash_v3_misuse(lib, m, k, work, message):
    with pytest.raises(EmulatorError, match=message):
        lib.launch("flash_v3", 1, torch.ones(m, k).half(), *[torch.ones(m, 8) for _ in range(3)],
                   torch.zeros(m, k).half(), *[torch.zeros(m, 8) for _ in range(3)], torch.zeros(m, 16).half(),
                   m, k, work, 4096 if k == 512 else 0, 0, 1, 1, 0.9375)


def test_flash_v3_host(lib):
    out = torch.zeros(18, dtype=torch.int32)
    m, k, work = 20, 1024, 4 * 6 * (40 + 2 * 1024 + 64) + 100
    lib.launch("flash_v3_host", 1, out, m, k, work)
    row = (40 + 2 * k + 64) * 4
    base = 6
    assert out.tolist() == [m * row, row, m, k, m * k, m, 8, m * 8, base, k, base * k, base, 8, base * 8,
                            m // base, m % base, m % base * k, m % base * 8]


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
@pytest.mark.parametrize("example", ["01_activation/softmax", "01_activation/softmaxflashv2",
                                     "01_activation/softmaxgrad", "01_activation/logsoftmax", "07_filter/select",
                                     "01_activation/softmaxflashv3"])
def test_asc_devkit_example_passes(example):
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api" / example)
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
