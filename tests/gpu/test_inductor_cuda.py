"""backend="trex" on CUDA through Inductor (the default `rest`): every fused op with a kernel spec is
inlined into Inductor's graph as `wrap_triton` launches of its printed kernels (no torch.ops.trex.*
extern call left in the generated code; mHC's backward, which writes views, stays one), results within the DESIGN.md rule of the op's reference, and
the same under CUDA graphs (mode="reduce-overhead"), forward and backward (skipped without CUDA)."""
from __future__ import annotations

import pytest
import torch
from torch._inductor.utils import run_and_get_code

from gpu_cases import requires_cuda

pytestmark = [pytest.mark.cuda, requires_cuda]


@pytest.fixture(autouse=True)
def _fresh():
    import trex.codegen_triton
    import trex.compiler.backend  # noqa: F401 - registers backend="trex"
    trex.codegen_triton.register_cuda_target()
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _close(out, ref, dtype):
    tol = {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    out, ref = out.double(), ref.double()
    err = float((out - ref).norm() / max(float(ref.norm()), 1e-30))
    assert torch.isfinite(out).all() and err < tol, err


def _samples(name, dtype):
    from trex.compiler import registry
    spec = registry.kernel_spec(name)
    for args in registry.fused_ops()[name].sample_inputs(dtype):
        cuda = tuple(a.cuda() if isinstance(a, torch.Tensor) else a for a in args)
        if spec.unsupported_reason(cuda) is None and all(a.numel() for a in cuda if isinstance(a, torch.Tensor)):
            yield cuda


def _ops_with_cuda_kernels():
    from trex.compiler import registry
    return sorted(n for n, s in registry.kernel_specs().items() if "cuda" in s.targets)


def _tensor_call(fop, args):
    """fused op `fop` on `args` as a function of their tensors only (the scalars baked in), and those
    tensors: what torch.compile traces."""
    tensors = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]

    def call(*ts):
        full = list(args)
        for i, t in zip(tensors, ts):
            full[i] = t
        return fop.op(*full)
    return call, [args[i] for i in tensors]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("name", _ops_with_cuda_kernels())
def test_each_fused_op_is_inlined_into_inductor(name, dtype):
    """Compiled, the op is the inlined kernel (no extern call left) and returns what the op's eager
    call on CUDA returns (the same printed kernel launched from Python; its accuracy against the
    reference is test_gpu_cuda.py's). Two samples per op and dtype: each is an Inductor compile."""
    from trex.codegen_triton.target import _writes_views
    from trex.compiler import registry
    fop = registry.fused_ops()[name]
    ran = 0
    for args in list(_samples(name, dtype))[:2]:
        call, tensor_args = _tensor_call(fop, args)
        torch._dynamo.reset()
        compiled = torch.compile(call, backend="trex", fullgraph=True)
        out, (code, *_) = run_and_get_code(compiled, *tensor_args)
        # a runner writing into views of one output stays an extern call (target._writes_views: why)
        extern = f"torch.ops.trex.{name}.default(" in code
        assert extern == _writes_views(registry.kernel_spec(name)), code[-3000:]
        want = fop.op(*args)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        wants = want if isinstance(want, (tuple, list)) else (want,)
        for o, w in zip(outs, wants):
            torch.testing.assert_close(o, w)
        ran += 1
    assert ran, f"no sample of {name} has a kernel"


@pytest.mark.parametrize("name", _ops_with_cuda_kernels())
def test_declared_kernel_writes_match_torchs_analysis(name, monkeypatch):
    """Every traced launch of trex's kernels answers torch's "which arguments does it write" from the
    launch site's declaration (codegen_triton/writes.py); with VERIFY, torch's TTIR analysis runs too and
    must agree, for every sample of every op with a kernel (both dtypes, printed and hand-written)."""
    import warnings

    from trex.codegen_triton import target, writes
    from trex.compiler import registry
    monkeypatch.setattr(writes, "VERIFY", True)
    # a graph another test compiled in this process would come from Inductor's caches, untraced (xdist)
    import torch._inductor.config as inductor_config
    monkeypatch.setattr(inductor_config, "fx_graph_cache", False)
    import torch._functorch.config as functorch_config
    monkeypatch.setattr(functorch_config, "enable_autograd_cache", False)
    fop = registry.fused_ops()[name]
    before = writes.counters["declared"]
    for dtype in (torch.bfloat16, torch.float32):
        for args in list(_samples(name, dtype))[:2]:
            call, tensor_args = _tensor_call(fop, args)
            torch._dynamo.reset()
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                torch.compile(call, backend="trex", fullgraph=True)(*tensor_args)
            assert not [w for w in caught if "declares writes" in str(w.message)], [str(w.message) for w in caught]
            assert not [k for k in target._NOT_INLINED if k[0] == name], target._NOT_INLINED
    if not target._writes_views(registry.kernel_spec(name)):   # a view-writing runner is never traced
        assert writes.counters["declared"] > before


def rms_block(x, w, up):
    xf = x.float()
    h = w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(x.dtype)
    return torch.nn.functional.silu(h @ up)


@pytest.mark.parametrize("mode", [None, "reduce-overhead"])
def test_chain_forward_backward_through_inductor(mode):
    """A model-style chain: the pattern matches, both fused kernels (fwd, bwd) are inlined, Inductor
    fuses the rest; gradients match eager; under CUDA graphs too (three steps: warm-up, record, replay)."""
    from trex.compiler import logs
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(512, 1024, device="cuda", generator=g).bfloat16()
    w = torch.randn(1024, device="cuda", generator=g).bfloat16()
    up = (torch.randn(1024, 256, device="cuda", generator=g) / 32).bfloat16()
    compiled = torch.compile(rms_block, backend="trex", mode=mode)
    with logs.capture() as reports:
        for step in range(3):
            args = [t.clone().requires_grad_() for t in (x, w, up)]
            if mode:
                torch.compiler.cudagraph_mark_step_begin()
            if step == 0:
                out, codes = run_and_get_code(lambda: compiled(*args).float().square().sum().backward())
            else:
                compiled(*args).float().square().sum().backward()
    assert reports[0].match_counts() == {"rms_norm": 1}
    code = "\n".join(codes)
    assert "torch.ops.trex." not in code, code[-3000:]
    ref = [t.clone().requires_grad_() for t in (x, w, up)]
    rms_block(*ref).float().square().sum().backward()
    for got, want in zip(args, ref):
        _close(got.grad, want.grad, torch.bfloat16)


def test_inlined_kernels_launch_through_inductors_static_launcher():
    """trex's inlined kernels are user-defined Triton kernels to Inductor, which launches those through
    Triton's Python launcher unless `static_launch_user_defined_triton_kernels` is set; the backend sets
    it (backend._static_user_kernel_launch). With Inductor's strict flag a kernel that bypasses the
    static launcher raises, so this passes only if every inlined kernel, forward and backward, is
    launched statically."""
    import torch._inductor.config as inductor_config
    if not hasattr(inductor_config, "strict_static_cuda_launcher") or \
            not getattr(inductor_config, "use_static_cuda_launcher", False):
        pytest.skip(f"torch {torch.__version__} has no static CUDA launcher to check")
    g = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(512, 1024, device="cuda", generator=g).bfloat16()
    w = torch.randn(1024, device="cuda", generator=g).bfloat16()
    up = (torch.randn(1024, 256, device="cuda", generator=g) / 32).bfloat16()
    compiled = torch.compile(rms_block, backend="trex",
                             options={"inductor": {"strict_static_cuda_launcher": True}})
    args = [t.clone().requires_grad_() for t in (x, w, up)]
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)     # no fallback to extern calls
        _, codes = run_and_get_code(lambda: compiled(*args).float().square().sum().backward())
    assert "torch.ops.trex." not in "\n".join(codes)
    ref = [t.clone().requires_grad_() for t in (x, w, up)]
    rms_block(*ref).float().square().sum().backward()
    for got, want in zip(args, ref):
        _close(got.grad, want.grad, torch.bfloat16)
