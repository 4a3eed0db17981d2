"""Regional compilation: a model's repeated block is compiled once, however many times it repeats.

    import trex.compiler.regional as regional
    model = regional.compile(model, backend="trex")        # any torch.compile keyword works

``torch.compile(model)`` traces the whole forward as one graph: every decoder layer is traced, fused,
differentiated and compiled again, so the first step grows with the layer count. ``compile`` applies
torch's regional-compilation recipe instead
(https://docs.pytorch.org/tutorials/recipes/regional_compilation.html), to the module tree:

* the **blocks**: the children of every ``nn.ModuleList`` whose children are all of one class
  (transformers' ``model.layers``; one layer too, so a 1-layer and an L-layer model compile the
  same graphs). Each block's ``forward`` is compiled in place. Dynamo
  keeps one cache per code object, and with ``torch._dynamo.config.inline_inbuilt_nn_modules`` (on
  by default since torch 2.5) a block's parameters are graph inputs, not constants: the second and
  later blocks of one class pass the first one's guards and run its compiled graph. A block that
  differs in a value the code reads (transformers' V4: the hash-routed first layer, the compressed-
  attention layers) gets its own graph, once per variant.
* the **rest**: every maximal submodule that holds no block (embedding, rotary tables, final norm,
  head), compiled the same way, so a fused chain outside the blocks (V4's final RMSNorms) is still
  fused. The glue code of the modules that hold the blocks (the loop over layers, mask creation,
  the loss of ``*ForCausalLM``) runs eagerly, as in torch's recipe.

The model is changed in place (parameter names and ``state_dict`` keys do not change: no
``_orig_mod.`` prefix) and returned. ``torch.compile(model, backend="trex")`` on the whole model
stays the way to get one graph (and Dynamo's whole-graph view, e.g. for CUDA graphs over the step).

Each ``forward`` is compiled on its own (``torch.compile(module.forward)``), not ``module.compile()``:
the latter compiles ``nn.Module._call_impl``, one code object shared by every module, so all the
regions would share one Dynamo cache and its recompile limit (8 entries), and Dynamo skips it for
torch's own modules (``nn.Sequential(...).compile(backend=f)`` never calls ``f`` on torch 2.13).
Limits: more layer variants than ``torch._dynamo.config.recompile_limit`` (8) make Dynamo run the
rest eagerly (with its warning); a module whose forward reads per-layer state (a KV cache slot per
``layer_idx``) is traced once per layer; ``torch.compile(model, backend="trex")`` itself stays
whole-model: Dynamo's own marker for repeated regions (``torch.compiler.nested_compile_region``)
yields ``invoke_subgraph`` calls that trex's pre-autograd re-trace cannot functionalise yet, so such
a graph runs unfused (one warning; measured in bench/NOTES_compile.md).
"""
from __future__ import annotations

import dataclasses
from typing import Any

import torch
import torch.nn as nn


@dataclasses.dataclass(frozen=True)
class Regions:
    """The modules ``compile`` compiles: repeated blocks (by ModuleList path) and the rest."""
    blocks: dict[str, list[nn.Module]]      # "model.layers" -> its children
    rest: list[tuple[str, nn.Module]]       # maximal submodules holding no block, by qualified name


def repeated_block_lists(model: nn.Module) -> dict[str, nn.ModuleList]:
    """Every non-empty ``nn.ModuleList`` of ``model`` (outermost first, none inside another) whose
    children are all of one class."""
    found: dict[str, nn.ModuleList] = {}
    for name, module in model.named_modules():
        if any(name.startswith(f"{outer}.") for outer in found):
            continue
        if isinstance(module, nn.ModuleList) and len({type(m) for m in module}) == 1:
            found[name] = module
    return found


def find_regions(model: nn.Module) -> Regions:
    lists = repeated_block_lists(model)
    holders = {""} | {prefix for name in lists for prefix in _prefixes(name)}   # modules above a block list
    rest = []

    def visit(prefix: str, module: nn.Module) -> None:
        for child_name, child in module.named_children():
            name = f"{prefix}.{child_name}" if prefix else child_name
            if name in lists:
                continue
            if name in holders:
                visit(name, child)
            elif _has_compute(child):
                rest.append((name, child))
    if lists:
        visit("", model)
    return Regions({name: list(blocks) for name, blocks in lists.items()}, rest)


def _prefixes(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _has_compute(module: nn.Module) -> bool:
    """A module worth a graph of its own: it holds parameters or buffers (an embedding, a norm, the
    rotary tables, the head); parameter-free leaves (dropout, activations) stay eager."""
    return next(module.parameters(), None) is not None or next(module.buffers(), None) is not None


def compile(model: nn.Module, **compile_kwargs: Any) -> nn.Module:   # noqa: A001 - mirrors torch.compile
    """Compile ``model``'s repeated blocks and the rest region by region (module docstring); returns
    ``model`` itself. A model without a block list has its forward compiled whole."""
    regions = find_regions(model)
    if not regions.blocks:
        _compile_forward(model, compile_kwargs)
        return model
    for blocks in regions.blocks.values():
        for block in blocks:
            _compile_forward(block, compile_kwargs)
    for _, module in regions.rest:
        _compile_forward(module, compile_kwargs)
    return model


def _compile_forward(module: nn.Module, compile_kwargs: dict) -> None:
    # the class's forward, bound to this module: one code object per class (module docstring)
    module.forward = torch.compile(type(module).forward.__get__(module), **compile_kwargs)
