"""The fused ops, one package each (rms_norm, swiglu_limited, rope, mhc_pre, add_rms_norm): op.py, pattern.py,
ir.py, kernel.py (docs/authoring-a-pattern.md). trex.compiler.registry imports every package here by name;
code generators, tuning and the benchmarks reach them only through it (tests/packaging/test_import_graph.py)."""
