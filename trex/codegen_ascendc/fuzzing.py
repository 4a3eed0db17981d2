"""Hypothesis strategy of tiling choosers for the emulator (the "emulate" target, target.py).

    from hypothesis import given
    from trex.codegen_ascendc.fuzzing import tiling_choosers

    @given(args=fuzz_arguments("rms_norm"), choose=tiling_choosers())
    def test(args, choose):
        runner = functools.partial(emulate.run_op, executor=executor, choose_tiling=choose)

A chooser is the target's ``choose_tiling(model, sizes)`` hook, so this test support lives with the
target, not with the hardware descriptions and the cost model in trex.cost_models: the feasible set
it samples is the cost model's (`AscendCostModel.random_feasible_tiling`: UB capacity, DataCopyPad
limits, row groups), reached through the model the target hands it. Not beside the argument
strategies in trex.compiler.strategies either: the core layer imports no later one (DESIGN.md).
"""
from __future__ import annotations

import random


def tiling_choosers():
    """Hypothesis strategy of tiling choosers for the emulator (``trex.codegen_ascendc.target``'s
    ``choose_tiling(model, sizes)``): None (the solver's choice) or a chooser that draws another
    feasible tiling with ``model.random_feasible_tiling``, seeded by the example; the chooser's
    ``seed`` attribute names it in a falsifying example."""
    from hypothesis import strategies as st   # hypothesis is a test dependency: imported on use

    def chooser(seed: int):
        def choose(model, sizes):
            return model.random_feasible_tiling(sizes, random.Random(seed))
        choose.seed = seed
        return choose

    return st.one_of(st.none(), st.integers(0, 2 ** 31 - 1).map(chooser))
