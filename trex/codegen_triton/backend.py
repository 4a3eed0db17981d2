"""`trex_inductor`: trex's pattern fusions, then Inductor for the rest of the graph.

    torch.compile(model, backend=trex.codegen_triton.backend.trex_inductor)
    torch.compile(model, backend="trex_inductor")          # after importing trex.codegen_triton.backend

The graph Dynamo captures goes through trex's fusion steps (trace to ATen, canonicalise, replace the
registered chains with torch.ops.trex.* fused ops: `trex.compiler.backend.fuse_graph`), and the fused
graph is handed to Inductor's `compile_fx`. Inductor differentiates the fused ops through their autograd
formulas (so the backward holds the *_bwd fused ops), generates its own Triton for everything else, and
calls the fused ops as extern kernels; on CUDA those run the kernels printed from the Kernel IR (the
"cuda" target registered by `trex.codegen_triton.register_cuda_target`). Options are trex's (`patterns`,
`disable_patterns`, `dump_dir`); `target` is ignored here: CUDA tensors take the Triton kernels.
"""
from __future__ import annotations

import itertools
from typing import Any

import torch.fx as fx

_ids = itertools.count()


def trex_inductor(gm: fx.GraphModule, example_inputs: list, options: dict | None = None) -> Any:
    from torch._inductor.compile_fx import compile_fx

    from trex.compiler import logs
    from trex.compiler.backend import TrexOptions, fuse_graph

    from . import register_cuda_target

    register_cuda_target()
    opts = TrexOptions.from_dict({k: v for k, v in (options or {}).items() if k != "target"})
    report = logs.GraphReport(f"inductor_graph_{next(_ids)}")
    prepared = fuse_graph(gm, example_inputs, opts, report)
    logs.publish(report)
    return compile_fx(prepared, example_inputs)


def _register() -> None:
    from torch._dynamo.backends import registry as dynamo_registry
    if "trex_inductor" not in getattr(dynamo_registry, "_COMPILER_FNS", {}):
        dynamo_registry.register_backend(trex_inductor, name="trex_inductor")


_register()
