"""Regional compilation (trex.compiler.regional): a repeated block is compiled once, a 1-layer and a
4-layer model compile the same graphs, every block site is still fused, and the result equals the
whole-graph compile bit for bit, forward and backward (transformers' tiny V4 on the CPU)."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn

from trex.compiler import logs, regional
from trex.compiler.testing import trex_op_counts

transformers = pytest.importorskip("transformers")
pytest.importorskip("transformers.models.deepseek_v4.modeling_deepseek_v4")

from test_hf_deepseek_v4 import BACKWARD, expected_sites, tiny_config  # noqa: E402


def _v4(layers: int):
    torch.manual_seed(0)
    config = tiny_config(layers)
    config.use_cache = False          # a training step; a KV cache slot per layer would be a guard per layer
    return transformers.DeepseekV4ForCausalLM(config), torch.randint(0, config.vocab_size, (2, 8))


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.proj(x))


class _Toy(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Linear(4, 4)
        self.body = nn.ModuleDict({"layers": nn.ModuleList([_Block(), _Block()]),
                                   "mixed": nn.ModuleList([_Block(), nn.ReLU()])})
        self.act = nn.ReLU()
        self.head = nn.Linear(4, 2)


def test_regions_are_the_block_lists_and_the_modules_beside_them():
    regions = regional.find_regions(_Toy())
    assert list(regions.blocks) == ["body.layers"]
    # a list of two classes is not a block list; parameter-free leaves stay eager
    assert [name for name, _ in regions.rest] == ["embed", "body.mixed", "head"]


def test_a_model_without_a_block_list_is_compiled_whole():
    model, calls = nn.Sequential(nn.Linear(4, 4), nn.ReLU()), []

    def counting(gm, example_inputs):
        calls.append(gm)
        return gm.forward

    x = torch.randn(2, 4)
    assert regional.find_regions(model).blocks == {}
    assert regional.compile(model, backend=counting) is model
    torch.testing.assert_close(model(x), torch.relu(model[0](x)), rtol=0, atol=0)
    assert len(calls) == 1


def _count_graphs(graphs: dict):
    """A backend that counts the graphs Dynamo hands it: how many hold a decoder layer (its mHC
    parameters are graph inputs), how many do not; runs them as they are."""
    def counting(gm, example_inputs):
        kind = "block" if any("attn_hc" in n.name for n in gm.graph.find_nodes(op="placeholder")) else "other"
        graphs[kind] = graphs.get(kind, 0) + 1
        return gm.forward
    return counting


def _compiled_graphs(layers: int, check_in_place: bool = False) -> dict[str, int]:
    model, ids = _v4(layers)
    names, graphs = list(model.state_dict()), {}
    with torch.no_grad():
        expected = model(ids).logits if check_in_place else None
        assert regional.compile(model, backend=_count_graphs(graphs)) is model
        logits = model(ids).logits
    if check_in_place:
        torch.testing.assert_close(logits, expected, rtol=0, atol=0)
        assert list(model.state_dict()) == names          # compiled in place: no _orig_mod. prefix
    return graphs


def test_four_layers_trace_the_decoder_layer_once_in_place():
    graphs = _compiled_graphs(4, check_in_place=True)
    # the layer once; embedding, rotary tables (two layer types), hc_head, final norm, lm_head
    assert graphs == {"block": 1, "other": 6}, graphs


@pytest.mark.slow
def test_one_layer_and_four_layers_compile_the_same_graphs():
    one = _compiled_graphs(1)
    torch._dynamo.reset()
    assert _compiled_graphs(4) == one, one


@pytest.mark.slow
def test_regional_trex_fuses_every_block_site_and_equals_the_whole_graph_compile():
    model, ids = _v4(2)
    whole = copy.deepcopy(model)

    def loss_and_grads(m):
        m.zero_grad(set_to_none=True)
        loss = m(ids, labels=ids).loss
        loss.backward()
        return loss.detach(), {n.removeprefix("_orig_mod."): p.grad.clone() for n, p in m.named_parameters()}

    with logs.capture() as reports:
        loss, grads = loss_and_grads(regional.compile(model, backend="trex"))
    torch._dynamo.reset()
    with logs.capture() as whole_reports:
        whole_loss, whole_grads = loss_and_grads(torch.compile(whole, backend="trex"))
    assert all(r.fallbacks == [] for r in reports + whole_reports)
    per_layer = {k: v // 2 for k, v in expected_sites(model.config).items()}
    per_layer["rms_norm"] = 5                          # the model's final norm and hc_head's run outside the blocks
    block_reports = [r for r in reports if r.match_counts()["mhc_pre"]]
    assert len(block_reports) == 1                     # the block compiled once for both layers
    (block,) = block_reports
    assert block.match_counts() == per_layer, block.format()
    backward = trex_op_counts(block.compiled_graphs["backward"])
    assert {family: backward[op] for family, op in BACKWARD.items()} == per_layer
    total = sum((r.match_counts() for r in reports), start=__import__("collections").Counter())
    assert total + block.match_counts() == whole_reports[0].match_counts()   # 2 layers: the block runs twice
    assert torch.equal(loss, whole_loss)
    assert grads.keys() == whole_grads.keys()
    for name, grad in grads.items():
        assert torch.equal(grad, whole_grads[name]), name
