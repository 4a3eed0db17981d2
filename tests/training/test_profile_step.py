"""The Figure-6 step anatomy (trex.training.profile, bench/profile_step.py) on the CPU: families,
launch counts, the sub-20-us tail and idle from a real torch.profiler capture, and the JSON/PNG."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from trex.training.profile import FAMILIES, Unit, anatomy, busy_us, device_units, family

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name,fam", [
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", "GEMM"),
    ("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm>", "GEMM"),
    ("aten::mm", "GEMM"), ("aten::_grouped_mm", "GEMM"), ("triton_tem_fused_mm_3", "GEMM"),
    ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>", "attention"),
    ("aten::_softmax", "attention"), ("aten::_log_softmax", "reduction"),
    ("triton_red_fused_mean_pow_2", "reduction"), ("aten::topk", "reduction"),
    ("void at::native::vectorized_elementwise_kernel<4, CUDAFunctor_add<float>>", "elementwise/cast/copy"),
    ("triton_poi_fused__to_copy_1", "elementwise/cast/copy"), ("Memcpy DtoD (Device -> Device)", "elementwise/cast/copy"),
    ("void at::native::multi_tensor_apply_kernel<FusedAdamMathFunctor>", "optimizer"),
    ("aten::_foreach_mul_", "optimizer"), ("ncclDevKernel_AllReduce_Sum_f32", "comm"),
    ("trex::swiglu_limited", "trex fused"),
])
def test_family_rules(name, fam):
    assert family(name) == fam


def test_trex_kernels_are_named_after_their_fused_op():
    assert family("rms_norm_fwd_0123456789", frozenset({"rms_norm_fwd"})) == "trex fused"
    assert family("triton_poi_fused_add_0", frozenset({"rms_norm_fwd"})) == "elementwise/cast/copy"
    # names of run 11's H200 profile (bench/results/e2e_hf_2026-12-01_h200_run11_profile.json)
    ops = frozenset({"mhc_pre_bwd", "rope", "swiglu_limited_bwd"})
    for name in ("mhc_pre_bwd_streams4_bf16_b828c0a434", "rope_bf16_csbf16_pairs_5f58524acc",
                 "swiglu_limited_bwd_bf16_84efa408ec", "rows_matmul_kernel"):
        assert family(name, ops) == "trex fused", name
    assert family("triton_red_fused__to_copy__unsafe_view_add_bmm_mhc_pre_bwd_mul_squeeze_sum_26", ops) == "reduction"


def test_anatomy_counts_tail_idle_and_overlap():
    units = [Unit("sm90_gemm", 0, 100), Unit("triton_poi_fused_add", 100, 5), Unit("triton_poi_fused_mul", 110, 5),
             Unit("aten_gemm_overlap", 50, 100)]          # overlaps the first: busy counts it once
    assert busy_us(units) == 150                          # every unit lies inside [0, 150)
    r = anatomy(units, "cuda kernels", wall_us=300.0)
    assert r["launches"] == 4 and r["tail"]["launches"] == 2
    assert r["tail"]["device_us"] == 10 and r["tail"]["device_share"] == pytest.approx(10 / 210)
    assert r["busy_us"] == 150 and r["idle_us"] == 150 and r["busy_share"] == pytest.approx(0.5)
    assert r["families"]["GEMM"]["launches"] == 2 and r["families"]["elementwise/cast/copy"]["tail_launches"] == 2
    assert sum(f["share"] for f in r["families"].values()) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="no kernels"):
        anatomy([], "cuda kernels")


def test_cpu_capture_of_a_training_step_gives_the_families():
    lin = torch.nn.Linear(64, 64)
    opt = torch.optim.AdamW(lin.parameters(), foreach=True)
    x = torch.randn(32, 64)
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        loss = torch.softmax(lin(x), -1).clamp(max=0.5).sum()
        loss.backward()
        opt.step()
    units, kind = device_units(prof)
    assert kind == "cpu ops"
    assert not any(u.name == "aten::view" for u in units)          # views launch nothing
    r = anatomy(units, kind)
    assert set(r["families"]) <= set(FAMILIES)
    for fam in ("GEMM", "attention", "elementwise/cast/copy", "optimizer", "reduction"):
        assert r["families"][fam]["launches"] > 0, fam
    assert r["launches"] == len(units) and 0 < r["busy_share"] <= 1


@pytest.mark.slow
def test_profile_step_script_cpu_writes_json_and_png(tmp_path):
    cmd = [sys.executable, str(REPO / "bench" / "profile_step.py"), "--device", "cpu", "--model", "tiny",
           "--seq-len", "16", "--micro-batch", "1", "--steps", "2", "--modes", "eager", "--out", str(tmp_path)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads((tmp_path / "profile_anatomy.json").read_text())
    eager = summary["modes"]["eager"]
    assert eager["launches"] > 1000 and eager["tokens_per_step"] == 16
    assert summary["anatomy"]["eager"]["units"] == "cpu ops"
    try:
        import matplotlib  # noqa: F401
        assert (tmp_path / "profile_anatomy.png").stat().st_size > 1000
    except ImportError:
        pass


def test_anatomy_from_the_train_loops_profile_window():
    from trex.training.profile import anatomy_from_totals
    ops = {"aten::mm": {"device_us": 300.0, "cpu_us": 50.0, "count": 2},          # a CPU op: not a kernel
           "sm90_xmma_gemm_bf16": {"device_us": 300.0, "cpu_us": 0, "count": 2},
           "triton_poi_fused_add_0": {"device_us": 40.0, "cpu_us": 0, "count": 4},
           "void at::native::multi_tensor_apply_kernel<Adam>": {"device_us": 60.0, "cpu_us": 0, "count": 2},
           "Optimizer.step#AdamW.step": {"device_us": 60.0, "cpu_us": 0, "count": 2}}     # an annotation span
    r = anatomy_from_totals(ops, wall_s=0.001, steps=2)
    assert r["launches"] == 4 and r["tail"]["launches"] == 2 + 0        # the adds: 10 us each
    assert r["busy_share"] == pytest.approx(400 / 2 / 500)
    assert r["family_share"]["GEMM"] == pytest.approx(0.75)
    assert anatomy_from_totals({"aten::mm": {"device_us": 0, "cpu_us": 5, "count": 1}}, 1.0) is None


@pytest.mark.parametrize("name,fam", [("aten::clamp_min", "elementwise/cast/copy"), ("aten::maximum", "elementwise/cast/copy"),
                                      ("aten::sum", "reduction"), ("aten::max", "reduction"),
                                      ("void at::native::reduce_kernel<512, 1>", "reduction"),
                                      ("void at::native::sbtopk::gatherTopK<float>", "reduction"),
                                      ("aten::le", "elementwise/cast/copy"), ("aten::slice_backward", "elementwise/cast/copy")])
def test_family_rules_do_not_take_substrings_for_reductions(name, fam):
    assert family(name) == fam
