"""WelfordUpdate / WelfordFinalize (adv_welford.h) as asc-devkit's impl computes them on Atlas A2/A3
(layernorm_common_impl.h, welfordfinalize_common_impl.h): Update's float steps per element (half x via float),
isInplace / isReuseSource; Finalize's chunking by the tmp size, LayerNormReduceSumImpl + WholeReduceSum order, the
head/tail and counts forms. Outputs poisoned, several blocks, odd compute lengths; misuse is an EmulatorError naming
the API; the host GetWelfordUpdate/FinalizeMaxMinTmpSize give the tiling impl's sizes; asc-devkit's welford example
runs when the corpus is here."""
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

KERNELS = Path(__file__).parent / "kernels"
PLAIN, INPLACE, REUSE, INPLACE_REUSE = range(4)
POISON = float("nan")


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_welford_api.cpp", extra_flags=("-O1",))


def update_inputs(blocks, ab, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = (torch.rand(blocks * ab, generator=g) * 99 + 1).to(dtype)
    m = torch.rand(blocks * ab, generator=g) * 120000 - 60000
    v = torch.rand(blocks * ab, generator=g) * 60000
    return x, m, v


def run_update(lib, x, m, v, ab, abc, nrec, mode, tmp):
    blocks = x.numel() // ab
    om = torch.full_like(m, POISON)
    ov = torch.full_like(m, POISON)
    xa = torch.full_like(x, POISON)
    kernel = "wf_update_half" if x.dtype == torch.float16 else "wf_update_float"
    lib.launch(kernel, blocks, x, m, v, om, ov, ab, abc, nrec, mode, tmp, xa)
    return om.view(blocks, ab), ov.view(blocks, ab), xa.view(blocks, ab)


def update_reference(x, m, v, nrec):
    xf = x.float()
    d = xf - m
    om = d * torch.tensor(nrec, dtype=torch.float32) + m
    ov = d * (xf - om) + v
    return om, ov


@pytest.mark.parametrize("dtype, tmp", [(torch.float32, 512), (torch.float32, 0), (torch.float16, 768),
                                        (torch.float16, 4096)])
@pytest.mark.parametrize("mode", [PLAIN, INPLACE])
def test_update_over_blocks(lib, dtype, tmp, mode):
    ab, abc, blocks = 208, 131, 3  # 131: two 64-element chunks with a 512 B tmp, then a tail of 3
    x, m, v = update_inputs(blocks, ab, dtype)
    om, ov, _ = run_update(lib, x, m, v, ab, abc, 1.0 / 8, mode, tmp)
    want_m, want_v = update_reference(x, m, v, 1.0 / 8)
    want_m, want_v = want_m.view(blocks, ab), want_v.view(blocks, ab)
    assert torch.equal(om[:, :abc], want_m[:, :abc]) and torch.equal(ov[:, :abc], want_v[:, :abc])
    if mode == INPLACE:  # outputs past abComputeLength take the inputs'
        assert torch.equal(om[:, abc:], m.view(blocks, ab)[:, abc:])
        assert torch.equal(ov[:, abc:], v.view(blocks, ab)[:, abc:])
    else:  # left as they were (the poison)
        assert torch.isnan(om[:, abc:]).all() and torch.isnan(ov[:, abc:]).all()
    # against the textbook update in float64
    xd, md = x.double().view(blocks, ab), m.double().view(blocks, ab)
    mean = md + (xd - md) / 8
    torch.testing.assert_close(om[:, :abc].double(), mean[:, :abc], rtol=1e-6, atol=1e-2)


@pytest.mark.parametrize("tmp", [256, 0])
def test_update_reuse_source_leaves_x_minus_mean(lib, tmp):
    ab, abc = 64, 35
    x, m, v = update_inputs(2, ab, torch.float32, seed=5)
    om, ov, xa = run_update(lib, x, m, v, ab, abc, 0.25, REUSE, tmp)
    want_m, want_v = update_reference(x, m, v, 0.25)
    assert torch.equal(om[:, :abc], want_m.view(2, ab)[:, :abc]) and torch.equal(ov[:, :abc], want_v.view(2, ab)[:, :abc])
    assert torch.equal(xa[:, :abc], (x - m).view(2, ab)[:, :abc])  # the impl's Sub(src, src, inMean)
    assert torch.equal(xa[:, abc:], x.view(2, ab)[:, abc:])


def test_update_inplace_reuse_whole_row(lib):
    ab = 64
    x, m, v = update_inputs(1, ab, torch.float32, seed=9)
    om, ov, _ = run_update(lib, x, m, v, ab, ab, 0.5, INPLACE_REUSE, 256)
    want_m, want_v = update_reference(x, m, v, 0.5)
    assert torch.equal(om[0], want_m) and torch.equal(ov[0], want_v)


@pytest.mark.parametrize("dtype, ab, abc, tmp, message", [
    (torch.float16, 64, 10, 512, r"WelfordUpdate: sharedTmpBuffer holds 512 B; the implementation needs at least 768 B"),
    (torch.float32, 64, 10, 256, r"WelfordUpdate: sharedTmpBuffer holds 256 B; the implementation needs at least 512 B"),
    (torch.float32, 64, 0, 512, r"WelfordUpdate: para.abComputeLength is 0; it must be in \[1, abLength = 64\]"),
    (torch.float32, 64, 65, 512, r"WelfordUpdate: para.abComputeLength is 65"),
    (torch.float16, 24, 8, 768, r"WelfordUpdate: para.abLength is 24; it must be a multiple of 32 / sizeof\(T\) = 16"),
])
def test_update_misuse_raises(lib, dtype, ab, abc, tmp, message):
    x, m, v = update_inputs(1, ab, dtype)
    with pytest.raises(EmulatorError, match=message):
        run_update(lib, x, m, v, ab, abc, 0.5, PLAIN, tmp)


def test_update_outputs_aliasing_inputs_raise(lib):
    x, m, v = update_inputs(1, 64, torch.float32)
    with pytest.raises(EmulatorError, match=r"WelfordUpdate: outputMean overlaps inputMean"):
        lib.launch("wf_update_alias", 1, x, m, v, 64)


# ---------------------------------------------------------------- WelfordFinalize
def tree64(vals):
    v = np.zeros(64, dtype=np.float32)
    v[:len(vals)] = vals
    while len(v) > 1:
        v = (v[0::2] + v[1::2]).astype(np.float32)
    return np.float32(v[0])


def row_sum(t):
    t = np.asarray(t, dtype=np.float32)
    n = len(t)
    acc = t[:min(n, 64)].copy()
    if n > 64:
        for r in range(1, n >> 6):
            acc = (t[64 * r:64 * r + 64] + acc).astype(np.float32)
        tail, base = n & 63, n & ~63
        acc[:tail] = (t[base:base + tail] + acc[:tail]).astype(np.float32)
    return tree64(acc)


def fold(parts):
    slots = []
    for s in parts:
        slots.append(s)
        if len(slots) == 64:
            slots = [tree64(slots)]
    return tree64(slots)


def finalize_reference(m, v, c, p, chunk):
    f = np.float32
    ab = p["ab"]
    tail_form = p["tailLen"] != 0 and p["tail"] != 0
    tc = f(p["tail"])
    hs = f(f(p["head"]) / tc) if tail_form else f(0)
    offs = range(0, ab, chunk)

    def head(off, n):
        return int(np.clip(p["headLen"] - off, 0, n))
    parts = []
    for off in offs:
        mm = m[off:off + chunk]
        if c is not None:
            t = (mm * c[off:off + chunk].astype(np.float32)).astype(f) * f(p["rRec"])
        elif tail_form:
            t = ((mm * tc).astype(f) * f(p["rRec"])).astype(f)
            h = head(off, len(mm))
            t[:h] = t[:h] * hs
        else:
            t = mm * f(p["abRec"])
        parts.append(row_sum(t.astype(f)))
    mean = fold(parts)
    parts = []
    for off in offs:
        d = (m[off:off + chunk] - mean).astype(f)
        q = (d * d).astype(f)
        vv = v[off:off + chunk]
        if c is not None:
            t = ((q * c[off:off + chunk].astype(f)).astype(f) + vv).astype(f)
        else:
            t = (q * (tc if tail_form else f(p["rn"]))).astype(f)
            if tail_form:
                h = head(off, len(t))
                t[:h] = t[:h] * hs
            t = (vv + t).astype(f)
        parts.append(row_sum((t * f(p["rRec"])).astype(f)))
    return mean, fold(parts)


def run_finalize(lib, m, v, c, p, tmp, blocks):
    om = torch.full((blocks * 8,), POISON)
    ov = torch.full((blocks * 8,), POISON)
    cc = c if c is not None else torch.zeros(m.numel(), dtype=torch.int32)
    lib.launch("wf_finalize", blocks, m, v, cc, om, ov, p["ab"], p["rn"], p["head"], p["headLen"], p["tail"],
               p["tailLen"], p["abRec"], p["rRec"], int(c is not None), tmp)
    return om.view(blocks, 8), ov.view(blocks, 8)


def finalize_case(kind, ab):
    if kind == "tail":
        head_len, tail_len, head, tail, rn = ab - 128, 128, 4, 3, 4
        r = 1.0 / (head * head_len + tail * tail_len)
    else:
        head_len, tail_len, head, tail, rn = ab, 0, 3, 0, 3
        r = 1.0 / (rn * ab)
    return dict(ab=ab, rn=rn, head=head, headLen=head_len, tail=tail, tailLen=tail_len, abRec=1.0 / ab, rRec=r)


@pytest.mark.parametrize("kind, ab, tmp, chunk", [
    ("plain", 400, 1024, 64),        # 6 chunks of 64 and one of 16
    ("plain", 4480, 1024, 64),       # 70 chunk sums: folded after 64
    ("plain", 400, 2048, 192),       # (512 - 128) / 128 * 64
    ("plain", 200, 0, 200),          # the stack buffer: one chunk
    ("tail", 400, 1024, 64),         # headCountLength 272 ends inside a chunk
    ("tail", 400, 1536, 128),
    ("counts", 400, 1024, 64),
    ("counts", 136, 0, 136),
])
def test_finalize_matches_impl_order(lib, kind, ab, tmp, chunk):
    blocks = 2
    g = torch.Generator().manual_seed(ab + tmp)
    m = torch.randn(blocks * ab, generator=g) * 10 + 3
    v = torch.rand(blocks * ab, generator=g) * 5
    c = torch.randint(1, 9, (blocks * ab,), generator=g, dtype=torch.int32) if kind == "counts" else None
    p = finalize_case(kind, ab)
    if kind == "counts":
        p["rRec"] = 1.0 / float(c[:ab].sum())
    om, ov = run_finalize(lib, m, v, c, p, tmp, blocks)
    for b in range(blocks):
        sl = slice(b * ab, (b + 1) * ab)
        if kind == "counts":
            p["rRec"] = 1.0 / float(c[sl].sum())
            om_b, ov_b = run_finalize(lib, m[sl].clone(), v[sl].clone(), c[sl].clone(), p, tmp, 1)
        else:
            om_b, ov_b = om[b:b + 1], ov[b:b + 1]
        want_m, want_v = finalize_reference(m[sl].numpy(), v[sl].numpy(), None if c is None else c[sl].numpy(), p,
                                            chunk)
        assert float(om_b[0, 0]) == float(want_m) and float(ov_b[0, 0]) == float(want_v), (om_b[0, 0], want_m)
        assert torch.equal(om_b[0, 1:], torch.zeros(7)) and torch.equal(ov_b[0, 1:], torch.zeros(7))
        # and the statistics they stand for, in float64
        md, vd = m[sl].double(), v[sl].double()
        if kind == "counts":
            w = c[sl].double()
        elif kind == "tail":
            w = torch.full((ab,), float(p["tail"]), dtype=torch.float64)
            w[:p["headLen"]] = p["head"]
        else:
            w = torch.full((ab,), float(p["rn"]), dtype=torch.float64)
        mean = md.sum() / ab if kind == "plain" else (md * w).sum() * p["rRec"]
        var = (((md - mean) ** 2) * w + vd).sum() * p["rRec"]
        assert abs(float(om_b[0, 0]) - float(mean)) < 1e-4 * max(1.0, abs(float(mean)))
        assert abs(float(ov_b[0, 0]) - float(var)) < 1e-4 * max(1.0, abs(float(var)))


@pytest.mark.parametrize("change, tmp, message", [
    ({}, 992, r"WelfordFinalize: sharedTmpBuffer holds 992 B; the implementation needs at least 1024 B"),
    ({"headLen": 60}, 1024, r"WelfordFinalize: para.headCountLength 60 \+ para.tailCountLength 0 must equal para.abLength 64"),
    ({"abRec": 0.5}, 1024, r"WelfordFinalize: para.abRec is 0.5; it must be 1 / para.abLength"),
    ({"rRec": 1.0}, 1024, r"WelfordFinalize: para.rRec is 1; without counts it must be 1 / \(rnLength \* abLength\)"),
    ({"tailLen": 8, "headLen": 56}, 1024, r"WelfordFinalize: para.tailCountLength is 8; it must be 0 when para.tailCount is 0"),
    ({"ab": 60, "headLen": 60, "abRec": 1 / 60, "rRec": 1 / 180}, 1024,
     r"WelfordFinalize: para.abLength is 60; it must be non-zero and a multiple of 8"),
])
def test_finalize_misuse_raises(lib, change, tmp, message):
    p = finalize_case("plain", 64)
    p.update(change)
    m = torch.ones(64)
    with pytest.raises(EmulatorError, match=message):
        run_finalize(lib, m, m.clone(), None, p, tmp, 1)


HOST_SNIPPET = r'''
#include <cstdio>
#include "tiling/tiling_api.h"
int main() {
  uint32_t mx = 7, mn = 7;
#define P(CALL) CALL; std::printf("%u %u\n", mx, mn);
  P(AscendC::GetWelfordUpdateMaxMinTmpSize(AscendC::TensorShape(std::vector<int64_t>{1, 64}), 4, 4, false, true, mx, mn))
  P(AscendC::GetWelfordUpdateMaxMinTmpSize(AscendC::TensorShape(std::vector<int64_t>{1, 200}), 2, 4, false, false, mx, mn))
  P(AscendC::GetWelfordUpdateMaxMinTmpSize(AscendC::TensorShape(std::vector<int64_t>{1, 200}), 4, 4, true, false, mx, mn))
  P(AscendC::GetWelfordFinalizeMaxMinTmpSize(AscendC::TensorShape(std::vector<int64_t>{64}), 4, false, mx, mn))
  P(AscendC::GetWelfordFinalizeMaxMinTmpSize(AscendC::TensorShape(std::vector<int64_t>{400}), 4, false, mx, mn))
  mx = mn = 7;
  P(AscendC::GetWelfordUpdateMaxMinTmpSize(AscendC::TensorShape(std::vector<int64_t>{64}), 4, 4, false, false, mx, mn))
  P(AscendC::GetWelfordFinalizeMaxMinTmpSize(AscendC::TensorShape(std::vector<int64_t>{60}), 4, false, mx, mn))
  return 0;
}
'''


@pytest.mark.skipif(not compiler_available(), reason="no C++ compiler")
# Both include orders: a kernel-launch program's (the asc example's: include/ first) and an op project's op_host
# file's (include_host/ first, whose tiling/tiling_api.h must reach the same helpers).
@pytest.mark.parametrize("host_side", [False, True])
def test_host_tmp_sizes_are_the_tiling_impl_formulas(tmp_path, host_side):
    src = tmp_path / "h.cpp"
    src.write_text(HOST_SNIPPET)
    host = INCLUDE_DIR.parent / "include_host"
    incs = [host, INCLUDE_DIR] if host_side else [INCLUDE_DIR, host]
    subprocess.run([find_compiler(), "-std=c++17", *[f"-I{d}" for d in incs], str(src), "-o", str(tmp_path / "h")],
                   check=True)
    p = subprocess.run([str(tmp_path / "h")], capture_output=True, text=True, check=True)
    got = [tuple(map(int, line.split())) for line in p.stdout.split("\n") if line]
    assert got == [
        (512, 512),        # float T: 2 * 256 B, max ceil(64 / 64) * min
        (4 * 768, 768),    # half T: 3 * 256 B, ceil(200 / 64) = 4
        (4 * 256, 256),    # float T, isReuseSource: 1 * 256 B
        (1024, 1024),      # Finalize abLength <= 64: 64 * 4 * 4 B both
        ((128 + 800) * 4, 1024),
        (7, 7),            # a 1-D shape for Update: the impl's host assert, outputs unwritten
        (7, 7),            # abLength 60 not 32 B aligned
    ]
    assert "srcShape dims must be 2" in p.stderr and "aligned to 32Bytes" in p.stderr


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
def test_asc_devkit_welford_example_passes():
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api" / "02_normalization" / "welford")
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
