"""trex.compiler: the ``torch.compile(backend="trex")`` backend and its pass-authoring API.

Modules (importing this package stays cheap; nothing here imports torch):

* ``backend``   the backend, its options, in-process registration of "trex"
* ``graph``     pre-autograd ATen tracing shared by models and pattern chains
* ``canonical`` spelling canonicalisation rules
* ``pattern``   ``Pattern``/``Chain``, the structural matcher, replacement splicing
* ``registry``  ``define_fused_op``, ``register_pattern``, ``register_kernel_spec``, ``fused_ops()``, ``patterns()``,
                ``kernel_spec(name)``, ``kernel_specs()`` (discovers the op packages of trex/passes/)
* ``kernels``   ``KernelSpec``: what one op needs for its kernels (guards, layouts, example sizes), ``Executor``
* ``targets``   target registry: which kernels run the fused ops (``register_target``, ``use_target``)
* ``checks``    input validation shared by fake and reference implementations
* ``logs``      ``TREX_LOGS``, per-graph reports, match counters, ``capture()``
* ``explain``   ``trex explain``
* ``testing``   ``assert_close_to_reference`` (DESIGN.md numerics rule) and graph-counting helpers
* ``examples``  DeepSeek-V4-style example blocks used by tests, bench and explain
* ``regional``  ``compile(model, **torch_compile_kwargs)``: regional compilation, a repeated block compiled once
* ``cache_key`` trex's fingerprint in Inductor's on-disk cache keys (warm first steps across processes)
"""
