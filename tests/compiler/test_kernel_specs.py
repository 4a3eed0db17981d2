"""Every fused op's kernel spec (trex.compiler.kernels, registered by the op's package): complete for
every target it claims, its runners right on the reference interpreter in every layout, and the one
source of the sizes that codegen, tuning and the benchmarks use."""
from __future__ import annotations

import pytest
import sympy
import torch

from trex.compiler import registry
from trex.compiler.kernel_ir import ROWS, IRError, interpreter
from trex.compiler.kernels import SIZE_SETS, Guard, KernelSpec, Layout, capture_launch

SPECS = registry.kernel_specs()
DTYPES = ("bf16", "fp16", "fp32")


def test_every_spec_belongs_to_a_registered_fused_op():
    assert SPECS and set(SPECS) <= set(registry.fused_ops()), registry.DISCOVERY_ERRORS
    assert all(spec.op == name for name, spec in SPECS.items())


@pytest.mark.parametrize("name", sorted(SPECS))
def test_a_spec_has_guards_runner_program_and_sizes_for_every_target_it_claims(name):
    spec = SPECS[name]
    assert spec.doc and spec.targets
    assert all(isinstance(g, Guard) and g.reason for g in spec.guards)
    assert set(spec.variants) <= set(spec.targets), "a variant for a target the spec does not claim"
    assert set(spec.sizes) == set(SIZE_SETS)
    for target in spec.targets:
        layout = spec.layout_for(target)
        assert callable(layout.run) and callable(layout.program)
        for size_set, sizes in spec.sizes.items():
            for dt in DTYPES:
                p = spec.program(dt, target, sizes)
                # the named sizes bind every size the program's tensors use, and the example scalars
                # give every scalar that is not bound by a size
                symbols = {str(s) for t in p.tensors for c in t.cols for s in sympy.sympify(c).free_symbols}
                assert symbols | {str(ROWS)} <= set(sizes), (target, size_set, symbols)
                bound = {name for _, name in p.size_params}
                assert {s.name for s in p.scalars} - bound <= set(spec.scalars), (target, p.name)


def _close(got, want):
    got, want = (got if isinstance(got, tuple) else (got,)), (want if isinstance(want, tuple) else (want,))
    assert len(got) == len(want)
    for o, r in zip(got, want):
        assert o.shape == r.shape and o.dtype == r.dtype
        torch.testing.assert_close(o, r, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_every_layout_runs_the_samples_like_the_reference(name):
    """Each claimed target's layout (cuda's included: RoPE's register pair swap, mHC per stream with its
    rows_matmul host step) on the Kernel IR reference interpreter: no GPU needed to check a runner."""
    spec, fop = SPECS[name], registry.fused_ops()[name]
    ran = 0
    for args in fop.sample_inputs(torch.float32):
        if spec.unsupported_reason(args) is not None:
            continue
        for target in spec.targets:
            _close(spec.run(args, interpreter(), target), fop.reference(*args))
            ran += 1
    assert ran, f"{name}: no sample input runs a kernel"


@pytest.mark.parametrize("name", sorted(SPECS))
def test_codegen_tuning_and_bench_sizes_come_from_the_spec(name):
    from trex.tuning import bench, harness
    spec = SPECS[name]
    assert harness.parse_shape(None, name) == dict(spec.sizes["example"])
    program = spec.program("bf16")
    scalars = harness.scalars_for(name, program, spec.sizes["example"])
    bound = {scalar for _, scalar in program.size_params}
    assert all(scalars[k] == v for k, v in spec.scalars.items() if k not in bound)
    for size_set in SIZE_SETS:
        assert bench.sizes_for(name, size_set) == dict(spec.sizes[size_set])
    for target in (None, "ascend910b", "cuda"):
        assert harness.build_program(name, "bf16", target) == spec.program("bf16", target)
    assert set(bench.fastest_first()) == set(SPECS)


def test_a_budgeted_tuning_run_takes_the_ops_fastest_first_each_backward_after_its_forward():
    from trex.tuning import bench
    order = list(bench.fastest_first())
    # the order trex tune's bench ran in before the kernel specs (its hand-kept table), add_rms_norm added
    before = ["rms_norm", "rms_norm_bwd", "swiglu_limited", "swiglu_limited_bwd", "rope", "mhc_pre", "mhc_pre_bwd"]
    assert [name for name in order if name in before] == before
    assert order[-2:] == ["mhc_pre", "mhc_pre_bwd"]


def test_trex_codegen_lists_the_specs(capsys):
    from trex.codegen_ascendc.cli import main
    assert main(["--list"]) == 0
    listed = dict(line.split(None, 1) for line in capsys.readouterr().out.splitlines())
    assert listed == {name: spec.doc for name, spec in SPECS.items()}


def test_the_benchmark_sweeps_the_launch_the_cuda_runner_makes():
    """bench/gpu_patterns.py times exactly what the cuda target launches for its op calls."""
    spec, fop = SPECS["mhc_pre_bwd"], registry.fused_ops()["mhc_pre_bwd"]
    args = fop.sample_inputs(torch.float32)[0]
    program, inputs, scalars = capture_launch(spec, args, "cuda")
    assert program == spec.program("fp32", "cuda", {"N": args[3].shape[-2]})
    # the projection layout: its first program reads the host step's partial sums (and the output grads)
    assert {"hpart", "sspart", "dppart", "dpost", "dcomb"} <= set(inputs) and scalars["iters"] == args[7]
    assert scalars["hd"] == args[3].shape[-1]


def test_a_spec_without_every_size_set_is_refused():
    layout = Layout(run=lambda execute, *a: None, program=lambda dtype, sizes: None)
    with pytest.raises(IRError, match="no sizes for"):
        KernelSpec(op="x", doc="x", layout=layout, sizes={"example": {"ROWS": 1}})
    with pytest.raises(IRError, match="different sizes"):
        KernelSpec(op="x", doc="x", layout=layout,
                   sizes={k: ({"ROWS": 1, "D": 2} if k == "tiny" else {"ROWS": 1}) for k in SIZE_SETS})
