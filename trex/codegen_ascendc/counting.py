"""The lowered kernel's counts for the cost model, and the cost model of a program built on them.

`count(plan)` reduces a `KernelPlan` (isa.py) to the `KernelCounts` that
trex.cost_models.ascend_model prices (trex.cost_models.kernel_counts says why that one dataclass is
the whole interface): every vector instruction with its multiplicity, every transfer, the
scalar-unit operations and the UB buffers, per section. `ascend_cost_model(program, hw)` is the
entry point for callers that have a program and a target: an `AscendCostModel` that counts the
cached plan of each buffer depth it evaluates (lowering.plan_kernel), so the cost model, the printer
and the emulator share one plan per (program, buffer depth).
"""
from __future__ import annotations

import functools

import sympy

from trex.codegen_ascendc.isa import GetV, KernelPlan, SetV, Transfer, Vec, iter_nodes
from trex.codegen_ascendc.lowering import plan_kernel
from trex.compiler.kernel_ir import Program
from trex.cost_models.ascend_model import AscendCostModel
from trex.cost_models.hardware import AscendHW
from trex.cost_models.kernel_counts import KernelCounts, SectionCounts, TransferCount, VectorCount


def _section(nodes) -> SectionCounts:
    vector, transfers = [], []
    scalar = {False: sympy.Integer(0), True: sympy.Integer(0)}
    for node, mult, in_chunk in iter_nodes(nodes):
        if isinstance(node, Vec):
            vector.append(VectorCount(node.api, node.count, node.width, mult, in_chunk))
        elif isinstance(node, (GetV, SetV)):
            scalar[in_chunk] += mult
        elif isinstance(node, Transfer):
            transfers.append(TransferCount(node.direction, node.gm, node.block_count, node.block_len,
                                           node.dtype.nbytes, mult, in_chunk))
    return SectionCounts(tuple(vector), scalar[False], scalar[True], tuple(transfers))


def switch_values(plan: KernelPlan) -> dict:
    """Each switch of the plan as the cost model's expression of the tiling symbols and sizes: 1 where its
    UB bytes fit the capacity, else 0 (the predicate the printed kernel evaluates at Init)."""
    return {sym: sympy.Piecewise((sympy.Integer(1), sympy.Le(ub, cap)), (sympy.Integer(0), True))
            for sym, ub, cap in plan.switches}


def count(plan: KernelPlan) -> KernelCounts:
    """What the planned kernel issues, per section, and its UB buffers (copies x bytes per copy), with the
    plan's switches (RESIDENT) and their predicates, so each tiling is counted with the branch it runs."""
    return KernelCounts(_section(plan.prologue), _section(plan.body), _section(plan.epilogue),
                        tuple((b.name, b.depth, b.nbytes) for b in plan.buffers), tuple(switch_values(plan).items()))


@functools.lru_cache(maxsize=256)
def kernel_counts(program: Program, buffer_depth: int) -> KernelCounts:
    """The counts of `program` lowered at `buffer_depth` (from the cached plan)."""
    return count(plan_kernel(program, buffer_depth))


def ascend_cost_model(program: Program, hw: AscendHW) -> AscendCostModel:
    """The cost model of `program` on `hw`, counting the generated kernel at each buffer depth."""
    return AscendCostModel(program, hw, functools.partial(kernel_counts, program))
