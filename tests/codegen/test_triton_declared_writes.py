"""trex's Triton launches declare which parameters they write (trex/codegen_triton/writes.py), and torch's
mutation question is answered from that declaration for trex's kernels only: on the CPU with stand-in
kernels in torch's kernel side table (no Triton needed); the agreement with torch's own TTIR analysis on
real kernels is tests/gpu/test_inductor_cuda.py::test_declared_kernel_writes_match_torchs_analysis."""
from __future__ import annotations

import types

import pytest
import torch
from torch._higher_order_ops import triton_kernel_wrap as tkw

from trex.codegen_triton import writes
from trex.codegen_triton.launcher import _written_params


def kernel(name):
    def fn(*args):  # a stand-in for a @triton.jit function: only its identity matters here
        raise AssertionError("never launched")
    fn.__name__ = name
    return fn


@pytest.fixture
def analysis(monkeypatch):
    """torch's analysis replaced by a recorder (both entry points), then writes.install() over it."""
    calls = []

    def get_mutated_tensors(kernel_idx, constant_args_idx, kwargs, tma):
        calls.append(("get", tkw.kernel_side_table.get_kernel(kernel_idx).__name__))
        return [k for k, v in kwargs.items() if isinstance(v, torch.Tensor)]     # "everything is written"

    def identify_mutated_tensors(kernel, kwargs, tma):
        calls.append(("identify", kernel.__name__))
        return [k for k, v in kwargs.items() if isinstance(v, torch.Tensor)]

    monkeypatch.setattr(tkw, "get_mutated_tensors", get_mutated_tensors)
    monkeypatch.setattr(tkw, "identify_mutated_tensors", identify_mutated_tensors, raising=False)
    monkeypatch.setattr(writes, "_INSTALLED", False)
    monkeypatch.setattr(writes, "_WRITES", {})
    writes.install()
    return calls


def side_table(fn, constants=None):
    return tkw.kernel_side_table.add_kernel(fn), tkw.kernel_side_table.add_constant_args(constants or {})


def test_a_declared_kernel_is_answered_without_torchs_analysis(analysis):
    fn = kernel("printed")
    writes.declare(fn, ("out_ptr", "scratch_ptr"))
    x, out, scratch = torch.zeros(4), torch.zeros(4), torch.zeros(2)
    kwargs = {"x_ptr": x, "scratch_ptr": scratch, "out_ptr": out, "n": 4}
    before = writes.counters["declared"]
    assert tkw.get_mutated_tensors(*side_table(fn), kwargs, {}) == ["scratch_ptr", "out_ptr"]  # kwargs' order
    assert tkw.identify_mutated_tensors(fn, kwargs, {}) == ["scratch_ptr", "out_ptr"]
    assert analysis == [] and writes.counters["declared"] == before + 2


def test_inductors_lowering_is_answered_for_ir_buffers_too(analysis):
    """While Inductor lowers a user kernel the arguments are its IR buffers, not tensors: a declared
    output is still named (H200 session 20: filtering on torch.Tensor answered "nothing is written"
    there, and transformers' V4 trained to a wrong loss)."""
    class Buffer:  # stands in for an Inductor TensorBox
        pass
    fn = kernel("lowered")
    writes.declare(fn, ("out_ptr",))
    assert tkw.identify_mutated_tensors(fn, {"x_ptr": Buffer(), "out_ptr": Buffer(), "n": 7, "B": None}, {}) \
        == ["out_ptr"]


def test_an_undeclared_kernel_goes_to_torchs_analysis(analysis):
    fn = kernel("foreign")
    kwargs = {"x_ptr": torch.zeros(2), "y_ptr": torch.zeros(2)}
    assert tkw.get_mutated_tensors(*side_table(fn), kwargs, {}) == ["x_ptr", "y_ptr"]
    assert analysis == [("get", "foreign")]


def test_writes_that_depend_on_a_constexpr_see_the_launch_constants(analysis):
    fn = kernel("proj")
    writes.declare(fn, lambda kw: ("hp_ptr", "dpp_ptr") if kw.get("WITH_DLI") else ("hp_ptr",))
    kwargs = {"hp_ptr": torch.zeros(2), "dpp_ptr": torch.zeros(2)}
    assert tkw.get_mutated_tensors(*side_table(fn, {"WITH_DLI": True}), kwargs, {}) == ["hp_ptr", "dpp_ptr"]
    assert tkw.get_mutated_tensors(*side_table(fn, {"WITH_DLI": False}), kwargs, {}) == ["hp_ptr"]


def test_verify_runs_torchs_analysis_and_refuses_a_wrong_declaration(analysis, monkeypatch):
    monkeypatch.setattr(writes, "VERIFY", True)
    fn = kernel("liar")
    writes.declare(fn, ("out_ptr",))
    agree = {"out_ptr": torch.zeros(2), "n": 3}
    assert tkw.get_mutated_tensors(*side_table(fn), agree, {}) == ["out_ptr"]
    with pytest.raises(writes.DeclaredWritesMismatch, match="liar declares writes \\['out_ptr'\\].*'x_ptr'"):
        tkw.identify_mutated_tensors(fn, {"x_ptr": torch.zeros(2), "out_ptr": torch.zeros(2)}, {})
    # the analysis VERIFY runs is torch's own, not the declaration answering itself
    assert analysis == [("get", "liar"), ("identify", "liar")]


def test_a_printed_kernel_writes_its_outputs_and_scratch_never_its_inputs():
    fn = types.SimpleNamespace(arg_names=["x_ptr", "x_stride", "y_ptr", "y_stride", "ws_ptr", "rows", "BLOCK"])
    lp = types.SimpleNamespace(kernel=types.SimpleNamespace(fn=fn), arg_spec=(
        ("ptr", "x", False), ("row_stride", "x", False), ("ptr", "y", False), ("row_stride", "y", False),
        ("scratch", "ws", False), ("rows", "rows", False)))
    assert _written_params(lp, {"x": torch.zeros(1)}) == ("y_ptr", "ws_ptr")
