"""Kernel search (issue 9, the AuraKernel loop): start from the cost model's tiling, expand a tree of
knob changes the printers expose, compile + verify (separate process, poisoned outputs, fp64
reference) + profile every candidate, commit strict improvements as checkpoints, roll back the rest,
and remember the best configuration and what helped ("skills") in a plain JSON store.

Modules: `space` (configurations, moves, regimes), `ascend` / `cuda` (compile + profile per target),
`verify` (the verifier process and its hypothesis input strategies), `store` (best configs + skills,
the backend lookup), `search` (the tree), `cli` (`trex tune`). See docs/tuning.md.
"""
