"""Printer output: golden snapshots, the §8 checklist linter, g++ syntax check against the emulator
headers, the CANN project, the CLI, and the npu-target skip."""
import json
import shutil
import subprocess

import pytest

from trex.codegen_ascendc.cli import main as codegen_main
from trex.codegen_ascendc.emulator.runner import INCLUDE_DIR, find_compiler
from trex.codegen_ascendc.golden import golden_path, golden_source
from trex.codegen_ascendc.lint import lint_source
from trex.codegen_ascendc.npu import NpuUnavailable, npu_status, require_npu
from trex.codegen_ascendc.printer import print_kernel
from trex.cost_models.hardware import ASCEND_910B
from trex.passes.rms_norm.ir import build_rms_norm_fwd
from trex.compiler.kernel_ir import DType
from trex.compiler import registry

SPECS = registry.kernel_specs()


@pytest.mark.parametrize("name", sorted(SPECS))
def test_golden_snapshot(name):
    path = golden_path(name)
    assert path.exists(), f"missing golden {path}; run `python -m trex.codegen_ascendc.golden`"
    assert golden_source(name) == path.read_text(), (
        f"generated AscendC for {name} changed; review the diff and run `python -m trex.codegen_ascendc.golden`")


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("dtype", [DType.BF16, DType.FP16, DType.FP32])
def test_generated_code_passes_the_checklist(name, dtype):
    p = SPECS[name].program(dtype)
    src = print_kernel(p, 2)
    assert lint_source(src) == []
    assert 'extern "C" __global__ __aicore__ void ' + p.name in src
    if dtype == DType.BF16 and any(t.dtype == DType.BF16 for t in p.outputs):   # a bf16 result is rounded RINT
        assert "RoundMode::CAST_RINT" in src
    assert "DataCopyPad" in src


def test_linter_catches_violations():
    src = print_kernel(build_rms_norm_fwd("bf16"), 2)
    assert [f.rule for f in lint_source(src.replace("CAST_RINT", "CAST_NONE"))] == ["bf16-rint"]
    assert {f.rule for f in lint_source(src.replace("rowBytes % 32 == 0", "true"))} == {"datacopy-aligned"}
    assert {f.rule for f in lint_source(src.replace("      PipeBarrier<PIPE_V>();\n", "", 1))} == {"pipe-barrier"}
    assert [f.rule for f in lint_source(src, ub_bytes=200_000, ub_capacity=188_160)] == ["ub-capacity"]


@pytest.mark.skipif(find_compiler() is None, reason="no C++ compiler")
@pytest.mark.parametrize("name", ["rms_norm_bwd", "mhc_pre_bwd", "rope"])
def test_fp16_and_fp32_variants_compile(name, tmp_path):
    for dt in (DType.FP16, DType.FP32):
        f = tmp_path / f"{name}_{dt.value}.cpp"
        f.write_text(print_kernel(SPECS[name].program(dt), 1))
        r = subprocess.run([find_compiler(), "-std=c++17", "-fsyntax-only", f"-I{INCLUDE_DIR}", str(f)],
                           capture_output=True, text=True)
        assert r.returncode == 0, r.stderr[-2000:]


def test_cli_writes_a_cann_project(tmp_path, capsys):
    rc = codegen_main(["--pattern", "rms_norm", "--target", "ascend910c", "--out", str(tmp_path),
                       "--sizes", "ROWS=256,D=1024"])
    assert rc == 0
    root = tmp_path / "rms_norm_fwd_bf16_wbf16_obf16"
    for rel in ("kernel/rms_norm_fwd_bf16_wbf16_obf16.cpp", "CMakeLists.txt", "README.md", "tiling.json",
                "host/rms_norm_fwd_bf16_wbf16_obf16_launch.cpp", "host/rms_norm_fwd_bf16_wbf16_obf16_torch.cpp",
                "host/rms_norm_fwd_bf16_wbf16_obf16_tiling.h"):
        assert (root / rel).is_file(), rel
    meta = json.loads((root / "tiling.json").read_text())
    assert meta["soc_version"] == "Ascend910_9392" and meta["kernel_args"][-1] == "tiling"
    assert meta["prediction"]["ub_bytes"] <= ASCEND_910B.ub_capacity
    cmake = (root / "CMakeLists.txt").read_text()
    assert "ascendc_library(kernels SHARED kernel/rms_norm_fwd_bf16_wbf16_obf16.cpp)" in cmake
    torch_cpp = (root / "host/rms_norm_fwd_bf16_wbf16_obf16_torch.cpp").read_text()
    assert "TORCH_LIBRARY_IMPL(trex_kernels, PrivateUse1" in torch_cpp
    out = capsys.readouterr().out
    assert "lint: clean" in out and "npu build+launch here:" in out


def test_cli_reports_infeasible_tiling(tmp_path, capsys):
    rc = codegen_main(["--pattern", "rms_norm", "--out", str(tmp_path), "--tiling", "64,none,2,48"])
    assert rc == 2
    assert "UB use" in capsys.readouterr().err


def test_cli_via_trex_dispatcher(tmp_path):
    exe = shutil.which("trex")
    if exe is None:
        pytest.skip("trex console script not installed")
    r = subprocess.run([exe, "codegen", "--list"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "mhc_pre_bwd" in r.stdout


def test_npu_target_is_detected_and_skipped_with_a_reason():
    ok, why = npu_status()
    if ok:
        pytest.skip(f"an NPU toolchain is present: {why}")
    assert why
    with pytest.raises(NpuUnavailable, match="unavailable here"):
        require_npu()
