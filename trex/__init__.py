"""trex (SLAI T-Rex): one import root for the fusion backend and the stack on top of it.

Layers, lowest first (tests/test_import_graph.py enforces that no module imports a later layer):

* ``trex.compiler``         the backend (``torch.compile(model, backend="trex")``), fused-op registry,
                            Kernel IR, targets, logging/explain, CLI
* ``trex.passes``           one package per fused op: the eager chains it matches, the fused op, its
                            Kernel IR programs and its kernel spec
* ``trex.cost_models``      hardware descriptions and the sympy per-pipe model
* ``trex.codegen_ascendc``  AscendC back end (lowering, UB plan, printer, CANN project, emulator)
* ``trex.codegen_triton``   Triton printer and launcher of the same Kernel IR
* ``trex.tuning``           ``trex tune``: verify-profile search over kernel configurations
* ``trex.training``         the DeepSeek-V4 model, train loop, OR data and evaluation

Importing ``trex`` imports nothing else: ``backend="trex"`` is found through the
``torch_dynamo_backends`` entry point.
"""
