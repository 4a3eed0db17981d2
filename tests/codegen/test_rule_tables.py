"""Every rule table keyed by Kernel-IR opcode covers exactly the opcodes of `kernel_ir.OPS`.

An opcode added to the IR without a rule in one table (or a rule left behind for an opcode that no
longer exists) fails here, naming the table and the missing and the extra opcodes. A table that
handles some opcodes outside its rules declares them as a named set of structural opcodes; the
check is then table + structural == all opcodes, with no opcode in both.

The AscendC printer renders instructions, not opcodes (`RENDER` is keyed by AscendC API): what maps
opcodes to instructions is the lowering table, so the second test lowers a program of every opcode
and checks that the printer renders every instruction the lowering emits.
"""
from __future__ import annotations

import functools

import pytest

from trex.compiler.kernel_ir import OPS, DType, IRError, ProgramBuilder, size, walk

# opcodes the AscendC lowering refuses, with the reason its rule raises (an IRError naming the fix)
ASCENDC_REFUSED = {"pair_swap": "a one-element UB shift breaks the 32-byte rule; AscendC RoPE uses shifted loads",
                   "pair_expand": "no lane shuffle on the vector unit; AscendC RoPE reads host-expanded tables"}


def _ascendc_lowering():
    """The AscendC lowering module."""
    from trex.codegen_ascendc import lowering
    return lowering


def _interpreter_table():
    from trex.compiler.kernel_ir.reference import RULES
    return RULES, frozenset()


def _ascendc_lowering_table():
    lowering = _ascendc_lowering()
    return lowering.LOWERING_RULES, lowering.STRUCTURAL_OPS


def _triton_table():
    from trex.codegen_triton.printer import RULES
    return RULES, frozenset()


TABLES = {"interpreter": _interpreter_table, "ascendc_lowering": _ascendc_lowering_table, "triton": _triton_table}


@pytest.mark.parametrize("table", sorted(TABLES))
def test_rule_table_covers_exactly_the_opcodes(table):
    rules, structural = TABLES[table]()
    covered = set(rules) | set(structural)
    missing, extra = sorted(set(OPS) - covered), sorted(covered - set(OPS))
    twice = sorted(set(rules) & set(structural))
    assert not (missing or extra or twice), (
        f"{table} rule table: missing opcodes {missing}, extra opcodes {extra}, "
        f"both ruled and structural {twice}")


def _one_op_program(opcode: str):
    """load x -> `opcode` -> store y, all fp32 [D]: a program for an opcode no pattern uses."""
    spec = OPS[opcode]
    args = ("xl", 2.0) if spec.category == "scalar" else ("xl",) * spec.arity
    d = size("D")
    b = ProgramBuilder(f"only_{opcode}")
    b.gm("x", "fp32", (d,))
    b.gm("y", "fp32", (d,), role="out")
    b.op("load", "xl", "x", dtype="fp32", cols=(d,))
    b.op(opcode, "r", *args, dtype="fp32", cols=(d,))
    b.op("store", None, "y", "r")
    return b.build()


@functools.cache
def _pattern_programs() -> tuple:
    """(program, its opcodes) of every kernel spec's AscendC program in every dtype."""
    from trex.compiler import registry
    progs = [spec.program(dt) for spec in registry.kernel_specs().values()
             for dt in (DType.BF16, DType.FP16, DType.FP32)]
    return tuple((p, {op.opcode for stmts in (p.prologue, p.body, p.epilogue) for op, _ in walk(stmts)})
                 for p in progs)


def _programs_using(opcode: str) -> list:
    """The AscendC patterns' programs that use `opcode`, else a one-op program."""
    return [p for p, opcodes in _pattern_programs() if opcode in opcodes] or [_one_op_program(opcode)]


@functools.cache
def _lowered_apis(p) -> frozenset:
    """The AscendC APIs of the vector instructions `p` lowers to."""
    lowering = _ascendc_lowering()
    plan = lowering.plan_kernel(p)
    return frozenset(n.api for n in _instructions(plan.prologue + plan.body + plan.epilogue)
                     if isinstance(n, lowering.Vec))


def _instructions(nodes):
    """Every plan node, loops' bodies included."""
    for n in nodes:
        yield n
        if hasattr(n, "body"):
            yield from _instructions(n.body)


@pytest.mark.parametrize("opcode", sorted(OPS))
def test_ascendc_renders_every_instruction_the_lowering_emits(opcode):
    from trex.codegen_ascendc.printer import RENDER
    for p in _programs_using(opcode):
        if opcode in ASCENDC_REFUSED:
            with pytest.raises(IRError, match=f"{opcode} has no AscendC lowering"):
                _ascendc_lowering().plan_kernel(p)
            continue
        unrendered = sorted(_lowered_apis(p) - set(RENDER))
        assert not unrendered, (f"{p.name} (uses {opcode}) lowers to instructions the AscendC printer "
                                f"cannot render: {unrendered}")
