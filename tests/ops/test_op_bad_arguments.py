"""Direct fused-op calls with invalid scalars, dtypes or devices fail at once, naming the op and
the argument (the op's reference and its fake run the same checks, so eager and tracing agree)."""
import pytest
import torch

from trex.compiler.registry import fused_ops


def _meta(t):
    return t.to("meta")


# op -> [(case, how to change the first fp32 sample's arguments, error type, message fragment)]
CASES = {
    "rms_norm": [
        ("eps=-1", lambda a: (a[0], a[1], -1.0, a[3]), ValueError, "'eps' must be >= 0"),
        ("eps=nan", lambda a: (a[0], a[1], float("nan"), a[3]), ValueError, "'eps' must be finite"),
        ("integer out_dtype", lambda a: (a[0], a[1], a[2], torch.int32), TypeError, "'out_dtype' must be None or"),
        ("meta weight next to CPU x", lambda a: (a[0], _meta(a[1]), a[2], a[3]), ValueError,
         "x on cpu, weight on meta"),
    ],
    "add_rms_norm": [
        ("eps=-1", lambda a: (a[0], a[1], a[2], -1.0, a[4]), ValueError, "trex.add_rms_norm: argument 'eps'"),
        ("integer out_dtype", lambda a: (a[0], a[1], a[2], a[3], torch.int64), TypeError,
         "trex.add_rms_norm: argument 'out_dtype'"),
        ("meta residual", lambda a: (a[0], _meta(a[1]), a[2], a[3], a[4]), ValueError, "residual on meta"),
    ],
    "mhc_pre": [
        ("hc_eps=-1", lambda a: (*a[:5], -1.0, a[6]), ValueError, "'hc_eps' must be >= 0"),
        ("rms_eps=-1", lambda a: (*a[:6], -1.0), ValueError, "'rms_eps' must be >= 0"),
        ("iters=0", lambda a: (*a[:4], 0, *a[5:]), ValueError, "'iters' must be >= 1"),
        ("meta fn", lambda a: (a[0], _meta(a[1]), *a[2:]), ValueError, "fn on meta"),
    ],
    "swiglu_limited": [
        ("limit=-1", lambda a: (a[0], a[1], -1.0, *a[3:]), ValueError, "'limit' must be > 0"),
        ("limit=-inf", lambda a: (a[0], a[1], float("-inf"), *a[3:]), ValueError, "'limit' must be finite or +inf"),
        ("integer out_dtype", lambda a: (*a[:4], torch.int32), TypeError, "'out_dtype' must be None or"),
        ("meta up", lambda a: (a[0], _meta(a[1]), *a[2:]), ValueError, "up on meta"),
    ],
    "rope": [
        ("meta cos", lambda a: (a[0], _meta(a[1]), *a[2:]), ValueError, "cos on meta"),
    ],
}


@pytest.mark.parametrize("op, case", [(op, c[0]) for op, cases in CASES.items() for c in cases])
def test_bad_call_names_the_argument(op, case):
    fop = fused_ops()[op]
    _, change, error, fragment = next(c for c in CASES[op] if c[0] == case)
    args = change(fop.sample_inputs(torch.float32)[0])
    for call in (fop.op, fop.reference):
        with pytest.raises(error, match=f"trex.{op}: .*" if fragment.startswith("'") else None) as info:
            call(*args)
        assert fragment in str(info.value), (call, str(info.value))


def test_every_op_with_scalars_has_cases():
    assert {"rms_norm", "add_rms_norm", "mhc_pre", "swiglu_limited", "rope"} <= set(fused_ops())
