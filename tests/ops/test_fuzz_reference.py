"""Property: every forward fused op, as dispatched to the active target (cpu here; other layers run the
same strategies on theirs), stays within a few output-dtype ulps of its fp64 reference on random
sizes, dtypes and layouts (the op's registered generator, trex.compiler.strategies.fuzz_arguments,
on finite inputs of moderate magnitude: the ulp bound does not hold for NaN/Inf or 1e6-scale inputs,
which tests/fuzz checks with the DESIGN.md rule)."""
import pytest
import torch
from hypothesis import given, settings

from trex.compiler import registry
from trex.compiler.strategies import fuzz_arguments

FORWARD_OPS = sorted(name for name, op in registry.fused_ops().items()
                     if op.backward_of is None and op.fuzz_arguments is not None)
MODERATE = ("none", "zero_rows", "clamp_limits")
# ops whose contract rounds an intermediate to the input dtype: every output of theirs is held to the
# input dtype's tolerance, not its own
ROUNDS_AN_INTERMEDIATE = {"add_rms_norm": "h = x + residual is rounded to x.dtype before the norm (docs/contracts.md)"}
TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 2e-2, torch.float16: 2e-3}


def _fp64(a):
    return a.detach().to(torch.float64) if isinstance(a, torch.Tensor) and a.is_floating_point() else a


def test_every_forward_op_is_checked():
    assert {"rms_norm", "swiglu_limited", "rope", "mhc_pre"} <= set(FORWARD_OPS)


@pytest.mark.parametrize("name", FORWARD_OPS)
def test_fused_op_fp32_compute_is_at_least_as_accurate_as_fp32_rounding(name):
    op = registry.fused_ops()[name]

    @settings(max_examples=15)
    @given(args=fuzz_arguments(name, specials=MODERATE))
    def check(args):
        out = op.op(*args)
        ref = op.reference(*[_fp64(a) for a in args])
        outs = out if isinstance(out, tuple) else (out,)
        refs = ref if isinstance(ref, tuple) else (ref,)
        for o, r in zip(outs, refs):
            assert o.dtype in (args[0].dtype, torch.float32)
            assert o.shape == r.shape
            # fp32 compute, one rounding to the output dtype: within a few output ulps of fp64
            tol = TOLERANCE[o.dtype]
            if name in ROUNDS_AN_INTERMEDIATE:
                tol = max(tol, TOLERANCE[args[0].dtype])
            torch.testing.assert_close(o.double(), r, rtol=tol, atol=tol * max(1.0, float(r.abs().max())))

    check()
