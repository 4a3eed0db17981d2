"""OR-CPT data pipeline: parameterized OR problem generators, a reference solver layer, natural-
language rendering, the formulation output contract, a sandbox for model-written solver code,
validation, dedup/decontamination and JSONL export (see docs/or_data.md).

Kept import-light on purpose: the sandbox child imports modules of this package.
"""
