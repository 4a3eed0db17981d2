"""The cuda target's mHC programs in the tuning harness: the per-stream variants the target runs (inputs
in the runner's layout, the store entry the launcher finds), the TF32 rule of the verifier's eager
baseline, the interpreter's truncating bf16 casts, and the measured tilings as start points."""
import importlib.util

import pytest
import torch

from trex.compiler.kernel_ir import bind_sizes
from trex.tuning import harness
from trex.tuning.store import Store, backend_lookup
from trex.tuning.verify import Verifier

TINY = {"ROWS": 13, "N": 4, "HD": 64, "ITERS": 3, "PARTS": 4}
needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="Triton is not installed")


def test_cuda_tunes_the_per_stream_mhc_programs_and_ascend_the_ascendc_ones():
    # the cuda layout is the projection one: its program is the first program launch (after the split-K
    # host step), the per-row math from the partial sums; the split layout's is its reduce kernel
    assert harness.build_program("mhc_pre", "bf16", "cuda", TINY).name == "mhc_pre_coeff_proj_bf16"
    assert harness.build_program("mhc_pre_bwd", "bf16", "cuda", TINY).name == "mhc_pre_bwd_coeff_proj_bf16"
    assert harness.build_program("mhc_pre", "bf16", "cuda_split", TINY).name == "mhc_pre_coeff_streams4_bf16"
    assert harness.build_program("mhc_pre_bwd", "bf16", "cuda_split", TINY).name == "mhc_pre_bwd_coeff_streams4_bf16"
    assert harness.build_program("mhc_pre", "bf16", "cuda_fused", TINY).name == "mhc_pre_fwd_streams4_bf16"
    # the AscendC layout is the Cube split: its program is the first AIV launch
    assert harness.build_program("mhc_pre", "bf16", "ascend910b", TINY).name == "mhc_pre_fwd_cube_bf16"
    assert harness.build_program("mhc_pre_bwd", "bf16").name == "mhc_pre_bwd_coeff_cube_bf16"
    assert harness.build_program("rms_norm", "bf16", "cuda").name == harness.build_program("rms_norm", "bf16").name


def test_per_stream_inputs_are_the_runners_views_of_one_tensor():
    from trex.passes.mhc_pre.ir import stream_views
    p = harness.build_program("mhc_pre_bwd", "bf16", "cuda_fused", TINY)
    ins = harness.make_inputs(p, TINY, seed=5, distribution="heavy")
    assert sorted(ins) == sorted(t.name for t in p.inputs)
    n, hd, rows = TINY["N"], TINY["HD"], TINY["ROWS"]
    # x0..x3: row-strided views x[:, s, :] of one [ROWS, N, HD] tensor, as the cuda runner passes them
    assert all(ins[f"x{s}"].shape == (rows, hd) and ins[f"x{s}"].stride() == (n * hd, 1) for s in range(n))
    assert len({ins[f"x{s}"].untyped_storage().data_ptr() for s in range(n)}) == 1
    # the same draw through the AscendC-layout program (which takes the Cube's hproj, not fn), regrouped by
    # stream_views, gives the same x, scale and base; fn is drawn by the views, the same for the same draw
    full = harness.make_inputs(harness.build_program("mhc_pre_bwd", "bf16"), TINY, seed=5, distribution="heavy")
    want, *_ = stream_views(full["x"], torch.zeros(2 + n, n, n, hd), full["scale"], full["base"])
    for name in ("x0", "x3", "scale", "base"):
        assert torch.equal(ins[name], want[name]), name
    again = harness.make_inputs(p, TINY, seed=5, distribution="heavy")
    assert torch.equal(ins["fn3"], again["fn3"]) and not torch.equal(ins["fn0"], ins["fn1"])
    assert ins["fn2"].shape == ((2 + n) * n, hd)
    bound = {str(k): v for k, v in bind_sizes(p, ins, harness.scalars_for("mhc_pre_bwd", p, TINY)).items()}
    assert bound == {"ROWS": rows, "N": n, "HD": hd, "ITERS": TINY["ITERS"]}
    # the backward's dx0..dx3 go into row-strided views of one [ROWS, N, HD] tensor
    outs = harness.output_views(p, ins)
    assert sorted(outs) == [f"dx{s}" for s in range(n)]
    assert outs["dx1"].stride() == (n * hd, 1) and outs["dx1"].dtype == torch.bfloat16
    assert harness.output_views(harness.build_program("mhc_pre", "bf16", "cuda", TINY), ins) is None
    # the split backward (the cuda layout) leaves dx to its host step: its reduce kernel writes no dx
    assert harness.output_views(harness.build_program("mhc_pre_bwd", "bf16", "cuda", TINY), ins) is None


def test_a_stored_per_stream_tuning_is_what_the_cuda_launcher_finds(store_path):
    p = harness.build_program("mhc_pre", "bf16", "cuda", TINY)
    cfg = {"rows_per_tile": 8, "col_chunk": 32, "num_warps": 4, "num_stages": 2, "programs": None,
           "reverse_second_pass": True, "second_chunk": None, "hist_scratch": True, "prefetch": True,
           "dot_bf16_split": False}
    s = Store(store_path)
    s.put({"op": "mhc_pre", "sizes": TINY, "dtype": "bf16", "target": "cuda", "program": p.name,
           "fingerprint": p.fingerprint(), "config": cfg, "time_s": 1e-5, "profile": "measured (test)",
           "baseline": {"config": cfg, "time_s": 1e-5}, "gain": 0.0, "candidates": 1,
           "kernel_sha256": "the printed Triton kernel's hash"})
    s.save()
    # the sizes the launcher binds from the adapter's inputs (N from fn0's (2+N)*N rows)
    ins = harness.make_inputs(p, dict(TINY, ROWS=11), seed=0)
    sizes = bind_sizes(p, ins, harness.scalars_for("mhc_pre", p, TINY))
    assert backend_lookup("cuda", p, sizes) == cfg
    assert backend_lookup("cuda", harness.build_program("mhc_pre", "bf16"), sizes) is None   # AscendC layout


def test_the_tf32_rule_covers_cuda_contractions_only():
    for pattern in ("mhc_pre", "mhc_pre_bwd"):
        assert harness.tensor_core_contractions(harness.build_program(pattern, "bf16", "cuda_split", TINY), "cuda")
        assert not harness.tensor_core_contractions(harness.build_program(pattern, "bf16"), "ascend910b")
        # the projection layout's programs read the host step's partial sums: no contraction of their own
        assert not harness.tensor_core_contractions(harness.build_program(pattern, "bf16", "cuda", TINY), "cuda")
    assert not harness.tensor_core_contractions(harness.build_program("rms_norm", "bf16"), "cuda")


def test_tf32_products_round_the_operands_and_leave_the_fp64_reference_exact():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(8, 300, generator=g), torch.randn(300, 24, generator=g)
    for r in harness.TF32_ROUNDINGS:
        with harness.tf32_products(r):
            got = a @ b
        assert torch.equal(got, harness.round_tf32(a, r) @ harness.round_tf32(b, r))
        assert not torch.equal(got, a @ b)
    # 1 + 2^-11 is halfway between two TF32 values: nearest (ties away) rounds up, truncation down
    x = torch.tensor([1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 3 * 2 ** -11)])
    assert harness.round_tf32(x, "rn").tolist() == [1 + 2 ** -10, 1 + 2 * 2 ** -10, -(1 + 2 * 2 ** -10)]
    assert harness.round_tf32(x, "trunc").tolist() == [1.0, 1 + 2 ** -10, -(1 + 2 ** -10)]
    with pytest.raises(ValueError, match="rounding 'rz'"):
        harness.tf32_products("rz")
    p = harness.build_program("mhc_pre", "bf16", "cuda_split", TINY)
    ins = harness.make_inputs(p, TINY, seed=2)
    sc = harness.scalars_for("mhc_pre", p, TINY)
    ref = harness.reference_fp64(p, ins, sc)
    fp32, tf32 = harness.reference_eager(p, ins, sc), harness.reference_eager(p, ins, sc, tf32="trunc")

    def err(o):
        return (o["comb"].double() - ref["comb"]).pow(2).mean().sqrt().item()
    assert err(tf32) > 10 * err(fp32) > 0      # TF32's 10-bit operands, against fp32's 23
    assert torch.equal(harness.reference_fp64(p, ins, sc)["comb"], ref["comb"])


def test_interpreter_casts_truncate_only_fp32_to_bf16():
    x = torch.tensor([295.845, -295.845, 1.0, float("inf")])
    with harness.truncating_bf16_casts():
        assert x.to(torch.bfloat16).tolist() == [294.0, -294.0, 1.0, float("inf")]
        assert x.to(dtype=torch.bfloat16).tolist() == [294.0, -294.0, 1.0, float("inf")]
        assert x.to(torch.float64).dtype == torch.float64
    assert x.to(torch.bfloat16).tolist()[:2] == [296.0, -296.0]      # outside: round to nearest even


@needs_triton
def test_per_stream_mhc_is_verified_and_a_tail_skipping_candidate_still_rejected(monkeypatch, tmp_path):
    """Under the TF32 rule (and the interpreter's casts) the model's own per-stream tiling passes, and
    the planted bug (the last partial row tile never stored) is still rejected by the poison."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TREX_TRITON_CACHE", str(tmp_path))
    monkeypatch.setenv("TREX_TUNING_STORE", "none")
    from trex.tuning.cuda import CudaBackend
    b = CudaBackend("cuda", "mhc_pre", "bf16", TINY, layout="cuda_split")
    cfg, _ = b.initial()
    cfg = dict(cfg, rows_per_tile=4)       # 13 rows: a partial last tile the bug skips
    src = b.compile(cfg).source
    assert "row_hi = ROWS\n" in src
    wrong = src.replace("row_hi = ROWS\n", "row_hi = ROWS - ROWS % 4\n")

    def request(source):
        return {"target": "cuda", "layout": "cuda_split", "pattern": "mhc_pre", "dtype": "bf16", "sizes": TINY, "scalars": b.scalars,
                "kernel": {"source": source, "config": cfg}, "checks": 2}
    with Verifier() as v:
        assert v.verify(request(src)) == {"ok": True, "checks": 2}
        ans = v.verify(request(wrong))
        assert not ans["ok"] and "non-finite" in ans["reason"], ans


def test_measured_tilings_are_start_points(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    from trex.tuning import cuda
    if not cuda.available()[0]:
        pytest.skip(cuda.available()[1])
    v4 = {"ROWS": 16384, "N": 4, "HD": 7168, "ITERS": 20}
    want = {"rows_per_tile": 128, "col_chunk": 32, "num_warps": 8, "dot_bf16_split": True}
    monkeypatch.setattr(cuda, "interpreted", lambda: False)
    # the split layout's reduce kernels (H200 run 12): the forward's best without the register prefetch
    for pattern, programs, prefetch in (("mhc_pre", None, False), ("mhc_pre_bwd", 132, True)):
        b = cuda.CudaBackend("cuda", pattern, "bf16", v4, layout="cuda_split")
        (label, cfg), *_ = b.start_points()
        assert label == "measured" and cfg["programs"] == programs and cfg["prefetch"] is prefetch
        assert {k: cfg[k] for k in want} == want
        assert b.infeasible(cfg) == [], pattern
    # under the interpreter (bf16 dots computed wrong there) the same start point without dot_bf16_split
    monkeypatch.setattr(cuda, "interpreted", lambda: True)
    (label, cfg), *_ = cuda.CudaBackend("cuda", "mhc_pre", "bf16", dict(v4, HD=64, ROWS=32), layout="cuda_split").start_points()
    # (the nearest measured sizes are the e2e model's d = 1024: 64 rows, session 10's calibration)
    assert label == "measured_other_sizes" and cfg["rows_per_tile"] == 64 and cfg["dot_bf16_split"] is False


@needs_triton
def test_the_search_evaluates_the_start_points_after_the_root(monkeypatch, tmp_path, store_path):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TREX_TRITON_CACHE", str(tmp_path))
    from trex.tuning.cuda import CudaBackend
    from trex.tuning.search import Search

    class WithStart(CudaBackend):
        def start_points(self):
            root, _ = self.initial()
            return [("measured", {"rows_per_tile": root["rows_per_tile"] * 2})]

    b = WithStart("cuda", "rms_norm", "bf16", {"ROWS": 24, "D": 128})
    with Verifier() as v:
        res = Search(b, Store(store_path), max_candidates=2, checks=1, verifier=v).run(use_store=False)
    node = res.nodes[1]
    assert node.move == "start:measured" and node.parent == 0
    assert node.config["rows_per_tile"] == 2 * res.nodes[0].config["rows_per_tile"]
    assert node.status in ("committed", "rolled_back"), node.reason
    assert res.time_s <= res.baseline_time_s


@needs_triton
def test_a_tf32_kernel_passes_the_tf32_rule_and_its_error_is_the_tf32_chains(monkeypatch, tmp_path):
    """The H200's failure mode on the CPU: Triton's interpreter made to compute tl.dot like a TF32
    tensor core (fp32 operands truncated to TF32) runs the per-stream mHC forward: the verifier accepts
    it under the TF32 rule; its comb error is the emulated TF32 chain's and hundreds of times an fp32
    chain's (the first H200 record: comb rmse 1.5e-3 against an fp32 eager's 1.2e-5, a rejection)."""
    import numpy as np
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setenv("TREX_TRITON_CACHE", str(tmp_path))
    monkeypatch.setenv("TREX_TUNING_STORE", "none")
    monkeypatch.delenv("TREX_TRITON_POISON", raising=False)    # verify.check sets it in this process: restored after
    from triton.runtime import interpreter as triton_interpreter

    from trex.tuning import verify
    from trex.tuning.cuda import CudaBackend

    def tf32_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        def tf32(x):
            return (x.view(np.int32) & ~0x1FFF).view(np.float32) if x.dtype == np.float32 else x
        return triton_interpreter.TensorHandle(np.matmul(tf32(a.data), tf32(b.data), dtype=d.data.dtype) + d.data,
                                               d.dtype.scalar)
    monkeypatch.setattr(triton_interpreter.InterpreterBuilder, "create_dot", tf32_dot)
    sizes = {"ROWS": 32, "N": 4, "HD": 512, "ITERS": 20}
    b = CudaBackend("cuda", "mhc_pre", "bf16", sizes, layout="cuda_split")
    cfg, _ = b.initial()
    cfg = dict(cfg, rows_per_tile=16, num_warps=4)        # tl.dot needs >= 16 rows
    req = {"target": "cuda", "layout": "cuda_split", "pattern": "mhc_pre", "dtype": "bf16", "sizes": sizes, "scalars": b.scalars,
           "kernel": b.compile(cfg).for_verifier(), "checks": 3}
    assert verify.check(req) == {"ok": True, "checks": 3}
    # why an fp32 eager is the wrong yardstick: the kernel's error is the TF32 chain's, hundreds of times
    # an fp32 chain's (heavy-tailed inputs, the first H200 record's failing case)
    from trex.codegen_triton.launcher import run_program
    from trex.codegen_triton.printer import Tiling

    def rmse(a, r):
        return (a.double() - r).pow(2).mean().sqrt().item()
    for seed in (0, 1, 2):
        ins = harness.make_inputs(b.program, sizes, seed, 1.0, "heavy")
        got = run_program(b.program, ins, b.scalars, tiling=Tiling(**cfg))["comb"]
        ref = harness.reference_fp64(b.program, ins, b.scalars)["comb"]
        tf32 = rmse(harness.reference_eager(b.program, ins, b.scalars, tf32="trunc")["comb"], ref)
        fp32 = rmse(harness.reference_eager(b.program, ins, b.scalars)["comb"], ref)
        assert abs(rmse(got, ref) - tf32) <= 0.05 * tf32 and rmse(got, ref) > 50 * fp32, (seed, rmse(got, ref), tf32, fp32)
