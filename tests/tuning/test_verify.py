"""The verifier process: fresh inputs per check, poisoned outputs, fp64 reference."""
import pytest
import torch
from trex.codegen_ascendc.emulator import compiler_available
from trex.tuning import harness
from trex.tuning.ascend import AscendBackend
from trex.tuning.verify import SCALES, draw_case

# A generator bug that makes a kernel faster and wrong: the row-tile loop stops before the partial
# last tile, so the tail rows (rows % rows_per_tile of each core) are never computed or stored.
LOOP = "row0 < rowEnd_; row0 += tl_.rowsPerTile"
SKIP_TAIL = "row0 + tl_.rowsPerTile <= rowEnd_; row0 += tl_.rowsPerTile"


needs_emulator = pytest.mark.skipif(not compiler_available(), reason="no C++ compiler for the AscendC emulator")


def skip_tail_rows(source: str) -> str:
    assert LOOP in source, "the printer's row-tile loop changed; update the planted bug"
    return source.replace(LOOP, SKIP_TAIL)


def _request(b, art, checks=2):
    return {"target": b.target, "pattern": b.pattern, "dtype": b.dtype, "sizes": b.named_sizes,
            "scalars": b.scalars, "kernel": art.for_verifier(), "checks": checks, "opt": b.opt}


@needs_emulator
def test_correct_kernel_passes_and_skipped_tail_rows_are_rejected(verifier):
    b = AscendBackend("ascend910b", "rms_norm", "bf16", {"ROWS": 13, "D": 64})
    cfg = {"rows_per_tile": 4, "buffer_depth": 2, "cores": 2}      # 7 + 6 rows: both cores have a tail tile
    good = verifier.verify(_request(b, b.compile(cfg)))
    assert good["ok"] and good["checks"] == 2, good
    assert good["rows_checked"] == list(range(9, 17))      # the searched 13 and every other count of its bucket
    bad = verifier.verify(_request(b, b.compile(cfg, skip_tail_rows)))
    assert not bad["ok"]
    assert "non-finite" in bad["reason"]          # the NaN poison of the unwritten rows is what gives it away


@needs_emulator
def test_poison_shows_rows_a_kernel_did_not_write():
    b = AscendBackend("ascend910b", "rms_norm", "bf16", {"ROWS": 13, "D": 64})
    cfg = {"rows_per_tile": 4, "buffer_depth": 2, "cores": 2}
    art = b.compile(cfg, skip_tail_rows)
    ins = harness.make_inputs(b.program, b.named_sizes, seed=1)
    out, _ = harness.run_ascend(b.program, art.source, cfg, ins, b.scalars)
    unwritten = torch.isnan(out["y"].float()).all(dim=1)
    assert unwritten.tolist() == [False] * 4 + [True] * 3 + [False] * 4 + [True] * 2


def test_fp64_reference_restores_the_dtype_table():
    p = harness.build_program("rms_norm", "bf16")
    ins = harness.make_inputs(p, {"ROWS": 3, "D": 32}, seed=0)
    ref = harness.reference_fp64(p, ins, {"eps": 1e-6})
    assert ref["y"].dtype == torch.float64 and ref["rstd"].dtype == torch.float64
    x = ins["x"].double()
    want = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * ins["w"].double()
    torch.testing.assert_close(ref["y"], want, rtol=1e-12, atol=1e-12)
    assert harness.reference_eager(p, ins, {"eps": 1e-6})["y"].dtype == torch.bfloat16


def test_drawn_cases_make_inputs_of_the_program_shapes_and_are_never_the_same():
    p = harness.build_program("swiglu_limited", "fp16")
    cases = [draw_case() for _ in range(200)]
    # the issue saw seed 0 first in 200 of 200 verifications: the draws come from the OS now
    assert len({c["seed"] for c in cases}) == 200 and all(c["seed"] != 0 for c in cases)
    assert {c["distribution"] for c in cases} == set(harness.DISTRIBUTIONS) and {c["scale"] for c in cases} == set(SCALES)
    for case in cases[:20]:
        ins = harness.make_inputs(p, {"ROWS": 5, "F": 48}, case["seed"], case["scale"], case["distribution"])
        assert {k: tuple(v.shape) for k, v in ins.items()} == harness.input_shapes(p, {"ROWS": 5, "F": 48})
        assert all(v.dtype == p.tensor(k).dtype.torch and torch.isfinite(v.float()).all() for k, v in ins.items())


@needs_emulator
def test_a_kernel_that_kills_its_process_is_a_rejection_with_the_exit_status():
    """A candidate that kills the process it runs in (its library aborts on load) is rejected with the
    worker's exit status; the judge is untouched and the next request gets a fresh worker."""
    from trex.tuning.verify import Verifier
    with Verifier() as v:
        ans = v.verify({"target": "ascend910b", "pattern": "rms_norm", "dtype": "bf16", "sizes": {"ROWS": 2, "D": 16},
                        "scalars": {"eps": 1e-6}, "checks": 1,
                        "kernel": {"source": ABORTING_KERNEL,
                                   "config": {"rows_per_tile": 1, "buffer_depth": 2, "cores": 1}}})
        assert not ans["ok"]
        assert "kernel worker: no result frame" in ans["reason"], ans["reason"]
        assert v.proc is None
        again = v.verify(_request(AscendBackend("ascend910b", "rms_norm", "bf16", {"ROWS": 2, "D": 16}),
                                  AscendBackend("ascend910b", "rms_norm", "bf16", {"ROWS": 2, "D": 16}).compile(
                                      {"rows_per_tile": 1, "buffer_depth": 2, "cores": 1}), checks=1))
        assert again["ok"] and again["checks"] == 1


# loading the library aborts the process (a static initialiser): what a kernel that crashes the host does
ABORTING_KERNEL = """#include "kernel_operator.h"
#include <cstdlib>
static int boom = (std::abort(), 0);
extern "C" __global__ __aicore__ void rms_norm_fwd_bf16_wbf16_obf16(GM_ADDR x, GM_ADDR w, GM_ADDR y, GM_ADDR rstd,
                                                                    GM_ADDR tiling) {}
"""


def test_bucket_rows_cover_the_store_bucket():
    from trex.tuning.verify import bucket_rows
    p = harness.build_program("rms_norm", "bf16")
    assert bucket_rows(p, {"ROWS": 13, "D": 64}) == (9, 16)
    assert bucket_rows(p, {"ROWS": 16, "D": 64}) == (9, 16)
    assert bucket_rows(p, {"ROWS": 1, "D": 64}) is None
    # RoPE's ROWS is tied to its cos/sin tables (row map): only the searched shape is checked
    assert bucket_rows(harness.build_program("rope", "bf16"), {"ROWS": 24, "HD": 64, "RD": 32, "CDIV": 4,
                                                                "CROWS": 6}) is None


@needs_emulator
def test_a_kernel_right_only_at_the_searched_rows_is_rejected(verifier):
    """A kernel specialised to the searched ROWS (13) is wrong for the rest of the bucket (9..16) the
    store would use it for: the verifier's second shape per check catches it."""
    import re
    b = AscendBackend("ascend910b", "rms_norm", "bf16", {"ROWS": 13, "D": 64})
    cfg = {"rows_per_tile": 2, "buffer_depth": 2, "cores": 3}
    art = b.compile(cfg, lambda src: re.sub(r"tl_\.rows\b", "(int64_t)13", src))
    ans = verifier.verify(_request(b, art, checks=8))     # P(all 8 draws hit ROWS=13) = 8**-8
    assert not ans["ok"]
    failed_at = re.search(r"ROWS=(\d+)", ans["reason"])
    assert failed_at and int(failed_at.group(1)) != 13, ans["reason"]


@needs_emulator
def test_a_kernel_that_writes_into_its_inputs_is_rejected(verifier):
    """A kernel that scribbles on an input (a scratch-reuse bug) is rejected for that, before its outputs
    are even compared."""
    b = AscendBackend("ascend910b", "rms_norm", "bf16", {"ROWS": 4, "D": 32})
    cfg = {"rows_per_tile": 1, "buffer_depth": 2, "cores": 1}
    bind = "xGm_.SetGlobalBuffer((__gm__ bfloat16_t*)x);"
    # the kernel's Init changes one element of x before any row is read: to 7, or to 8 where it was 7
    # already (fresh-clone run 19: a constant 7 equalled the drawn x[127] once, so the check passed the
    # searched shape and the test saw the next problem's error instead)
    scribble = ("xGm_.SetValue(4 * 32 - 1, static_cast<float>(xGm_.GetValue(4 * 32 - 1)) == 7.0f ? "
                "bfloat16_t(8.0f) : bfloat16_t(7.0f));")
    art = b.compile(cfg, lambda s: s.replace(bind, bind + "\n    " + scribble))
    ans = verifier.verify(_request(b, art, checks=1))
    assert not ans["ok"]
    assert ans["reason"] == "at ROWS=4 on 1 core (searched, sync checks on): the kernel wrote into its inputs ['x']"


PRINTED = {
    "rms_norm": {"ROWS": 21, "D": 96}, "swiglu_limited": {"ROWS": 11, "F": 80}, "rms_norm_bwd": {"ROWS": 9, "D": 64},
    "rope": {"ROWS": 24, "HD": 64, "RD": 32, "CDIV": 4, "CROWS": 6}, "mhc_pre": {"ROWS": 5, "N": 4, "HD": 64, "ITERS": 3},
    "swiglu_limited_bwd": {"ROWS": 7, "F": 48}, "mhc_pre_bwd": {"ROWS": 3, "N": 4, "HD": 32, "ITERS": 2},
    "add_rms_norm": {"ROWS": 12, "D": 2048},
}


@needs_emulator
@pytest.mark.slow
@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
@pytest.mark.parametrize("pattern", sorted(PRINTED))
def test_the_printers_kernels_pass_every_check(pattern, dtype):
    """The false-positive side of the ulp checks, the counter checks and the sync on/off twins: the
    printer's own kernel at the cost model's configuration passes repeated evaluations on fresh inputs
    (docs/tuning.md: 160 of 160 evaluations of 3 checks, 10 per pattern and dtype)."""
    from trex.tuning.verify import check_ascend
    b = AscendBackend("ascend910b", pattern, dtype, PRINTED[pattern])
    cfg, _ = b.initial()
    art = b.compile(cfg)
    for _ in range(3):
        ans = check_ascend(b.request(art, 3), profile_rows=tuple(b.profile_rows(cfg)))
        assert ans["ok"], ans["reason"]


def test_a_frame_written_in_one_piece_with_a_blank_line_is_read_at_once():
    """The verifier process answers "\\n" + the frame in one write: a buffered readline after select()
    used to keep the frame in Python's buffer and wait for the timeout (every CUDA verification on a
    CPU with Triton). Two answers in one pipe, read back to back, each well inside the timeout."""
    import subprocess
    import sys
    import time

    from trex.tuning.verify import FRAME, _read_frame
    script = ("import sys, time; w = sys.stdout.write; "
              f"w('a candidate print\\n\\n{FRAME} n1 {{\"ok\": true}}\\n\\n{FRAME} n2 {{\"ok\": false}}\\n'); "
              "sys.stdout.flush(); time.sleep(30)")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        t = time.monotonic()
        assert _read_frame(proc, 20, f"{FRAME} n1 ") == '{"ok": true}'
        assert _read_frame(proc, 20, f"{FRAME} n2 ") == '{"ok": false}'
        assert time.monotonic() - t < 10
        with pytest.raises(TimeoutError, match="no answer within 1 s"):
            _read_frame(proc, 1, f"{FRAME} n3 ")
    finally:
        proc.kill()
        proc.wait()
