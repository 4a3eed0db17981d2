"""Backend plumbing: registration, options, targets, safety fallbacks, logging and dumps."""
from __future__ import annotations

import os
import warnings

import pytest
import torch
from importlib.metadata import entry_points

from trex.compiler import logs, registry, targets
from trex.compiler.pattern import Pattern


def rms(x, w):
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)


def test_backend_is_registered_in_process_and_by_entry_point():
    assert "trex" in torch._dynamo.list_backends()
    eps = {ep.name: ep.value for ep in entry_points(group="torch_dynamo_backends")}
    assert eps.get("trex") == "trex.compiler.backend:trex_backend"
    # registering again (a second import path) must not raise "duplicate name"
    import trex.compiler.backend as backend
    backend._register_in_process()
    assert torch._dynamo.lookup_backend("trex") is backend.trex_backend


def test_unknown_option_and_pattern_are_errors():
    x, w = torch.randn(2, 8), torch.randn(8)
    with pytest.raises(Exception, match="unknown option"):
        torch.compile(rms, backend="trex", options={"tagret": "cpu"})(x, w)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown pattern"):
        torch.compile(rms, backend="trex", options={"patterns": ["rmsnorm_typo"]})(x, w)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="unknown trex target 'nope'"):
        torch.compile(rms, backend="trex", options={"target": "nope"})(x, w)


def test_patterns_option_selects_patterns():
    x, w = torch.randn(2, 8), torch.randn(8)
    with logs.capture() as reports:
        torch.compile(rms, backend="trex", options={"patterns": ["rope"]})(x, w)
    assert reports[0].matches == []
    torch._dynamo.reset()
    with logs.capture() as reports:
        torch.compile(rms, backend="trex", options={"disable_patterns": ["rms_norm"]})(x, w)
    assert reports[0].matches == []
    torch._dynamo.reset()
    with logs.capture() as reports:
        torch.compile(rms, backend="trex", options={"patterns": "all"})(x, w)
    assert [m.pattern for m in reports[0].matches] == ["rms_norm"]


def test_match_counters_accumulate():
    before = logs.counters["matches"]["rms_norm"]
    torch.compile(rms, backend="trex")(torch.randn(2, 8), torch.randn(8))
    assert logs.counters["matches"]["rms_norm"] == before + 1


def test_target_registry_dispatch_fallback_and_errors():
    calls = []

    def runner(op_name, args):
        calls.append(op_name)
        if op_name == "rms_norm_bwd":
            return NotImplemented                     # -> reference
        if op_name == "rms_norm":
            y, rstd = registry.fused_ops()["rms_norm"].reference(*args)
            return y, rstd
        raise RuntimeError("kernel build failed")   # -> warning + reference

    targets.register_target("test-recording", runner, replace=True)
    targets.register_target("test-missing", runner, available=lambda: (False, "no device"), replace=True)
    with pytest.raises(targets.TargetError, match="already registered"):
        targets.register_target("test-recording", lambda n, a: None)

    x = torch.randn(3, 8, requires_grad=True)
    w = torch.randn(8, requires_grad=True)
    compiled = torch.compile(rms, backend="trex", options={"target": "test-recording"})
    compiled(x, w).sum().backward()
    assert calls == ["rms_norm", "rms_norm_bwd"]
    torch.testing.assert_close(x.grad, torch.func.grad(lambda x: rms(x, w.detach()).sum())(x.detach()))

    with targets.use_target("test-recording"), pytest.warns(RuntimeWarning, match="kernel build failed"):
        out = torch.ops.trex.swiglu_limited(torch.randn(2, 4), torch.randn(2, 4), 7.0, None, None)
    assert out.shape == (2, 4)
    assert targets.active_target() == "cpu"

    torch._dynamo.reset()
    with pytest.warns(RuntimeWarning, match="not available on this host \\(no device\\)"):
        compiled = torch.compile(rms, backend="trex", options={"target": "test-missing"})
        compiled(torch.randn(2, 8), torch.randn(8))
    torch._dynamo.reset()
    with pytest.raises(Exception, match="not available"):
        torch.compile(rms, backend="trex", options={"target": "test-missing", "strict_target": True})(
            torch.randn(2, 8), torch.randn(8))


def test_kernel_outputs_are_checked_at_the_boundary():
    """A kernel returning the wrong shape or dtype is not trusted: one warning, then the reference."""
    def wrong_kernels(op_name, args):
        y, rstd = registry.fused_ops()["rms_norm"].reference(*args)
        return (y[:-1], rstd) if args[0].shape[0] > 2 else (y.double(), rstd)

    targets.register_target("test-wrong-shapes", wrong_kernels, replace=True)
    x, w = torch.randn(3, 8), torch.randn(8)
    expected, _ = registry.fused_ops()["rms_norm"].reference(x, w, 1e-6, None)
    with targets.use_target("test-wrong-shapes"), pytest.warns(RuntimeWarning, match="expected \\(3, 8\\)"):
        y, _ = torch.ops.trex.rms_norm(x, w, 1e-6, None)
    torch.testing.assert_close(y, expected)
    with targets.use_target("test-wrong-shapes"):   # warned once already for this target and op
        y, _ = torch.ops.trex.rms_norm(x[:2], w, 1e-6, None)
    assert y.dtype == torch.float32                 # the fp64 kernel output was refused


def test_failing_pattern_leaves_region_eager_with_one_warning(monkeypatch):
    def broken_replacement(x, weight, *, eps, out_dtype):
        raise RuntimeError("replacement exploded")

    broken = Pattern(name="rms_norm", chains=registry.patterns()["rms_norm"].chains, replacement=broken_replacement,
                     example_inputs=registry.patterns()["rms_norm"].example_inputs)
    monkeypatch.setitem(registry._PATTERNS, "rms_norm", broken)

    def two_norms(x, w):
        return rms(x, w) + rms(x * 2, w)

    x, w = torch.randn(4, 8), torch.randn(8)
    with warnings.catch_warnings(record=True) as caught, logs.capture() as reports:
        warnings.simplefilter("always")
        out = torch.compile(two_norms, backend="trex")(x, w)
    trex_warnings = [c for c in caught if "trex: pattern 'rms_norm' failed" in str(c.message)]
    assert len(trex_warnings) == 1, [str(c.message) for c in caught]
    assert "replacement exploded" in str(trex_warnings[0].message)
    assert reports[0].matches == [] and len(reports[0].fallbacks) >= 2   # every region tried, none fused
    torch.testing.assert_close(out, two_norms(x, w))


def test_graph_with_no_grad_region_fuses_and_keeps_eager_gradients():
    """The no_grad region's result carries no gradient (backend.detach_no_grad_regions); other
    grad-mode changes still run unfused (tests/compiler/test_no_grad_regions.py)."""
    def f(x, w):
        with torch.no_grad():
            s = x.sum()
        return rms(x, w) * s

    x, w = torch.randn(2, 8), torch.randn(8)
    xs, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
    with logs.capture() as reports:
        out = torch.compile(f, backend="trex")(xs, w)
    (report,) = reports
    assert [m.pattern for m in report.matches] == ["rms_norm"] and report.fallbacks == [], report.format()
    ref = f(xe, w)
    torch.testing.assert_close(out, ref)
    out.sum().backward()
    ref.sum().backward()
    torch.testing.assert_close(xs.grad, xe.grad)


def test_near_miss_is_reported_with_reason():
    def gated(x, gate):
        xf = x.float()
        return gate * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)

    with logs.capture() as reports:
        torch.compile(gated, backend="trex")(torch.randn(2, 3, 8), torch.randn(2, 3, 8))
    (report,) = reports
    # the weight-free chain still fuses; the weighted one is a near-miss naming the reason
    assert [m.pattern for m in report.matches] == ["rms_norm"]
    assert any("not a weight of shape" in nm.reason for nm in report.near_misses), report.format()


def test_trex_logs_and_dump_dir(tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("TREX_LOGS", "matches,graphs")
    messages = []

    class Collect:
        level = 0

        def handle(self, record):
            messages.append(record.getMessage())

    handler = Collect()
    logs.log.addHandler(handler)  # type: ignore[arg-type]
    try:
        x = torch.randn(2, 8, requires_grad=True)
        torch.compile(rms, backend="trex", options={"dump_dir": str(tmp_path)})(x, torch.randn(8)).sum().backward()
    finally:
        logs.log.removeHandler(handler)  # type: ignore[arg-type]
    text = "\n".join(messages)
    assert "matched: rms_norm x1" in text
    assert "after trex passes" in text and "torch.ops.trex.rms_norm" in text
    (graph_dir,) = os.listdir(tmp_path)
    files = set(os.listdir(tmp_path / graph_dir))
    assert {"pre_autograd.py", "matches.txt", "forward.py", "backward.py"} <= files
    assert "rms_norm_bwd" in (tmp_path / graph_dir / "backward.py").read_text()


@torch._dynamo.config.patch(specialize_float=False)  # not monkeypatch: pytest 9.2 deletes module attrs on undo
def test_eps_as_runtime_value_falls_back_not_a_wrong_result():
    """With float specialisation off (trex turns it on at import), eps is a runtime tensor: the graph runs
    unfused with a recorded reason."""

    class Norm(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.eps = 1e-6

        def forward(self, x):
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)

    m = Norm()
    x = torch.randn(2, 3, 8)
    with logs.capture() as reports, pytest.warns(RuntimeWarning, match="could not be prepared for fusion"):
        out = torch.compile(m, backend="trex", dynamic=True)(x)
    torch.testing.assert_close(out, m(x))
    (report,) = reports
    assert report.matches == []
    assert any("_local_scalar_dense" in fb for fb in report.fallbacks), report.format()


def test_backend_string_works_without_importing_trex(tmp_path):
    """A fresh interpreter: backend="trex" resolves through the entry point, which also turns on float
    specialisation before Dynamo traces, so eps stays a constant under dynamic=True."""
    import subprocess
    import sys

    script = tmp_path / "fresh.py"
    script.write_text(
        "import sys, torch\n"
        "def f(x, w):\n"
        "    xf = x.float()\n"
        "    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)\n"
        "c = torch.compile(f, backend='trex', dynamic=True)\n"
        "assert 'trex.compiler.backend' in sys.modules\n"
        "from trex.compiler import logs\n"
        "with logs.capture() as r:\n"
        "    c(torch.randn(2, 3, 8), torch.randn(8))\n"
        "print(','.join(m.pattern for m in r[0].matches))\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "rms_norm"


def test_device_kernels_load_by_device_type_or_say_why_not():
    """The backend loads the target named after the graph's device type (e.g. "cuda"); where none is
    registered the reason names the fix, and the host CPU needs none."""
    assert targets.load_device_kernels("cpu") is None
    why = targets.load_device_kernels("trexdev")
    assert "unknown trex target 'trexdev'" in why and "pip install -e ." in why
    targets.register_target("trexdev", lambda op, args: NotImplemented, available=lambda: (False, "no board"),
                            replace=True)
    try:
        assert "not available on this host: no board" in targets.load_device_kernels("trexdev")
        targets.register_target("trexdev", lambda op, args: NotImplemented, available=lambda: (True, ""),
                                replace=True)
        assert targets.load_device_kernels("trexdev") is None
    finally:
        targets._TARGETS.pop("trexdev", None)

