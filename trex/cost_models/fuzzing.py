"""Hypothesis strategy of emulator tiling choosers over the Ascend cost model's feasible set.

    from hypothesis import given
    from trex.cost_models.fuzzing import tiling_choosers

    @given(args=fuzz_arguments("rms_norm"), choose=tiling_choosers())
    def test(args, choose):
        runner = functools.partial(emulate.run_op, executor=executor, choose_tiling=choose)

It lives here, not beside the argument strategies in trex.compiler.strategies, because a chooser
samples `AscendCostModel.random_feasible_tiling` (UB capacity, DataCopyPad limits, row groups): the
feasible set is this layer's knowledge, and the core layer imports no later one (DESIGN.md).
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
