"""Every registered fused op (discovered, no hand-kept list): opcheck, fp64 gradcheck, analytic backward vs
autograd of the reference, numerics at odd sizes vs the eager chain, and input validation."""
from __future__ import annotations

import pytest
import torch

import trex.passes.mhc_pre as mhc
import trex.passes.rms_norm as rms
import trex.passes.rope as rope
import trex.passes.swiglu_limited as swiglu
from trex.compiler import registry
from trex.compiler.testing import assert_close_to_reference, make_input

OPS = registry.fused_ops()
FORWARD_OPS = sorted(n for n, o in OPS.items() if o.backward_of is None)
BACKWARD_OPS = sorted(n for n, o in OPS.items() if o.backward_of is not None)


def test_registry_lists_the_contract_ops():
    assert {"rms_norm", "rms_norm_bwd", "swiglu_limited", "swiglu_limited_bwd", "rope", "mhc_pre",
            "mhc_pre_bwd"} <= set(OPS)
    for name, op in OPS.items():
        assert str(op.op).startswith(f"trex.{name}"), op.op
        if op.backward_of is not None:
            assert op.backward_of in OPS


@pytest.mark.parametrize("name", sorted(OPS))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_opcheck(name, dtype):
    op = OPS[name]
    samples = op.sample_inputs(dtype)
    for args in samples if dtype == torch.float32 else samples[:1]:
        torch.library.opcheck(op.op, args)


def _smallest(samples):
    return min(samples, key=lambda args: sum(a.numel() for a in args if isinstance(a, torch.Tensor)))


def _requires_grad(args, positions):
    out = list(args)
    for i in positions:
        if isinstance(out[i], torch.Tensor):
            out[i] = out[i].detach().clone().requires_grad_()
    return out


@pytest.mark.parametrize("name", FORWARD_OPS)
def test_fp64_gradcheck_through_fused_backward(name):
    """gradcheck of the op itself: its autograd formula calls the fused backward op."""
    op = OPS[name]
    for args in [_smallest(op.sample_inputs(torch.float64))]:
        args = _requires_grad(args, op.differentiable_args)
        diff = [a for i, a in enumerate(args) if i in op.differentiable_args and isinstance(a, torch.Tensor)]

        def fn(*tensors, _args=args):
            full = list(_args)
            it = iter(tensors)
            for i in op.differentiable_args:
                if isinstance(full[i], torch.Tensor):
                    full[i] = next(it)
            return op.op(*full)

        assert torch.autograd.gradcheck(fn, diff, eps=1e-6, atol=1e-5)


@pytest.mark.parametrize("name", sorted(OPS))
def test_fp64_gradcheck_of_reference(name):
    op = OPS[name]
    args = _requires_grad(_smallest(op.sample_inputs(torch.float64)), op.differentiable_args)
    diff = [a for i, a in enumerate(args) if i in op.differentiable_args and isinstance(a, torch.Tensor)]

    def fn(*tensors):
        full = list(args)
        it = iter(tensors)
        for i in op.differentiable_args:
            if isinstance(full[i], torch.Tensor):
                full[i] = next(it)
        out = op.reference(*full)
        return tuple(o for o in (out if isinstance(out, tuple) else (out,)) if o.numel() and o.is_floating_point())

    assert torch.autograd.gradcheck(fn, diff, eps=1e-6, atol=1e-5)


@pytest.mark.parametrize("name", BACKWARD_OPS)
def test_backward_op_matches_autograd_of_reference(name):
    op, fwd = OPS[name], OPS[OPS[name].backward_of]
    for fwd_args in fwd.sample_inputs(torch.float64):
        fwd_args = _requires_grad(fwd_args, fwd.differentiable_args)
        outs = fwd.reference(*fwd_args)
        outs = outs if isinstance(outs, tuple) else (outs,)
        n_grad = {"rms_norm": 1}.get(fwd.name, len(outs))
        grads = [torch.randn_like(o) for o in outs[:n_grad]]
        inputs = [fwd_args[i] for i in fwd.differentiable_args if isinstance(fwd_args[i], torch.Tensor)]
        expected = torch.autograd.grad(outs[:n_grad], inputs, grads, allow_unused=True)
        detached = [a.detach() if isinstance(a, torch.Tensor) else a for a in fwd_args]
        if name == "rms_norm_bwd":
            bwd_args = (grads[0], detached[0], detached[1], outs[1].detach())
        elif name == "swiglu_limited_bwd":
            bwd_args = (grads[0], *detached[:4])
        else:
            bwd_args = (*grads, *detached)
        got = op.reference(*bwd_args)
        got = [g for g in (got if isinstance(got, tuple) else (got,)) if g.numel()]   # one Tensor or a tuple
        expected = [e for e in expected if e is not None]
        assert len(got) == len(expected)
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e, rtol=1e-9, atol=1e-10)


# ---------------------------------------------------------------------------------------- odd sizes
# The fused op (low-precision inputs, fp32 compute) and the eager chain in the same dtypes are both
# compared with the op's reference run in fp64 (the references compute in promote(dtype, fp32)).
ROWS = [1, 3, 127, 129]
HIDDEN = [7, 130, 7168]


def _fp64(t):
    return t.detach().to(torch.float64) if isinstance(t, torch.Tensor) else t


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("hidden", HIDDEN)
def test_rms_norm_odd_sizes(hidden, dtype):
    for rows in ROWS:
        x = make_input((rows, hidden), dtype, noncontiguous=rows == 3, seed=rows)
        w = make_input((hidden,), dtype, seed=1)
        fused = torch.ops.trex.rms_norm(x, w, 1e-6, None)[0]
        eager = rms.pattern.rms_norm_weighted_chain(x, w, eps=1e-6)
        reference = rms.op.rms_norm_reference(_fp64(x), _fp64(w), 1e-6, None)[0]
        assert_close_to_reference(fused, eager, reference, name=f"rms_norm rows={rows} hidden={hidden}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("hidden", HIDDEN)
def test_swiglu_limited_odd_sizes(hidden, dtype):
    for rows in ROWS:
        g = make_input((rows, hidden), dtype, scale=5.0, seed=rows, noncontiguous=rows == 127)
        u = make_input((rows, hidden), dtype, scale=5.0, seed=rows + 1)
        r = torch.rand(rows, 1)
        fused = torch.ops.trex.swiglu_limited(g, u, 7.0, r, None)
        eager = swiglu.pattern.swiglu_limited_routed_chain(g, u, r, limit=7.0)
        reference = swiglu.op.swiglu_limited_reference(_fp64(g), _fp64(u), 7.0, _fp64(r), None)
        assert_close_to_reference(fused, eager, reference, name=f"swiglu rows={rows} hidden={hidden}")


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("head_dim,rope_dim", [(7, 6), (130, 64), (7168, 64)])
def test_rope_odd_sizes(head_dim, rope_dim, dtype):
    for rows in ROWS:
        x = make_input((rows, head_dim), dtype, seed=rows, noncontiguous=rows == 129)
        ang = torch.randn(rows, rope_dim // 2, dtype=torch.float64) * 3
        cos, sin = ang.cos().float(), ang.sin().float()
        for inverse in (False, True):
            fused = torch.ops.trex.rope(x, cos, sin, rope_dim, inverse)
            nope = head_dim - rope_dim
            chain = rope.pattern.rope_real_inverse_chain if inverse else rope.pattern.rope_real_chain
            eager = torch.cat([x[..., :nope], chain(x[..., nope:], cos, sin)], -1)
            reference = rope.op.rope_reference(_fp64(x), _fp64(cos), _fp64(sin), rope_dim, inverse)
            assert_close_to_reference(fused, eager, reference, name=f"rope rows={rows} head={head_dim}")


def _mhc_chain(x, fn, scale, base, iters, eps):
    li, post, comb = mhc.pattern.mhc_pre_chain(x, fn, scale, base, hc_eps=eps, rms_eps=eps)
    for _ in range(iters - 1):
        comb = comb / (comb.sum(-1, keepdim=True) + eps)
        comb = comb / (comb.sum(-2, keepdim=True) + eps)
    return li, post, comb


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("hidden", [7, 130, 1792])   # n*d = 28, 520, 7168
def test_mhc_pre_odd_sizes(hidden, dtype):
    n = mhc.op.N_STREAMS
    m = (2 + n) * n
    fn = torch.randn(m, n * hidden) * (n * hidden) ** -0.5
    scale, base = torch.rand(3) + 0.5, torch.randn(m) * 0.1
    for rows in ROWS:
        x = make_input((rows, n, hidden), dtype, seed=rows, noncontiguous=rows == 3)
        fused = torch.ops.trex.mhc_pre(x, fn, scale, base, 5, 1e-6, 1e-6)
        eager = _mhc_chain(x, fn, scale, base, 5, 1e-6)
        reference = mhc.op.mhc_pre_reference(_fp64(x), _fp64(fn), _fp64(scale), _fp64(base), 5, 1e-6, 1e-6)
        assert_close_to_reference(fused, eager, reference, name=f"mhc_pre rows={rows} d={hidden}")


# ---------------------------------------------------------------------------------------- bad input
BAD_INPUTS = [
    ("rms_norm weight shape", lambda: torch.ops.trex.rms_norm(torch.randn(2, 8), torch.randn(7), 1e-6, None),
     ValueError, "'weight'"),
    ("rms_norm integer x", lambda: torch.ops.trex.rms_norm(torch.ones(2, 8, dtype=torch.int32), None, 1e-6, None),
     TypeError, "'x'"),
    ("swiglu dtype mix", lambda: torch.ops.trex.swiglu_limited(torch.randn(2, 8).bfloat16(), torch.randn(2, 8),
                                                               7.0, None, None), TypeError, "gate=torch.bfloat16"),
    ("swiglu shape mismatch", lambda: torch.ops.trex.swiglu_limited(torch.randn(2, 8), torch.randn(2, 9), 7.0,
                                                                    None, None), ValueError, "gate=(2, 8)"),
    ("swiglu route weight", lambda: torch.ops.trex.swiglu_limited(torch.randn(2, 8), torch.randn(2, 8), 7.0,
                                                                  torch.randn(2, 8), None), ValueError,
     "'route_weight'"),
    ("rope table", lambda: torch.ops.trex.rope(torch.randn(2, 3, 8), torch.randn(3, 3), torch.randn(3, 3), 8, False),
     ValueError, "'cos'"),
    ("rope odd rope_dim", lambda: torch.ops.trex.rope(torch.randn(2, 8), torch.randn(2, 3), torch.randn(2, 3), 7,
                                                      False), ValueError, "'rope_dim'"),
    ("mhc fn shape", lambda: torch.ops.trex.mhc_pre(torch.randn(2, 4, 8), torch.randn(24, 31), torch.ones(3),
                                                    torch.zeros(24), 2, 1e-6, 1e-6), ValueError, "'fn'"),
    ("mhc iters", lambda: torch.ops.trex.mhc_pre(torch.randn(2, 4, 8), torch.randn(24, 32), torch.ones(3),
                                                 torch.zeros(24), 0, 1e-6, 1e-6), ValueError, "'iters'"),
]


@pytest.mark.parametrize("case", BAD_INPUTS, ids=[c[0] for c in BAD_INPUTS])
def test_bad_input_names_the_argument(case):
    _, call, exc, needle = case
    with pytest.raises(exc) as info:
        call()
    assert needle in str(info.value)
    assert "trex." in str(info.value)


def test_bad_input_is_caught_at_trace_time():
    """The fake implementation runs the same checks, so a compiled call fails before any kernel runs."""
    def f(x, w):
        return torch.ops.trex.rms_norm(x, w, 1e-6, None)[0]

    with pytest.raises(Exception) as info:
        torch.compile(f, backend="trex", fullgraph=True)(torch.randn(2, 8), torch.randn(5))
    assert "'weight'" in str(info.value)


@pytest.mark.parametrize("shape", [(3, 0), (0, 5), (5,)])
def test_rms_norm_backward_reference_on_empty_and_one_dim_inputs(shape):
    # dw's row sum used reshape(-1, d): a hidden size of 0 raised ("-1 is ambiguous") in the backward
    # of a compiled model whose eager backward returns empty gradients.
    ops = registry.fused_ops()
    x = torch.randn(shape, requires_grad=True)
    w = torch.randn(shape[-1], requires_grad=True)
    y, rstd = ops["rms_norm"].reference(x.detach(), w.detach(), 1e-6, None)
    dy = torch.randn(y.shape)
    dx, dw = ops["rms_norm_bwd"].reference(dy, x.detach(), w.detach(), rstd)
    xf = x.float()
    (w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6))).backward(dy)
    torch.testing.assert_close(dx, x.grad)
    torch.testing.assert_close(dw, w.grad)
