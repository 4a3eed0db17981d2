"""`trex_inductor`: `backend="trex"` with `options={"rest": "inductor"}` on any device.

    torch.compile(model, backend="trex_inductor")          # after importing trex.codegen_triton.backend

Kept as a name for the training CLI (`--model.compile trex_inductor`). `backend="trex"` itself composes
with Inductor by default on CUDA (trex.compiler.backend: step 3, `rest`), with the fused ops' printed
Triton kernels inlined into Inductor's graph; this name forces the composition on the CPU as well.
"""
from __future__ import annotations

from typing import Any

import torch.fx as fx


def trex_inductor(gm: fx.GraphModule, example_inputs: list, options: dict | None = None,
                  mode: str | None = None) -> Any:
    from trex.compiler.backend import trex_backend

    return trex_backend(gm, example_inputs, {**(options or {}), "rest": "inductor"}, mode)


def _register() -> None:
    from torch._dynamo.backends import registry as dynamo_registry
    if "trex_inductor" not in getattr(dynamo_registry, "_COMPILER_FNS", {}):
        dynamo_registry.register_backend(trex_inductor, name="trex_inductor")


_register()
