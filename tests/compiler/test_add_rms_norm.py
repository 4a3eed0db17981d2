"""The guide's example pattern (docs/authoring-a-pattern.md): residual add + RMSNorm, end to end."""
import pytest
import torch

from trex.compiler import logs, registry
from trex.compiler.testing import assert_close_to_reference, make_input, trex_op_counts


class Block(torch.nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(dim) * 0.1 + 1)
        self.proj = torch.nn.Linear(dim, dim)

    def forward(self, x, residual):
        h = x + residual
        hf = h.float()
        normed = (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-6)).to(h.dtype) * self.weight
        return self.proj(normed) + h          # h is the new residual stream


def test_registered_but_opt_in():
    assert "add_rms_norm" in registry.patterns() and "add_rms_norm" in registry.fused_ops()
    assert not registry.patterns()["add_rms_norm"].enabled_by_default


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_add_rms_norm_fused_forward_backward(dtype):
    model = Block(48).to(dtype)
    x = make_input((3, 5, 48), dtype, seed=1, requires_grad=True)
    res = make_input((3, 5, 48), dtype, seed=2, requires_grad=True)
    compiled = torch.compile(model, backend="trex", options={"patterns": ["add_rms_norm", "rms_norm"]})
    with logs.capture() as reports:
        out = compiled(x, res)
        out.float().pow(2).sum().backward()
    (report,) = reports
    assert report.match_counts() == {"add_rms_norm": 1}
    assert trex_op_counts(report.compiled_graphs["forward"]) == {"add_rms_norm": 1}
    assert trex_op_counts(report.compiled_graphs["backward"]) == {"rms_norm_bwd": 1}

    x_e, r_e = x.detach().clone().requires_grad_(), res.detach().clone().requires_grad_()
    eager = model(x_e, r_e)
    eager.float().pow(2).sum().backward()
    ref_model = Block(48).double()
    ref_model.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    x_r, r_r = x.detach().double().requires_grad_(), res.detach().double().requires_grad_()
    # fp64 reference: the model's own forward would round to fp32 at .float(), so the norm part uses the
    # op's reference, which computes in fp64 for fp64 inputs
    ref = registry.fused_ops()["add_rms_norm"].reference(x_r, r_r, ref_model.weight, 1e-6, None)
    ref_out = ref_model.proj(ref[0]) + ref[1]
    ref_out.pow(2).sum().backward()
    assert_close_to_reference(out, eager, ref_out, compute_dtype=dtype)
    assert_close_to_reference(x.grad, x_e.grad, x_r.grad, compute_dtype=dtype, name="dx")
    assert_close_to_reference(res.grad, r_e.grad, r_r.grad, compute_dtype=dtype, name="dresidual")


def test_default_options_use_plain_rms_norm():
    model = Block(16)
    with logs.capture() as reports:
        torch.compile(model, backend="trex")(torch.randn(2, 16), torch.randn(2, 16))
    assert reports[0].match_counts() == {"rms_norm": 1}


def test_add_rms_norm_runs_as_its_generated_kernel_on_the_emulator():
    """Its kernel spec (trex/passes/add_rms_norm/kernel.py) makes the emulate target launch the
    generated AscendC, not the reference."""
    from trex.codegen_ascendc.emulator.runner import compiler_available
    from trex.codegen_ascendc.target import launch_counts
    from trex.compiler.targets import use_target
    if not compiler_available():
        pytest.skip("no C++ compiler (g++/$CXX) for the emulator")
    x, res = make_input((3, 5, 48), torch.bfloat16, seed=3), make_input((3, 5, 48), torch.bfloat16, seed=4)
    w = make_input((48,), torch.float32, seed=5)
    before = launch_counts()["add_rms_norm"]
    with use_target("emulate"):
        got = torch.ops.trex.add_rms_norm(x, res, w, 1e-6, None)
    assert launch_counts()["add_rms_norm"] == before + 1
    for g, r in zip(got, registry.fused_ops()["add_rms_norm"].reference(x, res, w, 1e-6, None)):
        assert g.dtype == r.dtype and g.shape == r.shape
        torch.testing.assert_close(g.float(), r.float(), atol=2e-2, rtol=2e-2)
