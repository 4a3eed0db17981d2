"""TopK advanced API (adv_topk.h, tiling_topk.h, adv_topk_tiling_host.h) against a torch reference, as asc-devkit's
dav_c220 implementation computes it: a stable sort by score descending (Sort32 + MrgSort keep input order on ties,
NaN ranked as +inf), smallest via * -1, the first k values / indices gathered (Normal: rows of k_pad / kpad_index,
Small: packed rows of k), finished rows' indices set to n, and with !isLargest the whole maskOffset range of dstValue
negated back (the unwritten padding too). The tiling comes from the host TopKTilingFunc (a separate host program);
its tmp sizes are topk_tiling_impl.cpp's A2 formulas. Several blocks with a tail block, outputs sentinel-filled
and GM poisoned; the API's error cases; asc-devkit's topk example when the corpus is here."""
import os
import subprocess
from pathlib import Path

import pytest
import torch

from trex.codegen_ascendc.emulator import EmulatorError
from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, compiler_available, find_compiler

KERNELS = Path(__file__).parent / "kernels"

HOST = r'''
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include "tiling/tiling_api.h"
int main(int argc, char** argv) {
  const int inner = std::atoi(argv[1]), outter = std::atoi(argv[2]), k = std::atoi(argv[3]);
  const unsigned ts = std::atoi(argv[4]);
  const bool init = std::atoi(argv[5]) != 0, largest = std::atoi(argv[7]) != 0;
  const auto mode = std::atoi(argv[6]) ? AscendC::TopKMode::TOPK_NSMALL : AscendC::TopKMode::TOPK_NORMAL;
  const auto& plat = *platform_ascendc::PlatformAscendCManager::GetInstance("Ascend910B1");
  optiling::TopkTiling t;
  bool ok = AscendC::TopKTilingFunc(plat, inner, outter, k, ts, init, mode, largest, t);
  AscendC::tiling::TopkTiling t2;
  ok = ok && AscendC::TopKTilingFunc(plat, inner, outter, k, ts, init, mode, largest, t2);
  uint32_t mx = 0, mn = 0;
  ok = ok && AscendC::GetTopKMaxMinTmpSize(plat, inner, outter, false, init, mode, largest, ts, mx, mn);
  std::printf("%d %u %u %zu\n", ok ? 1 : 0, mx, mn, sizeof(t));
  const unsigned char* b = reinterpret_cast<const unsigned char*>(&t);
  for (size_t i = 0; i < sizeof(t); ++i) std::printf("%02x", b[i]);
  std::printf("\n%d\n", std::memcmp(&t, &t2, sizeof(t)) == 0 ? 1 : 0);
  return 0;
}
'''
FIELDS = ["tmpLocalSize", "allDataSize", "innerDataSize", "sortRepeat", "mrgSortRepeat", "kAlignFourBytes",
          "kAlignTwoBytes", "maskOffset", "maskVreducev2FourBytes", "maskVreducev2TwoBytes", "mrgSortSrc1offset",
          "mrgSortSrc2offset", "mrgSortSrc3offset", "mrgSortTwoQueueSrc1Offset", "mrgFourQueueTailPara1",
          "mrgFourQueueTailPara2", "srcIndexOffset", "copyUbToUbBlockCount", "topkMrgSrc1MaskSizeOffset",
          "topkNSmallSrcIndexOffset", "vreduceValMask0", "vreduceValMask1", "vreduceIdxMask0", "vreduceIdxMask1"]
HALF_MASKS = [f"vreducehalfValMask{i}" for i in range(8)]


@pytest.fixture(scope="module")
def lib(compile_source):
    return compile_source(KERNELS / "adv_topk_api.cpp", extra_flags=("-O1",))


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    if not compiler_available():
        pytest.skip("no C++ compiler")
    d = tmp_path_factory.mktemp("topk_host")
    (d / "h.cpp").write_text(HOST)
    incs = [INCLUDE_DIR, INCLUDE_DIR.parent / "include_host"]  # the kernel-launch program order
    subprocess.run([find_compiler(), "-std=c++17", *[f"-I{x}" for x in incs], str(d / "h.cpp"), "-o", str(d / "h")],
                   check=True)
    cache = {}

    def tiling(inner, outter, k, ts, init, small, largest):
        key = (inner, outter, k, ts, init, small, largest)
        if key not in cache:
            r = subprocess.run([str(d / "h"), *[str(int(v)) for v in key]], capture_output=True, text=True, check=True)
            head, raw, same = r.stdout.split("\n")[:3]
            ok, mx, mn, size = map(int, head.split())
            raw = bytes.fromhex(raw)
            ints = [int.from_bytes(raw[4 * i:4 * i + 4], "little") for i in range(len(FIELDS))]
            halves = [int.from_bytes(raw[96 + 2 * i:98 + 2 * i], "little") for i in range(8)]
            cache[key] = dict(ok=ok, max=mx, min=mn, size=size, raw=raw, same=same == "1", stderr=r.stderr,
                              f=dict(zip(FIELDS + HALF_MASKS, ints + halves)))
        return cache[key]
    return tiling


def reference(src, idx, fin, k, n, largest, small, kav, kai, idx_per_row):
    """Expected dstValue / dstIndex (rows of kav / kai, sentinels 7 / -5 in the padding; negated with !isLargest)."""
    rows, inner = src.shape
    key = src.float() if largest else -src.float()
    key = torch.where(torch.isnan(key), torch.full_like(key, float("inf")), key)
    order = torch.sort(key, dim=1, descending=True, stable=True).indices[:, :k]
    vals = torch.gather(src, 1, order)
    ids = torch.gather(idx if idx_per_row else idx.expand(rows, inner), 1, order)
    if fin is not None:
        ids[fin.bool()] = n
    dv = torch.full((rows, kav), 7.0 if largest else -7.0, dtype=src.dtype)
    di = torch.full((rows, kai), -5, dtype=torch.int32)
    dv[:, :k] = vals
    di[:, :k] = ids
    return dv.reshape(-1), di.reshape(-1)


KERNEL = {("normal", torch.float32, False): "normal_f32", ("normal", torch.float32, True): "normal_f32_init",
          ("normal", torch.float16, False): "normal_f16", ("normal", torch.float16, True): "normal_f16_init",
          ("small", torch.float32, False): "small_f32", ("small", torch.float32, True): "small_f32_init",
          ("small", torch.float16, False): "small_f16", ("small", torch.float16, True): "small_f16_init"}
HAS_FINISH = {"normal_f32", "normal_f16", "normal_f16_init"}


def run(lib, host, mode, dtype, init, rows, per, inner, n, k, largest, tmp="min", seed=0, src=None, fin=None, launch_kw=None):
    small = mode == "small"
    kernel = KERNEL[(mode, dtype, init)]
    ts = 2 if dtype == torch.float16 else 4
    t = host(inner, per, k, ts, init, small, largest)
    g = torch.Generator().manual_seed(seed)
    if src is None:  # small integers: many ties, exact in half
        src = torch.randint(-20, 21, (rows, inner), generator=g).to(dtype)
        src[:, n:] = -1000 if largest else 1000  # the padding the caller fills
    idx = torch.randint(0, 1 << 30, ((rows, inner) if small else (1, inner)), generator=g, dtype=torch.int32)
    rand_fin = torch.randint(0, 2, (rows,), generator=g, dtype=torch.uint8)
    fin = rand_fin if fin is None else fin
    kav = k if small else (k + 32 // ts - 1) // (32 // ts) * (32 // ts)
    kai = k if small else (k + 7) // 8 * 8
    dv = torch.full((rows * kav,), float("nan"), dtype=dtype)
    di = torch.full((rows * kai,), -99, dtype=torch.int32)
    tmp_bytes = 0 if tmp is None else (t["min"] if tmp == "min" else tmp)
    blocks = (rows + per - 1) // per
    lib.launch(kernel, blocks, src, idx, fin, dv, di, t["raw"], rows, per, inner, n, k, int(largest), tmp_bytes,
               **(launch_kw or {}))
    has_fin = kernel in HAS_FINISH
    want_v, want_i = reference(src, idx if init else torch.arange(inner, dtype=torch.int32).expand(rows, inner),
                               fin if has_fin else None, k, n, largest, small, kav, kai, idx_per_row=small or not init)
    return dv, di, want_v, want_i


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("init", [False, True])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("inner, n, k", [(32, 32, 1), (64, 50, 9), (96, 96, 17), (160, 131, 8), (288, 288, 40),
                                         (640, 600, 33)])
def test_normal_mode_matches_torch(lib, host, dtype, init, largest, inner, n, k):
    # 7 rows, 3 per block: blocks of 3, 3, 1 (the last one uses the tiling for 3 rows)
    dv, di, want_v, want_i = run(lib, host, "normal", dtype, init, 7, 3, inner, n, k, largest, seed=inner + k)
    assert torch.equal(di, want_i), (di, want_i)
    assert torch.equal(dv, want_v), (dv, want_v)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("init", [False, True])
@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("n, k", [(32, 1), (32, 5), (27, 16), (32, 17), (32, 32)])
def test_small_mode_matches_torch(lib, host, dtype, init, largest, n, k):
    dv, di, want_v, want_i = run(lib, host, "small", dtype, init, 11, 4, 32, n, k, largest, seed=k)
    assert torch.equal(di, want_i), (di, want_i)
    assert torch.equal(dv, want_v), (dv, want_v)


def test_stack_buffer_form_and_sync_check(lib, host):
    for mode in ("normal", "small"):
        dv, di, want_v, want_i = run(lib, host, mode, torch.float32, True, 5, 2, 32 if mode == "small" else 256, 32,
                                     6, False, tmp=None, launch_kw=dict(check_sync=True))
        assert torch.equal(di, want_i) and torch.equal(dv, want_v)


def test_specials_ties_and_signed_zero(lib, host):
    row = torch.tensor([1.0, float("nan"), -0.0, float("inf"), 0.0, 1.0, -float("inf"), 0.0] * 4)
    src = torch.stack([row, row.flip(0)])
    none = torch.zeros(2, dtype=torch.uint8)
    dv, di, want_v, want_i = run(lib, host, "normal", torch.float32, False, 2, 2, 32, 32, 10, True, src=src, fin=none)
    assert torch.equal(di, want_i)
    torch.testing.assert_close(dv, want_v, equal_nan=True, rtol=0, atol=0)
    assert di[:4].tolist() == [1, 3, 9, 11]  # NaN keyed as +inf (Sort32's order): ties with +inf, input order
    dv, di, want_v, want_i = run(lib, host, "normal", torch.float32, False, 2, 2, 32, 32, 12, False, src=src, fin=none)
    assert torch.equal(di, want_i)
    torch.testing.assert_close(dv, want_v, equal_nan=True, rtol=0, atol=0)
    zeros = dv[4:12]
    assert torch.equal(torch.signbit(zeros), torch.signbit(src[0][di[4:12].long()]))  # -0.0 / 0.0 round-trip


@pytest.mark.parametrize("inner, outter, k, ts, init, small, largest, tmp", [
    (32, 2, 1, 4, False, False, False, 20 * 32), (256, 3, 9, 4, True, False, True, 16 * 256),
    (4096, 1, 100, 2, False, False, True, 20 * 4096),
    (32, 5, 4, 4, True, True, True, 8 * 160 + 64), (32, 5, 4, 4, False, True, True, 8 * 160 + 64 + 4 * 160),
    (32, 5, 4, 2, True, True, False, 8 * 160 + 64 + 4 * 160), (32, 5, 4, 2, False, True, False, 8 * 160 + 64 + 8 * 160),
])
def test_host_tiling_and_tmp_sizes(host, inner, outter, k, ts, init, small, largest, tmp):
    t = host(inner, outter, k, ts, init, small, largest)
    assert t["ok"] == 1 and t["same"] and t["size"] == 112
    assert t["max"] == t["min"] == tmp
    f = t["f"]
    if small:
        ids = inner * outter * (8 // ts)
        assert f["innerDataSize"] == ids and f["maskOffset"] == outter * k
        off = ids + (0 if largest else inner * outter)
        assert f["topkMrgSrc1MaskSizeOffset"] == off
        assert f["tmpLocalSize"] == off + 64 // ts + (0 if init else inner * outter * 4 // ts)
        assert f["vreduceIdxMask0"] == int("10" * k, 2)
        if ts == 4:
            assert f["vreduceValMask0"] == int("01" * k, 2)
        else:
            assert f["vreducehalfValMask0"] == int("0001" * k, 2)
    else:
        ka4, ka2 = (k + 7) // 8 * 8, (k + 15) // 16 * 16
        assert f["kAlignFourBytes"] == ka4 and f["kAlignTwoBytes"] == ka2
        assert f["maskOffset"] == outter * (ka4 if ts == 4 else ka2)
        assert f["sortRepeat"] == inner // 32 and f["mrgSortRepeat"] == inner // 4
        assert f["maskVreducev2FourBytes"] == 2 * k and f["maskVreducev2TwoBytes"] == 4 * k
        assert f["tmpLocalSize"] * ts == tmp
    # the tmp size in bytes covers what the kernel reads through tmpLocalSize (half Small: the host reserves more)
    assert f["tmpLocalSize"] * ts <= tmp


def test_host_argument_checks_log_as_cann(host):
    t = host(48, 2, 1, 4, False, False, True)
    assert t["ok"] == 1 and "The length of the inner axis must be a multiple of 32!" in t["stderr"]
    t = host(64, 2, 1, 4, False, True, True)
    assert "In Small mode, the length of the inner axis must be 32!" in t["stderr"]
    t = host(32, 2, 40, 4, False, False, True)
    assert "The range of value k is [1, 32]!" in t["stderr"]


@pytest.mark.parametrize("case, message", [
    ("tmp_small", r"TopK: tmpLocal holds 608 B; the implementation needs tiling.tmpLocalSize \* sizeof\(T\) = 640 B"),
    ("k_gt_n", r"TopK: k = 33 must be >= 1 and <= topKInfo.n = 32"),
    ("inner_odd", r"TopK: topKInfo.inner = 48 must be a multiple of 32"),
    ("tiling_other_k", r"TopK: TopkTiling.kAlignFourBytes = 16, but TopKTilingFunc gives 8 for inner 32, k 3"),
    ("tiling_other_init", r"TopK: TopkTiling.tmpLocalSize = 128, but TopKTilingFunc gives 160"),
    ("small_finish", r"TopK: isHasfinish must be false when topkMode is TOPK_NSMALL"),
    ("small_inner", r"TopK: topKInfo.inner = 64 must be 32 when topkMode is TOPK_NSMALL"),
])
def test_errors_name_topk(lib, host, case, message):
    src = torch.zeros(2, 64)
    idx = torch.zeros(2, 64, dtype=torch.int32)
    fin = torch.zeros(2, dtype=torch.uint8)
    dv = torch.zeros(64)
    di = torch.zeros(64, dtype=torch.int32)
    kernel, inner, n, k, tmp = "normal_f32", 32, 32, 3, None
    t = host(32, 2, 3, 4, False, False, True)
    if case == "tmp_small":
        tmp = t["min"] - 32
    elif case == "k_gt_n":
        k, t = 33, host(64, 2, 33, 4, False, False, True)
    elif case == "inner_odd":
        inner, n = 48, 40
    elif case == "tiling_other_k":
        t = host(32, 2, 9, 4, False, False, True)
    elif case == "tiling_other_init":
        t = host(32, 2, 3, 4, True, False, True)
    elif case == "small_finish":
        kernel, t = "small_f32_finish", host(32, 2, 3, 4, False, True, True)
    elif case == "small_inner":
        kernel, inner, n, t = "small_f32", 64, 64, host(32, 2, 3, 4, False, True, True)
    with pytest.raises(EmulatorError, match=message):
        lib.launch(kernel, 1, src, idx, fin, dv, di, t["raw"], 2, 2, inner, n, k, 1, t["min"] if tmp is None else tmp)


CORPUS = (Path(os.environ["TREX_CORPUS_ROOT"]) / "mirror-cann+asc-devkit" if os.environ.get("TREX_CORPUS_ROOT") else Path("/nonexistent")) / "examples/01_simd_cpp_api"


@pytest.mark.skipif(not (compiler_available() and CORPUS.is_dir()), reason="set TREX_CORPUS_ROOT to the corpus checkout (corpus.SOURCES) to run asc-devkit's examples")
@pytest.mark.parametrize("example", ["05_sort/topk"])
def test_asc_devkit_example_passes(example):
    from trex.codegen_ascendc.emulator import asc_program
    results = asc_program.run_all_scenarios(CORPUS / "04_advanced_api" / example)
    assert results and all(r.result == "pass" for r in results), [(r.scenario, r.result, r.detail) for r in results]
