"""trex composed with Inductor (options={"rest": "inductor"}), on the CPU: trex's fusions run, Inductor
compiles the rest of the graph and calls the fused ops (here their reference, as extern kernels),
forward and backward. The CUDA path (the printed Triton kernels inlined into Inductor's graph) is
covered by tests/gpu/test_gpu_cuda.py on a GPU."""
from __future__ import annotations

import pytest
import torch
from torch._inductor.utils import run_and_get_code

from trex.compiler import logs
from trex.compiler.backend import TrexOptionError


def rms(x, w):
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)


def block(x, w, up):
    """A fused op between ordinary ops, so Inductor has both kinds to compile."""
    return torch.nn.functional.silu(rms(x * 2.0, w) @ up).sum(-1)


@pytest.fixture(autouse=True)
def _reset():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def test_rest_inductor_calls_fused_ops_forward_and_backward():
    torch.manual_seed(0)
    x, w, up = torch.randn(6, 32), torch.randn(32), torch.randn(32, 16)
    xs = [t.clone().requires_grad_() for t in (x, w, up)]
    fn = torch.compile(block, backend="trex", options={"rest": "inductor"})
    with logs.capture() as reports:
        out, codes = run_and_get_code(lambda: fn(*xs).sum().backward())
    assert reports[0].match_counts() == {"rms_norm": 1}
    assert "compile_inductor" in reports[0].seconds
    code = "\n".join(codes)
    # Inductor's wrapper calls both fused ops (forward, backward) and generated its own kernels
    assert "torch.ops.trex.rms_norm.default(" in code and "torch.ops.trex.rms_norm_bwd.default(" in code
    assert "cpp_fused" in code
    ref = [t.clone().requires_grad_() for t in (x, w, up)]
    block(*ref).sum().backward()
    for got, want in zip(xs, ref):
        torch.testing.assert_close(got.grad, want.grad, rtol=1e-5, atol=1e-5)


def test_inductor_mode_reaches_trex_and_selects_inductor():
    x, w = torch.randn(4, 16), torch.randn(16)
    with logs.capture() as reports:
        out = torch.compile(rms, backend="trex", mode="max-autotune-no-cudagraphs")(x, w)
    torch.testing.assert_close(out, rms(x, w))
    assert "compile_inductor" in reports[0].seconds


@pytest.mark.parametrize("options, message", [
    ({"tagret": "cpu"}, "unknown option"),
    ({"target": "nope"}, "unknown trex target 'nope'"),
    ({"rest": "xla"}, "options\\['rest'\\] must be one of"),
    ({"mode": "fast"}, "mode must be one of"),
    ({"target": "cpu", "rest": "aten", "mode": "reduce-overhead"}, "needs options\\['rest'\\]='inductor'"),
    ({"inductor": ["triton.cudagraphs"]}, "options\\['inductor'\\] must be a dict"),
])
def test_bad_options_are_one_trex_line_not_backend_compiler_failed(options, message):
    x, w = torch.randn(2, 8), torch.randn(8)
    with pytest.raises(TrexOptionError, match=message) as info:
        torch.compile(rms, backend="trex", options=options)(x, w)
    assert not isinstance(info.value, torch._dynamo.exc.BackendCompilerFailed)
    # Dynamo appends its one-line TORCHDYNAMO_VERBOSE hint; the message itself is trex's one line
    assert str(info.value).splitlines()[0].startswith("trex: ")


def test_device_target_with_inductor_is_an_error_naming_the_fix(monkeypatch):
    from trex.compiler import targets
    monkeypatch.setitem(targets._TARGETS, "fake_dev", targets.Target("fake_dev", lambda n, a: NotImplemented,
                                                                     lambda: (True, "")))
    x, w = torch.randn(2, 8), torch.randn(8)
    with pytest.raises(TrexOptionError, match="use options\\['rest'\\]='aten'"):
        torch.compile(rms, backend="trex", options={"target": "fake_dev", "rest": "inductor"})(x, w)
    # without rest, such a target takes the trex-only path
    with logs.capture() as reports:
        torch.compile(rms, backend="trex", options={"target": "fake_dev"})(x, w)
    assert "compile_aten" in reports[0].seconds


@pytest.mark.parametrize("user, expected", [({}, True),
                                            ({"static_launch_user_defined_triton_kernels": False}, False)])
def test_inlined_kernels_ask_for_inductors_static_launcher(monkeypatch, user, expected):
    """A graph with fused ops compiles with Inductor's static launcher for user-defined Triton kernels
    (trex's inlined kernels are those; tests/gpu/test_inductor_cuda.py checks they are launched that
    way), unless the caller's own Inductor options say otherwise."""
    import torch._inductor.compile_fx as compile_fx_module
    import torch._inductor.config as inductor_config
    if not getattr(inductor_config, "use_static_cuda_launcher", False) or \
            not hasattr(inductor_config, "static_launch_user_defined_triton_kernels"):
        pytest.skip(f"torch {torch.__version__} has no static launcher for user kernels")
    seen = []
    real = compile_fx_module.compile_fx

    def spy(gm, inputs, config_patches=None, **kw):
        seen.append(dict(config_patches or {}))
        return real(gm, inputs, config_patches=config_patches, **kw)
    monkeypatch.setattr(compile_fx_module, "compile_fx", spy)
    x, w = torch.randn(4, 16), torch.randn(16)
    out = torch.compile(rms, backend="trex", options={"rest": "inductor", "inductor": user})(x, w)
    torch.testing.assert_close(out, rms(x, w))
    assert seen and seen[0].get("static_launch_user_defined_triton_kernels", False) is expected


@pytest.mark.parametrize("rest, warmed", [("inductor", 1), ("aten", 0)])
def test_inductor_compile_pool_is_warmed_at_backend_entry(monkeypatch, rest, warmed):
    """With Inductor for the rest, trex starts Inductor's compile subprocesses before its own fusion runs,
    as Inductor's backend does (else Inductor compiles kernels serially until the pool is up)."""
    import torch._inductor.async_compile as async_compile

    calls = []
    monkeypatch.setattr(async_compile, "maybe_warm_pool", lambda: calls.append("warm"))
    x, w = torch.randn(4, 16), torch.randn(16)
    torch.compile(rms, backend="trex", options={"rest": rest})(x, w)
    assert len(calls) == warmed
