"""End to end: a small bf16 block compiled with torch.compile(backend="trex", options={"target": "emulate"})
runs its fused ops (forward and backward) as generated AscendC in the emulator, and its outputs and
gradients match eager PyTorch by the DESIGN.md rule."""
import pytest
import torch
from torch import nn

from trex.codegen_ascendc import target as emulate
from trex.passes.rms_norm.pattern import rms_norm_weighted_chain
from trex.passes.rope.pattern import rope_real_chain
from trex.passes.swiglu_limited.pattern import swiglu_limited_chain
from trex.compiler import logs
from trex.compiler.testing import assert_close_to_reference, trex_op_counts


class Block(nn.Module):
    """norm -> limited SwiGLU MLP -> residual -> per-head projection with RoPE (model code as written)."""

    def __init__(self, dim=40, inter=24, heads=2, head_dim=8, limit=7.0):
        super().__init__()
        g = torch.Generator().manual_seed(0)
        self.norm_weight = nn.Parameter(torch.randn(dim, generator=g) * 0.1 + 1)
        self.w_gate = nn.Parameter(torch.randn(inter, dim, generator=g) * dim ** -0.5)
        self.w_up = nn.Parameter(torch.randn(inter, dim, generator=g) * dim ** -0.5)
        self.w_down = nn.Parameter(torch.randn(dim, inter, generator=g) * inter ** -0.5)
        self.w_q = nn.Parameter(torch.randn(heads * head_dim, dim, generator=g) * dim ** -0.5)
        self.heads, self.head_dim, self.limit = heads, head_dim, limit

    def forward(self, x, cos, sin):
        h = rms_norm_weighted_chain(x, self.norm_weight, eps=1e-6)
        y = swiglu_limited_chain(h @ self.w_gate.t(), h @ self.w_up.t(), limit=self.limit)
        out = x + y @ self.w_down.t()
        q = (out @ self.w_q.t()).unflatten(-1, (self.heads, self.head_dim))
        return out, rope_real_chain(q, cos, sin)


def _inputs(dtype):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 5, 40, generator=g).to(dtype)
    ang = torch.randn(5, 1, 4, generator=g, dtype=torch.float64)
    return x, ang.cos().float(), ang.sin().float()


def _run(model, x, cos, sin):
    x = x.detach().clone().requires_grad_()
    out, q = model(x, cos, sin)
    (out.float().pow(2).sum() + q.float().pow(2).sum()).backward()
    grads = {n.removeprefix("_orig_mod."): p.grad.detach().clone() for n, p in model.named_parameters()}
    model.zero_grad()
    return (out.detach(), q.detach()), x.grad.detach(), grads


def test_compiled_block_runs_fused_ops_in_the_emulator_and_matches_eager(emulator):
    dtype = torch.bfloat16
    model = Block().to(dtype)
    x, cos, sin = _inputs(dtype)
    before = emulate.launch_counts()
    compiled = torch.compile(model, backend="trex", options={"target": "emulate", "strict_target": True})
    with logs.capture() as reports, emulate.use_executor(emulator):   # the suite's compiled kernels
        fused_out, fused_dx, fused_grads = _run(compiled, x, cos, sin)
    ran = emulate.launch_counts() - before

    (report,) = reports
    fw, bw = report.compiled_graphs["forward"], report.compiled_graphs["backward"]
    assert trex_op_counts(fw) == {"rms_norm": 1, "swiglu_limited": 1, "rope": 1}, trex_op_counts(fw)
    assert trex_op_counts(bw) == {"rms_norm_bwd": 1, "swiglu_limited_bwd": 1, "rope": 1}, trex_op_counts(bw)
    # the spy: every fused call of both graphs launched a generated kernel in the emulator
    assert ran == {"rms_norm": 1, "swiglu_limited": 1, "rope": 2, "rms_norm_bwd": 1, "swiglu_limited_bwd": 1}, ran

    eager_out, eager_dx, eager_grads = _run(model, x, cos, sin)
    # fp64 reference: the same block in fp64 (its chains' .float() islands round to fp32, still far
    # more accurate than bf16)
    ref_model = Block().to(torch.float64)
    ref_model.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    ref_out, ref_dx, ref_grads = _run(ref_model, x.double(), cos.double(), sin.double())
    assert_close_to_reference(fused_out, eager_out, ref_out, name="outputs")
    assert_close_to_reference(fused_dx, eager_dx, ref_dx, name="dx")
    for name in fused_grads:
        assert_close_to_reference(fused_grads[name], eager_grads[name], ref_grads[name], name=f"d{name}")


def test_emulate_target_falls_back_to_the_reference_for_inputs_without_a_program(emulator):
    """fp64 has no generated kernel: the runner says NotImplemented and the reference runs (no launch)."""
    x = torch.randn(3, 16, dtype=torch.float64)
    assert emulate.unsupported_reason("rms_norm", (x, None, 1e-6, None)).startswith("fp64")
    before = emulate.launch_counts()
    from trex.compiler.targets import use_target
    with use_target("emulate"):
        y, _rstd = torch.ops.trex.rms_norm(x, None, 1e-6, None)
    assert emulate.launch_counts() == before
    torch.testing.assert_close(y, x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6))


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()
