"""RMSNorm end to end: fused forward and backward graphs, numerics vs eager, static and dynamic."""
import pytest
import torch
import torch.nn as nn

from trex.passes.rms_norm.op import rms_norm_reference
from trex.compiler import logs
from trex.compiler.testing import aten_op_counts, assert_close_to_reference, make_input, to_fp64, trex_op_counts


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(dim) * 0.1 + 1)
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_rms_norm_fused_forward_and_backward(dtype, dynamic):
    model = RMSNorm(130).to(dtype)
    compiled = torch.compile(model, backend="trex", dynamic=dynamic)
    x = make_input((3, 5, 130), dtype, requires_grad=True)
    with logs.capture() as reports:
        out = compiled(x)
        out.float().pow(2).sum().backward()
    (report,) = reports
    assert [m.pattern for m in report.matches] == ["rms_norm"]
    fw, bw = report.compiled_graphs["forward"], report.compiled_graphs["backward"]
    assert trex_op_counts(fw) == {"rms_norm": 1}
    assert trex_op_counts(bw) == {"rms_norm_bwd": 1}
    for residue in ("rsqrt", "mean", "pow"):
        assert not any(residue in k for k in aten_op_counts(fw)), aten_op_counts(fw)
        assert not any(residue in k for k in aten_op_counts(bw)), aten_op_counts(bw)

    fused_dw = model.weight.grad.clone()
    x_e = x.detach().clone().requires_grad_()
    model.zero_grad()
    eager_out = model(x_e)
    eager_out.float().pow(2).sum().backward()
    # fp64 reference through the op's reference (the module's .float() would round to fp32)
    x_r, w_r = to_fp64(x_e), model.weight.detach().double().requires_grad_()
    ref_out = rms_norm_reference(x_r, w_r, model.eps, None)[0]
    ref_out.pow(2).sum().backward()
    assert_close_to_reference(out, eager_out, ref_out, name="y")
    assert_close_to_reference(x.grad, x_e.grad, x_r.grad, name="dx")
    assert_close_to_reference(fused_dw, model.weight.grad, w_r.grad, name="dw")
